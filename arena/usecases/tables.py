"""Table use cases (docs/tables.md): a person sits down against bots, an organizer opens a
table for a class, people answer their decisions.

* :func:`open_solo_table`: any signed-in account, one person's seat (its own) and bots: house
  sample bots (:data:`arena.schedule.HOUSE_BOTS`, ``search`` the strongest), the account's own
  bots whatever their check ("play against my bot", either transport), or other owners' bots
  that passed their check and whose owner lets people play them (``bots.play_people``).
  Started at once.
* :func:`open_class_table`: organizers; ``person`` seats, which signed-in students take by
  following the table's link (:func:`join_table`, its key), and bots; :func:`start_class_table`
  once every person's seat is taken.
* :func:`answer`: a person's try at the decision it is asked now (:mod:`arena.tables`).

Limits (:func:`arena.lifecycle.tables.check_limits`): ``ARENA_TABLES_PER_ACCOUNT`` tables open
per account (as a person or as the organizer), ``ARENA_TABLES_PER_CLIENT`` opened from one
client whatever its accounts, ``ARENA_TABLES_MAX`` on the site; the API's
per-address limit on writes applies as to any write (``api.ratelimit``: ``TABLE_LIMIT``).
Tournaments and ladders never seat a person: a person plays only at a table.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import redis
from sqlalchemy import select
from sqlalchemy.orm import Session

import engine
from arena import lifecycle, tables
from arena.access import is_organizer
from arena.db.models import Account, Bot, Match, Table, Tournament
from arena.dispatch import Dispatcher, QueueError
from arena.lifecycle import tables as table_states
from arena.limits import BoundsError, check_match_bounds
from arena.schedule import HOUSE_BOTS
from arena.status import BotStatus, SeatKind, TableKind, TournamentStatus
from arena.usecases import Forbidden, InvalidField, Unavailable

#: The people's time rules of a table unless chosen, seconds (TIME-1, generous: docs/tables.md).
PERSON_TIME_RULES = {"initial": 300.0, "increment": 30.0, "cap": 300.0}
#: Bounds of the people's time rules, seconds.
PERSON_INITIAL_S = (1.0, 3600.0)
PERSON_INCREMENT_S = (0.0, 600.0)
#: The bots' time rules at a table (the tournaments' defaults), seconds.
BOT_TIME_RULES = {"initial": 60.0, "increment": 10.0, "cap": 60.0}
#: Most Million Doubt games of a table's match.
MAX_GAMES = 20
#: The largest id a bot may have (the database's integer).
MAX_BOT_ID = 2**31 - 1
#: Seconds before a table refused for want of a worker may be tried again.
UNAVAILABLE_RETRY_S = 5


def _person_time_rules(given: dict[str, float] | None) -> dict[str, float]:
    tr = {**PERSON_TIME_RULES, **(given or {})}
    initial, increment, cap = float(tr["initial"]), float(tr["increment"]), float(tr["cap"])
    if not PERSON_INITIAL_S[0] <= initial <= PERSON_INITIAL_S[1]:
        raise InvalidField(
            "person_time_rules.initial", f"must be from {PERSON_INITIAL_S[0]:g} to {PERSON_INITIAL_S[1]:g} seconds"
        )
    if not PERSON_INCREMENT_S[0] <= increment <= PERSON_INCREMENT_S[1]:
        raise InvalidField(
            "person_time_rules.increment",
            f"must be from {PERSON_INCREMENT_S[0]:g} to {PERSON_INCREMENT_S[1]:g} seconds",
        )
    if not initial <= cap <= PERSON_INITIAL_S[1]:
        raise InvalidField("person_time_rules.cap", f"must be from the initial bank to {PERSON_INITIAL_S[1]:g} seconds")
    return {"initial": initial, "increment": increment, "cap": cap}


def _options(ruleset: str, options: dict[str, Any]) -> dict[str, Any]:
    try:
        normalized = engine.make_options(ruleset, options).to_dict()
        check_match_bounds(ruleset, options)
    except engine.OptionsError as exc:
        raise InvalidField("options", str(exc)) from None
    except BoundsError as exc:
        raise InvalidField(exc.field, str(exc)) from None
    return normalized


def _games(ruleset: str, games: int) -> int:
    if not engine.get_ruleset(ruleset).games_per_match_option:
        return 1
    if not 1 <= int(games) <= MAX_GAMES:
        raise InvalidField("games", f"must be from 1 to {MAX_GAMES}")
    return int(games)


def playable_bots(session: Session, account: Account, ruleset: str | None = None) -> list[Bot]:
    """The bots ``account`` may seat at a table (module docstring), by id; of ``ruleset`` if given."""
    rows = session.scalars(
        select(Bot)
        .where(
            Bot.status != BotStatus.DELETED,
            (Bot.owner_id == account.id) | ((Bot.status == BotStatus.READY) & Bot.play_people.is_(True)),
        )
        .order_by(Bot.id)
    ).all()
    return [b for b in rows if ruleset is None or ruleset in b.rulesets]


def _seat(session: Session, account: Account, ruleset: str, spec: Any, field: str) -> dict[str, Any]:
    """A bot's seat from an opponent spec: a house bot's name or a bot id."""
    if isinstance(spec, str) and not spec.isdigit():
        if spec not in HOUSE_BOTS:
            raise InvalidField(field, f"unknown house bot {spec!r}: one of {', '.join(HOUSE_BOTS)}, or a bot id")
        return {"kind": SeatKind.HOUSE.value, "house_bot": spec}
    try:
        if isinstance(spec, bool) or not isinstance(spec, int | str):  # 1.5 or true is not bot 1
            raise ValueError(spec)
        bot_id = int(spec)
    except (TypeError, ValueError):
        raise InvalidField(field, f"{spec!r} is neither a house bot nor a bot id") from None
    bot = session.get(Bot, bot_id) if 1 <= bot_id <= MAX_BOT_ID else None
    if bot is None or bot.status == BotStatus.DELETED:
        raise InvalidField(field, f"bot {bot_id} does not exist")
    if ruleset not in bot.rulesets:
        raise InvalidField(field, f"bot {bot_id} does not play {ruleset}")
    if bot.owner_id != account.id:
        if not bot.play_people:
            raise InvalidField(field, f"the owner of bot {bot_id} does not let people play it")
        if bot.status != BotStatus.READY:
            raise InvalidField(field, f"bot {bot_id} has not passed its check (status {bot.status})")
    return {"kind": SeatKind.BOT.value, "bot_id": bot.id}


def _send(session: Session, dispatcher: Dispatcher, table: Table, match_ids: list[int]) -> None:
    """Send the table's match; when no worker can be reached the table is cancelled (nothing
    was played) and :class:`Unavailable` raised."""
    try:
        for mid in match_ids:
            dispatcher.send_table(mid)
    except QueueError as exc:
        lifecycle.release_queued(session, match_ids)
        table_states.cancel_table(session, table.id)
        raise Unavailable(f"{exc}; the table was not started, try again", UNAVAILABLE_RETRY_S) from None
    lifecycle.mark_queued(session, match_ids)


def open_solo_table(
    session: Session,
    dispatcher: Dispatcher,
    account: Account,
    *,
    ruleset: str,
    opponents: Sequence[Any],
    options: dict[str, Any] | None = None,
    games: int = 2,
    seat: int = 0,
    person_time_rules: dict[str, float] | None = None,
    seed: int | None = None,
    tables_per_account: int,
    tables_max: int,
    client: str | None = None,
    tables_per_client: int | None = None,
) -> Table:
    """Open and start a table: ``account`` at ``seat``, ``opponents`` (house bot names or bot
    ids) in the other seats in order; commit and send its match.

    Raises:
        InvalidField: ``ruleset``, ``options``, ``opponents`` (how many, which), ``games``,
            ``seat`` or ``person_time_rules`` refused.
        TooManyTables: the account, the client (``client``, :func:`arena.clients.client_key`:
            ``tables_per_client`` whatever its accounts) or the site has as many tables open as
            it may.
        Unavailable: no worker can be reached (the table is cancelled).
    """
    if ruleset not in engine.RULESETS:
        raise InvalidField("ruleset", f"unknown rule set {ruleset!r}")
    n = engine.SEATS[ruleset]
    if len(opponents) != n - 1:
        raise InvalidField("opponents", f"{ruleset} needs {n - 1} opponent(s), not {len(opponents)}")
    if not 0 <= seat < n:
        raise InvalidField("seat", f"must be from 0 to {n - 1}")
    normalized = _options(ruleset, options or {})
    count = _games(ruleset, games)
    own = _person_time_rules(person_time_rules)
    bots = [_seat(session, account, ruleset, o, f"opponents.{i}") for i, o in enumerate(opponents)]
    seats = bots[:seat] + [{"kind": SeatKind.PERSON.value, "account_id": account.id}] + bots[seat:]
    table_states.check_limits(
        session,
        account.id,
        per_account=tables_per_account,
        site=tables_max,
        client=client,
        per_client=tables_per_client,
    )
    table = table_states.open_table(
        session,
        opened_by=account.id,
        kind=TableKind.SOLO,
        ruleset=ruleset,
        options=normalized,
        time_rules=BOT_TIME_RULES,
        person_time_rules=own,
        seats=seats,
        games=count,
        seed=seed,
        client=client,
    )
    _send(session, dispatcher, table, table_states.start_table(session, table.id))
    return table


def open_class_table(
    session: Session,
    account: Account,
    *,
    ruleset: str,
    seats: Sequence[Any],
    options: dict[str, Any] | None = None,
    games: int = 2,
    person_time_rules: dict[str, float] | None = None,
    seed: int | None = None,
    tables_per_account: int,
    tables_max: int,
    client: str | None = None,
    tables_per_client: int | None = None,
) -> Table:
    """Open a class table (``created``): ``seats`` in order, ``"person"`` for a student's seat
    (at least one), else a house bot's name or a bot id; its link key is ``join_key``. Commit.

    Raises:
        Forbidden: not an organizer.
        InvalidField, TooManyTables: as :func:`open_solo_table` (``seats`` instead of ``opponents``).
    """
    if not is_organizer(account):
        raise Forbidden("organizer role required")
    if ruleset not in engine.RULESETS:
        raise InvalidField("ruleset", f"unknown rule set {ruleset!r}")
    n = engine.SEATS[ruleset]
    if len(seats) != n:
        raise InvalidField("seats", f"{ruleset} has {n} seats, not {len(seats)}")
    if SeatKind.PERSON.value not in seats:
        raise InvalidField("seats", "a class table needs at least one person's seat")
    normalized = _options(ruleset, options or {})
    count = _games(ruleset, games)
    own = _person_time_rules(person_time_rules)
    plan = [
        {"kind": SeatKind.PERSON.value, "account_id": None}
        if s == SeatKind.PERSON.value
        else _seat(session, account, ruleset, s, f"seats.{i}")
        for i, s in enumerate(seats)
    ]
    table_states.check_limits(
        session,
        account.id,
        per_account=tables_per_account,
        site=tables_max,
        client=client,
        per_client=tables_per_client,
    )
    return table_states.open_table(
        session,
        opened_by=account.id,
        kind=TableKind.CLASS,
        ruleset=ruleset,
        options=normalized,
        time_rules=BOT_TIME_RULES,
        person_time_rules=own,
        seats=plan,
        games=count,
        seed=seed,
        join_key=secrets.token_urlsafe(24),
        client=client,
    )


def table_for(session: Session, table_id: int) -> Table:
    """The table.

    Raises:
        NotFound: no such table.
    """
    table = session.get(Table, table_id)
    if table is None:
        raise lifecycle.NotFound(f"table {table_id} not found")
    return table


def join_table(session: Session, account: Account, table_id: int, key: str, *, tables_per_account: int) -> int:
    """Take a free person's seat of a class table by its link (``key``); returns the seat (the
    one held already, if any).

    Raises:
        NotFound: no such table, or a wrong key (the same answer: a key is not guessed).
        Conflict: started, over, or every seat taken.
        TooManyTables: the account has as many tables open as it may.
    """
    table = table_for(session, table_id)
    if table.join_key is None or not secrets.compare_digest(table.join_key.encode(), key.encode()):
        raise lifecycle.NotFound(f"table {table_id} not found")
    held = table_states.seated(table, account.id)
    if held is not None:
        return held
    table_states.check_limits(session, account.id, per_account=tables_per_account, site=None)
    return table_states.take_seat(session, table_id, account.id)


def _organizer_of(account: Account, table: Table) -> None:
    if table.opened_by != account.id and not is_organizer(account):
        raise Forbidden(f"table {table.id} belongs to another account")


def start_class_table(session: Session, dispatcher: Dispatcher, account: Account, table_id: int) -> Table:
    """Start a class table once every person's seat is taken (its opener, or an organizer).

    Raises:
        NotFound, Forbidden; Conflict: not ``created``, or a seat is free; Unavailable: no worker.
    """
    table = table_for(session, table_id)
    _organizer_of(account, table)
    _send(session, dispatcher, table, table_states.start_table(session, table_id))
    return table


def cancel_table(session: Session, account: Account, table_id: int) -> Table:
    """Cancel a table not over (its opener, or an organizer); a match playing plays out.

    Raises:
        NotFound, Forbidden, Conflict.
    """
    table = table_for(session, table_id)
    _organizer_of(account, table)
    table_states.cancel_table(session, table_id)
    return table


def playing_seat(session: Session, account: Account, table: Table) -> tuple[int, int]:
    """``(match id, the account's seat)`` of a running table the account sits at.

    Raises:
        Forbidden: the account has no seat at the table.
        Conflict: the table is not running.
    """
    seat = table_states.seated(table, account.id)
    if seat is None:
        raise Forbidden(f"you have no seat at table {table.id}")
    t = session.get(Tournament, table.tournament_id)
    assert t is not None
    if t.status != TournamentStatus.RUNNING:
        raise lifecycle.Conflict(f"table {table.id} is {t.status}")
    mid = session.scalar(select(Match.id).where(Match.tournament_id == t.id))
    if mid is None:
        raise lifecycle.Conflict(f"table {table.id} has no match yet")
    return int(mid), seat


def answer(session: Session, client: redis.Redis, account: Account, table_id: int, rid: str, action: bytes) -> None:
    """Hand the person's try at answering request ``rid`` to the worker (it judges it, and says
    so on the person's channel: :mod:`arena.tables`).

    Raises:
        NotFound, Forbidden, Conflict: no such table, no seat there, not running;
        InvalidField: ``rid`` is not the request the person is asked now, or ``action`` too large;
        Unavailable: Redis cannot be reached.
    """
    mid, seat = playing_seat(session, account, table_for(session, table_id))
    session.rollback()  # hold no transaction while Redis answers
    try:
        pushed = tables.push_answer(client, mid, seat, rid, action)
    except ValueError as exc:
        raise InvalidField("action", str(exc)) from None
    except redis.RedisError as exc:
        raise Unavailable(f"the tables' relay (Redis) cannot be reached: {type(exc).__name__}", 2) from None
    if not pushed:
        raise InvalidField("rid", "this is not the decision you are asked now (it was answered, or its time ran out)")
