"""The leaderboard of a rule set (``GET /leaderboard``, the pages): one page of the ratings the
worker keeps (:func:`arena.ratings.rebuild_ratings`), best conservative rating first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from arena.db.models import (
    Account,
    Bot,
    Rating,
)
from arena.lifecycle import BotStatus


@dataclass(frozen=True)
class LeaderRow:
    """One bot of the leaderboard: its rank by ``ordinal`` (mu - 3 sigma), rating, rated games
    and matches, and when its last rated match finished."""

    rank: int
    bot_id: int
    bot_name: str
    owner: str
    owner_id: int
    mu: float
    sigma: float
    ordinal: float
    games: int
    matches: int
    last_played: datetime | None


def leaderboard(session: Session, ruleset: str, page: int = 1, per_page: int = 50) -> tuple[list[LeaderRow], int]:
    """``(one page of the rule set's ratings, best conservative rating first; how many in
    all)``: the ``ratings`` table the worker keeps (:func:`rebuild_ratings`); ties by bot id.
    A deleted bot is not listed (nor, through it, its owner's name): the public leaderboard
    shows the bots that still exist."""
    ordinal = (Rating.mu - 3 * Rating.sigma).label("ordinal")
    cond = and_(Rating.ruleset == ruleset, Bot.status != BotStatus.DELETED)
    total = session.scalar(select(func.count()).select_from(Rating).join(Bot, Bot.id == Rating.bot_id).where(cond)) or 0
    offset = (page - 1) * per_page
    rows = session.execute(
        select(Rating, Bot.name, Account.name, Account.id, ordinal)
        .join(Bot, Bot.id == Rating.bot_id)
        .join(Account, Account.id == Bot.owner_id)
        .where(cond)
        .order_by(ordinal.desc(), Rating.bot_id)
        .limit(per_page)
        .offset(offset)
    ).all()
    return [
        LeaderRow(
            offset + i + 1, r.bot_id, bot_name, owner, owner_id, r.mu, r.sigma, o, r.games, r.matches, r.last_played_at
        )
        for i, (r, bot_name, owner, owner_id, o) in enumerate(rows)
    ], int(total)
