"""A start that waits for offline entrants (issue 42): the tournament stays ``created`` with
``waiting_until`` set, its roll call (``roll_call``, :mod:`arena.roll_call`) renewed by the
task ``arena.await_entrants``, until every entrant is online or the time is up; then the
wait ends (:func:`end_wait`, once: a compare-and-set) and the start proceeds.

::

    created --begin_wait--> created, waiting --end_wait--> created --start--> running
                                 |
                                 +---cancel (arena.lifecycle.tournaments)---> cancelled

Each function is a transaction of its own (it commits, or rolls back and raises).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from arena.db.models import Tournament, utcnow
from arena.lifecycle.base import Conflict, TournamentStatus, aware, lock_or_404, locked, rows_changed


def begin_wait(session: Session, tournament_id: int, until: datetime, roll_call: dict[str, Any]) -> Tournament:
    """``created`` -> waiting until ``until`` (a later one if it already waits), with the roll
    call that found entrants offline; commit.

    Raises:
        NotFound: no such tournament.
        Conflict: it is not ``created`` (started, finished or cancelled).
    """
    t = lock_or_404(session, Tournament, tournament_id, "tournament")
    if t.status != TournamentStatus.CREATED:
        session.rollback()
        raise Conflict(f"tournament {tournament_id} is {t.status}: only a tournament not started yet waits")
    t.waiting_until = until
    t.roll_call = roll_call
    session.commit()
    return t


def record_roll_call(session: Session, tournament_id: int, roll_call: dict[str, Any]) -> None:
    """Store the tournament's last roll call (any status: a start that does not wait keeps it
    as a record of who was offline); commit."""
    session.execute(update(Tournament).where(Tournament.id == tournament_id).values(roll_call=roll_call))
    session.commit()


def take_roll_call_turn(session: Session, tournament_id: int, min_gap_s: float) -> Tournament | None:
    """The waiting tournament, when its last roll call is at least ``min_gap_s`` seconds old:
    its ``roll_call.checked_at`` is set to now first (under the tournament's row lock), so of
    two tasks polling the same wait only one goes on (a duplicate chain of polls dies out);
    commit. None when it no longer waits, or another poll checked it a moment ago."""
    t = locked(session, Tournament, tournament_id)
    if t is None or t.status != TournamentStatus.CREATED or t.waiting_until is None:
        session.rollback()
        return None
    now = utcnow()
    last = _checked_at(t.roll_call)
    if last is not None and (now - last).total_seconds() < min_gap_s:
        session.rollback()
        return None
    t.roll_call = {**(t.roll_call or {}), "checked_at": now.isoformat()}
    session.commit()
    return t


def end_wait(session: Session, tournament_id: int) -> bool:
    """End the wait (``waiting_until`` -> NULL) of a ``created`` tournament; commit. True when
    this call ended it (compare-and-set: of concurrent callers, one)."""
    done = rows_changed(
        session,
        update(Tournament)
        .where(
            Tournament.id == tournament_id,
            Tournament.status == TournamentStatus.CREATED,
            Tournament.waiting_until.is_not(None),
        )
        .values(waiting_until=None),
    )
    session.commit()
    return done == 1


def waiting_tournaments(session: Session, *, quiet_for_s: float, limit: int = 100) -> list[int]:
    """Ids of the tournaments waiting for entrants whose roll call is more than
    ``quiet_for_s`` seconds old (their poll was lost: the reaper sends it again) or whose time
    is up. Reads only."""
    rows = session.execute(
        select(Tournament.id, Tournament.waiting_until, Tournament.roll_call)
        .where(Tournament.status == TournamentStatus.CREATED, Tournament.waiting_until.is_not(None))
        .order_by(Tournament.waiting_until)
        .limit(limit)
    ).all()
    now = utcnow()
    cutoff = now - timedelta(seconds=quiet_for_s)
    out = []
    for tid, until, roll in rows:
        last = _checked_at(roll)
        if aware(until) <= now or last is None or last < cutoff:
            out.append(int(tid))
    return out


def _checked_at(roll_call: dict[str, Any] | None) -> datetime | None:
    raw = (roll_call or {}).get("checked_at")
    if not isinstance(raw, str):
        return None
    try:
        return aware(datetime.fromisoformat(raw))
    except ValueError:
        return None
