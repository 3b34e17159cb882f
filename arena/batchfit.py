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
from their results apart: for each entrant of a pair, the mean residual (set score minus what
its rating expected, :mod:`arena.ladder_ratings`) of its sets with the other against that of
its other sets, Welch's t; a pair is listed when one of its two t passes the Bonferroni bound
of a two-sided 5% test over every pair compared.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import choix
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
class EntrantSums:
    """One entrant's residual sums over all its rated sets (``ladder_entries.res_*``)."""

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


def _welch(n1: int, s1: float, q1: float, n2: int, s2: float, q2: float) -> tuple[float, float, float]:
    """``(mean1, mean2, t)`` of two samples given by count, sum and sum of squares."""
    if n1 < 2 or n2 < 2:
        return (s1 / n1 if n1 else 0.0), (s2 / n2 if n2 else 0.0), 0.0
    m1, m2 = s1 / n1, s2 / n2
    v1 = max(0.0, (q1 - n1 * m1 * m1) / (n1 - 1))
    v2 = max(0.0, (q2 - n2 * m2 * m2) / (n2 - 1))
    se = math.sqrt(v1 / n1 + v2 / n2)
    return m1, m2, ((m1 - m2) / se if se > 0 else 0.0)


def collusion(
    entrants: Sequence[EntrantSums], pairs: Sequence[PairSums], *, min_sets: int = MIN_COLLUSION_SETS
) -> list[dict[str, Any]]:
    """The pairs whose results together differ significantly from apart (module docstring),
    largest ``|t|`` first: ``{"a", "b", "sets", "a_together", "a_apart", "t_a", "b_together",
    "b_apart", "t_b", "bound"}`` (mean residuals; ``bound``: the |t| a pair had to pass)."""
    by_id = {e.entry_id: e for e in entrants}
    compared = [p for p in pairs if p.sets >= min_sets and p.a in by_id and p.b in by_id]
    if not compared:
        return []
    bound = NormalDist().inv_cdf(1 - 0.025 / len(compared))
    out = []
    for p in compared:
        ea, eb = by_id[p.a], by_id[p.b]
        a_with, a_apart, t_a = _welch(
            p.sets, p.res_a_sum, p.res_a_sumsq, ea.n - p.sets, ea.total - p.res_a_sum, ea.sumsq - p.res_a_sumsq
        )
        b_with, b_apart, t_b = _welch(
            p.sets, p.res_b_sum, p.res_b_sumsq, eb.n - p.sets, eb.total - p.res_b_sum, eb.sumsq - p.res_b_sumsq
        )
        if max(abs(t_a), abs(t_b)) > bound:
            out.append(
                {
                    "a": p.a,
                    "b": p.b,
                    "sets": p.sets,
                    "a_together": a_with,
                    "a_apart": a_apart,
                    "t_a": t_a,
                    "b_together": b_with,
                    "b_apart": b_apart,
                    "t_b": t_b,
                    "bound": bound,
                }
            )
    return sorted(out, key=lambda r: -max(abs(r["t_a"]), abs(r["t_b"])))
