"""The match state machine (``matches.status``), the leases of running matches and the
plans a claimed match is played with.

::

    pending --queue--> queued --claim--> running --store_result--> finished
       ^                 ^                  |  \\--fail----------> failed --retry--> queued
       |                 +---(reap_expired: lease expired; lost_queued re-sends a queued one)
       +-- (cancel: pending/queued -> cancelled; a running match plays out and keeps its result)

Leases: :func:`~arena.lifecycle.claims.claim_match` gives the claiming delivery a lease (``lease_owner``,
``lease_expires_at``) that its worker renews every few seconds (:func:`renew_lease`) while
it plays; a delivery finding a live lease skips the match, so a match is never played twice
at once. The reaper (:mod:`arena.reaper`) puts a match whose lease expired back to
``queued`` (:func:`reap_expired`) and re-sends queued matches the broker lost
(:func:`lost_queued`). Times are the workers' clocks in UTC (keep them in sync, NTP).
A move that makes a match done finishes its tournament if it was the last one
(:func:`arena.lifecycle.tournaments.finish_if_done`). Each public function is a
transaction of its own (it commits, or rolls back and raises).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena import matchlog
from arena.db.models import (
    Match,
    MatchLog,
    MatchResult,
    StandingsCache,
    Tournament,
    utcnow,
)
from arena.lifecycle.base import (
    DONE,
    Conflict,
    MatchStatus,
    TournamentStatus,
    failure_text,
    is_postgresql,
    lock_or_404,
    locked,
    rows_changed,
)
from arena.lifecycle.claims import mark_failed
from arena.lifecycle.tournaments import finish_if_done, round_end
from arena.status import ParStatus


@dataclass(frozen=True)
class Stored:
    """What :func:`store_result` did: ``stored`` (also its truth value) is False when a
    result was already stored, or when the attempt storing is not the match's current one
    (``stale``: its lease was taken over); ``added``: the ids of the round this store added
    to a tournament played until settled (``queued``: the caller sends them to the broker)."""

    stored: bool
    added: tuple[int, ...] = ()
    stale: bool = False

    def __bool__(self) -> bool:
        return self.stored


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
    par_status: str | None = None,
    attempt: int | None = None,
) -> Stored:
    """``running -> finished``: store the result and the full log of match ``match_id``
    exactly once and, if this was the tournament's last match left, end its round
    (:func:`~arena.lifecycle.tournaments.round_end`: finish it, or add a round to a
    tournament played until settled); commit.

    Fencing: with ``attempt`` (the attempt that played it, :attr:`arena.lifecycle.claims.MatchPlan.attempt`), the
    match row is locked and the result stored only while ``attempt`` is the match's current
    attempt (``matches.attempts``): a delivery whose lease expired and was taken over by
    another delivery (a worker cut off from the network, frozen, or slow to store) stores
    nothing (``Stored(False, stale=True)``), so it can neither overwrite nor pre-empt the
    attempt that took over.

    Lists are indexed by seat (see :class:`arena.db.models.MatchResult`); ``par_status``
    (:class:`arena.status.ParStatus`): ``pending`` when its pars are to be computed. The result's
    primary key is the match id and the log's ``match_id`` is unique, so a second delivery
    that played the match again stores nothing (and adds no round).

    Returns:
        :class:`Stored`, true if this call stored the result, false if one was already stored
        or the attempt is stale.
    Raises:
        ValueError: no such match, or list lengths differ from the match's seat count.
        arena.matchlog.LogEncodingError: the log is not strict JSON in UTF-8.
    """
    match = session.get(Match, match_id) if attempt is None else locked(session, Match, match_id)
    if match is None:
        raise ValueError(f"no match {match_id}")
    if attempt is not None and match.attempts != attempt:
        session.rollback()
        return Stored(False, stale=True)
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
                par_status=par_status,
            )
        )
        session.add(MatchLog(match_id=match_id, data=data, size=size))
        session.flush()
    except IntegrityError:
        session.rollback()
        return Stored(False)
    session.execute(
        update(Match)
        .where(Match.id == match_id)
        .values(
            status=MatchStatus.FINISHED, finished_at=utcnow(), failure=None, lease_owner=None, lease_expires_at=None
        )
    )
    ended = round_end(session, match.tournament_id)
    session.commit()
    return Stored(True, ended.added)


def requeue_match(session: Session, match_id: int, attempt: int) -> bool:
    """``running -> queued`` for a match the arena could not finish (its own outage, never
    its bots': :class:`arena.runner.players.ArenaFailure`), by the attempt that holds it
    (``attempts == attempt``): its lease cleared, ``queued_at`` now; commit. The next
    delivery plays it from the start on fresh deals (a new attempt seed). False when the
    match is no longer this attempt's (taken over, stored, cancelled): nothing changed."""
    match = locked(session, Match, match_id)
    if match is None or match.status != MatchStatus.RUNNING or match.attempts != attempt:
        session.rollback()
        return False
    match.status = MatchStatus.QUEUED
    match.lease_owner = match.lease_expires_at = None
    match.queued_at = utcnow()
    session.commit()
    return True


def store_pars(session: Session, match_id: int, pars: Sequence[Sequence[float]], log: Any) -> bool:
    """``par_status pending -> done``: add each game's par (per player, the lists of
    ``match_results.games``) to the result and replace the stored log by ``log`` (the same
    log with its pars, :func:`arena.par.with_pars`), exactly once; drop the tournament's
    cached standings fold (it folded the games without pars); commit. The result row is
    locked, so of two deliveries of the par task one stores and the other finds it ``done``.

    Returns:
        True if this call stored the pars, False if the result is not ``pending`` (done or
        skipped already, or no result).
    Raises:
        ValueError: ``pars`` does not have one list per game, or a list the seat count.
        arena.matchlog.LogEncodingError: the log is not strict JSON in UTF-8.
    """
    row = locked(session, MatchResult, match_id)
    if row is None or row.par_status != ParStatus.PENDING:
        session.rollback()
        return False
    games = list(row.games or [])
    if len(pars) != len(games) or any(len(p) != len(g.get("scores", [])) for p, g in zip(pars, games)):
        session.rollback()
        raise ValueError(f"match {match_id}: pars for {len(pars)} games, the result has {len(games)}")
    data, size = matchlog.compress(log)
    row.games = [{**g, "par": [float(x) for x in p]} for g, p in zip(games, pars)]
    row.par_status = ParStatus.DONE
    session.execute(update(MatchLog).where(MatchLog.match_id == match_id).values(data=data, size=size))
    tournament_id = session.scalar(select(Match.tournament_id).where(Match.id == match_id))
    session.execute(delete(StandingsCache).where(StandingsCache.tournament_id == tournament_id))
    session.commit()
    return True


def skip_pars(session: Session, match_id: int) -> bool:
    """``par_status pending -> skipped`` (pars off, or a game without one); commit. Returns
    True if this call changed it."""
    n = rows_changed(
        session,
        update(MatchResult)
        .where(MatchResult.match_id == match_id, MatchResult.par_status == ParStatus.PENDING)
        .values(par_status=ParStatus.SKIPPED),
    )
    session.commit()
    return n > 0


def pending_pars(session: Session, *, older_than_s: float, limit: int = 500) -> list[int]:
    """Match ids whose pars are still ``pending`` and whose result was stored more than
    ``older_than_s`` seconds ago (the reaper sends their par task again), oldest first."""
    cutoff = utcnow() - timedelta(seconds=older_than_s)
    return list(
        session.scalars(
            select(MatchResult.match_id)
            .where(MatchResult.par_status == ParStatus.PENDING, MatchResult.created_at < cutoff)
            .order_by(MatchResult.created_at)
            .limit(limit)
        )
    )


def fail_match(session: Session, match_id: int, reason: str) -> bool:
    """``running|queued|pending -> failed`` with ``reason`` (shown to the organizer), and
    finish the tournament if this was its last match; commit. Returns False if the match
    was already done (nothing changed)."""
    match = locked(session, Match, match_id)
    if match is None or match.status in DONE:
        session.rollback()
        return False
    mark_failed(match, failure_text(reason, "failed"))
    session.flush()
    finish_if_done(session, match.tournament_id)
    session.commit()
    return True


def retry_failed(session: Session, tournament_id: int, match_ids: Sequence[int] | None = None) -> list[int]:
    """``failed -> queued`` for the tournament's failed matches (all, or ``match_ids``); a
    finished tournament with failed matches goes back to ``running``; commit. Returns the ids
    to send to the broker, owned by this caller as for
    :func:`~arena.lifecycle.tournaments.start_tournament` (a failed send:
    :func:`release_queued`, then start the tournament again).

    Raises:
        NotFound, Conflict: no such tournament; cancelled; no failed match to retry.
    """
    t = lock_or_404(session, Tournament, tournament_id, "tournament")
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


def release_queued(session: Session, match_ids: Sequence[int]) -> int:
    """``queued -> pending`` for matches whose sending to the broker failed (after
    :func:`~arena.lifecycle.tournaments.start_tournament` or :func:`retry_failed`), so a
    later start sends them; commit. Returns how many changed."""
    if not match_ids:
        return 0
    changed = rows_changed(
        session,
        update(Match)
        .where(Match.id.in_(list(match_ids)), Match.status == MatchStatus.QUEUED)
        .values(status=MatchStatus.PENDING),
    )
    session.commit()
    return changed


def mark_queued(session: Session, match_ids: Sequence[int]) -> int:
    """``pending -> queued`` for the given matches (after they were sent to the broker);
    commit. Returns how many changed (0 for matches
    :func:`~arena.lifecycle.tournaments.start_tournament` or :func:`retry_failed` already
    marked queued)."""
    if not match_ids:
        return 0
    changed = rows_changed(
        session,
        update(Match)
        .where(Match.id.in_(list(match_ids)), Match.status == MatchStatus.PENDING)
        .values(status=MatchStatus.QUEUED, queued_at=utcnow()),
    )
    session.commit()
    return changed


def renew_lease(session: Session, match_id: int, owner: str, lease_s: float) -> bool:
    """Extend ``owner``'s lease on running match ``match_id`` to now + ``lease_s`` seconds;
    commit. Returns False if the match is no longer running under that owner's lease (it was
    stored, failed, or the reaper gave it to another delivery after the lease expired)."""
    res = session.execute(
        update(Match)
        .where(Match.id == match_id, Match.status == MatchStatus.RUNNING, Match.lease_owner == owner)
        .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s))
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
    now = utcnow()
    stmt = (
        select(Match.id)
        .where(Match.status == MatchStatus.RUNNING, Match.lease_expires_at.is_not(None), Match.lease_expires_at < now)
        .order_by(Match.id)
        .limit(limit)
    )
    kept = list(keep)
    if kept:
        stmt = stmt.where(Match.id.not_in(kept))
    if is_postgresql(session):
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
    now = utcnow()
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
    if is_postgresql(session):
        stmt = stmt.with_for_update(of=Match, skip_locked=True)
    ids = [i for i in session.scalars(stmt) if i not in present]
    if ids:
        session.execute(update(Match).where(Match.id.in_(ids)).values(queued_at=now))
    session.commit()
    return ids
