"""The tournament board: everything a tournament page shows of its matches, from one read.

:func:`read_board` reads the status of every match of a tournament (and whether it has a
result, and whether the viewer may read it) in ONE statement, so one snapshot of the
database, then derives from it the progress (finished / total, per status), the matches
playing now, one page of the match table and the standings of exactly the results that read
saw (:class:`arena.standings.ResultsSeen`). The pieces can therefore never disagree: a match
is ``finished`` in the table exactly when the progress counts it and the standings hold its
result, ``running`` exactly when it is among the matches playing now (issue 42: "Playing
now" listed 5 matches while the table showed 1 running). The seats and results of the rows
shown are read afterwards by id; a result stored after the snapshot is not shown.

A tournament of ``n`` matches costs one indexed scan of ``n`` short rows per read (8,128
matches, the largest schedule: a few milliseconds), the page's rows, and the standings fold
(cached: :func:`arena.standings.tournament_report`). Read-only but for that cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, literal, select
from sqlalchemy.orm import Session, selectinload

from arena import access as policy
from arena.db.models import Account, Match, MatchResult, Tournament
from arena.ranking import StandingsReport
from arena.standings import ResultsSeen, tournament_report
from arena.status import MatchStatus

#: Matches listed as playing now, at most.
PLAYING_LIMIT = 50


@dataclass(frozen=True)
class MatchLine:
    """One match as the read saw it: its status, and its seats and result when shown
    (``result`` is None unless the read saw it stored)."""

    match: Match
    status: str
    result: MatchResult | None

    @property
    def id(self) -> int:
        return int(self.match.id)


@dataclass
class Board:
    """One consistent view of a tournament (module docstring).

    ``counts``: matches per status (every match, visible or not); ``total``/``finished``;
    ``playing``: up to :data:`PLAYING_LIMIT` running matches the viewer may read, in
    schedule order, ``playing_total`` running matches in all; ``rows``: the page's matches
    (the viewer's, in schedule order), ``shown`` how many the viewer may read, ``page`` and
    ``pages``; ``report``: the standings of the results seen."""

    counts: dict[str, int]
    total: int
    finished: int
    playing: list[MatchLine]
    playing_total: int
    rows: list[MatchLine]
    shown: int
    page: int
    pages: int
    report: StandingsReport

    @property
    def percent(self) -> int:
        return round(100 * self.finished / self.total) if self.total else 0

    @property
    def hidden_playing(self) -> int:
        """Running matches the viewer may not read (or beyond the list's limit)."""
        return max(0, self.playing_total - len(self.playing))

    def progress(self) -> dict[str, Any]:
        """``{"finished", "total", "percent", "by_status"}`` (the page's ``_progress.html``)."""
        return {"finished": self.finished, "total": self.total, "percent": self.percent, "by_status": self.counts}


def read_board(session: Session, t: Tournament, viewer: Account | None, *, page: int = 1, per_page: int = 100) -> Board:
    """The board of ``t`` for ``viewer`` (module docstring): ``page`` of the match table (from
    1, clamped to the last page), ``per_page`` matches a page."""
    visible = policy.visible_matches_condition(session, viewer, t)
    readable = literal(True) if visible is None else case((visible, True), else_=False)
    snapshot = session.execute(
        select(Match.id, Match.index, Match.status, MatchResult.match_id.is_not(None), readable)
        .outerjoin(MatchResult, MatchResult.match_id == Match.id)
        .where(Match.tournament_id == t.id)
        .order_by(Match.index)
    ).all()
    counts: dict[str, int] = {}
    for _mid, _index, status, _has, _readable in snapshot:
        counts[str(status)] = counts.get(str(status), 0) + 1
    mine = [(int(mid), str(status), bool(has)) for mid, _i, status, has, ok in snapshot if ok]
    running = [(mid, st, has) for mid, st, has in mine if st == MatchStatus.RUNNING]
    pages = max(1, -(-len(mine) // per_page))
    page = min(max(1, page), pages)
    page_rows = mine[(page - 1) * per_page : page * per_page]
    lines = _lines(session, running[:PLAYING_LIMIT] + page_rows)
    seen = ResultsSeen(
        indices=frozenset(int(i) for _m, i, _s, _h, _r in snapshot),
        with_result=frozenset(int(i) for _m, i, _s, has, _r in snapshot if has),
        cancelled=frozenset(int(i) for _m, i, st, _h, _r in snapshot if st == MatchStatus.CANCELLED),
    )
    return Board(
        counts=counts,
        total=len(snapshot),
        finished=counts.get(MatchStatus.FINISHED, 0),
        playing=[lines[mid] for mid, _st, _h in running[:PLAYING_LIMIT]],
        playing_total=counts.get(MatchStatus.RUNNING, 0),
        rows=[lines[mid] for mid, _st, _h in page_rows],
        shown=len(mine),
        page=page,
        pages=pages,
        report=tournament_report(session, t, seen),
    )


def _lines(session: Session, wanted: list[tuple[int, str, bool]]) -> dict[int, MatchLine]:
    """The matches of ``wanted`` (id, status seen, result seen) with their seats, and their
    results where the read saw one."""
    ids = sorted({mid for mid, _st, _h in wanted})
    if not ids:
        return {}
    by_id = {
        m.id: m
        for m in session.scalars(
            select(Match).where(Match.id.in_(ids)).options(selectinload(Match.seats), selectinload(Match.result))
        )
    }
    return {mid: MatchLine(by_id[mid], status, by_id[mid].result if has else None) for mid, status, has in wanted}
