"""Play until settled: the sequential test that decides whether the top of a tournament's
ranking is settled (issue 28; docs/ranking.md, "Play until settled").

Pure functions, standard library only. A tournament played until settled adds a round of its
schedule (fresh deals) each time a round ends, until :func:`decide` says stop.

Observations: every game played, as the ``(entrant, value)`` of each seat. ``value`` is the
game's score, or its *adjusted* score (score minus the seat's par) when every game of the
tournament has a par (:func:`game_values`); a mix would compare seats measured two ways.

The test, at the end of each round, on all the games so far:

* the **leader** L and the **runner-up** R are the two participants (bots) with the highest
  mean value per game (ties: by ascending id); with a single participant, it and the best
  house seat (house seats of one sample bot are equal by construction: two of them at the
  top would only be tested against each other);
* ``d = mean_L - mean_R`` and its variance ``V``, a cluster-robust estimate with one
  cluster per game: ``V = G/(G-1) * sum_g e_g**2`` over the ``G`` games holding L or R, with
  ``e_g = [L in g](v_Lg - mean_L)/n_L - [R in g](v_Rg - mean_R)/n_R``. It counts the
  dependence of two scores of one game (zero-sum: when L gains, R loses);
* the log-likelihood ratio of the normal approximation of the generalized SPRT (fastchess's
  and fishtest's SPRT for two engines, with elo0/elo1 replaced by score differences
  ``0`` and ``delta``): ``LLR = (d**2 - (d - delta)**2) / (2 V)``;
* **settled** when ``LLR >= ln((1 - beta) / alpha)`` (Wald's upper bound) and ``G >=
  min_games``. The lower bound ``ln(beta / (1 - alpha))`` (accept "no difference of
  ``delta``") is reported but does not stop the tournament: the top may still separate in
  later rounds, so it plays on to ``max_rounds``.

Error rates (measured by ``tests/arena/test_sequential.py``, seeded simulations): with the top
two of equal strength, the chance of stopping "settled" is below ``alpha`` (the data picks
which of the two leads, so both directions count); with the leader ahead by ``delta``, the
chance of stopping settled before ``max_rounds`` depends on the games a round holds and
``max_rounds``; ``beta`` is its limit with unlimited rounds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from arena.rulesets import arena_ruleset
from arena.status import StopReason

#: A seat's occupant: a bot id, or the name of a house bot (``"house-1"``).
Entrant = int | str
#: One game: the ``(entrant, value)`` of each of its seats.
Game = Sequence[tuple[Entrant, float]]

#: Defaults of the organizer's ``until_settled``: false "settled" rate, and the miss rate at
#: ``delta`` with unlimited rounds.
ALPHA = 0.05
BETA = 0.05
#: Fewest games holding the leader or the runner-up before the test may say "settled" (the
#: variance estimate of fewer games is too rough: docs/ranking.md).
MIN_GAMES = 20
#: Largest ``max_rounds`` an organizer may ask for.
MAX_ROUNDS_LIMIT = 100
#: The LLR is stored and shown within these bounds (an exact tie of every game has V = 0).
LLR_CLAMP = 1e6


def default_delta(ruleset: str, options: Mapping[str, Any]) -> float:
    """The score difference per game the test is tuned to find when the organizer gives none:
    Million Doubt 1 point (MD-17: a game is worth 1 to 11), Trump Millionaire a tenth of
    ``target_score`` (10 for 100), JDF 1 match point. About a third of a seat's spread of
    game scores between sample bots (docs/ranking.md). The rule set's ``settle_delta``."""
    return arena_ruleset(ruleset).settle_delta(options)


@dataclass(frozen=True)
class SettleRule:
    """The organizer's ``until_settled``: at most ``max_rounds`` rounds (the first included);
    the test of the module docstring with ``delta`` (points per game, > 0), ``alpha`` and
    ``beta`` (each in (0, 0.5]) and ``min_games``."""

    max_rounds: int
    delta: float
    alpha: float = ALPHA
    beta: float = BETA
    min_games: int = MIN_GAMES

    def __post_init__(self) -> None:
        if not 1 <= self.max_rounds <= MAX_ROUNDS_LIMIT:
            raise ValueError(f"max_rounds must be 1 to {MAX_ROUNDS_LIMIT}")
        if not (self.delta > 0 and math.isfinite(self.delta)):
            raise ValueError("delta must be a positive number")
        for name in ("alpha", "beta"):
            if not 0 < getattr(self, name) <= 0.5:
                raise ValueError(f"{name} must be in (0, 0.5]")

    @property
    def upper(self) -> float:
        """Wald's upper bound: LLR at or above it is "settled"."""
        return math.log((1 - self.beta) / self.alpha)

    @property
    def lower(self) -> float:
        """Wald's lower bound (reported only: module docstring)."""
        return math.log(self.beta / (1 - self.alpha))

    def to_dict(self) -> dict[str, Any]:
        """``{"max_rounds", "delta", "alpha", "beta"}`` (what ``tournaments.until_settled`` holds)."""
        return {"max_rounds": self.max_rounds, "delta": self.delta, "alpha": self.alpha, "beta": self.beta}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SettleRule:
        """The rule stored by :meth:`to_dict`.

        Raises:
            ValueError, KeyError, TypeError: not such a mapping.
        """
        return cls(
            max_rounds=int(data["max_rounds"]),
            delta=float(data["delta"]),
            alpha=float(data.get("alpha", ALPHA)),
            beta=float(data.get("beta", BETA)),
        )


@dataclass(frozen=True)
class Verdict:
    """The test on the games so far. ``leader``, ``runner_up``: None with fewer than two
    entrants; ``difference`` = mean_L - mean_R and ``se`` = sqrt(V), points per game (None
    without a runner-up); ``games``: games holding L or R; ``adjusted``: values were adjusted
    scores; ``llr`` within +-:data:`LLR_CLAMP`."""

    settled: bool
    llr: float
    lower: float
    upper: float
    leader: Entrant | None
    runner_up: Entrant | None
    difference: float | None
    se: float | None
    games: int
    adjusted: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``tournaments.settle``; the API's ``settle``)."""
        return asdict(self)


def _entrant_key(e: Entrant) -> tuple[int, int, str]:
    return (0, e, "") if isinstance(e, int) else (1, 0, e)


def _rank(games: Sequence[Game]) -> tuple[list[Entrant], dict[Entrant, tuple[int, float]]]:
    """Entrants best first by mean value, and ``{entrant: (games, mean)}``."""
    sums: dict[Entrant, list[float]] = {}
    for game in games:
        for e, v in game:
            acc = sums.setdefault(e, [0, 0.0])
            acc[0] += 1
            acc[1] += v
    stats = {e: (int(n), total / n) for e, (n, total) in sums.items()}
    order = sorted(stats, key=lambda e: (-stats[e][1], _entrant_key(e)))
    return order, stats


def _top_two(order: Sequence[Entrant]) -> tuple[Entrant, Entrant]:
    """The leader and the runner-up of ``order`` (best first, at least two entrants): the two
    best participants (bots); a house seat only when fewer than two participants played (the
    one participant and the best house seat, in their order). House seats of one sample bot
    are equal by construction: two of them at the top would be tested against each other."""
    bots = [e for e in order if isinstance(e, int)]
    if len(bots) >= 2:
        return bots[0], bots[1]
    if len(bots) == 1:
        house = next(e for e in order if not isinstance(e, int))
        pair = [e for e in order if e in (bots[0], house)]
        return pair[0], pair[1]
    return order[0], order[1]


def evaluate(games: Iterable[Game], rule: SettleRule, *, adjusted: bool = False) -> Verdict:
    """The test of the module docstring on ``games`` (every game so far, any order)."""
    played = [g for g in games if g]
    order, stats = _rank(played)
    if len(order) < 2:
        leader = order[0] if order else None
        return Verdict(False, 0.0, rule.lower, rule.upper, leader, None, None, None, 0, adjusted)
    lead, second = _top_two(order)
    (n_l, m_l), (n_r, m_r) = stats[lead], stats[second]
    residuals = []
    for game in played:
        e = 0.0
        held = False
        for who, v in game:
            if who == lead:
                e += (v - m_l) / n_l
                held = True
            elif who == second:
                e -= (v - m_r) / n_r
                held = True
        if held:
            residuals.append(e)
    count = len(residuals)
    d = m_l - m_r
    var = sum(e * e for e in residuals) * count / (count - 1) if count > 1 else 0.0
    if not (math.isfinite(d) and math.isfinite(var)):  # a value that is not a number: no verdict
        return Verdict(False, 0.0, rule.lower, rule.upper, lead, second, None, None, count, adjusted)
    llr = _llr(d, var, rule.delta)
    settled = count >= rule.min_games and llr >= rule.upper
    return Verdict(settled, llr, rule.lower, rule.upper, lead, second, d, math.sqrt(var), count, adjusted)


def _llr(d: float, var: float, delta: float) -> float:
    """``(d**2 - (d - delta)**2) / (2 var)`` within +-LLR_CLAMP (``var = 0``: the sign of the
    numerator); 0 for a value that is not finite (never "settled" from a NaN)."""
    num = delta * (2 * d - delta)
    if not (math.isfinite(num) and math.isfinite(var)):
        return 0.0
    if var <= 0:
        return 0.0 if num == 0 else math.copysign(LLR_CLAMP, num)
    return max(-LLR_CLAMP, min(LLR_CLAMP, num / (2 * var)))


def decide(verdict: Verdict, rounds: int, rule: SettleRule) -> StopReason | None:
    """At the end of round ``rounds`` (1, 2, ...): :attr:`StopReason.SETTLED` when the verdict
    says so, else :attr:`StopReason.MAX_ROUNDS` once ``rounds >= rule.max_rounds``, else None
    (add a round)."""
    if verdict.settled:
        return StopReason.SETTLED
    if rounds >= rule.max_rounds:
        return StopReason.MAX_ROUNDS
    return None


def game_values(
    results: Iterable[tuple[Sequence[Entrant], Sequence[Mapping[str, Any]]]],
) -> tuple[list[list[tuple[Entrant, float]]], bool]:
    """The games of stored match results: each item is a match's entrants per seat and its
    ``match_results.games`` entries (``{"scores": [...], "par": [...]?}``, lists per seat; a
    result without games counts as none). Returns ``(games, adjusted)``: values are score -
    par when every game has a ``par`` of the right length, every one a finite number
    (``adjusted`` True), else scores."""
    raw: list[tuple[Sequence[Entrant], Mapping[str, Any]]] = [(seats, g) for seats, gs in results for g in gs]
    adjusted = bool(raw) and all(_has_par(g, len(seats)) for seats, g in raw)
    out = []
    for seats, g in raw:
        scores = g["scores"]
        pars = g["par"] if adjusted else [0.0] * len(seats)
        out.append([(e, float(scores[i]) - float(pars[i])) for i, e in enumerate(seats)])
    return out, adjusted


def _has_par(game: Mapping[str, Any], seats: int) -> bool:
    """A par of ``seats`` finite numbers (not booleans): what ``arena.standings.game_par`` reads
    as one; anything else is no par (a game without one makes the tournament's values raw)."""
    par = game.get("par")
    return (
        isinstance(par, list)
        and len(par) == seats
        and all(not isinstance(x, bool) and isinstance(x, int | float) and math.isfinite(x) for x in par)
    )
