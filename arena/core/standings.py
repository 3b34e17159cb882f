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
from dataclasses import asdict, dataclass, field
from typing import Any

from openskill.models import PlackettLuce
from sqlalchemy import delete, select
from sqlalchemy.orm import Session, selectinload

from arena.core.db.models import Match, MatchResult, Rating, Tournament, utcnow

Entrant = int | str

# Two-sided 95% Student t quantiles t(0.975, df) for df = 1..30.
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
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
    _scores: list[float] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("_scores")
        if isinstance(self.entrant, int):
            d["bot_id"], d["house_bot"] = self.entrant, None
        else:
            d["bot_id"], d["house_bot"] = None, self.entrant
        del d["entrant"]
        return d


def _sort_key(s: Standing) -> tuple:
    bot_key = (0, s.entrant, "") if isinstance(s.entrant, int) else (1, 0, s.entrant)
    return (-(s.mean_score if s.mean_score is not None else -math.inf), -s.wins, -s.ordinal, s.faults, bot_key)


def compute_standings(records: Iterable[MatchRecord], entrants: Iterable[Entrant] = ()) -> list[Standing]:
    """Standings from finished matches (any order; rated in ``index`` order), best first.

    ``entrants`` lists participants to show even before they played. ``rank`` is 1-based.
    """
    model = PlackettLuce()
    rows: dict[Entrant, Standing] = {}
    ratings: dict[Entrant, Any] = {}

    def row(e: Entrant) -> Standing:
        if e not in rows:
            rows[e] = Standing(entrant=e)
            ratings[e] = model.rating(name=str(e))
        return rows[e]

    for e in entrants:
        row(e)
    for rec in sorted(records, key=lambda r: r.index):
        games = list(rec.games) or [{"scores": list(rec.scores), "places": list(rec.places)}]
        for seat, e in enumerate(rec.seats):
            r = row(e)
            r.matches += 1
            r.faults += int(rec.faults[seat])
            for g in games:
                r.games += 1
                r._scores.append(float(g["scores"][seat]))
                if int(g["places"][seat]) == 1:
                    r.wins += 1
        teams = [[ratings[e]] for e in rec.seats]
        rated = model.rate(teams, ranks=[int(p) for p in rec.places])
        for e, team in zip(rec.seats, rated):
            ratings[e] = team[0]
    for e, r in rows.items():
        n = len(r._scores)
        r.total_score = float(sum(r._scores))
        if n:
            r.mean_score = r.total_score / n
        if n >= 2:
            mean = r.total_score / n
            var = sum((x - mean) ** 2 for x in r._scores) / (n - 1)
            r.ci95 = t975(n - 1) * math.sqrt(var / n)
        r.mu, r.sigma, r.ordinal = ratings[e].mu, ratings[e].sigma, ratings[e].ordinal()
    ordered = sorted(rows.values(), key=_sort_key)
    for i, r in enumerate(ordered, 1):
        r.rank = i
    return ordered


def _record(match: Match) -> MatchRecord:
    res = match.result
    if res is None:
        raise ValueError(f"match {match.id} has no result")
    seats = tuple(s.bot_id if s.bot_id is not None else (s.house_bot or "house") for s in match.seats)
    return MatchRecord(match.index, seats, res.scores, res.places, res.faults, res.games or ())


def load_records(session: Session, tournament_id: int) -> list[MatchRecord]:
    """Finished matches of a tournament with their results, in schedule order."""
    matches = session.scalars(
        select(Match).join(MatchResult).where(Match.tournament_id == tournament_id)
        .options(selectinload(Match.seats), selectinload(Match.result)).order_by(Match.index)
    ).all()
    return [_record(m) for m in matches]


def tournament_standings(session: Session, tournament: Tournament) -> list[Standing]:
    """Standings of ``tournament`` from its stored results (participants listed even at 0 games)."""
    return compute_standings(load_records(session, tournament.id),
                             entrants=[p.bot_id for p in tournament.participants])


def rebuild_ratings(session: Session, ruleset: str) -> int:
    """Recompute the ``ratings`` rows of ``ruleset`` from every finished match; no commit.

    Matches are rated in order of (tournament start time, tournament id, match index); house
    bots take part in the rating of a match but are not stored. Recomputing from scratch
    makes the table independent of the order in which workers finished matches.
    Returns the number of bots rated.
    """
    model = PlackettLuce()
    matches = session.scalars(
        select(Match).join(MatchResult).join(Tournament, Match.tournament_id == Tournament.id)
        .where(Tournament.ruleset == ruleset)
        .options(selectinload(Match.seats), selectinload(Match.result))
        .order_by(Tournament.started_at, Tournament.id, Match.index)
    ).all()
    ratings: dict[Entrant, Any] = {}
    games: dict[int, int] = {}
    for m in matches:
        rec = _record(m)
        keys = [e if isinstance(e, int) else f"{m.tournament_id}:{e}" for e in rec.seats]
        teams = [[ratings.setdefault(k, model.rating(name=str(k)))] for k in keys]
        for k, team in zip(keys, model.rate(teams, ranks=[int(p) for p in rec.places])):
            ratings[k] = team[0]
            if isinstance(k, int):
                games[k] = games.get(k, 0) + 1
    session.execute(delete(Rating).where(Rating.ruleset == ruleset))
    now = utcnow()
    for k, r in ratings.items():
        if isinstance(k, int):
            session.add(Rating(ruleset=ruleset, bot_id=k, mu=r.mu, sigma=r.sigma, games=games[k], updated_at=now))
    session.flush()
    return len(games)
