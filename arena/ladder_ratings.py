"""The ladder's ratings, one set at a time (docs/ladder.md, "Ratings"). Pure: no database.

A stored set is rated once (:func:`arena.lifecycle.ladder_sets.rate_set`, idempotent) from what
this module computes:

* :func:`contested`: a set is rated only if every bot seat made at least one valid decision
  (answered a request without a fault). A set a seat forfeited without playing (a bot
  withdrawn before play, a bot that never answered) is never rated: no entrant gains or loses
  from it, so a sybil that enters and vanishes hands nobody a win.
* :func:`placement`: the places of the set's entrants, 1 = first, equal totals share a place,
  by their **adjusted** totals (score minus par, summed over the set's games) when every game
  has its par, else by raw totals. In a Million Doubt set the pars of both entrants sum to the
  same value (each holds both hands of one deal), so both orders agree there.
* :func:`update`: one openskill Plackett-Luce update of the set's entrants by their places
  (mu 25, sigma 25/3, beta 25/6 as openskill's defaults; tau :data:`TAU`, a tenth of its default), and each entrant's
  **residual**, its set score (:func:`set_score`: 1 for first, 0 for last) minus the score
  its rating expected before the set (:func:`expected_scores`), summed for the operators'
  collusion view.
* :func:`ahead`: whether one rating is above another with 95% confidence, for the table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openskill.models import PlackettLuce

#: The drift a rating is allowed per set (openskill adds tau squared to each variance at each
#: update): a tenth of openskill's default 25/300. A bot's code does not drift, a changed bot is
#: a new version whose uncertainty is reset (docs/ladder.md, "Versions"), and with the default
#: tau a ladder's table never settles: its ratings keep moving by about a tenth of a neighbour's
#: gap (docs/performance.md, "Ladders").
TAU = 25 / 3000
#: The rating model of every ladder.
MODEL = PlackettLuce(tau=TAU)
#: A new entry's rating.
MU0, SIGMA0 = MODEL.mu, MODEL.sigma
#: One-sided z of "ahead with 95% confidence".
Z95 = 1.6448536269514722


def contested(answered: Sequence[int | None], house: Sequence[bool]) -> bool:
    """True if every bot seat (``house[s]`` false) made at least one valid decision
    (``answered[s]`` >= 1; None: not recorded, an old result, counted as contested)."""
    return all(h or a is None or a >= 1 for a, h in zip(answered, house, strict=True))


def _places(values: Sequence[float]) -> list[int]:
    rounded = [round(v, 9) for v in values]
    return [1 + sum(o > v for o in rounded) for v in rounded]


def game_pars(games: Sequence[Mapping[str, Any]], seats: int) -> list[list[float]] | None:
    """Each game's par per player, or None if a game has none (module docstring)."""
    out = []
    for g in games:
        par = g.get("par")
        if not isinstance(par, list) or len(par) != seats:
            return None
        if any(isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p) for p in par):
            return None
        out.append([float(p) for p in par])
    return out


def placement(scores: Sequence[float], games: Sequence[Mapping[str, Any]]) -> tuple[list[int], bool]:
    """``(place per player, adjusted)``: places by adjusted totals when every game has its par
    (``adjusted`` true), else by raw totals (``scores``, the match's per player)."""
    pars = game_pars(games, len(scores)) if games else None
    if pars is None:
        return _places([float(s) for s in scores]), False
    totals = [float(s) - sum(p[i] for p in pars) for i, s in enumerate(scores)]
    return _places(totals), True


def waits_for_pars(seats: int) -> bool:
    """Whether a stored set of a rule set of ``seats`` seats waits for its pars before it is
    rated. A two-seat set does not: each entrant holds both hands of its one deal, whose luck
    over the two seats sums to zero, so both entrants' pars sum to the same value and the
    adjusted order is the raw one. With four seats, later deals start from positions the play
    made (TM-3, JDF-4): the pars can reorder the set."""
    return seats > 2


def set_score(place: int, players: int) -> float:
    """A place as a score from 1 (first) to 0 (last): ``(players - place) / (players - 1)``
    (equal places share the mean of the places they cover)."""
    return (players - place) / (players - 1)


def win_probability(a: tuple[float, float], b: tuple[float, float]) -> float:
    """The chance that the entrant rated ``a`` (mu, sigma) places above the one rated ``b``:
    ``Phi((mu_a - mu_b) / sqrt(2 beta^2 + sigma_a^2 + sigma_b^2))``."""
    spread = math.sqrt(2 * MODEL.beta**2 + a[1] ** 2 + b[1] ** 2)
    return 0.5 * (1 + math.erf((a[0] - b[0]) / (spread * math.sqrt(2))))


def expected_scores(ratings: Sequence[tuple[float, float]]) -> list[float]:
    """Each entrant's expected :func:`set_score`: its mean chance to place above each other."""
    n = len(ratings)
    return [
        sum(win_probability(r, o) for j, o in enumerate(ratings) if j != i) / (n - 1) for i, r in enumerate(ratings)
    ]


@dataclass(frozen=True)
class Update:
    """One set's rating update: ``ratings`` (mu, sigma) after it per player, ``residuals``
    (set score minus expected) per player, the ``places`` it used."""

    ratings: list[tuple[float, float]]
    residuals: list[float]
    places: list[int]


def update(ratings: Sequence[tuple[float, float]], places: Sequence[int]) -> Update:
    """One openskill update of a set's entrants (their ``ratings`` before it, ``places`` 1 =
    first) and their residuals (module docstring)."""
    before = [MODEL.rating(mu=mu, sigma=sigma) for mu, sigma in ratings]
    teams = MODEL.rate([[r] for r in before], ranks=[float(p) for p in places])
    n = len(places)
    expected = expected_scores(ratings)
    residuals = [set_score(p, n) - e for p, e in zip(places, expected, strict=True)]
    return Update([(t[0].mu, t[0].sigma) for t in teams], residuals, list(places))


def recall(games: Sequence[Mapping[str, Any]], players: int) -> list[float] | None:
    """Each player's score in the set's last game minus its score in its first (the games of a
    set are its rotations of one deal, played in order): what remembering the deal would gain.
    Its mean is zero for a bot that does not remember (each player's first and last seats are
    drawn at random by the seating); None when the set has fewer than two games."""
    if len(games) < 2:
        return None
    first, last = games[0].get("scores"), games[-1].get("scores")
    if not isinstance(first, list) or not isinstance(last, list) or len(first) != players or len(last) != players:
        return None
    return [float(b) - float(a) for a, b in zip(first, last, strict=True)]


def conservative(mu: float, sigma: float) -> float:
    """The conservative rating (the table's order): ``mu - 3 sigma``."""
    return mu - 3 * sigma


def ahead(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """True when ``a`` (mu, sigma) is above ``b`` with 95% confidence (one-sided):
    ``(mu_a - mu_b) / sqrt(sigma_a^2 + sigma_b^2) > 1.645``."""
    return (a[0] - b[0]) / math.sqrt(a[1] ** 2 + b[1] ** 2) > Z95
