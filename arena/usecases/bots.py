"""Bot use cases: register, list, read, change, delete, check, rotate the secret.

A bot is its owner's: reading it needs the owner or an organizer, changing it the owner
(:class:`~arena.usecases.Forbidden`, ``bot <id> belongs to another account``); a missing or
deleted bot is :class:`~arena.lifecycle.NotFound` (``bot <id> not found``). Status changes
are :mod:`arena.lifecycle`'s (a new URL, transport or rule sets make the bot ``unchecked``;
a check runs through a :class:`arena.dispatch.Dispatcher`).

A bot's transport (:class:`arena.status.BotTransport`) is ``http`` (the arena calls its URL)
or ``connect`` (it dials out to a gateway, docs/protocol.md, and has no URL); the presence of
a bot that connects is :func:`presence_of`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import redis
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

import engine
from arena import lifecycle, relay, withdrawals
from arena.access import is_organizer
from arena.db.models import Account, Bot, BotCheck, utcnow
from arena.dispatch import Dispatcher, QueueError
from arena.security import SECRET_GRACE_S, new_secret
from arena.status import BotStatus, BotTransport
from arena.url_policy import BotUrlError, check_bot_url
from arena.usecases import BotCheckRunning, Forbidden, InvalidField, Unavailable

log = logging.getLogger(__name__)

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


#: The refusal of a URL given to a bot that connects.
CONNECT_HAS_NO_URL = "a bot that connects has no URL"
#: The refusal of a bot that is called without a URL.
HTTP_NEEDS_URL = "a bot the arena calls needs a URL (or register it as a bot that connects)"


def _transport(transport: str) -> BotTransport:
    try:
        return BotTransport(transport)
    except ValueError:
        raise InvalidField("transport", f"must be one of {', '.join(t.value for t in BotTransport)}") from None


def _reach(transport: str, url: str | None, allow_private: bool) -> tuple[BotTransport, str | None]:
    """``(transport, checked URL or None)`` of a registration.

    Raises:
        InvalidField: ``transport`` unknown; ``url`` missing for ``http``, given for
            ``connect``, or refused by the URL policy.
    """
    kind = _transport(transport)
    if kind == BotTransport.CONNECT:
        if url is not None and url != "":
            raise InvalidField("url", CONNECT_HAS_NO_URL)
        return kind, None
    if url is None or url == "":
        raise InvalidField("url", HTTP_NEEDS_URL)
    return kind, _url(url, allow_private)


def register_bot(
    session: Session,
    account: Account,
    *,
    name: str,
    rulesets: Sequence[str],
    allow_private: bool,
    url: str | None = None,
    transport: str = BotTransport.HTTP.value,
    max_bots: int | None = None,
    parent_id: int | None = None,
) -> Bot:
    """Register a bot of ``account`` (``unchecked``, a fresh signing secret); commit.

    ``transport``: ``"http"`` (the arena calls ``url``, required) or ``"connect"`` (the bot
    dials out; ``url`` must be None). ``allow_private``: private addresses pass the URL
    policy (``ARENA_ALLOW_PRIVATE_BOT_URLS``). ``max_bots``: most bots the account may hold,
    deleted ones not counted (``ARENA_MAX_BOTS_PER_ACCOUNT``; None: no cap); the account's
    row is written (locked) before they are counted, so concurrent registrations cannot pass
    it, on PostgreSQL and on SQLite. ``parent_id``: one of the account's bots this one is a
    new version of (it takes the parent's ladder places once its check passes:
    :func:`arena.lifecycle.ladders.promote_version`).

    Raises:
        lifecycle.Conflict: the account already holds ``max_bots`` bots.
        InvalidField: ``transport`` unknown; ``url`` missing (``http``), given (``connect``,
            :data:`CONNECT_HAS_NO_URL`) or refused by :func:`arena.url_policy.check_bot_url`;
            ``rulesets`` repeat; ``parent_id`` not one of the account's bots.
    """
    kind, checked = _reach(transport, url, allow_private)
    if parent_id is not None:
        parent = session.get(Bot, parent_id)
        if parent is None or parent.status == BotStatus.DELETED or parent.owner_id != account.id:
            raise InvalidField("parent_id", f"bot {parent_id} is not one of your bots")
    listed = _rulesets(rulesets)  # every refusal of the request before the account's lock
    if max_bots is not None:
        # a write to the account's row first: PostgreSQL locks the row, SQLite takes its write
        # lock (retried within busy_timeout), so concurrent registrations count one by one
        session.execute(update(Account).where(Account.id == account.id).values(role=Account.role))
        held = session.scalar(
            select(func.count()).select_from(Bot).where(Bot.owner_id == account.id, Bot.status != BotStatus.DELETED)
        )
        if (held or 0) >= max_bots:
            session.rollback()
            raise lifecycle.Conflict(
                f"an account holds at most {max_bots} bots (deleted ones do not count): "
                "delete one before registering another"
            )
    bot = Bot(
        owner_id=account.id,
        name=name,
        transport=kind.value,
        url=checked,
        rulesets=listed,
        secret=new_secret(),
        status=BotStatus.UNCHECKED,
        parent_id=parent_id,
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
    transport: str | None = None,
    play_people: bool | None = None,
) -> Bot:
    """Change the owner's bot: name, URL, transport, rule sets or whether people may play it
    at their tables (``play_people``, docs/tables.md) (None: unchanged); commit.

    A new transport is a change like a new URL (the bot becomes ``unchecked``): to
    ``"connect"`` drops the URL (``url`` must be None); to ``"http"`` needs ``url``. A URL
    given to a bot that connects (and stays one) is refused.

    Raises:
        NotFound, Forbidden: see :func:`bot_for`.
        InvalidField: see :func:`register_bot`.
        Conflict: a URL, transport or rule-set change while a check runs, or a URL or
            transport change while the bot is entered in a created or running tournament
            (:func:`arena.lifecycle.update_bot`).
    """
    bot = bot_for(session, account, bot_id, write=True)
    new_transport: str | None = None
    new_url: str | None = None
    kind = _transport(transport) if transport is not None else BotTransport(bot.transport)
    if kind != bot.transport:
        kind, new_url = _reach(kind.value, url, allow_private)
        new_transport = kind.value
    elif kind == BotTransport.CONNECT:
        if url is not None and url != "":
            raise InvalidField("url", CONNECT_HAS_NO_URL)
    elif url is not None and url != bot.url:
        new_url = _url(url, allow_private)
    new_rulesets = _rulesets(rulesets) if rulesets is not None else None
    bot = lifecycle.update_bot(session, bot_id, name=name, url=new_url, rulesets=new_rulesets, transport=new_transport)
    if play_people is not None and bot.play_people != play_people:
        bot.play_people = play_people
        session.commit()
    return bot


def presence_of(client: redis.Redis | None, bots: Sequence[Bot]) -> dict[int, dict[str, Any] | None]:
    """The presence of each bot of ``bots`` by id: for a bot that connects
    ``{"connected": bool, "connections": int, "since": ISO 8601 UTC | None}``
    (:meth:`arena.relay.Presence.as_dict`, read in one round trip); None for a bot the arena
    calls, and for every bot when ``client`` is None or Redis cannot be reached (unknown,
    never an error)."""
    out: dict[int, dict[str, Any] | None] = {b.id: None for b in bots}
    ids = [b.id for b in bots if b.transport == BotTransport.CONNECT]
    if client is None or not ids:
        return out
    try:
        found = relay.presence(client, ids)
    except (redis.RedisError, OSError):
        return out
    for bot_id in ids:
        out[bot_id] = found.get(bot_id, relay.OFFLINE).as_dict()
    return out


def delete_bot(session: Session, account: Account, bot_id: int, client: redis.Redis | None = None) -> None:
    """Delete the owner's bot (:func:`arena.lifecycle.delete_bot`: marked ``deleted``, its
    matches not yet played forfeit its seats), then tell the matches playing now through
    ``client`` (the broker's Redis; :func:`arena.withdrawals.flag_withdrawn`): its seats there forfeit
    from their next decision. Redis unreachable, or no ``client`` (eager mode): a warning, and
    a match playing now plays out.

    Raises:
        NotFound, Forbidden: see :func:`bot_for`.
    """
    bot_for(session, account, bot_id, write=True)
    lifecycle.delete_bot(session, bot_id)
    if client is None:
        return
    try:
        withdrawals.flag_withdrawn(client, bot_id)
    except redis.RedisError as exc:
        log.warning("bot %s deleted, but its matches playing now were not told (%s)", bot_id, exc)


def check_bot(
    session: Session,
    dispatcher: Dispatcher,
    account: Account,
    bot_id: int,
    *,
    max_seconds_per_hour: float | None,
    client: str | None = None,
) -> BotCheck:
    """Start a check of the owner's bot (:func:`arena.lifecycle.begin_check`), asked by
    ``client`` (:func:`arena.clients.client_key`: the queue serves clients in turn), and send
    it; returns the check as stored after the send (in-process: done).

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
        check = lifecycle.begin_check(session, bot_id, max_seconds_per_hour=max_seconds_per_hour, client=client)
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
    with (the current one, and the previous one during a rotation's grace period).
    ``grace_until``: when the previous secret's grace ends (Unix seconds; None: never
    rotated), over or not; each rotation sets it anew, so while it is the same the secrets
    are the same (:func:`connect_bots`)."""

    bot_id: int
    owner_id: int
    name: str
    transport: str
    secrets: list[str]
    grace_until: float | None = None


def _unix(when: datetime | None) -> float | None:
    if when is None:
        return None
    return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()  # SQLite: naive UTC


def credentials(session: Session, bot_id: int) -> Credentials | None:
    """The credentials of bot ``bot_id``, or None when there is no such bot or it was deleted."""
    bot = session.get(Bot, bot_id)
    if bot is None or bot.status == BotStatus.DELETED:
        return None
    secrets = [bot.secret] + ([g] if (g := bot.grace_secret()) else [])
    name = f"{bot.name}#{bot.id}"
    return Credentials(bot.id, bot.owner_id, name, bot.transport, secrets, _unix(bot.previous_secret_until))


def connect_bots(session: Session, bot_ids: Sequence[int]) -> dict[int, float | None]:
    """The bots among ``bot_ids`` that may still connect to a gateway (they exist, are not
    deleted and have the transport ``connect``), each with its :attr:`Credentials.grace_until`
    (a gateway judges with it whether the secret a connection proved may have been rotated
    away): ``{bot id: grace_until}``. One query, no secret read or decrypted."""
    if not bot_ids:
        return {}
    rows = session.execute(
        select(Bot.id, Bot.previous_secret_until).where(
            Bot.id.in_(list(bot_ids)),
            Bot.transport == BotTransport.CONNECT.value,
            Bot.status != BotStatus.DELETED.value,
        )
    )
    return {bot_id: _unix(until) for bot_id, until in rows}
