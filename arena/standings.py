"""A tournament's standings (``GET /tournaments/{id}/standings``, the pages, the owners'
notices): its stored results as :class:`arena.ranking.MatchRecord`, folded by
:class:`arena.ranking.StandingsFold`, the fold's state cached per tournament
(``standings_cache``) and carried forward as results come.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from arena.db.models import (
    Bot,
    Match,
    MatchResult,
    StandingsCache,
    Tournament,
)
from arena.lifecycle import MatchStatus
from arena.ranking import Entrant, MatchRecord, Standing, StandingsFold, StandingsReport, game_par


def _seats(match: Match) -> tuple[Entrant, ...]:
    return tuple(s.entrant for s in match.seats)


def match_record(match: Match) -> MatchRecord:
    res = match.result
    if res is None:
        raise ValueError(f"match {match.id} has no result")
    return MatchRecord(
        match.index, _seats(match), res.scores, res.places, res.faults, res.games or (), int(res.changes or 0)
    )


def load_records(session: Session, tournament_id: int, after_index: int = -1) -> list[MatchRecord]:
    """Finished matches of a tournament (``index > after_index``) with their results, in
    schedule order."""
    matches = session.scalars(
        select(Match)
        .join(MatchResult)
        .where(Match.tournament_id == tournament_id, Match.index > after_index)
        .options(selectinload(Match.seats), selectinload(Match.result))
        .order_by(Match.index)
        # a match the session loaded before its result landed keeps a stale empty result
        # unless the rows are read again
        .execution_options(populate_existing=True)
    ).all()
    return [match_record(m) for m in matches]


def _prefix_end(session: Session, tournament_id: int, after_index: int) -> int:
    """The largest index P >= after_index such that every match with ``after_index < index <= P``
    is done for good: it has a result, or it is cancelled (cancelled matches never get one).
    A failed match stops the prefix (it may be retried); so does one still to be played."""
    gap = session.scalar(
        select(func.min(Match.index))
        .outerjoin(MatchResult, MatchResult.match_id == Match.id)
        .where(
            Match.tournament_id == tournament_id,
            Match.index > after_index,
            MatchResult.match_id.is_(None),
            Match.status != MatchStatus.CANCELLED,
        )
    )
    if gap is not None:
        return int(gap) - 1
    last = session.scalar(select(func.max(Match.index)).where(Match.tournament_id == tournament_id))
    return int(last) if last is not None else after_index


def _has_par(rec: MatchRecord) -> bool | None:
    """True when every game of the match has a par, False when some have one, None when none has."""
    has = [game_par(g, len(rec.seats)) is not None for g in rec.game_list()]
    return True if all(has) else False if any(has) else None


def _changes_up_to(session: Session, tournament_id: int, end: int) -> int:
    """Sum of ``match_results.changes`` of the tournament's results with ``index <= end``."""
    total = session.scalar(
        select(func.coalesce(func.sum(MatchResult.changes), 0))
        .join(Match, Match.id == MatchResult.match_id)
        .where(Match.tournament_id == tournament_id, Match.index <= end)
    )
    return int(total or 0)


def bot_names(session: Session, ids: Iterable[int | None]) -> dict[int, str]:
    """Bot id -> name for ``ids`` (None and unknown ids left out): two columns only, so no
    secret is decrypted."""
    wanted = {i for i in ids if i is not None}
    if not wanted:
        return {}
    return {bot_id: name for bot_id, name in session.execute(select(Bot.id, Bot.name).where(Bot.id.in_(wanted)))}


def standings_dict(session: Session, tournament: Tournament) -> dict[str, Any]:
    """:func:`tournament_report` as JSON-ready data (:meth:`StandingsReport.to_dict`), each
    row with its ``bot_name`` (None for a house seat), as the tournament page shows them."""
    report = tournament_report(session, tournament).to_dict()
    names = bot_names(session, [r["bot_id"] for r in report["rows"]])
    report["rows"] = [
        {**r, "bot_name": names.get(r["bot_id"]) if r["bot_id"] is not None else None} for r in report["rows"]
    ]
    return report


@dataclass(frozen=True)
class ResultsSeen:
    """What one read of a tournament's matches saw (:mod:`arena.board`): every match index,
    those with a stored result, those cancelled. Results are only ever added and a cancelled
    match never gets one, so whatever this read saw done stays done."""

    indices: frozenset[int]
    with_result: frozenset[int]
    cancelled: frozenset[int] = frozenset()

    def prefix_end(self, after_index: int) -> int:
        """:func:`_prefix_end` as this read saw it (no par rule)."""
        gaps = [i for i in self.indices if i > after_index and i not in self.with_result and i not in self.cancelled]
        if gaps:
            return min(gaps) - 1
        return max(self.indices, default=after_index)


def tournament_report(session: Session, tournament: Tournament, seen: ResultsSeen | None = None) -> StandingsReport:
    """Standings report of ``tournament`` from its stored results (participants listed even at
    0 games).

    Reads do not grow with the tournament: the fold of the longest prefix of the schedule
    whose matches are all done is kept in ``standings_cache`` (``prefix_index``, JSON state
    with the sum of the prefix results' ``changes``); a read folds only the results stored
    since, then the results beyond the first match still to be played (not kept). Once a
    game of the tournament has a par, a result whose games do not all have one yet is not
    done either (its par is on its way). A cached state of another version, or whose prefix
    holds a result updated since (a par added after all: ``match_results.changes``), is
    folded again from the start. The result equals :func:`compute_report` of every stored
    result. Commits the session when it moves the cached prefix.

    ``seen``: the standings of exactly the results that one earlier read saw
    (:class:`ResultsSeen`; results stored since are left out), so that a page built from
    that read agrees with itself; a cached prefix reaching past what it saw done is not
    used (nor moved).
    """
    cache = session.get(StandingsCache, tournament.id)
    cached_end: int | None = cache.prefix_index if cache is not None else None
    fold = None
    changes = 0
    if cache is not None:
        fold = StandingsFold.from_state(cache.state)
        changes = int(cache.state.get("changes", -1))
        if fold is not None and changes != _changes_up_to(session, tournament.id, cache.prefix_index):
            fold = None
    newer = seen is not None and cache is not None and seen.prefix_end(-1) < cache.prefix_index
    if newer:  # the cache holds results this read did not see: fold what it saw, keep the cache
        fold = None
    start = cache.prefix_index if cache is not None and fold is not None else -1
    if fold is None:
        fold, changes = StandingsFold(), 0
        fold.add_entrants([p.bot_id for p in tournament.participants])
    end = seen.prefix_end(start) if seen is not None else _prefix_end(session, tournament.id, start)
    records = load_records(session, tournament.id, after_index=start)
    if seen is not None:
        records = [r for r in records if r.index in seen.with_result]
    if fold.par_games or any(_has_par(r) is not None for r in records):
        # the tournament's games get a par: a result still waiting for its par is not done
        # for good either (caching it would mean folding again when the par lands)
        waiting = next((r.index for r in records if r.index <= end and not _has_par(r)), None)
        if waiting is not None:
            end = waiting - 1
    prefix = [r for r in records if r.index <= end]
    if not newer and (prefix or (cached_end is not None and start < 0)):
        for rec in prefix:
            fold.add(rec)
        state = fold.state()
        state["changes"] = changes + sum(r.changes for r in prefix)
        _save(session, tournament.id, cached_end, end, state)
    elif prefix:
        for rec in prefix:
            fold.add(rec)
    tail = [r for r in records if r.index > end]
    if tail:
        fold = fold.copy()
        for rec in tail:
            fold.add(rec)
    return fold.report()


def tournament_standings(session: Session, tournament: Tournament) -> list[Standing]:
    """The rows of :func:`tournament_report`, best first."""
    return tournament_report(session, tournament).rows


def _save(session: Session, tournament_id: int, old_end: int | None, new_end: int, state: dict[str, Any]) -> None:
    """Replace the cached prefix ending at ``old_end`` (None: no row yet) by one ending at
    ``new_end``; a concurrent reader that moved it first wins (this one's fold is the same or
    shorter)."""
    try:
        if old_end is None:
            session.add(StandingsCache(tournament_id=tournament_id, prefix_index=new_end, state=state))
        else:
            session.execute(
                update(StandingsCache)
                .where(StandingsCache.tournament_id == tournament_id, StandingsCache.prefix_index == old_end)
                .values(prefix_index=new_end, state=state)
            )
        session.commit()
    except IntegrityError:
        session.rollback()
