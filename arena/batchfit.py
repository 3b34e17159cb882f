"""A ladder's official table: a periodic batch fit over all its rated sets (docs/ladder.md,
"The official table"). Pure: numbers in, numbers out.

The live table moves one openskill update per set, in the order the sets were stored; the
official table fits every set at once, as Kaggle's final leaderboards and RBC's Bayesian Elo
do, so the order of play does not matter. Model: **Bradley-Terry** over the pairwise results of
every rated set (a 4-seat set counts as its 6 pairs, the rank-breaking estimator of the
Plackett-Luce model; a tie is half a win each way), by maximum likelihood with a small ridge
``alpha`` (``choix.ilsr_pairwise_dense``). It reads the pairs' sums (``ladder_pairs``), never
the sets: a million games cost what the pairs cost.

Each entrant's **strength** ``theta`` (log odds scale, mean 0) comes with its standard error,
from the inverse of the Fisher information ``I`` (``I_ij = -n_ij p_ij (1 - p_ij)`` off the
diagonal, the row sums negated on it, plus ``alpha``; ``p_ij = 1 / (1 + exp(theta_j - theta_i))``)
centred on the mean-0 strengths (``C = P I^-1 P``, ``P = 1 - 11'/n``).
Two entrants differ significantly at 95% when ``|theta_i - theta_j| / se_ij > 1.96``,
``se_ij^2 = C_ii + C_jj - 2 C_ij`` with ``C = I^-1``: the **matrix** of the top of the table.

The **collusion** view (:func:`collusion`) lists pairs whose results when seated together differ
from what their results apart predict: the fitted strengths (mostly made by each one's sets
with the others) give the pair's expected head-to-head record; a pair is listed when its
``z = (a_wins - expected) / sqrt(n p (1 - p))`` passes the Bonferroni bound of a two-sided 5%
test over every pair compared (a bot that throws its sets to a friend, or feeds it at a
4-seat table, beats or loses to it far from what both do against the field).

The **recall** view (:func:`recall`) lists entrants that score better in a set's last game than
in its first, on average (one-sided t of their recall, :func:`arena.ladder_ratings.recall`,
Bonferroni over the entrants compared): the games of a set are one deal in every seat
rotation, so a bot that remembers the deal knows its opponents' hands by the last game; an
honest bot's recall has mean zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

#: Ridge of the fit (a weak prior pulling strengths toward the mean: an undefeated entrant
#: gets a finite strength).
ALPHA = 0.01
#: Entrants of the significance matrix (the top of the table).
MATRIX_TOP = 12
#: Sets together before a pair is compared in the collusion view.
MIN_COLLUSION_SETS = 10
Z95 = 1.959963984540054


@dataclass(frozen=True)
class PairSums:
    """One pair's sums (``ladder_pairs``): ``a < b`` entry ids, ``sets`` rated together,
    ``a_wins`` (a above b: 1, equal: 1/2), each one's residual sum and sum of squares."""

    a: int
    b: int
    sets: int
    a_wins: float
    res_a_sum: float = 0.0
    res_a_sumsq: float = 0.0
    res_b_sum: float = 0.0
    res_b_sumsq: float = 0.0


@dataclass(frozen=True)
class RecallSums:
    """One entrant's recall sums (``ladder_entries.recall_*``)."""

    entry_id: int
    n: int
    total: float
    sumsq: float


@dataclass(frozen=True)
class Fit:
    """``table``: rows best first ``{"rank", "entry_id", "strength", "se", "sets"}``;
    ``matrix``: ``{"entries": [ids], "z": [[...]], "significant": [[...]]}`` of the top of
    the table; ``sets``: rated sets behind the fit (pairs counted once per set of 2 seats,
    a 4-seat set's 6 pairs counted as one set each)."""

    table: list[dict[str, Any]]
    matrix: dict[str, Any]
    sets: int


def fit(pairs: Sequence[PairSums], *, alpha: float = ALPHA, top: int = MATRIX_TOP) -> Fit:
    """The Bradley-Terry fit of ``pairs`` (module docstring); entrants with no pair are left out."""
    ids = sorted({p.a for p in pairs if p.sets} | {p.b for p in pairs if p.sets})
    if len(ids) < 2:
        return Fit([], {"entries": [], "z": [], "significant": []}, 0)
    at = {e: i for i, e in enumerate(ids)}
    n = len(ids)
    wins = np.zeros((n, n))
    games = np.zeros((n, n))
    sets = np.zeros(n)
    for p in pairs:
        if not p.sets:
            continue
        i, j = at[p.a], at[p.b]
        wins[i, j] += p.a_wins
        wins[j, i] += p.sets - p.a_wins
        games[i, j] += p.sets
        games[j, i] += p.sets
        sets[i] += p.sets
        sets[j] += p.sets
    # choix loads scipy.stats (about a second of CPU): imported by the fit alone, not by every
    # process that imports the use cases (the API, the CLI, the workers)
    import choix

    theta = np.asarray(choix.ilsr_pairwise_dense(wins, alpha=alpha), dtype=float)
    prob = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
    info = -games * prob * (1 - prob)
    np.fill_diagonal(info, 0.0)
    np.fill_diagonal(info, -info.sum(axis=1) + alpha)
    # the strengths are defined up to a constant (shown with mean 0): the ridge alone holds the
    # constant direction (variance 1/alpha), which is no uncertainty of a strength; centred,
    # the covariance is that of the mean-0 strengths (the differences are unchanged)
    center = np.eye(n) - 1.0 / n
    cov = center @ np.linalg.pinv(info) @ center
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    order = sorted(range(n), key=lambda i: (-theta[i], ids[i]))
    table = [
        {"rank": r + 1, "entry_id": ids[i], "strength": float(theta[i]), "se": float(se[i]), "sets": int(sets[i])}
        for r, i in enumerate(order)
    ]
    head = order[:top]
    z = [[0.0] * len(head) for _ in head]
    significant = [[False] * len(head) for _ in head]
    for x, i in enumerate(head):
        for y, j in enumerate(head):
            if i == j:
                continue
            var = cov[i, i] + cov[j, j] - 2 * cov[i, j]
            z[x][y] = float((theta[i] - theta[j]) / math.sqrt(var)) if var > 0 else 0.0
            significant[x][y] = abs(z[x][y]) > Z95
    total = int(sum(p.sets for p in pairs))
    return Fit(table, {"entries": [ids[i] for i in head], "z": z, "significant": significant}, total)


def collusion(fitted: Fit, pairs: Sequence[PairSums], *, min_sets: int = MIN_COLLUSION_SETS) -> list[dict[str, Any]]:
    """The pairs whose results together differ significantly from what their results apart
    predict (module docstring), largest ``|z|`` first: ``{"a", "b", "sets", "a_wins",
    "expected", "z", "bound"}`` (``a_wins``: a above b, ties halved; ``expected``: what the
    fitted strengths give; ``bound``: the ``|z|`` a pair had to pass)."""
    strength = {row["entry_id"]: row["strength"] for row in fitted.table}
    compared = [p for p in pairs if p.sets >= min_sets and p.a in strength and p.b in strength]
    if not compared:
        return []
    bound = NormalDist().inv_cdf(1 - 0.025 / len(compared))
    out = []
    for p in compared:
        prob = 1.0 / (1.0 + math.exp(strength[p.b] - strength[p.a]))
        expected = p.sets * prob
        spread = math.sqrt(p.sets * prob * (1 - prob))
        z = (p.a_wins - expected) / spread if spread > 0 else 0.0
        if abs(z) > bound:
            out.append(
                {"a": p.a, "b": p.b, "sets": p.sets, "a_wins": p.a_wins, "expected": expected, "z": z, "bound": bound}
            )
    return sorted(out, key=lambda r: -abs(r["z"]))


def recall(entrants: Sequence[RecallSums], *, min_sets: int = MIN_COLLUSION_SETS) -> list[dict[str, Any]]:
    """The entrants whose mean recall is significantly above zero (module docstring), largest t
    first: ``{"entry_id", "sets", "mean", "t", "bound"}``."""
    compared = [e for e in entrants if e.n >= min_sets]
    if not compared:
        return []
    bound = NormalDist().inv_cdf(1 - 0.05 / len(compared))
    out = []
    for e in compared:
        mean = e.total / e.n
        var = max(0.0, (e.sumsq - e.n * mean * mean) / (e.n - 1))
        t = mean / math.sqrt(var / e.n) if var > 0 else 0.0
        if t > bound:
            out.append({"entry_id": e.entry_id, "sets": e.n, "mean": mean, "t": t, "bound": bound})
    return sorted(out, key=lambda r: -r["t"])
