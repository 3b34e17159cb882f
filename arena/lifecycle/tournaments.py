"""The tournament state machine (``tournaments.status``) and the tournament-wide match moves.

::

    created --start--> running --(last match done)--> finished
       |                  |
       +-----cancel-------+----------------------------> cancelled

A start draws the seed (unless the organizer set it) and its salt and publishes the
commitment in one transaction, stores the schedule (now, or later with
:func:`store_schedule`) and takes the ``pending`` matches to send (``pending -> queued``).
When the last match of a running tournament is done, :func:`round_end` asks the
tournament's match source (:mod:`arena.sources`, by its ``format``) what comes next, in the
transaction that made the match done, under the tournament's row lock
(:mod:`arena.lifecycle`): finish it, store one more round (a tournament played until
settled), or nothing (a ladder: its sets come from its ticks). Each public function is a
transaction of its own (it commits, or rolls back and raises) unless it says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from sqlalchemy import exists, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from arena import fairness, sources
from arena.db.models import Bot, Match, MatchResult, MatchSeat, Tournament, TournamentParticipant, utcnow
from arena.lifecycle.base import (
    UNFINISHED,
    Conflict,
    MatchStatus,
    TournamentStatus,
    is_postgresql,
    lock_or_404,
    locked,
    rows_changed,
)
from arena.schedule import ScheduledMatch
from arena.sources import Field, StoredGames
from arena.status import TournamentFormat

#: A match sent to the broker less than this many seconds ago is not sent again by resume
#: (of concurrent resume calls, one wins).
RESUME_GUARD_S = 10.0


def create_tournament(session: Session, *, participants: Sequence[int], **fields: Any) -> Tournament:
    """Store a new tournament in status ``created`` and commit. ``fields``: the
    :class:`~arena.db.models.Tournament` columns (validated by the caller); a ``seed`` given
    here (not None) is the organizer's: the tournament is marked ``seed_chosen``; without one
    the seed is drawn when the tournament starts (:func:`start_tournament`). Without a
    ``format``, it is ``until_settled`` when ``until_settled`` is given, else ``round_robin``."""
    fields["seed_chosen"] = fields.get("seed") is not None
    if fields.get("format") is None:
        settled = fields.get("until_settled") is not None
        fields["format"] = (TournamentFormat.UNTIL_SETTLED if settled else TournamentFormat.ROUND_ROBIN).value
    t = Tournament(status=TournamentStatus.CREATED, **fields)
    t.participants = [TournamentParticipant(bot_id=b) for b in participants]
    session.add(t)
    session.commit()
    return t


def _lock_tournament(session: Session, tournament_id: int) -> Tournament:
    """The tournament row, locked (:func:`~arena.lifecycle.base.lock_or_404`); NotFound."""
    return lock_or_404(session, Tournament, tournament_id, "tournament")


def _has_match(session: Session, tournament_id: int) -> bool:
    return session.scalar(select(Match.id).where(Match.tournament_id == tournament_id).limit(1)) is not None


def take_pending(session: Session, tournament_id: int) -> list[int]:
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


#: Builds a tournament's schedule from its seed (drawn by the start).
ScheduleBuilder = Callable[[int], Iterable[ScheduledMatch]]


def begin_running(session: Session, t: Tournament, schedule: ScheduleBuilder | None) -> None:
    """``created -> running`` (compare-and-set) with the seed (drawn now unless the organizer
    set it), a fresh salt and their commitment, and the matches of ``schedule(seed)`` stored,
    inside the caller's transaction: the seed exists nowhere before this transaction commits
    the commitment to it.

    Raises:
        Conflict: another start won (rolled back).
    """
    seed = int(t.seed) if t.seed is not None else fairness.new_seed()
    salt = fairness.new_salt()
    claimed = rows_changed(
        session,
        update(Tournament)
        .where(Tournament.id == t.id, Tournament.status == TournamentStatus.CREATED)
        .values(
            status=TournamentStatus.RUNNING,
            started_at=utcnow(),
            seed=seed,
            salt=salt,
            commitment=fairness.commitment(seed, salt),
        ),
    )
    if claimed != 1:
        session.rollback()
        raise Conflict(f"tournament {t.id} was started concurrently")
    planned = list(schedule(seed)) if schedule is not None else []
    try:
        if planned:  # bulk inserts: a 128-bot schedule has thousands of matches
            _store_schedule(session, t.id, planned)
        session.flush()
    except IntegrityError:  # another start stored the schedule first (SQLite has no row lock)
        session.rollback()
        raise Conflict(f"tournament {t.id} was started concurrently") from None


def start_tournament(session: Session, tournament_id: int, schedule: ScheduleBuilder | None = None) -> list[int]:
    """``created -> running``: draw the seed (unless the organizer set it) and its salt and
    publish their commitment (:mod:`arena.fairness`); commit. With ``schedule`` (a function
    of the seed), its matches are stored in the same transaction; without it the tournament
    runs with no match yet, and
    :func:`store_schedule` stores them off the request path (a 128-bot schedule has
    thousands of matches: seconds of inserts).

    Returns the ids of the matches to send to the broker, marked ``queued`` in the same
    transaction (compare-and-set ``pending -> queued``): this caller owns them, so of
    concurrent starts exactly one gets each match (the others get :class:`Conflict`). If
    sending fails, give them back with :func:`~arena.lifecycle.matches.release_queued` (a
    later start sends them); if the caller dies before sending, the reaper finds them missing
    from the broker and sends them (:func:`~arena.lifecycle.matches.lost_queued`). A
    tournament already ``running`` is not rescheduled: its ``pending`` matches are taken, or
    ``[]`` is returned while it has no match yet (its schedule is still to be stored).

    Raises:
        NotFound: no such tournament.
        Conflict: finished or cancelled; started concurrently; running with matches, none
            of them pending.
    """
    t = _lock_tournament(session, tournament_id)
    if t.status == TournamentStatus.CREATED:
        begin_running(session, t, schedule)
    elif t.status != TournamentStatus.RUNNING:
        session.rollback()
        raise Conflict(f"tournament {tournament_id} is {t.status}")
    try:
        taken = take_pending(session, tournament_id)
        scheduled = bool(taken) or _has_match(session, tournament_id)
        session.commit()
    except IntegrityError:
        session.rollback()
        raise Conflict(f"tournament {tournament_id} was started concurrently") from None
    if not taken and scheduled:
        raise Conflict(f"tournament {tournament_id} is already running")
    return taken


def store_schedule(session: Session, tournament_id: int, build: Callable[[], Iterable[ScheduledMatch]]) -> int:
    """The second half of a start without a schedule (:func:`start_tournament`): store the
    matches of ``build()`` as ``pending`` for a ``running`` tournament that has no match
    yet; commit. The tournament row is locked first, so of two concurrent calls one stores.

    Returns how many matches were stored: 0 when the tournament already has its matches,
    or is not running (cancelled meanwhile). Errors of ``build`` propagate (nothing stored).
    """
    t = locked(session, Tournament, tournament_id)
    if t is None or t.status != TournamentStatus.RUNNING or _has_match(session, tournament_id):
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
    if is_postgresql(session):
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
    the caller's :func:`~arena.lifecycle.matches.mark_queued` commits, so two senders never
    send the same match."""
    t = session.get(Tournament, tournament_id)
    if t is None or t.status != TournamentStatus.RUNNING:
        return []
    stmt = (
        select(Match.id)
        .where(Match.tournament_id == tournament_id, Match.status == MatchStatus.PENDING)
        .order_by(Match.index)
        .limit(limit)
    )
    if is_postgresql(session):
        stmt = stmt.with_for_update(skip_locked=True)
    return list(session.scalars(stmt))


def resumable_matches(session: Session, tournament_id: int, *, include_running: bool = False) -> list[int]:
    """Ids of a running tournament's matches to send to the broker again: ``pending`` and
    ``queued`` (and ``running`` with ``include_running``), in schedule order, except those
    sent less than :data:`RESUME_GUARD_S` seconds ago; their ``queued_at`` becomes now, under
    the tournament's row lock, so of concurrent calls one gets the matches and the others
    :class:`Conflict`; commit. (With ``arena beat`` running, the reaper does this by itself.)

    Raises:
        NotFound, Conflict: no such tournament; not running; nothing to re-enqueue.
    """
    t = _lock_tournament(session, tournament_id)
    if t.status != TournamentStatus.RUNNING:
        session.rollback()
        raise Conflict(f"tournament {tournament_id} is {t.status}, not running")
    states = UNFINISHED if include_running else (MatchStatus.PENDING, MatchStatus.QUEUED)
    now = utcnow()
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


def resume_would_help(session: Session, tournament_id: int) -> bool:
    """True when :func:`resumable_matches` would find matches to send again *and* the
    tournament looks stalled: no match of it is ``running``. A tournament whose workers are
    playing takes its queued matches in turn (and the reaper re-sends a lost one by itself),
    so a resume there only sends duplicates: the pages offer Resume only when this is true.
    Reads only."""
    running = session.scalar(
        select(Match.id).where(Match.tournament_id == tournament_id, Match.status == MatchStatus.RUNNING).limit(1)
    )
    if running is not None:
        return False
    cutoff = utcnow() - timedelta(seconds=RESUME_GUARD_S)
    left = session.scalar(
        select(Match.id)
        .where(
            Match.tournament_id == tournament_id,
            Match.status.in_((MatchStatus.PENDING, MatchStatus.QUEUED)),
            Match.queued_at.is_(None) | (Match.queued_at < cutoff),
        )
        .limit(1)
    )
    return left is not None


def cancel_tournament(session: Session, tournament_id: int) -> None:
    """``created|running -> cancelled``; its ``pending`` and ``queued`` matches become
    ``cancelled`` (a running match plays out and keeps its result); commit.

    Raises:
        NotFound, Conflict: no such tournament; already finished or cancelled.
    """
    t = _lock_tournament(session, tournament_id)
    done = rows_changed(
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


def tournament_done(session: Session, tournament_id: int) -> bool:
    """True when no match of the tournament is pending, queued or running."""
    return unfinished_count(session, tournament_id) == 0


@dataclass(frozen=True)
class RoundEnd:
    """What :func:`round_end` did: ``finished`` the tournament, or ``added`` the ids of a new
    round's matches (``queued``, to send to the broker once the caller commits; if the caller
    dies first, the reaper finds them missing from the broker and sends them), or neither."""

    finished: bool = False
    added: tuple[int, ...] = ()


def round_end(session: Session, tournament_id: int) -> RoundEnd:
    """When none of a running tournament's matches is left to play, inside the caller's
    transaction (the caller commits); the tournament row is locked first (:mod:`arena.lifecycle`),
    so of the transactions storing its last matches at once exactly one acts, once.

    The tournament's match source (:func:`arena.sources.source_for` of its ``format``)
    decides: finish it (``running -> finished``, with the ``stop_reason`` and the sequential
    test's verdict ``settle`` of a tournament played until settled), store one more round
    (``rounds`` + 1, the matches ``queued``), or nothing (a ladder).
    """
    t = locked(session, Tournament, tournament_id)
    if t is None or t.status != TournamentStatus.RUNNING or unfinished_count(session, tournament_id):
        return RoundEnd()
    last = session.scalar(select(func.max(Match.index)).where(Match.tournament_id == t.id))
    nxt = sources.source_for(t.format).next_round(
        field_of(session, t),
        0 if last is None else int(last) + 1,
        lambda: _stored_games(session, tournament_id),
        _has_failed(session, tournament_id),
    )
    if nxt.settle is not None:
        t.settle = nxt.settle
    if nxt.matches:
        _store_schedule(session, t.id, list(nxt.matches))
        t.rounds = (t.rounds or 1) + 1
        session.flush()
        return RoundEnd(added=tuple(take_pending(session, t.id)))
    if not nxt.finished:
        session.flush()
        return RoundEnd()
    if nxt.stop is not None:
        t.stop_reason = nxt.stop.value
    session.flush()
    finished = (
        rows_changed(
            session,
            update(Tournament)
            .where(Tournament.id == tournament_id, Tournament.status == TournamentStatus.RUNNING)
            .values(status=TournamentStatus.FINISHED, finished_at=utcnow()),
        )
        == 1
    )
    return RoundEnd(finished=finished)


def finish_if_done(session: Session, tournament_id: int) -> bool:
    """:func:`round_end`; True if the tournament was marked finished by this call."""
    return round_end(session, tournament_id).finished


def _has_failed(session: Session, tournament_id: int) -> bool:
    return (
        session.scalar(
            select(Match.id).where(Match.tournament_id == tournament_id, Match.status == MatchStatus.FAILED).limit(1)
        )
        is not None
    )


def _stored_games(session: Session, tournament_id: int) -> StoredGames:
    """Each stored result of the tournament: its entrants per seat (a bot id, or the house
    bot's name) and its ``games`` entries."""
    rows = session.execute(
        select(Match, MatchResult.games)
        .join(MatchResult, MatchResult.match_id == Match.id)
        .where(Match.tournament_id == tournament_id)
        .options(selectinload(Match.seats))
        .order_by(Match.index)
    ).all()
    out: StoredGames = []
    for m, games in rows:
        seats: list[sources.Entrant] = [s.entrant for s in m.seats]
        out.append((seats, list(games or [])))
    return out


def field_of(session: Session, t: Tournament) -> Field:
    """What ``t``'s match source knows of it (:class:`arena.sources.Field`): with
    ``separate_owners``, each participant's owner."""
    ids = tuple(p.bot_id for p in t.participants)
    owners = None
    if t.separate_owners and ids:
        owners = dict(session.execute(select(Bot.id, Bot.owner_id).where(Bot.id.in_(ids))).all())
    return Field(
        tournament_id=t.id,
        ruleset=t.ruleset,
        participants=ids,
        games_per_pairing=t.games_per_pairing,
        seed=int(t.seed or 0),
        options=dict(t.options or {}),
        fill_with_house_bots=t.fill_with_house_bots,
        rounds=t.rounds or 1,
        owners=owners,
        until_settled=t.until_settled,
    )


def first_round(session: Session, t: Tournament, seed: int) -> list[ScheduledMatch]:
    """The matches ``t`` stores when it starts with ``seed`` (its match source's first round).

    Raises:
        arena.schedule.ScheduleError: they cannot be built.
    """
    return sources.source_for(t.format).first_round(replace(field_of(session, t), seed=seed))


def stalled_tournaments(session: Session, *, older_than_s: float, limit: int = 100) -> list[int]:
    """Ids of running tournaments started more than ``older_than_s`` seconds ago that still
    have a match to send (``pending``) or no match at all (a large field whose schedule was
    never stored): their sender is gone (``arena.enqueue_tournament`` lost with the broker,
    its worker killed, its retries spent; a start that answered 503 halfway). The reaper
    sends the task again for those it finds no message of (:mod:`arena.reaper`). Reads
    only; oldest first."""
    cutoff = utcnow() - timedelta(seconds=older_than_s)
    has_pending = exists().where(Match.tournament_id == Tournament.id, Match.status == MatchStatus.PENDING)
    has_match = exists().where(Match.tournament_id == Tournament.id)
    stmt = (
        select(Tournament.id)
        .where(
            Tournament.status == TournamentStatus.RUNNING,
            Tournament.format != TournamentFormat.LADDER,  # a ladder's sets come from its ticks
            Tournament.started_at < cutoff,
            has_pending | ~has_match,
        )
        .order_by(Tournament.started_at)
        .limit(limit)
    )
    return list(session.scalars(stmt))
