"""Standings of a tournament and ratings across tournaments, from stored match results.

Used by the API (``GET /tournaments/{id}/standings``, ``GET /leaderboard``), the pages and the
worker (ratings rebuild). docs/ranking.md explains the choices ("Standings: what is settled",
"Ratings").

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
from datetime import datetime
from typing import Any

from openskill.models import PlackettLuce
from sqlalchemy import ColumnElement, and_, delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from arena.db.models import (
    Account,
    Bot,
    Match,
    MatchResult,
    Rating,
    RatingHistory,
    StandingsCache,
    Tournament,
    utcnow,
)
from arena.ladder_ratings import contested
from arena.lifecycle import BotStatus, MatchStatus, TournamentStatus
from arena.significance import MIN_TEST_GAMES, Difference, Moments, SharedSums, difference, t975
from arena.status import TournamentFormat

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
    "leaderboard",
    "load_records",
    "rate_games",
    "rated_tournaments",
    "rating_key",
    "rebuild_ratings",
    "t975",
    "tournament_report",
    "tournament_standings",
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


def _seats(match: Match) -> tuple[Entrant, ...]:
    return tuple(s.entrant for s in match.seats)


def _record(match: Match) -> MatchRecord:
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


# ----------------------------------------------------------------------------- ratings


def rated_tournaments(ruleset: str, *, people: bool = False) -> ColumnElement[bool]:
    """The tournaments whose games count for the ratings of ``ruleset``: THE one place that
    selects them (the ratings rebuild and the leaderboard read nothing else): ``ruleset``'s,
    whose seed was drawn at the start; a tournament whose organizer set the seed
    (``seed_chosen``: its deals could have been picked) is left out, and so are the ladders'
    (rated set by set, :func:`arena.lifecycle.ladders.rate_set`) and the tables where people
    play (their own pool, :mod:`arena.people`), unless ``people`` (an operator's
    ``ARENA_PEOPLE_IN_BOT_RATINGS``: a person is then an entrant of the bots' games, never a row)."""
    formats = [TournamentFormat.LADDER.value] + ([] if people else [TournamentFormat.TABLE.value])
    return and_(
        Tournament.ruleset == ruleset,
        Tournament.seed_chosen.is_(False),
        Tournament.format.not_in(formats),
    )


def rating_key(entrant: Entrant, house_bot: str | None) -> Entrant:
    """The entrant a seat is rated as across tournaments: a bot by its id, a person by
    ``person:<account id>``, a house seat by :func:`house_key`."""
    if isinstance(entrant, int) or entrant.startswith("person:"):
        return entrant
    return house_key(house_bot, entrant)


def house_key(house_bot: str | None, seat_name: str) -> str:
    """The rating entrant of a house seat across tournaments: its sample bot and its seat name
    (``house:random:house-1``). One entrant for every tournament, not a new one at the prior
    rating each time: a house bot beaten in 20 tournaments is rated as beaten 20 times, so
    cutting the same games into more tournaments inflates no rating (docs/ranking.md)."""
    return f"house:{house_bot or 'house'}:{seat_name}"


def _contested(m: Match, rec: MatchRecord) -> bool:
    """Whether every bot seat of a stored match made a valid decision
    (:func:`arena.ladder_ratings.contested` of ``timings.answered``; a result stored before
    it was recorded counts as contested)."""
    answered = (m.result.timings or {}).get("answered") if m.result is not None else None
    if not isinstance(answered, list) or len(answered) != len(rec.seats):
        return True
    return contested([int(a) for a in answered], [not isinstance(e, int) for e in rec.seats])


def rebuild_ratings(session: Session, ruleset: str, *, people: bool = False) -> int:
    """Recompute the ``ratings`` and ``rating_history`` rows of ``ruleset``; no commit.

    Every finished match of the :func:`rated_tournaments` in which every bot seat made a valid
    decision (no rating from a forfeit or a withdrawal before play) is rated, in order of
    (tournament start time, tournament id, match index), one update per game (:func:`rate_games`: ranks
    by adjusted score where the game has a par, else its places). House bots take part in the
    rating of a game but are not stored (a house seat is one entrant across tournaments:
    :func:`house_key`). Recomputing from scratch makes the table independent of the order in which workers
    finished matches. ``ratings.games`` counts the bot's rated games, ``matches`` its rated
    matches, ``last_played_at`` when its last rated match finished; a ``rating_history`` row
    per bot and finished tournament holds its rating after that tournament. ``people``: the
    tables count too (:func:`rated_tournaments`). Returns the number of bots rated.
    """
    model = PlackettLuce()
    rated = rated_tournaments(ruleset, people=people)
    matches = session.scalars(
        select(Match)
        .join(MatchResult)
        .join(Tournament, Match.tournament_id == Tournament.id)
        .where(rated)
        .options(selectinload(Match.seats), selectinload(Match.result))
        .order_by(Tournament.started_at, Tournament.id, Match.index)
    ).all()
    house_bots = dict(session.execute(select(Tournament.id, Tournament.house_bot).where(rated)).all())
    ratings: dict[Entrant, Any] = {}
    games: dict[int, int] = {}
    played_matches: dict[int, int] = {}
    last_played: dict[int, datetime] = {}
    finished = set(session.scalars(select(Tournament.id).where(rated, Tournament.status == TournamentStatus.FINISHED)))
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
        if not _contested(m, rec):
            continue  # a seat never made a valid decision (a forfeit, a withdrawal): never rated
        game_list = rec.game_list()
        keys = [rating_key(e, house_bots[m.tournament_id]) for e in rec.seats]
        before = [ratings.setdefault(k, model.rating(name=str(k))) for k in keys]
        when = m.finished_at or (m.result.created_at if m.result else None)
        for k, r in zip(keys, rate_games(model, before, game_list)):
            ratings[k] = r
            if isinstance(k, int):
                games[k] = games.get(k, 0) + len(game_list)
                played_matches[k] = played_matches.get(k, 0) + 1
                if when is not None and (k not in last_played or when > last_played[k]):
                    last_played[k] = when
                played.add(k)
    snapshot(current)
    session.execute(delete(Rating).where(Rating.ruleset == ruleset))
    session.execute(delete(RatingHistory).where(RatingHistory.ruleset == ruleset))
    session.add_all(history)
    now = utcnow()
    for k, r in ratings.items():
        if isinstance(k, int):
            session.add(
                Rating(
                    ruleset=ruleset,
                    bot_id=k,
                    mu=r.mu,
                    sigma=r.sigma,
                    games=games[k],
                    matches=played_matches[k],
                    last_played_at=last_played.get(k),
                    updated_at=now,
                )
            )
    session.flush()
    return len(games)


@dataclass(frozen=True)
class LeaderRow:
    """One bot of the leaderboard: its rank by ``ordinal`` (mu - 3 sigma), rating, rated games
    and matches, and when its last rated match finished."""

    rank: int
    bot_id: int
    bot_name: str
    owner: str
    owner_id: int
    mu: float
    sigma: float
    ordinal: float
    games: int
    matches: int
    last_played: datetime | None


def leaderboard(session: Session, ruleset: str, page: int = 1, per_page: int = 50) -> tuple[list[LeaderRow], int]:
    """``(one page of the rule set's ratings, best conservative rating first; how many in
    all)``: the ``ratings`` table the worker keeps (:func:`rebuild_ratings`); ties by bot id.
    A deleted bot is not listed (nor, through it, its owner's name): the public leaderboard
    shows the bots that still exist."""
    ordinal = (Rating.mu - 3 * Rating.sigma).label("ordinal")
    cond = and_(Rating.ruleset == ruleset, Bot.status != BotStatus.DELETED)
    total = session.scalar(select(func.count()).select_from(Rating).join(Bot, Bot.id == Rating.bot_id).where(cond)) or 0
    offset = (page - 1) * per_page
    rows = session.execute(
        select(Rating, Bot.name, Account.name, Account.id, ordinal)
        .join(Bot, Bot.id == Rating.bot_id)
        .join(Account, Account.id == Bot.owner_id)
        .where(cond)
        .order_by(ordinal.desc(), Rating.bot_id)
        .limit(per_page)
        .offset(offset)
    ).all()
    return [
        LeaderRow(
            offset + i + 1, r.bot_id, bot_name, owner, owner_id, r.mu, r.sigma, o, r.games, r.matches, r.last_played_at
        )
        for i, (r, bot_name, owner, owner_id, o) in enumerate(rows)
    ], int(total)
