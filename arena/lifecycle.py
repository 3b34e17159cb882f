"""Every status of a tournament and of a match, and every transition between them.

This is the only module that writes a ``status`` column of ``tournaments``, ``matches``,
``bots`` or ``bot_checks`` (bots and their checks: :class:`BotStatus`, :class:`CheckStatus`,
at the end of the module).
API views, Celery tasks, the reaper and the command line call the functions below; each
one is a transaction of its own (it commits, or rolls back and raises).

Tournament::

    created --start--> running --(last match done)--> finished
       |                  |
       +-----cancel-------+----------------------------> cancelled

Match::

    pending --queue--> queued --claim--> running --store_result--> finished
       ^                 ^                  |  \\--fail----------> failed --retry--> queued
       |                 +---(reap_expired: lease expired; lost_queued re-sends a queued one)
       +-- (cancel: pending/queued -> cancelled; a running match plays out and keeps its result)

Leases: :func:`claim_match` gives the claiming delivery a lease (``lease_owner``,
``lease_expires_at``) that its worker renews every few seconds (:func:`renew_lease`) while
it plays; a delivery finding a live lease skips the match, so a match is never played twice
at once. The reaper (:mod:`arena.reaper`) puts a match whose lease expired back to
``queued`` (:func:`reap_expired`) and re-sends queued matches the broker lost
(:func:`lost_queued`). Times are the workers' clocks in UTC (keep them in sync, NTP).

A match is *done* when it is ``finished``, ``cancelled`` or ``failed``. When the last match of
a running tournament is done, the transaction that made it done also marks the tournament
``finished``: it first locks the tournament row (``SELECT ... FOR UPDATE`` on PostgreSQL), so
of several transactions finishing the last matches at the same moment, the last to take
the lock sees every other one committed, and exactly one marks the tournament finished.

Errors: :class:`Conflict` (the transition is not allowed from the current status; the API
answers 409), :class:`NotFound` (404).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, cast

from sqlalchemy import CursorResult, exists, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload, undefer_group

import engine
from arena import fairness, matchlog
from arena.crypto import EncryptionKeyError
from arena.db.models import (
    Account,
    Bot,
    BotCheck,
    Match,
    MatchLog,
    MatchResult,
    MatchSeat,
    Tournament,
    TournamentParticipant,
    utcnow,
)
from arena.schedule import ScheduledMatch
from engine.timebank import TimeRules


class TournamentStatus(StrEnum):
    """Status of a tournament (``tournaments.status``)."""

    CREATED = "created"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"


class MatchStatus(StrEnum):
    """Status of a match (``matches.status``)."""

    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    #: Could not be played for a reason that is not a bot's (internal error, retries spent);
    #: ``matches.failure`` says why. The organizer may retry it.
    FAILED = "failed"


#: Matches still to be played.
UNFINISHED: tuple[MatchStatus, ...] = (MatchStatus.PENDING, MatchStatus.QUEUED, MatchStatus.RUNNING)
#: Matches that no longer keep their tournament running.
DONE: tuple[MatchStatus, ...] = (MatchStatus.FINISHED, MatchStatus.CANCELLED, MatchStatus.FAILED)
#: Longest failure reason stored (characters).
MAX_FAILURE_CHARS = 500


class LifecycleError(Exception):
    """A transition that cannot be made; ``str(exc)`` is a message for the user."""


class Conflict(LifecycleError):
    """The transition is not allowed from the current status (HTTP 409)."""


class NotFound(LifecycleError):
    """No such tournament or match (HTTP 404)."""


def _update(session: Session, stmt: Any) -> int:
    """Execute an ``UPDATE`` statement; returns how many rows it changed."""
    result = cast(CursorResult[Any], session.execute(stmt))
    return int(result.rowcount or 0)


def _locked(session: Session, model: type[Any], key: int) -> Any:
    """``session.get`` with the row locked ``FOR UPDATE`` on PostgreSQL (SQLite: a plain get)."""
    if session.get_bind().dialect.name == "postgresql":
        return session.get(model, key, with_for_update=True, populate_existing=True)
    return session.get(model, key)


# -- tournaments ----------------------------------------------------------------------------
def create_tournament(session: Session, *, participants: Sequence[int], **fields: Any) -> Tournament:
    """Store a new tournament in status ``created`` and commit. ``fields``: the
    :class:`~arena.db.models.Tournament` columns (validated by the caller)."""
    t = Tournament(status=TournamentStatus.CREATED, **fields)
    t.participants = [TournamentParticipant(bot_id=b) for b in participants]
    session.add(t)
    session.commit()
    return t


def _take_pending(session: Session, tournament_id: int) -> list[int]:
    """``pending -> queued`` (compare-and-set, inside the caller's transaction) for the
    tournament's pending matches; returns their ids in schedule order. Of concurrent callers,
    each match goes to exactly one."""
    rows = session.execute(
        update(Match)
        .where(Match.tournament_id == tournament_id, Match.status == MatchStatus.PENDING)
        .values(status=MatchStatus.QUEUED, queued_at=utcnow())
        .returning(Match.id, Match.index)
    ).all()
    return [r[0] for r in sorted(rows, key=lambda r: r[1])]


def start_tournament(
    session: Session, tournament_id: int, schedule: Iterable[ScheduledMatch] | None = None
) -> list[int]:
    """``created -> running``: draw the seed's salt and publish its commitment
    (:mod:`arena.fairness`); commit. With ``schedule``, its matches are stored in the
    same transaction; without it the tournament runs with no match yet, and
    :func:`store_schedule` stores them off the request path (a 128-bot schedule has
    thousands of matches: seconds of inserts).

    Returns the ids of the matches to send to the broker, marked ``queued`` in the same
    transaction (compare-and-set ``pending -> queued``): this caller owns them, so of
    concurrent starts exactly one gets each match (the others get :class:`Conflict`). If
    sending fails, give them back with :func:`release_queued` (a later start sends them);
    if the caller dies before sending, the reaper finds them missing from the broker and
    sends them (:func:`lost_queued`). A tournament already ``running`` is not rescheduled:
    its ``pending`` matches are taken, or ``[]`` is returned while it has no match yet (its
    schedule is still to be stored).

    Raises:
        NotFound: no such tournament.
        Conflict: finished or cancelled; started concurrently; running with matches, none
            of them pending.
    """
    t = _locked(session, Tournament, tournament_id)
    if t is None:
        session.rollback()
        raise NotFound(f"tournament {tournament_id} not found")
    if t.status == TournamentStatus.CREATED:
        salt = fairness.new_salt()
        claimed = _update(
            session,
            update(Tournament)
            .where(Tournament.id == t.id, Tournament.status == TournamentStatus.CREATED)
            .values(
                status=TournamentStatus.RUNNING,
                started_at=utcnow(),
                salt=salt,
                commitment=fairness.commitment(int(t.seed), salt),
            ),
        )
        if claimed != 1:
            session.rollback()
            raise Conflict(f"tournament {tournament_id} was started concurrently")
        planned = list(schedule) if schedule is not None else []
        try:
            if planned:  # bulk inserts: a 128-bot schedule has thousands of matches
                _store_schedule(session, t.id, planned)
            session.flush()
        except IntegrityError:  # another start stored the schedule first (SQLite has no row lock)
            session.rollback()
            raise Conflict(f"tournament {tournament_id} was started concurrently") from None
    elif t.status != TournamentStatus.RUNNING:
        session.rollback()
        raise Conflict(f"tournament {tournament_id} is {t.status}")
    try:
        taken = _take_pending(session, tournament_id)
        scheduled = (
            bool(taken)
            or session.scalar(select(Match.id).where(Match.tournament_id == tournament_id).limit(1)) is not None
        )
        session.commit()
    except IntegrityError:
        session.rollback()
        raise Conflict(f"tournament {tournament_id} was started concurrently") from None
    if not taken and scheduled:
        raise Conflict(f"tournament {tournament_id} is already running")
    return taken


def release_queued(session: Session, match_ids: Sequence[int]) -> int:
    """``queued -> pending`` for matches whose sending to the broker failed (after
    :func:`start_tournament` or :func:`retry_failed`), so a later start sends them; commit.
    Returns how many changed."""
    if not match_ids:
        return 0
    changed = _update(
        session,
        update(Match)
        .where(Match.id.in_(list(match_ids)), Match.status == MatchStatus.QUEUED)
        .values(status=MatchStatus.PENDING),
    )
    session.commit()
    return changed


def store_schedule(session: Session, tournament_id: int, build: Callable[[], Iterable[ScheduledMatch]]) -> int:
    """The second half of a start without a schedule (:func:`start_tournament`): store the
    matches of ``build()`` as ``pending`` for a ``running`` tournament that has no match
    yet; commit. The tournament row is locked first, so of two concurrent calls one stores.

    Returns how many matches were stored: 0 when the tournament already has its matches,
    or is not running (cancelled meanwhile). Errors of ``build`` propagate (nothing stored).
    """
    t = _locked(session, Tournament, tournament_id)
    if (
        t is None
        or t.status != TournamentStatus.RUNNING
        or session.scalar(select(Match.id).where(Match.tournament_id == tournament_id).limit(1)) is not None
    ):
        session.rollback()
        return 0
    planned = list(build())
    try:
        if planned:
            _store_schedule(session, tournament_id, planned)
        session.commit()
    except IntegrityError:  # stored concurrently (SQLite has no row lock)
        session.rollback()
        return 0
    return len(planned)


def _store_schedule(session: Session, tournament_id: int, planned: list[ScheduledMatch]) -> None:
    """Insert the matches (``pending``) and their seats, in the caller's transaction.

    PostgreSQL: the ids are drawn from the sequence in one query and both tables are
    written with ``COPY`` (8,128 matches in a fraction of a second; multi-row ``INSERT``s
    took seconds); other databases: two bulk ``INSERT``s."""
    now = utcnow()
    seat_rows = (
        (m, i, e if isinstance(e, int) else None, e if isinstance(e, str) else None)
        for m in planned
        for i, e in enumerate(m.seats)
    )
    if session.get_bind().dialect.name == "postgresql":
        ids = list(
            session.scalars(
                text("SELECT nextval(pg_get_serial_sequence('matches', 'id')) FROM generate_series(1, :n)"),
                {"n": len(planned)},
            )
        )
        by_index = {m.index: mid for m, mid in zip(planned, ids)}
        raw = session.connection().connection.driver_connection
        assert raw is not None
        with raw.cursor() as cur:
            with cur.copy(
                'COPY matches (id, tournament_id, "index", "table", seed, status, attempts, created_at) FROM STDIN'
            ) as copy:
                for m, mid in zip(planned, ids):
                    copy.write_row((mid, tournament_id, m.index, m.table, m.seed, MatchStatus.PENDING.value, 0, now))
            with cur.copy("COPY match_seats (match_id, seat, bot_id, house_bot) FROM STDIN") as copy:
                for m, i, bot_id, house in seat_rows:
                    copy.write_row((by_index[m.index], i, bot_id, house))
        return
    rows = session.execute(
        insert(Match).returning(Match.id, Match.index, sort_by_parameter_order=True),
        [
            {
                "tournament_id": tournament_id,
                "index": m.index,
                "table": m.table,
                "seed": m.seed,
                "status": MatchStatus.PENDING,
                "attempts": 0,
                "created_at": now,
            }
            for m in planned
        ],
    ).all()
    by_index = {index: mid for mid, index in rows}
    session.execute(
        insert(MatchSeat),
        [
            {"match_id": by_index[m.index], "seat": i, "bot_id": bot_id, "house_bot": house}
            for m, i, bot_id, house in seat_rows
        ],
    )


def pending_batch(session: Session, tournament_id: int, limit: int) -> list[int]:
    """Up to ``limit`` ids of the tournament's ``pending`` matches, in schedule order, to
    send to the broker; ``[]`` when none is left or the tournament is not running.

    Does not commit: on PostgreSQL the rows stay locked (``FOR UPDATE SKIP LOCKED``) until
    the caller's :func:`mark_queued` commits, so two senders never send the same match."""
    t = session.get(Tournament, tournament_id)
    if t is None or t.status != TournamentStatus.RUNNING:
        return []
    stmt = (
        select(Match.id)
        .where(Match.tournament_id == tournament_id, Match.status == MatchStatus.PENDING)
        .order_by(Match.index)
        .limit(limit)
    )
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(skip_locked=True)
    return list(session.scalars(stmt))


def mark_queued(session: Session, match_ids: Sequence[int]) -> int:
    """``pending -> queued`` for the given matches (after they were sent to the broker);
    commit. Returns how many changed (0 for matches :func:`start_tournament` or
    :func:`retry_failed` already marked queued)."""
    if not match_ids:
        return 0
    changed = _update(
        session,
        update(Match)
        .where(Match.id.in_(list(match_ids)), Match.status == MatchStatus.PENDING)
        .values(status=MatchStatus.QUEUED, queued_at=utcnow()),
    )
    session.commit()
    return changed


#: A match sent to the broker less than this many seconds ago is not sent again by resume
#: (of concurrent resume calls, one wins).
RESUME_GUARD_S = 10.0


def resumable_matches(session: Session, tournament_id: int, *, include_running: bool = False) -> list[int]:
    """Ids of a running tournament's matches to send to the broker again: ``pending`` and
    ``queued`` (and ``running`` with ``include_running``), in schedule order, except those
    sent less than :data:`RESUME_GUARD_S` seconds ago; their ``queued_at`` becomes now, under
    the tournament's row lock, so of concurrent calls one gets the matches and the others
    :class:`Conflict`; commit. (With ``arena beat`` running, the reaper does this by itself.)

    Raises:
        NotFound, Conflict: no such tournament; not running; nothing to re-enqueue.
    """
    t = _locked(session, Tournament, tournament_id)
    if t is None:
        session.rollback()
        raise NotFound(f"tournament {tournament_id} not found")
    if t.status != TournamentStatus.RUNNING:
        session.rollback()
        raise Conflict(f"tournament {tournament_id} is {t.status}, not running")
    states = UNFINISHED if include_running else (MatchStatus.PENDING, MatchStatus.QUEUED)
    now = _now()
    cutoff = now - timedelta(seconds=RESUME_GUARD_S)
    ids = list(
        session.scalars(
            select(Match.id)
            .where(
                Match.tournament_id == tournament_id,
                Match.status.in_(states),
                Match.queued_at.is_(None) | (Match.queued_at < cutoff),
            )
            .order_by(Match.index)
        )
    )
    if not ids:
        session.rollback()
        raise Conflict(
            f"tournament {tournament_id} has no match to re-enqueue "
            f"(none, or all sent less than {RESUME_GUARD_S:.0f} s ago)"
        )
    session.execute(update(Match).where(Match.id.in_(ids)).values(queued_at=now))
    session.commit()
    return ids


def cancel_tournament(session: Session, tournament_id: int) -> None:
    """``created|running -> cancelled``; its ``pending`` and ``queued`` matches become
    ``cancelled`` (a running match plays out and keeps its result); commit.

    Raises:
        NotFound, Conflict: no such tournament; already finished or cancelled.
    """
    t = _locked(session, Tournament, tournament_id)
    if t is None:
        session.rollback()
        raise NotFound(f"tournament {tournament_id} not found")
    done = _update(
        session,
        update(Tournament)
        .where(
            Tournament.id == tournament_id, Tournament.status.in_((TournamentStatus.CREATED, TournamentStatus.RUNNING))
        )
        .values(status=TournamentStatus.CANCELLED, finished_at=utcnow()),
    )
    if done != 1:
        session.rollback()
        raise Conflict(f"tournament {tournament_id} is {t.status}")
    session.execute(
        update(Match)
        .where(Match.tournament_id == tournament_id, Match.status.in_((MatchStatus.PENDING, MatchStatus.QUEUED)))
        .values(status=MatchStatus.CANCELLED)
    )
    session.commit()


def unfinished_count(session: Session, tournament_id: int) -> int:
    """How many matches of the tournament are pending, queued or running."""
    return int(
        session.scalar(
            select(func.count())
            .select_from(Match)
            .where(Match.tournament_id == tournament_id, Match.status.in_(UNFINISHED))
        )
        or 0
    )


def finish_if_done(session: Session, tournament_id: int) -> bool:
    """``running -> finished`` when none of its matches is left to play, inside the caller's
    transaction (the caller commits). Locks the tournament row first (module docstring).

    Returns True if the tournament was marked finished by this call.
    """
    t = _locked(session, Tournament, tournament_id)
    if t is None or t.status != TournamentStatus.RUNNING or unfinished_count(session, tournament_id):
        return False
    return (
        _update(
            session,
            update(Tournament)
            .where(Tournament.id == tournament_id, Tournament.status == TournamentStatus.RUNNING)
            .values(status=TournamentStatus.FINISHED, finished_at=utcnow()),
        )
        == 1
    )


# -- matches --------------------------------------------------------------------------------
@dataclass(frozen=True)
class SeatPlan:
    """A seat of a claimed match: a bot (id, ``name#id``, URL, signing secret, and the
    previous secret while a rotation's grace period runs) or a house bot. ``withdrawn``: the
    bot was deleted; its seat forfeits without any request (no URL is given)."""

    seat: int
    bot_id: int | None
    house_bot: str | None
    name: str
    url: str | None
    secret: str | None
    previous_secret: str | None = None
    withdrawn: bool = False


@dataclass(frozen=True)
class MatchPlan:
    """What a claimed match is to be played with (time rules in milliseconds inside
    :class:`~engine.timebank.TimeRules`); ``attempt`` counts claims, from 1; ``seed`` is the
    match seed (the attempt is played from :func:`arena.fairness.attempt_seed`);
    ``match_index`` its schedule position and ``commitment`` the tournament's, both recorded
    in the log."""

    match_id: int
    tournament_id: int
    ruleset: str
    options: dict[str, Any]
    time_rules: TimeRules
    games: int
    seed: int
    max_faults: int
    attempt: int
    seats: tuple[SeatPlan, ...]
    match_index: int = 0
    commitment: str | None = None


class SkipReason(StrEnum):
    """Why a delivered match is not played."""

    NO_SUCH_MATCH = "no such match"
    DONE = "already done"
    CANCELLED = "tournament cancelled"
    #: Another delivery holds a live lease on it: it is being played (never twice at once).
    LEASED = "being played"
    #: This worker cannot decrypt the bots' signing secrets (a wrong or missing
    #: ``ARENA_ENCRYPTION_KEYS``): the match is now ``failed`` with the reason.
    NO_KEY = "secrets not decrypted"


@dataclass(frozen=True)
class Claimed:
    """The match is now ``running`` for this delivery; play ``plan``."""

    plan: MatchPlan


@dataclass(frozen=True)
class Skipped:
    """The delivery must not play the match; ``tournament_id`` is None for an unknown match.
    ``message`` says why (for ``NO_KEY``: the failure reason stored on the match)."""

    reason: SkipReason
    message: str
    tournament_id: int | None
    ruleset: str | None


ClaimResult = Claimed | Skipped


def _games_per_match(t: Tournament) -> int:
    # Million Doubt plays games_per_pairing engine games in one match; the 4-player rule
    # sets play one engine game (a whole TM game / JDF match) per match.
    return t.games_per_pairing if engine.get_ruleset(t.ruleset).games_per_match_option else 1


def _now() -> datetime:
    return utcnow()


def _lease_live(match: Match, now: datetime) -> bool:
    exp = match.lease_expires_at
    if exp is None:
        return False
    if exp.tzinfo is None:  # SQLite returns naive datetimes (stored as UTC)
        exp = exp.replace(tzinfo=UTC)
    return exp > now


def claim_match(
    session: Session, match_id: int, *, owner: str | None = None, lease_s: float | None = None
) -> ClaimResult:
    """``queued|pending|running -> running`` for a delivery of match ``match_id``; commit.

    The match row is locked ``FOR UPDATE`` (a compare-and-set of the lease). A finished,
    cancelled or failed match, or one with a stored result, is skipped; a match of a
    cancelled tournament becomes ``cancelled`` and is skipped; a ``running`` match whose
    lease is still live is skipped (``LEASED``: another delivery plays it). Otherwise
    ``attempts`` grows by one, the lease goes to ``owner`` until now + ``lease_s`` seconds
    (no lease when ``lease_s`` is None) and the plan is returned.

    When the bots' signing secrets cannot be decrypted here (a wrong or missing
    ``ARENA_ENCRYPTION_KEYS``: :class:`arena.crypto.EncryptionKeyError`), the match is
    not played: it becomes ``failed`` with a reason naming the key problem and the worker
    (``owner``'s ``host:pid``), and is skipped (``NO_KEY``). Every worker of a deployment
    shares the key, so another worker would not do better; the organizer retries the match
    once the key is fixed (:func:`retry_failed`).
    """
    stmt = select(Match).where(Match.id == match_id).options(selectinload(Match.seats))
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(of=Match)
    match = session.scalars(stmt).first()
    if match is None:
        session.rollback()
        return Skipped(SkipReason.NO_SUCH_MATCH, f"no match {match_id}", None, None)
    t = session.get(Tournament, match.tournament_id)
    assert t is not None
    has_result = session.get(MatchResult, match_id) is not None
    if match.status in DONE or has_result:
        status = MatchStatus.FINISHED if has_result else match.status
        session.rollback()
        return Skipped(SkipReason.DONE, f"match {match_id} is {status}", t.id, t.ruleset)
    if t.status == TournamentStatus.CANCELLED:
        match.status = MatchStatus.CANCELLED
        match.lease_owner = match.lease_expires_at = None
        session.commit()
        return Skipped(SkipReason.CANCELLED, f"match {match_id}: tournament {t.id} is cancelled", t.id, t.ruleset)
    now = _now()
    if match.status == MatchStatus.RUNNING and _lease_live(match, now):
        session.rollback()
        return Skipped(SkipReason.LEASED, f"match {match_id} is being played (leased)", t.id, t.ruleset)
    try:
        seats = _seat_plans(session, match)
    except EncryptionKeyError as exc:
        session.rollback()
        where = (owner or "").rsplit(":", 1)[0] or "?"
        return _fail_unplayable(
            session,
            match_id,
            f"{exc}, on worker {where}: the match was not played; fix that worker's key, then retry the match",
        )
    match.status = MatchStatus.RUNNING
    match.attempts = (match.attempts or 0) + 1
    match.started_at = now
    match.lease_owner = owner
    match.lease_expires_at = None if lease_s is None else now + timedelta(seconds=lease_s)
    tr = t.time_rules or {}
    plan = MatchPlan(
        match_id=match.id,
        tournament_id=t.id,
        ruleset=t.ruleset,
        options=dict(t.options or {}),
        time_rules=TimeRules.from_seconds(
            float(tr.get("initial", 60.0)), float(tr.get("increment", 10.0)), float(tr.get("cap", 60.0))
        ),
        games=_games_per_match(t),
        seed=int(match.seed),
        max_faults=t.max_faults,
        attempt=match.attempts,
        seats=tuple(seats),
        match_index=match.index,
        commitment=t.commitment,
    )
    session.commit()
    return Claimed(plan)


def match_bot_urls(session: Session, match_id: int) -> list[str]:
    """The URLs of the bots seated in match ``match_id`` that are not deleted, in seat order
    (read without a lock: for the endpoint claims taken before :func:`claim_match`,
    :mod:`arena.runner.claims`); empty for an unknown match. Ends the transaction."""
    urls = list(
        session.scalars(
            select(Bot.url)
            .join(MatchSeat, MatchSeat.bot_id == Bot.id)
            .where(MatchSeat.match_id == match_id, Bot.status != BotStatus.DELETED)
            .order_by(MatchSeat.seat)
        )
    )
    session.rollback()
    return [u for u in urls if u]


def _seat_plans(session: Session, match: Match) -> list[SeatPlan]:
    """The seats of ``match`` with their bots' URLs and decrypted secrets (one query).

    Raises:
        arena.crypto.EncryptionKeyError: the secrets cannot be decrypted here.
    """
    bot_ids = [s.bot_id for s in match.seats if s.bot_id is not None]
    bots = {b.id: b for b in session.scalars(select(Bot).where(Bot.id.in_(bot_ids)).options(undefer_group("secrets")))}
    seats = []
    for s in match.seats:
        if s.bot_id is not None:
            b = bots[s.bot_id]
            if b.status == BotStatus.DELETED:
                seats.append(SeatPlan(s.seat, b.id, None, f"{b.name}#{b.id}", None, None, withdrawn=True))
            else:
                seats.append(SeatPlan(s.seat, b.id, None, f"{b.name}#{b.id}", b.url, b.secret, b.grace_secret()))
        else:
            seats.append(SeatPlan(s.seat, None, s.house_bot, s.house_bot or "house", None, None))
    return seats


def _fail_unplayable(session: Session, match_id: int, reason: str) -> Skipped:
    """The ``NO_KEY`` end of :func:`claim_match`, in a transaction of its own: the match row
    locked again, and failed unless meanwhile done or leased by another delivery; commit."""
    match = _locked(session, Match, match_id)
    assert match is not None  # claim_match found it; matches are never deleted
    t = session.get(Tournament, match.tournament_id)
    assert t is not None
    if match.status in DONE or session.get(MatchResult, match_id) is not None:
        session.rollback()
        return Skipped(SkipReason.DONE, f"match {match_id} is {match.status}", t.id, t.ruleset)
    if match.status == MatchStatus.RUNNING and _lease_live(match, _now()):
        session.rollback()
        return Skipped(SkipReason.LEASED, f"match {match_id} is being played (leased)", t.id, t.ruleset)
    match.status = MatchStatus.FAILED
    match.failure = " ".join(reason.split())[:MAX_FAILURE_CHARS]
    match.finished_at = utcnow()
    match.lease_owner = match.lease_expires_at = None
    session.flush()
    finish_if_done(session, t.id)
    session.commit()
    return Skipped(SkipReason.NO_KEY, match.failure, t.id, t.ruleset)


def store_result(
    session: Session,
    match_id: int,
    *,
    scores: list[float],
    places: list[int],
    faults: list[int],
    games: list[dict[str, Any]],
    timings: dict[str, Any],
    log: Any,
) -> bool:
    """``running -> finished``: store the result and the full log of match ``match_id``
    exactly once, and finish the tournament if this was its last match; commit.

    Lists are indexed by seat (see :class:`arena.db.models.MatchResult`). The result's
    primary key is the match id and the log's ``match_id`` is unique, so a second delivery
    that played the match again stores nothing.

    Returns:
        True if this call stored the result, False if one was already stored.
    Raises:
        ValueError: no such match, or list lengths differ from the match's seat count.
        arena.matchlog.LogEncodingError: the log is not strict JSON in UTF-8.
    """
    match = session.get(Match, match_id)
    if match is None:
        raise ValueError(f"no match {match_id}")
    n = len(match.seats)
    for name, values in (("scores", scores), ("places", places), ("faults", faults)):
        if len(values) != n:
            raise ValueError(f"{name} has {len(values)} entries, the match has {n} seats")
    data, size = matchlog.compress(log)
    try:
        session.add(
            MatchResult(
                match_id=match_id,
                scores=list(scores),
                places=list(places),
                faults=list(faults),
                games=list(games),
                timings=dict(timings),
            )
        )
        session.add(MatchLog(match_id=match_id, data=data, size=size))
        session.flush()
    except IntegrityError:
        session.rollback()
        return False
    session.execute(
        update(Match)
        .where(Match.id == match_id)
        .values(
            status=MatchStatus.FINISHED, finished_at=utcnow(), failure=None, lease_owner=None, lease_expires_at=None
        )
    )
    finish_if_done(session, match.tournament_id)
    session.commit()
    return True


def fail_match(session: Session, match_id: int, reason: str) -> bool:
    """``running|queued|pending -> failed`` with ``reason`` (shown to the organizer), and
    finish the tournament if this was its last match; commit. Returns False if the match
    was already done (nothing changed)."""
    match = _locked(session, Match, match_id)
    if match is None or match.status in DONE:
        session.rollback()
        return False
    match.status = MatchStatus.FAILED
    match.failure = " ".join(reason.split())[:MAX_FAILURE_CHARS] or "failed"
    match.finished_at = utcnow()
    match.lease_owner = match.lease_expires_at = None
    session.flush()
    finish_if_done(session, match.tournament_id)
    session.commit()
    return True


def retry_failed(session: Session, tournament_id: int, match_ids: Sequence[int] | None = None) -> list[int]:
    """``failed -> queued`` for the tournament's failed matches (all, or ``match_ids``); a
    finished tournament with failed matches goes back to ``running``; commit. Returns the ids
    to send to the broker, owned by this caller as for :func:`start_tournament` (a failed
    send: :func:`release_queued`, then start the tournament again).

    Raises:
        NotFound, Conflict: no such tournament; cancelled; no failed match to retry.
    """
    t = _locked(session, Tournament, tournament_id)
    if t is None:
        session.rollback()
        raise NotFound(f"tournament {tournament_id} not found")
    if t.status not in (TournamentStatus.RUNNING, TournamentStatus.FINISHED):
        session.rollback()
        raise Conflict(f"tournament {tournament_id} is {t.status}")
    cond = [Match.tournament_id == tournament_id, Match.status == MatchStatus.FAILED]
    if match_ids is not None:
        cond.append(Match.id.in_(list(match_ids)))
    ids = list(session.scalars(select(Match.id).where(*cond).order_by(Match.index)))
    if not ids:
        session.rollback()
        raise Conflict(f"tournament {tournament_id} has no failed match to retry")
    session.execute(
        update(Match).where(Match.id.in_(ids)).values(status=MatchStatus.QUEUED, finished_at=None, queued_at=utcnow())
    )
    if t.status == TournamentStatus.FINISHED:
        t.status = TournamentStatus.RUNNING
        t.finished_at = None
    session.commit()
    return ids


def renew_lease(session: Session, match_id: int, owner: str, lease_s: float) -> bool:
    """Extend ``owner``'s lease on running match ``match_id`` to now + ``lease_s`` seconds;
    commit. Returns False if the match is no longer running under that owner's lease (it was
    stored, failed, or the reaper gave it to another delivery after the lease expired)."""
    res = session.execute(
        update(Match)
        .where(Match.id == match_id, Match.status == MatchStatus.RUNNING, Match.lease_owner == owner)
        .values(lease_expires_at=_now() + timedelta(seconds=lease_s))
    )
    session.commit()
    return getattr(res, "rowcount", 0) == 1


def reap_expired(session: Session, *, limit: int = 500, keep: Iterable[int] = ()) -> list[int]:
    """``running -> queued`` for matches whose lease has expired (their worker died or hung):
    the lease is cleared and ``queued_at`` set; commit. Returns their ids, to send to the
    broker (the reaper sends them ahead of the queue). Rows another transaction holds are
    skipped (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), so concurrent reapers never return
    the same match. A running match without a lease (claimed by code that took none) is left,
    and so are the matches of ``keep`` (played, their result waiting in the spool to be
    stored, :mod:`arena.spool`: never played again).
    """
    now = _now()
    stmt = (
        select(Match.id)
        .where(Match.status == MatchStatus.RUNNING, Match.lease_expires_at.is_not(None), Match.lease_expires_at < now)
        .order_by(Match.id)
        .limit(limit)
    )
    kept = list(keep)
    if kept:
        stmt = stmt.where(Match.id.not_in(kept))
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(skip_locked=True)
    ids = list(session.scalars(stmt))
    if ids:
        session.execute(
            update(Match)
            .where(Match.id.in_(ids))
            .values(status=MatchStatus.QUEUED, lease_owner=None, lease_expires_at=None, queued_at=now)
        )
    session.commit()
    return ids


def lost_queued(session: Session, in_broker: Iterable[int], *, older_than_s: float, limit: int = 500) -> list[int]:
    """Queued matches of running tournaments that the broker lost: queued more than
    ``older_than_s`` seconds ago (or at an unknown time) and not among ``in_broker`` (the
    match ids of the broker's messages, waiting or delivered). Their ``queued_at`` becomes
    now (so they are not sent again before another ``older_than_s``); commit. Returns their
    ids, to send again. A duplicate message is harmless: the second delivery finds the
    match running under a live lease, or done, and skips it."""
    now = _now()
    present = set(in_broker)
    cutoff = now - timedelta(seconds=older_than_s)
    stmt = (
        select(Match.id)
        .join(Tournament, Tournament.id == Match.tournament_id)
        .where(
            Match.status == MatchStatus.QUEUED,
            Tournament.status == TournamentStatus.RUNNING,
            (Match.queued_at.is_(None)) | (Match.queued_at < cutoff),
        )
        .order_by(Match.tournament_id, Match.index)
        .limit(limit)
    )
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(of=Match, skip_locked=True)
    ids = [i for i in session.scalars(stmt) if i not in present]
    if ids:
        session.execute(update(Match).where(Match.id.in_(ids)).values(queued_at=now))
    session.commit()
    return ids


def stalled_tournaments(session: Session, *, older_than_s: float, limit: int = 100) -> list[int]:
    """Ids of running tournaments started more than ``older_than_s`` seconds ago that still
    have a match to send (``pending``) or no match at all (a large field whose schedule was
    never stored): their sender is gone (``arena.enqueue_tournament`` lost with the broker,
    its worker killed, its retries spent; a start that answered 503 halfway). The reaper
    sends the task again for those it finds no message of (:mod:`arena.reaper`). Reads
    only; oldest first."""
    cutoff = _now() - timedelta(seconds=older_than_s)
    has_pending = exists().where(Match.tournament_id == Tournament.id, Match.status == MatchStatus.PENDING)
    has_match = exists().where(Match.tournament_id == Tournament.id)
    stmt = (
        select(Tournament.id)
        .where(Tournament.status == TournamentStatus.RUNNING, Tournament.started_at < cutoff, has_pending | ~has_match)
        .order_by(Tournament.started_at)
        .limit(limit)
    )
    return list(session.scalars(stmt))


def tournament_done(session: Session, tournament_id: int) -> bool:
    """True when no match of the tournament is pending, queued or running."""
    return unfinished_count(session, tournament_id) == 0


# -- bots and bot checks ----------------------------------------------------------------------
class BotStatus(StrEnum):
    """Status of a bot (``bots.status``).

    ::

        unchecked --begin_check--> checking --finish_check--> ready | failed
            ^                         |  (cannot be sent, abandoned: back to the status before)
            +---- update_bot (URL or rule sets changed) ---- ready | failed
        any --delete_bot--> deleted
    """

    UNCHECKED = "unchecked"
    CHECKING = "checking"
    READY = "ready"
    FAILED = "failed"
    DELETED = "deleted"


class CheckStatus(StrEnum):
    """Status of a bot check (``bot_checks.status``): ``queued -> running -> passed | failed``;
    ``error`` when it could not be run (no broker, abandoned by its worker, internal error)."""

    QUEUED = "queued"
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"


#: Checks still to finish.
ACTIVE_CHECKS: tuple[CheckStatus, ...] = (CheckStatus.QUEUED, CheckStatus.RUNNING)
#: Most checks queued or running at once for the bots of one account (HTTP 429 beyond).
MAX_CHECKS_PER_ACCOUNT = 2
#: A queued or running check without a heartbeat for this long (seconds) is abandoned (its
#: worker died): a new check of the bot may start. A running check beats at least every
#: decision (at most 10 s apart, arena.conformance.CONFORMANCE_TIME_RULES_S).
CHECK_STALE_S = 300
#: ``Retry-After`` of a refused check (too many running for the account), seconds.
CHECK_RETRY_AFTER_S = 30


class CheckRunning(Conflict):
    """The bot already has a check queued or running (``check_id``); HTTP 409."""

    def __init__(self, message: str, check_id: int):
        super().__init__(message)
        self.check_id = check_id


class TooManyChecks(LifecycleError):
    """The account has :data:`MAX_CHECKS_PER_ACCOUNT` checks queued or running, or used its
    hour of check time; HTTP 429 with ``Retry-After: retry_after_s``."""

    def __init__(self, message: str, retry_after_s: int = CHECK_RETRY_AFTER_S):
        super().__init__(message)
        self.retry_after_s = max(1, int(retry_after_s))


#: The window of the per-account check time cap (``ARENA_CHECK_SECONDS_PER_HOUR``), seconds.
CHECK_TIME_WINDOW_S = 3600


def _check_seconds(session: Session, account_id: int, now: datetime) -> tuple[float, datetime | None]:
    """Seconds of checks the account ran in the last :data:`CHECK_TIME_WINDOW_S` (a running
    check counts up to now), and the start of its oldest check in the window."""
    since = now - timedelta(seconds=CHECK_TIME_WINDOW_S)
    rows = session.execute(
        select(BotCheck.started_at, BotCheck.finished_at).where(
            BotCheck.account_id == account_id, BotCheck.started_at.is_not(None), BotCheck.started_at >= since
        )
    ).all()
    used, oldest = 0.0, None
    for started, finished in rows:
        started, finished = _aware(started), _aware(finished) or now
        used += max(0.0, (min(finished, now) - started).total_seconds())
        oldest = started if oldest is None or started < oldest else oldest
    return used, oldest


@dataclass(frozen=True)
class CheckPlan:
    """What a claimed bot check runs with: the URL and rule sets recorded when it was asked,
    the bot's signing secret and (during a rotation's grace period) its previous secret."""

    check_id: int
    bot_id: int
    url: str
    rulesets: tuple[str, ...]
    secret: str
    previous_secret: str | None
    attempt: int


def _aware(value: Any) -> Any:
    # SQLite gives naive datetimes back; every stored time is UTC
    if value is not None and value.tzinfo is None:
        from datetime import UTC

        return value.replace(tzinfo=UTC)
    return value


def _stale_before(now: Any, stale_after_s: float) -> Any:
    from datetime import timedelta

    return now - timedelta(seconds=stale_after_s)


def begin_check(
    session: Session,
    bot_id: int,
    *,
    max_per_account: int = MAX_CHECKS_PER_ACCOUNT,
    stale_after_s: float = CHECK_STALE_S,
    max_seconds_per_hour: float | None = None,
) -> BotCheck:
    """``unchecked|ready|failed -> checking``: store a ``queued`` check of the bot's current URL
    and rule sets; commit. The caller sends it to a worker (then :func:`release_check` if that
    fails). The owner's account row is locked ``FOR UPDATE`` first, so concurrent requests of
    one account count each other.

    A check of the bot without a heartbeat for ``stale_after_s`` seconds is marked ``error``
    (abandoned) and does not count. With ``max_seconds_per_hour``, an account whose checks
    ran that many seconds in the last hour (``ARENA_CHECK_SECONDS_PER_HOUR``) gets no more
    until the oldest of them leaves the hour.

    Raises:
        NotFound: no such bot, or deleted.
        CheckRunning: the bot has a live check (``exc.check_id``).
        TooManyChecks: the account has ``max_per_account`` live checks, or used its check
            time (``exc.retry_after_s``: when to ask again).
    """
    bot = session.get(Bot, bot_id)
    if bot is None or bot.status == BotStatus.DELETED:
        session.rollback()
        raise NotFound(f"bot {bot_id} not found")
    _locked(session, Account, bot.owner_id)
    bot = _locked(session, Bot, bot_id)
    now = utcnow()
    stale = _stale_before(now, stale_after_s)
    live = list(
        session.scalars(select(BotCheck).where(BotCheck.account_id == bot.owner_id, BotCheck.status.in_(ACTIVE_CHECKS)))
    )
    previous = bot.status
    for c in live:
        if _aware(c.updated_at) < stale:
            c.status = CheckStatus.ERROR
            c.error = f"abandoned: no progress for {stale_after_s:g} s (its worker stopped)"
            c.finished_at = now
            if c.bot_id == bot.id:
                previous = c.previous_status
    live = [c for c in live if c.status in ACTIVE_CHECKS]
    mine = [c for c in live if c.bot_id == bot.id]
    if mine:
        session.rollback()
        raise CheckRunning(
            f"bot {bot_id} already has check {mine[0].id} {mine[0].status}; wait for it to finish", mine[0].id
        )
    if len(live) >= max_per_account:
        session.rollback()
        raise TooManyChecks(
            f"your account already has {len(live)} bot checks queued or running "
            f"(at most {max_per_account} at a time); retry when one has finished"
        )
    if max_seconds_per_hour is not None:
        used, oldest = _check_seconds(session, bot.owner_id, now)
        if used >= max_seconds_per_hour:
            session.rollback()
            wait = (oldest + timedelta(seconds=CHECK_TIME_WINDOW_S) - now).total_seconds() if oldest else 60
            raise TooManyChecks(
                f"your account's bot checks ran {used:.0f} s in the last hour (at most "
                f"{max_seconds_per_hour:g} s an hour); retry in {max(1, round(wait))} s",
                retry_after_s=round(wait),
            )
    if previous == BotStatus.CHECKING:  # a checking bot without a live check: its check was lost
        previous = BotStatus.UNCHECKED
    check = BotCheck(
        bot_id=bot.id,
        account_id=bot.owner_id,
        status=CheckStatus.QUEUED,
        url=bot.url,
        rulesets=list(bot.rulesets),
        previous_status=previous,
        attempts=0,
        progress={},
        created_at=now,
        updated_at=now,
    )
    session.add(check)
    bot.status = BotStatus.CHECKING
    session.commit()
    return check


def _restore_bot(session: Session, check: BotCheck) -> None:
    bot = _locked(session, Bot, check.bot_id)
    if bot is not None and bot.status == BotStatus.CHECKING:
        bot.status = check.previous_status


def release_check(session: Session, check_id: int, reason: str) -> None:
    """``queued -> error`` for a check that could not be sent to a worker (``reason``); the bot
    goes back to its status before the check; commit."""
    check = _locked(session, BotCheck, check_id)
    if check is None or check.status not in ACTIVE_CHECKS:
        session.rollback()
        return
    check.status = CheckStatus.ERROR
    check.error = " ".join(reason.split())[:MAX_FAILURE_CHARS] or "error"
    check.finished_at = check.updated_at = utcnow()
    _restore_bot(session, check)
    session.commit()


def claim_check(session: Session, check_id: int) -> CheckPlan | None:
    """``queued|running -> running`` for a delivery of check ``check_id`` (``attempts + 1``);
    commit. Returns None (nothing to run) for an unknown or finished check, one whose bot
    was deleted, or one whose bot's signing secret cannot be decrypted here (a wrong or
    missing ``ARENA_ENCRYPTION_KEYS``); the check then becomes ``error`` with the reason."""
    check = _locked(session, BotCheck, check_id)
    if check is None or check.status not in ACTIVE_CHECKS:
        session.rollback()
        return None
    bot = session.get(Bot, check.bot_id)
    now = utcnow()
    if bot is None or bot.status == BotStatus.DELETED:
        check.status = CheckStatus.ERROR
        check.error = "the bot was deleted"
        check.finished_at = check.updated_at = now
        session.commit()
        return None
    try:
        secret, previous = bot.secret, bot.grace_secret()
    except EncryptionKeyError as exc:  # not the bot's fault: the check could not run
        session.rollback()
        error_check(
            session,
            check_id,
            f"{exc}: the check could not run on this worker; check the bot again once an operator has fixed the key",
        )
        return None
    check.status = CheckStatus.RUNNING
    check.attempts = (check.attempts or 0) + 1
    check.started_at = check.started_at or now
    check.updated_at = now
    plan = CheckPlan(check.id, bot.id, check.url, tuple(check.rulesets), secret, previous, check.attempts)
    session.commit()
    return plan


def record_check_progress(session: Session, check_id: int, progress: dict[str, Any]) -> bool:
    """Store the progress of a running check and beat its heartbeat; commit. False if the
    check is no longer running (abandoned or finished)."""
    changed = _update(
        session,
        update(BotCheck)
        .where(BotCheck.id == check_id, BotCheck.status == CheckStatus.RUNNING)
        .values(progress=progress, updated_at=utcnow()),
    )
    session.commit()
    return changed == 1


def finish_check(session: Session, check_id: int, result: dict[str, Any]) -> str | None:
    """``running -> passed|failed`` by ``result["ok"]``; the bot's ``last_check`` is the result
    and, if it is still ``checking`` the URL and rule sets checked, it becomes ``ready`` or
    ``failed`` (``unchecked`` if they changed; a deleted bot stays deleted); commit.

    Returns the bot's new status, or None when the check was no longer running (nothing
    changed: a duplicate delivery, or an abandoned check).
    """
    check = _locked(session, BotCheck, check_id)
    if check is None or check.status != CheckStatus.RUNNING:
        session.rollback()
        return None
    now = utcnow()
    check.status = CheckStatus.PASSED if result.get("ok") else CheckStatus.FAILED
    check.result = result
    check.finished_at = check.updated_at = now
    bot = _locked(session, Bot, check.bot_id)
    assert bot is not None
    bot.last_check = result
    bot.last_check_at = now
    if bot.status == BotStatus.CHECKING:
        if bot.url == check.url and list(bot.rulesets) == list(check.rulesets):
            bot.status = BotStatus.READY if result.get("ok") else BotStatus.FAILED
        else:
            bot.status = BotStatus.UNCHECKED
    status = bot.status
    session.commit()
    return status


def error_check(session: Session, check_id: int, reason: str) -> bool:
    """``running|queued -> error`` (the check itself broke, not the bot: ``reason``); the bot
    goes back to its status before the check; commit. False if it was already done."""
    check = _locked(session, BotCheck, check_id)
    if check is None or check.status not in ACTIVE_CHECKS:
        session.rollback()
        return False
    check.status = CheckStatus.ERROR
    check.error = " ".join(reason.split())[:MAX_FAILURE_CHARS] or "error"
    check.finished_at = check.updated_at = utcnow()
    _restore_bot(session, check)
    session.commit()
    return True


def entered_in(session: Session, bot_id: int) -> list[int]:
    """Ids of the ``created`` or ``running`` tournaments the bot is entered in."""
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


def update_bot(
    session: Session,
    bot_id: int,
    *,
    name: str | None = None,
    url: str | None = None,
    rulesets: Sequence[str] | None = None,
) -> Bot:
    """Change a bot's name, URL (already checked against the URL policy by the caller) or
    rule sets; commit. A new URL or new rule sets make it ``unchecked``.

    Raises:
        NotFound: no such bot, or deleted.
        Conflict: a URL or rule-set change while a check runs; a URL change while the bot is
            entered in a created or running tournament (its matches call the checked URL
            only: delete the bot to withdraw it, or wait until the tournaments end).
    """
    bot = _locked(session, Bot, bot_id)
    if bot is None or bot.status == BotStatus.DELETED:
        session.rollback()
        raise NotFound(f"bot {bot_id} not found")
    new_url = url is not None and url != bot.url
    new_rulesets = rulesets is not None and list(rulesets) != list(bot.rulesets)
    if (new_url or new_rulesets) and bot.status == BotStatus.CHECKING:
        session.rollback()
        raise Conflict(f"bot {bot_id} is being checked; change its URL or rule sets when the check is done")
    if new_url:
        tournaments = entered_in(session, bot_id)
        if tournaments:
            session.rollback()
            raise Conflict(
                f"bot {bot_id} is entered in tournament(s) {', '.join(map(str, tournaments))} that "
                "are not finished: its URL cannot change until they end (its matches only call the "
                "URL that passed the check); register a new bot for the new URL"
            )
    if name is not None:
        bot.name = name
    if new_url:
        bot.url = url
    if new_rulesets:
        bot.rulesets = list(rulesets)  # type: ignore[arg-type]
    if new_url or new_rulesets:
        bot.status = BotStatus.UNCHECKED
    bot.updated_at = utcnow()
    session.commit()
    return bot


def delete_bot(session: Session, bot_id: int) -> None:
    """``any -> deleted``; commit. Its past matches and logs stay. Its seats in matches not
    yet played forfeit every game without a request (:func:`claim_match`: a deleted bot's
    seat is ``withdrawn``, FAULT-3 from the first decision); a match already running plays out.

    Raises:
        NotFound: no such bot, or already deleted.
    """
    bot = _locked(session, Bot, bot_id)
    if bot is None or bot.status == BotStatus.DELETED:
        session.rollback()
        raise NotFound(f"bot {bot_id} not found")
    bot.status = BotStatus.DELETED
    bot.updated_at = utcnow()
    session.execute(
        update(BotCheck)
        .where(BotCheck.bot_id == bot_id, BotCheck.status.in_(ACTIVE_CHECKS))
        .values(status=CheckStatus.ERROR, error="the bot was deleted", finished_at=utcnow(), updated_at=utcnow())
    )
    session.commit()
