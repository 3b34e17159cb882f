"""Standings of a tournament and ratings across tournaments, from stored match results.

Used by the API (``GET /tournaments/{id}/standings``) and by the worker (ratings update).

Per entrant (a bot id, or a house bot name) the standings give: ``matches``, ``games``,
``wins`` (games finished first, place 1), ``total_score`` and ``mean_score`` per game with a
95% confidence interval (Student t, half-width ``ci95``; None with fewer than 2 games),
``faults`` (FAULT-1), and an openskill Plackett-Luce rating (``mu``, ``sigma``, conservative
``ordinal`` = mu - 3 sigma) updated match by match in schedule order (``matches.index``),
each match rated by its final places.

A game is an entry of ``match_results.games`` (``{"scores": [...], "places": [...]}`` per
seat); a result without games counts as one game with the match's scores and places.

Order (tie-break rule): higher mean score per game; then more wins; then higher ordinal;
then fewer faults; then bots by ascending id, house bots last by name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from openskill.models import PlackettLuce
from sqlalchemy import ColumnElement, and_, delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from arena.db.models import Match, MatchResult, Rating, RatingHistory, StandingsCache, Tournament, utcnow
from arena.lifecycle import MatchStatus, TournamentStatus

Entrant = int | str

# Two-sided 95% Student t quantiles t(0.975, df) for df = 1..30.
_T975 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]
_T975_LARGE = [(40, 2.021), (60, 2.000), (120, 1.980)]


def t975(df: int) -> float:
    """t quantile for a two-sided 95% interval with ``df`` degrees of freedom (conservative
    above 30: the value of the next smaller tabulated df; 1.96 above 120)."""
    if df < 1:
        raise ValueError("df must be >= 1")
    if df <= 30:
        return _T975[df - 1]
    value = 2.042
    for limit, t in _T975_LARGE:
        if df >= limit:
            value = t
    return value if df < 120 else 1.960


@dataclass(frozen=True)
class MatchRecord:
    """What the standings need of one finished match (lists indexed by seat)."""

    index: int
    seats: tuple[Entrant, ...]
    scores: Sequence[float]
    places: Sequence[int]
    faults: Sequence[int]
    games: Sequence[dict[str, Any]] = ()


@dataclass
class Standing:
    """One entrant's row: counts, score statistics per game, faults, rating, rank (1-based;
    0 while the entrant has played no game)."""

    entrant: Entrant
    matches: int = 0
    games: int = 0
    wins: int = 0
    total_score: float = 0.0
    mean_score: float | None = None
    ci95: float | None = None
    faults: int = 0
    mu: float = 0.0
    sigma: float = 0.0
    ordinal: float = 0.0
    rank: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if isinstance(self.entrant, int):
            d["bot_id"], d["house_bot"] = self.entrant, None
        else:
            d["bot_id"], d["house_bot"] = None, self.entrant
        del d["entrant"]
        return d


def _sort_key(s: Standing) -> tuple[Any, ...]:
    bot_key = (0, s.entrant, "") if isinstance(s.entrant, int) else (1, 0, s.entrant)
    return (-(s.mean_score if s.mean_score is not None else -math.inf), -s.wins, -s.ordinal, s.faults, bot_key)


class StandingsFold:
    """The standings' accumulators, folded match by match in schedule order; resumable.

    Per entrant: matches, games, wins, faults, and the game scores' count, mean and sum of
    squared deviations (Welford's method) and their sum, plus its openskill rating.
    :meth:`state` / :meth:`from_state` turn it into JSON and back, so a prefix of the
    schedule folded once is kept (:func:`tournament_standings`) and only new results are
    folded on the next read.
    """

    def __init__(self) -> None:
        self.model = PlackettLuce()
        self.acc: dict[Entrant, list[float]] = {}  # [matches, games, wins, faults, n, mean, m2, total]
        self.ratings: dict[Entrant, Any] = {}

    def _row(self, e: Entrant) -> list[float]:
        if e not in self.acc:
            self.acc[e] = [0, 0, 0, 0, 0, 0.0, 0.0, 0.0]
            self.ratings[e] = self.model.rating(name=str(e))
        return self.acc[e]

    def add_entrants(self, entrants: Iterable[Entrant]) -> None:
        for e in entrants:
            self._row(e)

    def add(self, rec: MatchRecord) -> None:
        """Fold one finished match (call in ``index`` order)."""
        games = list(rec.games) or [{"scores": list(rec.scores), "places": list(rec.places)}]
        for seat, e in enumerate(rec.seats):
            a = self._row(e)
            a[0] += 1
            a[3] += int(rec.faults[seat])
            for g in games:
                a[1] += 1
                if int(g["places"][seat]) == 1:
                    a[2] += 1
                x = float(g["scores"][seat])
                a[4] += 1
                delta = x - a[5]
                a[5] += delta / a[4]
                a[6] += delta * (x - a[5])
                a[7] += x
        teams = [[self.ratings[e]] for e in rec.seats]
        rated = self.model.rate(teams, ranks=[int(p) for p in rec.places])
        for e, team in zip(rec.seats, rated):
            self.ratings[e] = team[0]

    def state(self) -> dict[str, Any]:
        """JSON-ready state: ``{"rows": [[entrant, acc..., mu, sigma], ...]}``."""
        return {"rows": [[e, *a, self.ratings[e].mu, self.ratings[e].sigma] for e, a in self.acc.items()]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> StandingsFold:
        fold = cls()
        for e, *rest in state.get("rows", []):
            *acc, mu, sigma = rest
            fold.acc[e] = [
                int(acc[0]),
                int(acc[1]),
                int(acc[2]),
                int(acc[3]),
                int(acc[4]),
                float(acc[5]),
                float(acc[6]),
                float(acc[7]),
            ]
            fold.ratings[e] = fold.model.rating(mu=mu, sigma=sigma, name=str(e))
        return fold

    def copy(self) -> StandingsFold:
        return StandingsFold.from_state(self.state())

    def standings(self) -> list[Standing]:
        """The rows, best first (module docstring order); entrants without a game rank 0."""
        rows = []
        for e, (matches, games, wins, faults, n, _mean, m2, total) in self.acc.items():
            r = Standing(entrant=e, matches=int(matches), games=int(games), wins=int(wins), faults=int(faults))
            if n:
                r.total_score = float(total)
                r.mean_score = float(total / n)
            if n >= 2:
                r.ci95 = t975(int(n) - 1) * math.sqrt(m2 / (n - 1) / n)
            rating = self.ratings[e]
            r.mu, r.sigma, r.ordinal = rating.mu, rating.sigma, rating.ordinal()
            rows.append(r)
        ordered = sorted(rows, key=_sort_key)
        rank = 0
        for r in ordered:
            if r.games:
                rank += 1
                r.rank = rank
        return ordered


def compute_standings(records: Iterable[MatchRecord], entrants: Iterable[Entrant] = ()) -> list[Standing]:
    """Standings from finished matches (any order; rated in ``index`` order), best first.

    ``entrants`` lists participants to show even before they played (rank 0 until then).
    """
    fold = StandingsFold()
    fold.add_entrants(entrants)
    for rec in sorted(records, key=lambda r: r.index):
        fold.add(rec)
    return fold.standings()


def _record(match: Match) -> MatchRecord:
    res = match.result
    if res is None:
        raise ValueError(f"match {match.id} has no result")
    seats = tuple(s.bot_id if s.bot_id is not None else (s.house_bot or "house") for s in match.seats)
    return MatchRecord(match.index, seats, res.scores, res.places, res.faults, res.games or ())


def load_records(session: Session, tournament_id: int, after_index: int = -1) -> list[MatchRecord]:
    """Finished matches of a tournament (``index > after_index``) with their results, in
    schedule order."""
    matches = session.scalars(
        select(Match)
        .join(MatchResult)
        .where(Match.tournament_id == tournament_id, Match.index > after_index)
        .options(selectinload(Match.seats), selectinload(Match.result))
        .order_by(Match.index)
    ).all()
    return [_record(m) for m in matches]


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


def tournament_standings(session: Session, tournament: Tournament) -> list[Standing]:
    """Standings of ``tournament`` from its stored results (participants listed even at 0 games).

    Reads do not grow with the tournament: the fold of the longest prefix of the schedule
    whose matches are all done is kept in ``standings_cache`` (``prefix_index``, JSON state);
    a read folds only the results stored since, then the results beyond the first match
    still to be played (not kept). The result equals :func:`compute_standings` of every
    stored result. Commits the session when it moves the cached prefix.
    """
    cache = session.get(StandingsCache, tournament.id)
    start = cache.prefix_index if cache is not None else -1
    fold = StandingsFold.from_state(cache.state) if cache is not None else StandingsFold()
    if cache is None:
        fold.add_entrants([p.bot_id for p in tournament.participants])
    end = _prefix_end(session, tournament.id, start)
    records = load_records(session, tournament.id, after_index=start)
    prefix = [r for r in records if r.index <= end]
    if prefix:
        for rec in prefix:
            fold.add(rec)
        _save(session, tournament.id, start, end, fold.state())
    tail = [r for r in records if r.index > end]
    if tail:
        fold = fold.copy()
        for rec in tail:
            fold.add(rec)
    return fold.standings()


def _save(session: Session, tournament_id: int, old_end: int, new_end: int, state: dict[str, Any]) -> None:
    """Move the cached prefix from ``old_end`` to ``new_end``; a concurrent reader that moved
    it first wins (this one's fold is the same or shorter)."""
    try:
        if old_end < 0 and session.get(StandingsCache, tournament_id) is None:
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


def rated_tournaments(ruleset: str) -> ColumnElement[bool]:
    """The condition on :class:`Tournament` of those the ratings count: ``ruleset``'s, whose
    seed was drawn at the start; a tournament whose organizer set the seed (``seed_chosen``:
    its deals could have been picked) is left out."""
    return and_(Tournament.ruleset == ruleset, Tournament.seed_chosen.is_(False))


def rebuild_ratings(session: Session, ruleset: str) -> int:
    """Recompute the ``ratings`` rows of ``ruleset`` from every finished match; no commit.

    Matches are rated in order of (tournament start time, tournament id, match index), from
    the tournaments :func:`rated_tournaments` keeps (not those with a seed the organizer
    set); house bots take part in the rating of a match but are not stored. Recomputing from scratch
    makes the table independent of the order in which workers finished matches.
    ``ratings.games`` counts the bot's games (entries of ``match_results.games``; a result
    without games counts one), not its matches. Returns the number of bots rated.
    """
    model = PlackettLuce()
    matches = session.scalars(
        select(Match)
        .join(MatchResult)
        .join(Tournament, Match.tournament_id == Tournament.id)
        .where(rated_tournaments(ruleset))
        .options(selectinload(Match.seats), selectinload(Match.result))
        .order_by(Tournament.started_at, Tournament.id, Match.index)
    ).all()
    ratings: dict[Entrant, Any] = {}
    games: dict[int, int] = {}
    finished = set(
        session.scalars(
            select(Tournament.id).where(rated_tournaments(ruleset), Tournament.status == TournamentStatus.FINISHED)
        )
    )
    history: list[RatingHistory] = []
    played: set[int] = set()  # bots of the tournament being folded

    def snapshot(tournament_id: int | None) -> None:
        if tournament_id in finished:
            position = len({h.tournament_id for h in history})
            history.extend(
                RatingHistory(
                    ruleset=ruleset,
                    bot_id=b,
                    tournament_id=tournament_id,
                    position=position,
                    mu=ratings[b].mu,
                    sigma=ratings[b].sigma,
                    games=games[b],
                )
                for b in sorted(played)
            )
        played.clear()

    current: int | None = None
    for m in matches:
        if m.tournament_id != current:
            snapshot(current)
            current = m.tournament_id
        rec = _record(m)
        keys = [e if isinstance(e, int) else f"{m.tournament_id}:{e}" for e in rec.seats]
        teams = [[ratings.setdefault(k, model.rating(name=str(k)))] for k in keys]
        for k, team in zip(keys, model.rate(teams, ranks=[int(p) for p in rec.places])):
            ratings[k] = team[0]
            if isinstance(k, int):
                games[k] = games.get(k, 0) + (len(rec.games) or 1)
                played.add(k)
    snapshot(current)
    session.execute(delete(Rating).where(Rating.ruleset == ruleset))
    session.execute(delete(RatingHistory).where(RatingHistory.ruleset == ruleset))
    session.add_all(history)
    now = utcnow()
    for k, r in ratings.items():
        if isinstance(k, int):
            session.add(Rating(ruleset=ruleset, bot_id=k, mu=r.mu, sigma=r.sigma, games=games[k], updated_at=now))
    session.flush()
    return len(games)
