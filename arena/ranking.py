"""Ranking: the standings report folded from match records (pure: no database). A
tournament's standings read from the database, cached: :mod:`arena.standings`; the ratings
across tournaments: :mod:`arena.ratings`. docs/ranking.md explains the choices ("Standings:
what is settled").

A game is an entry of ``match_results.games``: ``{"scores": [...], "places": [...]}`` per
seat, and, once its par is known, ``"par": [float per seat]`` (what the seat's cards were
worth, docs/ranking.md); the *adjusted score* of a seat is ``scores[s] - par[s]``; a game
without a par has none. A result without games counts as one game with the match's scores
and places.

Per entrant (a bot id, or a house bot name) the standings give: ``matches``, ``games``,
``wins`` (games finished first, place 1), ``total_score`` and ``mean_score`` per game with a
95% interval (Student t, half-width ``ci95``; None with fewer than 2 games), the same for the
adjusted score over the entrant's ``par_games`` (``adjusted_mean``, ``adjusted_ci95``),
``faults`` (FAULT-1), and an openskill Plackett-Luce rating (``mu``, ``sigma``, conservative
``ordinal`` = mu - 3 sigma) updated game by game in schedule order (:func:`rate_games`).

Order (tie-break rule): higher mean per game, adjusted when every game played has a par
(``order_by`` "adjusted"), else raw; then more wins; then higher ordinal; then fewer faults;
then bots by ascending id, house bots last by name.

Each pair of neighbours in that order gets the difference of their means (the ordering
one) with its 95% interval and whether it is significant (:func:`arena.significance.difference`:
the games both played are paired). The ranking is *settled* when every entrant has played
and every neighbour difference is significant; *first place settled* when the leader's
difference to every other entrant is significant.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from openskill.models import PlackettLuce

from arena.significance import MIN_TEST_GAMES, Difference, Moments, SharedSums, difference, t975

__all__ = [
    "TEST",
    "SETTLED_RULE",
    "Entrant",
    "MatchRecord",
    "Neighbour",
    "Standing",
    "StandingsFold",
    "StandingsReport",
    "compute_report",
    "compute_standings",
    "game_par",
    "game_ranks",
    "rate_games",
    "t975",
]

Entrant = int | str

#: The significance test of neighbours (docs/ranking.md), as the API and the CLI state it.
TEST = (
    "difference of the two means per game with its 95% interval: variance s_a^2/n_a + s_b^2/n_b "
    "- 2 n_ab cov_ab/(n_a n_b), the covariance taken over the n_ab games both played (the paired "
    "t test when they played the same games), Student t with min(n_a, n_b) - 1 degrees of freedom; "
    f"significant when the interval excludes 0 and each played at least {MIN_TEST_GAMES} games"
)
#: When the ranking is called settled (docs/ranking.md).
SETTLED_RULE = (
    "settled: every entrant has played and every difference between neighbours in the order is "
    "significant at 95%; first place settled: the leader's difference to every other entrant is"
    " significant at 95%"
)
#: Version of :meth:`StandingsFold.state`; a cached state of another version is folded again.
STATE_VERSION = 2


def game_par(game: dict[str, Any], seats: int) -> list[float] | None:
    """The game's par per seat, or None when it has none (missing, or not ``seats`` finite numbers)."""
    par = game.get("par")
    if not isinstance(par, list) or len(par) != seats:
        return None
    out = []
    for p in par:
        if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p):
            return None
        out.append(float(p))
    return out


def _ranks_of(values: Sequence[float]) -> list[int]:
    """1 + the number of seats with a strictly higher value (equal values share a rank);
    values rounded to 1e-9 so that float noise makes no rank."""
    rounded = [round(v, 9) for v in values]
    return [1 + sum(o > v for o in rounded) for v in rounded]


def game_ranks(game: dict[str, Any], seats: int) -> list[int]:
    """The ranks a game gives to the rating (docs/ranking.md, "Ratings"): by adjusted score
    (``scores - par``, higher first, equal ones tie) when the game has a par, else its places."""
    par = game_par(game, seats)
    if par is None:
        return [int(p) for p in game["places"]]
    return _ranks_of([float(x) - p for x, p in zip(game["scores"], par)])


def rate_games(model: PlackettLuce, ratings: list[Any], games: Sequence[dict[str, Any]]) -> list[Any]:
    """The seats' ratings after one openskill update per game of a match, in game order.

    Each update's dynamics ``tau`` is the model's divided by the square root of the match's
    game count, so a match lets a rating drift as much as one update of the model does,
    whatever its length (docs/ranking.md, "Ratings")."""
    if not games:
        return ratings
    tau = model.tau / math.sqrt(len(games))
    for g in games:
        ranks: list[float] = [float(r) for r in game_ranks(g, len(ratings))]
        teams = model.rate([[r] for r in ratings], ranks=ranks, tau=tau)
        ratings = [team[0] for team in teams]
    return ratings


@dataclass(frozen=True)
class MatchRecord:
    """What the standings need of one finished match (lists indexed by seat); ``changes``:
    the result row's update count (``match_results.changes``)."""

    index: int
    seats: tuple[Entrant, ...]
    scores: Sequence[float]
    places: Sequence[int]
    faults: Sequence[int]
    games: Sequence[dict[str, Any]] = ()
    changes: int = 0

    def game_list(self) -> list[dict[str, Any]]:
        """The games; a result without games is one game with the match's scores and places."""
        return list(self.games) or [{"scores": list(self.scores), "places": list(self.places)}]


@dataclass
class Standing:
    """One entrant's row: counts, raw and adjusted score statistics per game, faults, rating,
    rank (1-based; 0 while the entrant has played no game)."""

    entrant: Entrant
    matches: int = 0
    games: int = 0
    wins: int = 0
    total_score: float = 0.0
    mean_score: float | None = None
    ci95: float | None = None
    par_games: int = 0
    adjusted_mean: float | None = None
    adjusted_ci95: float | None = None
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


@dataclass(frozen=True)
class Neighbour:
    """Two neighbours in the order: ranks, entrants, and the difference of their ordering means
    (upper minus lower, :class:`arena.significance.Difference`)."""

    upper_rank: int
    lower_rank: int
    upper: Entrant
    lower: Entrant
    difference: float
    ci95: float | None
    shared_games: int
    significant: bool
    too_few_games: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["upper"], d["lower"]
        return d


@dataclass
class StandingsReport:
    """The standings (rows best first) and what is settled.

    ``order_by``: "adjusted" when every game played has a par, else "raw"; ``games``: games
    played (each counted once, not per seat); ``games_with_par``: those with a par;
    ``neighbours``: one per pair of ranked neighbours; ``settled`` / ``top_settled``:
    :data:`SETTLED_RULE`."""

    rows: list[Standing]
    order_by: str = "raw"
    games: int = 0
    games_with_par: int = 0
    neighbours: list[Neighbour] = field(default_factory=list)
    settled: bool = False
    top_settled: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": [r.to_dict() for r in self.rows],
            "order_by": self.order_by,
            "games": self.games,
            "games_with_par": self.games_with_par,
            "neighbours": [n.to_dict() for n in self.neighbours],
            "settled": self.settled,
            "top_settled": self.top_settled,
            "test": TEST,
            "settled_rule": SETTLED_RULE,
        }


def _entrant_key(e: Entrant) -> tuple[int, int, str]:
    return (0, e, "") if isinstance(e, int) else (1, 0, e)


@dataclass
class _Acc:
    matches: int = 0
    games: int = 0
    wins: int = 0
    faults: int = 0
    raw: Moments = field(default_factory=Moments)
    adj: Moments = field(default_factory=Moments)


class StandingsFold:
    """The standings' accumulators, folded match by match in schedule order; resumable.

    Per entrant: matches, games, wins, faults, the raw and adjusted scores' moments
    (:class:`arena.significance.Moments`) and its openskill rating; per pair of entrants
    who shared a game, the sums over their shared games (raw and adjusted,
    :class:`arena.significance.SharedSums`); the games played and those with a par.
    :meth:`state` / :meth:`from_state` turn it into JSON and back, so a prefix of the
    schedule folded once is kept (:func:`tournament_standings`) and only new results are
    folded on the next read.
    """

    def __init__(self) -> None:
        self.model = PlackettLuce()
        self.acc: dict[Entrant, _Acc] = {}
        self.ratings: dict[Entrant, Any] = {}
        self.pairs: dict[tuple[Entrant, Entrant], tuple[SharedSums, SharedSums]] = {}
        self.games = 0
        self.par_games = 0

    def _row(self, e: Entrant) -> _Acc:
        if e not in self.acc:
            self.acc[e] = _Acc()
            self.ratings[e] = self.model.rating(name=str(e))
        return self.acc[e]

    def _pair(self, a: Entrant, b: Entrant) -> tuple[tuple[SharedSums, SharedSums], bool]:
        """The pair's (raw, adjusted) sums in canonical order, and whether (a, b) is flipped."""
        flipped = _entrant_key(b) < _entrant_key(a)
        key = (b, a) if flipped else (a, b)
        if key not in self.pairs:
            self.pairs[key] = (SharedSums(), SharedSums())
        return self.pairs[key], flipped

    def add_entrants(self, entrants: Iterable[Entrant]) -> None:
        for e in entrants:
            self._row(e)

    def add(self, rec: MatchRecord) -> None:
        """Fold one finished match (call in ``index`` order)."""
        games = rec.game_list()
        seats = len(rec.seats)
        rows = [self._row(e) for e in rec.seats]
        for seat, a in enumerate(rows):
            a.matches += 1
            a.faults += int(rec.faults[seat])
        for g in games:
            scores = [float(x) for x in g["scores"]]
            par = game_par(g, seats)
            adjusted = [x - p for x, p in zip(scores, par)] if par is not None else None
            self.games += 1
            self.par_games += par is not None
            for seat, a in enumerate(rows):
                a.games += 1
                a.wins += int(g["places"][seat]) == 1
                a.raw.add(scores[seat])
                if adjusted is not None:
                    a.adj.add(adjusted[seat])
            for i in range(seats):
                for j in range(i + 1, seats):
                    (raw, adj), flipped = self._pair(rec.seats[i], rec.seats[j])
                    x, y = (j, i) if flipped else (i, j)
                    raw.add(scores[x], scores[y])
                    if adjusted is not None:
                        adj.add(adjusted[x], adjusted[y])
        rated = rate_games(self.model, [self.ratings[e] for e in rec.seats], games)
        for e, r in zip(rec.seats, rated):
            self.ratings[e] = r

    def state(self) -> dict[str, Any]:
        """JSON-ready state (version :data:`STATE_VERSION`)."""
        return {
            "v": STATE_VERSION,
            "games": self.games,
            "par_games": self.par_games,
            "rows": [
                [
                    e,
                    a.matches,
                    a.games,
                    a.wins,
                    a.faults,
                    *a.raw.to_list(),
                    *a.adj.to_list(),
                    self.ratings[e].mu,
                    self.ratings[e].sigma,
                ]
                for e, a in self.acc.items()
            ],
            "pairs": [[a, b, *raw.to_list(), *adj.to_list()] for (a, b), (raw, adj) in self.pairs.items()],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> StandingsFold | None:
        """The fold of :meth:`state`; None for a state of another version (fold again)."""
        if state.get("v") != STATE_VERSION:
            return None
        fold = cls()
        fold.games, fold.par_games = int(state["games"]), int(state["par_games"])
        for e, matches, games, wins, faults, *rest in state["rows"]:
            fold.acc[e] = _Acc(
                int(matches),
                int(games),
                int(wins),
                int(faults),
                Moments.from_list(rest[0:4]),
                Moments.from_list(rest[4:8]),
            )
            fold.ratings[e] = fold.model.rating(mu=rest[8], sigma=rest[9], name=str(e))
        for a, b, *sums in state["pairs"]:
            fold.pairs[(a, b)] = (SharedSums.from_list(sums[0:4]), SharedSums.from_list(sums[4:8]))
        return fold

    def copy(self) -> StandingsFold:
        fold = StandingsFold.from_state(self.state())
        assert fold is not None
        return fold

    def _difference(self, a: Entrant, b: Entrant, adjusted: bool) -> Difference:
        flipped = _entrant_key(b) < _entrant_key(a)
        sums = self.pairs.get((b, a) if flipped else (a, b))
        shared = None if sums is None else sums[1 if adjusted else 0]
        if shared is not None and flipped:
            shared = shared.swapped()
        acc_a, acc_b = self.acc[a], self.acc[b]
        if adjusted:
            return difference(acc_a.adj, acc_b.adj, shared)
        return difference(acc_a.raw, acc_b.raw, shared)

    def report(self) -> StandingsReport:
        """The rows best first (module docstring order; entrants without a game rank 0), the
        neighbours' differences and what is settled."""
        adjusted = self.games > 0 and self.par_games == self.games
        rows = []
        for e, a in self.acc.items():
            r = Standing(entrant=e, matches=a.matches, games=a.games, wins=a.wins, faults=a.faults, par_games=a.adj.n)
            if a.raw.n:
                r.total_score, r.mean_score, r.ci95 = a.raw.total, a.raw.total / a.raw.n, a.raw.ci95()
            if a.adj.n:
                r.adjusted_mean, r.adjusted_ci95 = a.adj.total / a.adj.n, a.adj.ci95()
            rating = self.ratings[e]
            r.mu, r.sigma, r.ordinal = rating.mu, rating.sigma, rating.ordinal()
            rows.append(r)

        def key(s: Standing) -> tuple[Any, ...]:
            mean = s.adjusted_mean if adjusted else s.mean_score
            return (-(mean if mean is not None else -math.inf), -s.wins, -s.ordinal, s.faults, _entrant_key(s.entrant))

        ordered = sorted(rows, key=key)
        ranked = [r for r in ordered if r.games]
        for i, r in enumerate(ranked):
            r.rank = i + 1
        neighbours = []
        for up, low in zip(ranked, ranked[1:]):
            d = self._difference(up.entrant, low.entrant, adjusted)
            neighbours.append(
                Neighbour(
                    up.rank,
                    low.rank,
                    up.entrant,
                    low.entrant,
                    d.difference,
                    d.ci95,
                    d.shared_games,
                    d.significant,
                    d.too_few_games,
                )
            )
        everyone_played = len(ranked) == len(ordered) >= 2
        settled = everyone_played and all(n.significant for n in neighbours)
        top_settled = everyone_played and all(
            self._difference(ranked[0].entrant, r.entrant, adjusted).significant for r in ranked[1:]
        )
        return StandingsReport(
            rows=ordered,
            order_by="adjusted" if adjusted else "raw",
            games=self.games,
            games_with_par=self.par_games,
            neighbours=neighbours,
            settled=settled,
            top_settled=top_settled,
        )

    def standings(self) -> list[Standing]:
        """The rows of :meth:`report`."""
        return self.report().rows


def compute_report(records: Iterable[MatchRecord], entrants: Iterable[Entrant] = ()) -> StandingsReport:
    """The standings report of finished matches (any order; folded in ``index`` order).

    ``entrants`` lists participants to show even before they played (rank 0 until then).
    """
    fold = StandingsFold()
    fold.add_entrants(entrants)
    for rec in sorted(records, key=lambda r: r.index):
        fold.add(rec)
    return fold.report()


def compute_standings(records: Iterable[MatchRecord], entrants: Iterable[Entrant] = ()) -> list[Standing]:
    """The rows of :func:`compute_report`, best first."""
    return compute_report(records, entrants).rows
