"""Read models of a ladder (docs/ladder.md): its live table, the sets playing now, its recent
sets, an entry's rating history, the official table. Each reads what a page shows and no
more: the entries (not the sets) for the table, indexed ranges for the sets, so a ladder with
a million stored games answers as fast as a new one.

The live table: entries that hold a place (``active``, ``paused``) and the house entries, by
**conservative rating** ``mu - 3 sigma`` (best first; ties by entry id), each with its mean,
uncertainty, sets, faults, **provisional** (fewer rated sets than the ladder's
``placement_sets``), and **ahead**: whether it is above the next row with 95% confidence
(:func:`arena.ladder_ratings.ahead`; None on the last row).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from arena import ladder_ratings
from arena.db.models import (
    Account,
    Bot,
    Ladder,
    LadderEntry,
    LadderFit,
    LadderRating,
    LadderSet,
    Match,
    MatchResult,
    MatchSeat,
)
from arena.sources.ladder import LadderConfig
from arena.status import UNFINISHED, EntryStatus, MatchStatus

#: Entry statuses the live table shows.
SHOWN = (EntryStatus.ACTIVE, EntryStatus.PAUSED, EntryStatus.HOUSE)


@dataclass(frozen=True)
class TableRow:
    """One row of the live table (module docstring); ``online``: can play now (None: not
    known, a house entry is always online); ``name``: the bot's, or ``house: <sample bot>``."""

    rank: int
    entry_id: int
    bot_id: int | None
    house_bot: str | None
    name: str
    owner: str | None
    owner_id: int | None
    status: str
    mu: float
    sigma: float
    conservative: float
    sets: int
    games: int
    faults: int
    provisional: bool
    ahead: bool | None
    online: bool | None
    paused_by: str | None
    paused_reason: str | None
    pause: dict[str, Any] | None
    paused_at: datetime | None
    last_set_at: datetime | None
    parent_bot_id: int | None


def entries_shown(session: Session, ladder_id: int) -> list[tuple[LadderEntry, str | None, str | None, int | None]]:
    """``(entry, bot name, owner name, parent bot id)`` of the entries the table shows."""
    return [
        (e, bot_name, owner, parent)
        for e, bot_name, owner, parent in session.execute(
            select(LadderEntry, Bot.name, Account.name, Bot.parent_id)
            .outerjoin(Bot, Bot.id == LadderEntry.bot_id)
            .outerjoin(Account, Account.id == LadderEntry.owner_id)
            .where(LadderEntry.ladder_id == ladder_id, LadderEntry.status.in_(SHOWN))
        ).all()
    ]


def table(session: Session, ladder: Ladder, online: Collection[int] | None = None) -> list[TableRow]:
    """The live table (module docstring); ``online``: the entry ids that can play now (None:
    not known)."""
    cfg = LadderConfig.from_dict(ladder.config)
    rows = entries_shown(session, ladder.id)
    rows.sort(key=lambda r: (-ladder_ratings.conservative(r[0].mu, r[0].sigma), r[0].id))
    out: list[TableRow] = []
    for i, (e, bot_name, owner, parent) in enumerate(rows):
        nxt = rows[i + 1][0] if i + 1 < len(rows) else None
        out.append(
            TableRow(
                rank=i + 1,
                entry_id=e.id,
                bot_id=e.bot_id,
                house_bot=e.house_bot,
                name=bot_name if bot_name is not None else f"house: {e.house_bot}",
                owner=owner,
                owner_id=e.owner_id,
                status=e.status,
                mu=e.mu,
                sigma=e.sigma,
                conservative=ladder_ratings.conservative(e.mu, e.sigma),
                sets=e.sets,
                games=e.games,
                faults=e.faults,
                provisional=e.house_bot is None and e.sets < cfg.placement_sets,
                ahead=ladder_ratings.ahead((e.mu, e.sigma), (nxt.mu, nxt.sigma)) if nxt is not None else None,
                online=True if e.house_bot is not None else (None if online is None else e.id in online),
                paused_by=e.paused_by,
                paused_reason=e.paused_reason,
                pause=e.pause,
                paused_at=e.paused_at,
                last_set_at=e.last_set_at,
                parent_bot_id=parent,
            )
        )
    return out


@dataclass(frozen=True)
class SetRow:
    """A ladder set: its match, status, kind, rating, entry per seat (with names), and once
    stored its scores, places, faults, placement and revealed seed and salt."""

    match_id: int
    status: str
    kind: str
    rating: str
    entries: list[int]
    names: list[str]
    commitment: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    scores: list[float] | None
    faults: list[int] | None
    placement: list[int] | None
    adjusted: bool | None
    seed: int | None
    salt: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def entry_names(session: Session, entry_ids: Sequence[int]) -> dict[int, str]:
    """Entry id -> the bot's name, or ``house: <sample bot>`` (any status)."""
    rows = session.execute(
        select(LadderEntry.id, LadderEntry.house_bot, Bot.name)
        .outerjoin(Bot, Bot.id == LadderEntry.bot_id)
        .where(LadderEntry.id.in_(list(set(entry_ids))))
    ).all()
    return {i: name if name is not None else f"house: {house}" for i, house, name in rows}


def _set_rows(session: Session, found: Sequence[tuple[LadderSet, Match]]) -> list[SetRow]:
    names = entry_names(session, [e for s, _ in found for e in s.entries])
    results = {
        r.match_id: r
        for r in session.scalars(select(MatchResult).where(MatchResult.match_id.in_([m.id for _, m in found])))
    }
    out = []
    for s, m in found:
        res = results.get(m.id)
        stored = res is not None and m.status == MatchStatus.FINISHED
        out.append(
            SetRow(
                match_id=m.id,
                status=m.status,
                kind=s.kind,
                rating=s.rating,
                entries=list(s.entries),
                names=[names.get(e, "?") for e in s.entries],
                commitment=s.commitment,
                created_at=s.created_at,
                started_at=m.started_at,
                finished_at=m.finished_at,
                scores=list(res.scores) if res is not None else None,
                faults=list(res.faults) if res is not None else None,
                placement=list(s.placement) if s.placement is not None else None,
                adjusted=s.adjusted,
                seed=int(m.seed) if stored else None,  # the set's seed: shown once it is stored
                salt=s.salt if stored else None,
            )
        )
    return out


def playing(session: Session, ladder: Ladder, limit: int = 50) -> list[SetRow]:
    """The ladder's sets queued or playing now, newest first (at most ``limit``)."""
    found = session.execute(
        select(LadderSet, Match)
        .join(Match, Match.id == LadderSet.match_id)
        .where(Match.tournament_id == ladder.tournament_id, Match.status.in_(UNFINISHED))
        .order_by(Match.id.desc())
        .limit(limit)
    ).all()
    return _set_rows(session, [(s, m) for s, m in found])


def recent(
    session: Session, ladder: Ladder, *, entry_id: int | None = None, limit: int = 20, before: int | None = None
) -> list[SetRow]:
    """The ladder's sets done (stored, cancelled or failed), newest first: ``limit`` of them,
    with match ids below ``before`` (the next page), of one entry's with ``entry_id`` (read
    from its rating history: a bot with a million sets reads its last ``limit``)."""
    stmt = (
        select(LadderSet, Match)
        .join(Match, Match.id == LadderSet.match_id)
        .where(LadderSet.ladder_id == ladder.id, Match.status.not_in(UNFINISHED))
    )
    if entry_id is not None:
        ids = select(LadderRating.match_id).where(LadderRating.entry_id == entry_id)
        if before is not None:
            ids = ids.where(LadderRating.match_id < before)
        wanted = list(session.scalars(ids.order_by(LadderRating.match_id.desc()).limit(limit)))
        stmt = stmt.where(LadderSet.match_id.in_(wanted))
    elif before is not None:
        stmt = stmt.where(LadderSet.match_id < before)
    found = session.execute(stmt.order_by(LadderSet.match_id.desc()).limit(limit)).all()
    return _set_rows(session, [(s, m) for s, m in found])


def sets_of_bot(session: Session, ladder: Ladder, bot_id: int, *, limit: int = 10) -> list[SetRow]:
    """The ladder's sets done in which bot ``bot_id`` sat (rated or not: its forfeits and its
    comparison sets too), newest first, at most ``limit`` (its profile's recent sets; read
    through the bot's seats, ``match_seats.bot_id``)."""
    found = session.execute(
        select(LadderSet, Match)
        .join(Match, Match.id == LadderSet.match_id)
        .join(MatchSeat, MatchSeat.match_id == LadderSet.match_id)
        .where(LadderSet.ladder_id == ladder.id, MatchSeat.bot_id == bot_id, Match.status.not_in(UNFINISHED))
        .order_by(LadderSet.match_id.desc())
        .limit(limit)
    ).all()
    return _set_rows(session, [(s, m) for s, m in found])


def history(session: Session, entry_id: int, limit: int = 1000) -> list[tuple[datetime, float, float, int]]:
    """An entry's rating after each of its last ``limit`` rated sets, oldest first:
    ``(when, mu, sigma, sets)``."""
    rows = session.execute(
        select(LadderRating.at, LadderRating.mu, LadderRating.sigma, LadderRating.sets)
        .where(LadderRating.entry_id == entry_id)
        .order_by(LadderRating.match_id.desc())
        .limit(limit)
    ).all()
    return [(at, mu, sigma, sets) for at, mu, sigma, sets in reversed(rows)]


def official(session: Session, ladder_id: int) -> LadderFit | None:
    """The ladder's last batch fit, or None before the first."""
    return session.get(LadderFit, ladder_id)


def entries_of_bot(session: Session, bot_id: int) -> list[tuple[LadderEntry, Ladder]]:
    """Every entry of a bot, with its ladder (its profile's ladders), by ladder id."""
    return [
        (e, ladder)
        for e, ladder in session.execute(
            select(LadderEntry, Ladder)
            .join(Ladder, Ladder.id == LadderEntry.ladder_id)
            .where(LadderEntry.bot_id == bot_id)
            .options(selectinload(Ladder.tournament))
            .order_by(Ladder.id)
        ).all()
    ]
