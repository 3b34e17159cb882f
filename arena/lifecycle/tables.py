"""The tables where people play (docs/tables.md): open, take a seat, start, cancel.

A table is a tournament of format ``table`` (its status is the table's) with one match, and a
``tables`` row saying who sits where (:class:`arena.db.models.Table`)::

    created --(every person's seat taken) start--> running --(its match done)--> finished
       |                                              |
       +--------------------cancel--------------------+-------------------------> cancelled

The start draws the seed and publishes its commitment as any tournament's start does
(:mod:`arena.fairness`), stores the one match (:func:`arena.sources.table_match`) with its
seats, a person's seat holding the person's account (``match_seats.account_id``), and marks it
``queued`` for the caller to send. A table counts against its opener's and its people's
:func:`open_tables` until it is over. Each function is a transaction of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from arena.db.models import Match, MatchSeat, Table, Tournament, TournamentParticipant
from arena.lifecycle.base import Conflict, LifecycleError, NotFound, TournamentStatus, is_postgresql, lock_or_404
from arena.lifecycle.tournaments import begin_running, cancel_tournament, take_pending
from arena.schedule import DEFAULT_HOUSE_BOT
from arena.sources import table_match
from arena.status import SeatKind, TableKind, TournamentFormat

#: Statuses of a table that is not over (it counts against the limits).
OPEN = (TournamentStatus.CREATED, TournamentStatus.RUNNING)
#: Key of the PostgreSQL advisory lock serializing the tables' limit checks (:func:`check_limits`).
TABLES_LOCK = 0x7461626C65  # "table"


class TooManyTables(LifecycleError):
    """The account, or the site, has as many tables open as it may (HTTP 429, ``Retry-After``)."""

    def __init__(self, message: str, retry_after_s: int = 60):
        super().__init__(message)
        self.retry_after_s = retry_after_s


def open_tables(session: Session, account_id: int) -> int:
    """How many tables not over the account opened or sits at (a seat at a class table counts
    from the moment it is taken)."""
    tables = session.scalars(
        select(Table).join(Tournament, Tournament.id == Table.tournament_id).where(Tournament.status.in_(OPEN))
    ).all()
    return sum(
        1
        for t in tables
        if t.opened_by == account_id
        or any(s.get("kind") == SeatKind.PERSON and s.get("account_id") == account_id for s in t.seats)
    )


def site_open_tables(session: Session) -> int:
    """How many tables are not over on the site."""
    return int(
        session.scalar(
            select(func.count())
            .select_from(Table)
            .join(Tournament, Tournament.id == Table.tournament_id)
            .where(Tournament.status.in_(OPEN))
        )
        or 0
    )


def client_open_tables(session: Session, client: str) -> int:
    """How many tables not over were opened from ``client`` (:func:`arena.clients.client_key`)."""
    return int(
        session.scalar(
            select(func.count())
            .select_from(Table)
            .join(Tournament, Tournament.id == Table.tournament_id)
            .where(Tournament.status.in_(OPEN), Table.client == client)
        )
        or 0
    )


def check_limits(
    session: Session,
    account_id: int,
    *,
    per_account: int,
    site: int | None,
    client: str | None = None,
    per_client: int | None = None,
) -> None:
    """Raise :class:`TooManyTables` when ``account_id`` has ``per_account`` tables open, the
    client opening it (``client``) ``per_client`` whatever its accounts, or the site ``site``
    (None: not counted, a seat taken at a table already open).

    On PostgreSQL the check takes a transaction-scoped advisory lock, held until the caller's
    commit (the table stored, or the seat taken) or rollback: two opens sent at once count in
    turn, each seeing the other's table, never the same count twice (the limit is a limit)."""
    if is_postgresql(session):
        session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": TABLES_LOCK})
    if open_tables(session, account_id) >= per_account:
        raise TooManyTables(
            f"you have {per_account} table(s) open already: finish or cancel one first", retry_after_s=60
        )
    if client is not None and per_client is not None and client_open_tables(session, client) >= per_client:
        raise TooManyTables(
            f"{per_client} table(s) opened from this address are open already: finish or cancel one first", 60
        )
    if site is not None and site_open_tables(session) >= site:
        raise TooManyTables(f"the site has {site} tables open, its most: try again in a few minutes", 120)


def open_table(
    session: Session,
    *,
    opened_by: int,
    kind: TableKind,
    ruleset: str,
    options: dict[str, Any],
    time_rules: dict[str, float],
    person_time_rules: dict[str, float],
    seats: Sequence[dict[str, Any]],
    games: int,
    seed: int | None = None,
    join_key: str | None = None,
    name: str | None = None,
    client: str | None = None,
) -> Table:
    """Store a new table in status ``created`` and commit (its fields validated by the caller:
    :mod:`arena.usecases.tables`). ``time_rules``: the bots' (seconds); ``games``: Million
    Doubt games of the match (1 for the others); a ``seed`` given marks it ``seed_chosen``
    (left out of every rating); ``client``: who opened it (the per-client limit counts it)."""
    bots = sorted({int(s["bot_id"]) for s in seats if s.get("kind") == SeatKind.BOT})
    t = Tournament(
        name=name or "table",
        format=TournamentFormat.TABLE.value,
        organizer_id=opened_by,
        ruleset=ruleset,
        options=dict(options),
        time_rules=dict(time_rules),
        games_per_pairing=int(games),
        seed=seed,
        seed_chosen=seed is not None,
        max_faults=3,
        fill_with_house_bots=False,
        house_bot=DEFAULT_HOUSE_BOT,
        public_when_finished=False,
        status=TournamentStatus.CREATED,
    )
    t.participants = [TournamentParticipant(bot_id=b) for b in bots]
    session.add(t)
    session.flush()
    table = Table(
        tournament_id=t.id,
        kind=kind.value,
        opened_by=opened_by,
        seats=[dict(s) for s in seats],
        person_time_rules=dict(person_time_rules),
        join_key=join_key,
        client=client,
    )
    session.add(table)
    session.flush()
    if name is None:
        t.name = f"table {table.id}"
    session.commit()
    return table


def _lock_table(session: Session, table_id: int) -> tuple[Table, Tournament]:
    table = lock_or_404(session, Table, table_id, "table")
    t = lock_or_404(session, Tournament, table.tournament_id, "table")
    return table, t


def take_seat(session: Session, table_id: int, account_id: int) -> int:
    """Seat the account at a free person's seat of a ``created`` table (a class table's link);
    commit. Returns its seat (the one it holds already, if any).

    Raises:
        NotFound: no such table.
        Conflict: the table has started or is over, or every person's seat is taken.
    """
    table, t = _lock_table(session, table_id)
    for i, s in enumerate(table.seats):
        if s.get("kind") == SeatKind.PERSON and s.get("account_id") == account_id:
            session.rollback()
            return i
    if t.status != TournamentStatus.CREATED:
        session.rollback()
        raise Conflict(f"table {table_id} is {t.status}: its seats are no longer taken")
    for i, s in enumerate(table.seats):
        if s.get("kind") == SeatKind.PERSON and s.get("account_id") is None:
            seats = [dict(x) for x in table.seats]
            seats[i]["account_id"] = account_id
            table.seats = seats
            session.commit()
            return i
    session.rollback()
    raise Conflict(f"every seat of table {table_id} is taken")


def free_seats(table: Table) -> int:
    """People's seats of ``table`` nobody has taken yet."""
    return sum(1 for s in table.seats if s.get("kind") == SeatKind.PERSON and s.get("account_id") is None)


def start_table(session: Session, table_id: int) -> list[int]:
    """``created -> running``: draw the seed and publish its commitment, store the table's match
    (its people's seats with their accounts) ``queued``; commit. Returns the match id to send
    (a one-item list, as :func:`arena.lifecycle.start_tournament`).

    Raises:
        NotFound: no such table.
        Conflict: not ``created`` (started concurrently, cancelled), or a person's seat is free.
    """
    table, t = _lock_table(session, table_id)
    if t.status != TournamentStatus.CREATED:
        session.rollback()
        raise Conflict(f"table {table_id} is {t.status}")
    if free_seats(table):
        session.rollback()
        raise Conflict(f"table {table_id} has {free_seats(table)} free seat(s): every person's seat must be taken")
    begin_running(session, t, None)
    session.refresh(t)  # the seed, salt and commitment the start's UPDATE wrote
    assert t.seed is not None
    planned = table_match(t.id, int(t.seed), tuple(range(len(table.seats))))
    m = Match(tournament_id=t.id, index=planned.index, table=planned.table, seed=planned.seed)
    for i, s in enumerate(table.seats):
        kind = s.get("kind")
        if kind == SeatKind.PERSON:
            m.seats.append(MatchSeat(seat=i, account_id=int(s["account_id"])))
        elif kind == SeatKind.BOT:
            m.seats.append(MatchSeat(seat=i, bot_id=int(s["bot_id"])))
        else:
            m.seats.append(MatchSeat(seat=i, house_bot=str(s["house_bot"])))
    session.add(m)
    session.flush()
    taken = take_pending(session, t.id)
    session.commit()
    return taken


def cancel_table(session: Session, table_id: int) -> None:
    """Cancel a table not over (:func:`arena.lifecycle.cancel_tournament`: a match playing
    plays out); commit.

    Raises:
        NotFound, Conflict: as :func:`arena.lifecycle.cancel_tournament`.
    """
    table = session.get(Table, table_id)
    if table is None:
        raise NotFound(f"no table {table_id}")
    cancel_tournament(session, table.tournament_id)


def table_of(session: Session, tournament_id: int) -> Table | None:
    """The table whose tournament is ``tournament_id``, else None."""
    return session.scalar(select(Table).where(Table.tournament_id == tournament_id))


def seated(table: Table, account_id: int) -> int | None:
    """The account's seat at ``table`` (a person's), else None."""
    for i, s in enumerate(table.seats):
        if s.get("kind") == SeatKind.PERSON and s.get("account_id") == account_id:
            return i
    return None


__all__ = [
    "OPEN",
    "TooManyTables",
    "cancel_table",
    "check_limits",
    "client_open_tables",
    "free_seats",
    "open_table",
    "open_tables",
    "seated",
    "site_open_tables",
    "start_table",
    "table_of",
    "take_seat",
]
