"""Changing and deleting a bot (``bots``), and the tournaments a bot is entered in.

A new URL, a new transport (``http`` or ``connect``) or new rule sets make a bot
``unchecked`` (its check decides again); a deleted bot keeps its past matches and logs, and
forfeits the seats it has in matches not yet played. Registering a bot is an insert
(:mod:`arena.usecases.bots`); its checks are :mod:`arena.lifecycle.checks`'. Each public
function is a transaction of its own (it commits, or rolls back and raises) unless it says
otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from arena.db.models import Bot, BotCheck, Tournament, TournamentParticipant, utcnow
from arena.lifecycle import ladders
from arena.lifecycle.base import ACTIVE_CHECKS, BotStatus, CheckStatus, Conflict, TournamentStatus, lock_or_404
from arena.status import BotTransport


def _lock_bot(session: Session, bot_id: int) -> Bot:
    """The bot row, locked; NotFound for a missing or deleted bot (rolled back)."""
    return lock_or_404(session, Bot, bot_id, "bot", gone=lambda b: b.status == BotStatus.DELETED)


def entered_in(session: Session, bot_id: int) -> list[int]:
    """Ids of the ``created`` or ``running`` tournaments the bot is entered in, ascending.
    Reads only (no commit)."""
    return list(
        session.scalars(
            select(Tournament.id)
            .join(TournamentParticipant, TournamentParticipant.tournament_id == Tournament.id)
            .where(
                TournamentParticipant.bot_id == bot_id,
                Tournament.status.in_((TournamentStatus.CREATED, TournamentStatus.RUNNING)),
            )
            .order_by(Tournament.id)
        )
    )


def _refuse_change(session: Session, bot: Bot, new_url: bool, new_rulesets: bool) -> None:
    """Raise Conflict (rolled back) when :func:`update_bot` may not make the change
    (``new_url``: a new URL or a new transport)."""
    if (new_url or new_rulesets) and bot.status == BotStatus.CHECKING:
        session.rollback()
        raise Conflict(f"bot {bot.id} is being checked; change its URL, transport or rule sets when the check is done")
    if new_url:
        tournaments = entered_in(session, bot.id)
        if tournaments:
            session.rollback()
            raise Conflict(
                f"bot {bot.id} is entered in tournament(s) {', '.join(map(str, tournaments))} that "
                "are not finished: its URL or transport cannot change until they end (its matches only "
                "reach it the way that passed the check); register a new bot for the new URL or transport"
            )


def update_bot(
    session: Session,
    bot_id: int,
    *,
    name: str | None = None,
    url: str | None = None,
    rulesets: Sequence[str] | None = None,
    transport: str | None = None,
) -> Bot:
    """Change a bot's name, URL (already checked against the URL policy by the caller),
    transport or rule sets (None: unchanged); commit. A new URL, transport or rule sets make
    it ``unchecked``. ``transport="connect"`` drops the URL; ``transport="http"`` takes
    ``url`` (the caller makes sure a bot that calls has one).

    Raises:
        NotFound: no such bot, or deleted.
        Conflict: a URL, transport or rule-set change while a check runs; a URL or transport
            change while the bot is entered in a created or running tournament (its matches
            reach it the checked way only: delete the bot to withdraw it, or wait until the
            tournaments end).
    """
    bot = _lock_bot(session, bot_id)
    new_transport = transport is not None and transport != bot.transport
    if transport == BotTransport.CONNECT:
        url = None
    new_url = new_transport or (url is not None and url != bot.url)
    new_rulesets = rulesets is not None and list(rulesets) != list(bot.rulesets)
    _refuse_change(session, bot, new_url, new_rulesets)
    if name is not None:
        bot.name = name
    if transport is not None and new_transport:
        bot.transport = transport
    if new_url:
        bot.url = url if bot.transport == BotTransport.HTTP else None
    if rulesets is not None and new_rulesets:
        bot.rulesets = list(rulesets)
    if new_url or new_rulesets:
        bot.status = BotStatus.UNCHECKED
    bot.updated_at = utcnow()
    session.commit()
    return bot


def is_deleted(session: Session, bot_id: int) -> bool:
    """True when bot ``bot_id`` is ``deleted`` (or does not exist); read-only."""
    status = session.scalar(select(Bot.status).where(Bot.id == bot_id))
    return status is None or status == BotStatus.DELETED


def delete_bot(session: Session, bot_id: int) -> None:
    """``any -> deleted``; commit. Its past matches and logs stay. Its seats in matches not
    yet played forfeit every game without a request
    (:func:`~arena.lifecycle.claims.claim_match`: a deleted bot's seat is ``withdrawn``,
    FAULT-3 from the first decision); a match already running learns it from Redis
    (:mod:`arena.withdrawals`, told by the use case after this commit). Its live checks
    become ``error`` ("the bot was deleted"); its ladder entries are withdrawn.

    Raises:
        NotFound: no such bot, or already deleted.
    """
    bot = _lock_bot(session, bot_id)
    bot.status = BotStatus.DELETED
    bot.updated_at = utcnow()
    ladders.withdraw_bot(session, bot_id)
    session.execute(
        update(BotCheck)
        .where(BotCheck.bot_id == bot_id, BotCheck.status.in_(ACTIVE_CHECKS))
        .values(status=CheckStatus.ERROR, error="the bot was deleted", finished_at=utcnow(), updated_at=utcnow())
    )
    session.commit()
