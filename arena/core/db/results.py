"""Writing a match's result and log exactly once, and reading logs back.

The worker calls :func:`record_result` when a match ends. The result row's primary key is the
match id and the log's ``match_id`` is unique, so a re-delivered task that plays the match
again cannot store a second result: the insert fails, the transaction rolls back, and
``record_result`` returns False.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.core import matchlog
from arena.core.db.models import Match, MatchLog, MatchResult, Tournament, utcnow


def record_result(
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
    """Store the result and the full log of match ``match_id`` and mark it finished; commit.

    Lists are indexed by seat (see :class:`arena.core.db.models.MatchResult` for the shapes).
    When every match of the tournament is finished, the tournament is marked finished too.

    Returns:
        True if this call stored the result, False if a result was already stored (nothing
        changed).
    Raises:
        ValueError: list lengths differ from the match's seat count.
    """
    match = session.get(Match, match_id)
    if match is None:
        raise ValueError(f"no match {match_id}")
    n = len(match.seats)
    for name, values in (("scores", scores), ("places", places), ("faults", faults)):
        if len(values) != n:
            raise ValueError(f"{name} has {len(values)} entries, the match has {n} seats")
    data, size = matchlog.compress(log)
    now = utcnow()
    try:
        session.add(MatchResult(match_id=match_id, scores=list(scores), places=list(places),
                                faults=list(faults), games=list(games), timings=dict(timings)))
        session.add(MatchLog(match_id=match_id, data=data, size=size))
        session.flush()
    except IntegrityError:
        session.rollback()
        return False
    session.execute(
        update(Match).where(Match.id == match_id).values(status="finished", finished_at=now)
    )
    finish_tournament_if_done(session, match.tournament_id)
    session.commit()
    return True


def finish_tournament_if_done(session: Session, tournament_id: int) -> bool:
    """Mark a running tournament finished when none of its matches is left to play.

    Cancelled matches count as done. Returns True if the tournament was marked finished now.
    """
    left = session.scalar(
        select(func.count()).select_from(Match).where(
            Match.tournament_id == tournament_id,
            Match.status.in_(("pending", "queued", "running")),
        )
    )
    if left:
        return False
    res = session.execute(
        update(Tournament)
        .where(Tournament.id == tournament_id, Tournament.status == "running")
        .values(status="finished", finished_at=utcnow())
    )
    return res.rowcount == 1
