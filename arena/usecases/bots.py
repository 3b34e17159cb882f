"""Bot use cases: register, list, read, change, delete, check, rotate the secret.

A bot is its owner's: reading it needs the owner or an organizer, changing it the owner
(:class:`~arena.usecases.Forbidden`, ``bot <id> belongs to another account``); a missing or
deleted bot is :class:`~arena.lifecycle.NotFound` (``bot <id> not found``). Status changes
are :mod:`arena.lifecycle`'s (a new URL or rule sets make the bot ``unchecked``; a check
runs through a :class:`arena.dispatch.Dispatcher`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session

import engine
from arena import lifecycle
from arena.access import is_organizer
from arena.db.models import Account, Bot, BotCheck, utcnow
from arena.dispatch import Dispatcher, QueueError
from arena.security import SECRET_GRACE_S, new_secret
from arena.status import BotStatus
from arena.url_policy import BotUrlError, check_bot_url
from arena.usecases import BotCheckRunning, Forbidden, InvalidField, Unavailable

#: ``Retry-After`` of a check refused because no worker can be reached, seconds.
CHECK_UNAVAILABLE_RETRY_S = 5


def bot_for(session: Session, account: Account, bot_id: int, *, write: bool) -> Bot:
    """The bot if ``account`` may see it (owner, or organizer when not ``write``).

    Raises:
        NotFound: no such bot, or deleted.
        Forbidden: another account's bot.
    """
    bot = session.get(Bot, bot_id)
    if bot is None or bot.status == BotStatus.DELETED:
        raise lifecycle.NotFound(f"bot {bot_id} not found")
    if bot.owner_id != account.id and (write or not is_organizer(account)):
        raise Forbidden(f"bot {bot_id} belongs to another account")
    return bot


def list_bots(
    session: Session, account: Account, *, owner_id: int | None = None, page: int = 1, per_page: int = 20
) -> tuple[list[Bot], int]:
    """``(one page of bots by id, how many in all)``: the account's own bots; an organizer's:
    every bot, or ``owner_id``'s.

    Raises:
        Forbidden: a contestant asked for another account's bots.
    """
    cond = [Bot.status != BotStatus.DELETED]
    if is_organizer(account):
        if owner_id is not None:
            cond.append(Bot.owner_id == owner_id)
    elif owner_id is not None and owner_id != account.id:
        raise Forbidden("only organizers may list other accounts' bots")
    else:
        cond.append(Bot.owner_id == account.id)
    total = session.scalar(select(func.count()).select_from(Bot).where(*cond)) or 0
    rows = session.scalars(select(Bot).where(*cond).order_by(Bot.id).limit(per_page).offset((page - 1) * per_page))
    return list(rows), total


def _rulesets(values: Sequence[str]) -> list[str]:
    if len(set(values)) != len(values):
        raise InvalidField("rulesets", "rule sets must not repeat")
    return [r for r in engine.RULESETS if r in values]


def _url(url: str, allow_private: bool) -> str:
    try:
        return check_bot_url(url, allow_private=allow_private)
    except BotUrlError as exc:
        raise InvalidField("url", str(exc)) from None


def register_bot(
    session: Session, account: Account, *, name: str, url: str, rulesets: Sequence[str], allow_private: bool
) -> Bot:
    """Register a bot of ``account`` (``unchecked``, a fresh signing secret); commit.

    ``allow_private``: private addresses pass the URL policy (``ARENA_ALLOW_PRIVATE_BOT_URLS``).

    Raises:
        InvalidField: ``url`` refused by :func:`arena.url_policy.check_bot_url`, or ``rulesets`` repeat.
    """
    bot = Bot(
        owner_id=account.id,
        name=name,
        url=_url(url, allow_private),
        rulesets=_rulesets(rulesets),
        secret=new_secret(),
        status=BotStatus.UNCHECKED,
    )
    session.add(bot)
    session.commit()
    return bot


def change_bot(
    session: Session,
    account: Account,
    bot_id: int,
    *,
    allow_private: bool,
    name: str | None = None,
    url: str | None = None,
    rulesets: Sequence[str] | None = None,
) -> Bot:
    """Change the owner's bot: name, URL or rule sets (None: unchanged); commit.

    Raises:
        NotFound, Forbidden: see :func:`bot_for`.
        InvalidField: see :func:`register_bot`.
        Conflict: a URL or rule-set change while a check runs, or a URL change while the bot
            is entered in a created or running tournament (:func:`arena.lifecycle.update_bot`).
    """
    bot = bot_for(session, account, bot_id, write=True)
    new_url = _url(url, allow_private) if url is not None and url != bot.url else None
    new_rulesets = _rulesets(rulesets) if rulesets is not None else None
    return lifecycle.update_bot(session, bot_id, name=name, url=new_url, rulesets=new_rulesets)


def delete_bot(session: Session, account: Account, bot_id: int) -> None:
    """Delete the owner's bot (:func:`arena.lifecycle.delete_bot`: marked ``deleted``, its
    matches not yet played forfeit its seats).

    Raises:
        NotFound, Forbidden: see :func:`bot_for`.
    """
    bot_for(session, account, bot_id, write=True)
    lifecycle.delete_bot(session, bot_id)


def check_bot(
    session: Session, dispatcher: Dispatcher, account: Account, bot_id: int, *, max_seconds_per_hour: float | None
) -> BotCheck:
    """Start a check of the owner's bot (:func:`arena.lifecycle.begin_check`) and send it;
    returns the check as stored after the send (in-process: done).

    Raises:
        NotFound, Forbidden: see :func:`bot_for`.
        BotCheckRunning: the bot has a check queued or running.
        TooManyChecks: the account's checks are at their cap (``retry_after_s``).
        Unavailable: no worker can be reached (``retry_after_s``
            :data:`CHECK_UNAVAILABLE_RETRY_S`); nothing changed.
    """
    bot_for(session, account, bot_id, write=True)
    session.commit()
    try:
        check = lifecycle.begin_check(session, bot_id, max_seconds_per_hour=max_seconds_per_hour)
    except lifecycle.CheckRunning as exc:
        raise BotCheckRunning(str(exc), bot_id, exc.check_id) from None
    check_id = check.id
    try:
        dispatcher.send_check(check_id)
    except QueueError as exc:
        lifecycle.release_check(session, check_id, str(exc))
        raise Unavailable(f"the check could not be started: {exc}", CHECK_UNAVAILABLE_RETRY_S) from None
    session.expire_all()
    stored = session.get(BotCheck, check_id)
    assert stored is not None
    return stored


def rotate_secret(session: Session, account: Account, bot_id: int) -> Bot:
    """Give the owner's bot a new signing secret; the previous one stays valid for
    :data:`~arena.security.SECRET_GRACE_S` seconds; commit.

    Raises:
        NotFound, Forbidden: see :func:`bot_for`.
    """
    bot = bot_for(session, account, bot_id, write=True)
    bot.previous_secret = bot.secret
    bot.previous_secret_until = utcnow() + timedelta(seconds=SECRET_GRACE_S)
    bot.secret = new_secret()
    bot.updated_at = utcnow()
    session.commit()
    return bot


class Credentials(NamedTuple):
    """What a gateway needs to authenticate a bot that dials out (:func:`credentials`):
    its id, owner, display name, transport and the secrets a challenge may be answered
    with (the current one, and the previous one during a rotation's grace period)."""

    bot_id: int
    owner_id: int
    name: str
    transport: str
    secrets: list[str]


def credentials(session: Session, bot_id: int) -> Credentials | None:
    """The credentials of bot ``bot_id``, or None when there is no such bot or it was deleted."""
    bot = session.get(Bot, bot_id)
    if bot is None or bot.status == BotStatus.DELETED:
        return None
    secrets = [bot.secret] + ([g] if (g := bot.grace_secret()) else [])
    return Credentials(bot.id, bot.owner_id, f"{bot.name}#{bot.id}", bot.transport, secrets)
