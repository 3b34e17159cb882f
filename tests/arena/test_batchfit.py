"""The ladder's official table and integrity views (arena.batchfit): a Bradley-Terry fit
over the pairs' sums recovers a graded field, says which neighbours differ, and lists a pair
that throws its sets and a bot that plays better once it has seen the deal."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np

from arena import batchfit
from arena.batchfit import PairSums, RecallSums, collusion, fit, recall


def _field(strengths: list[float], sets: int, rng: random.Random, *, thrown: tuple[int, int] | None = None):
    pairs = []
    for a, b in itertools.combinations(range(len(strengths)), 2):
        p = 1 / (1 + math.exp(strengths[b] - strengths[a]))
        if thrown == (a, b):
            p = 0.02  # a loses on purpose to b
        wins = sum(rng.random() < p for _ in range(sets))
        pairs.append(PairSums(a + 1, b + 1, sets, float(wins)))
    return pairs


def test_the_fit_recovers_a_graded_field_and_its_significant_gaps():
    strengths = [1.5 - 0.3 * i for i in range(10)]
    fitted = fit(_field(strengths, 200, random.Random(1)))
    assert [r["entry_id"] for r in fitted.table] == list(range(1, 11))
    assert all(r["se"] > 0 for r in fitted.table) and fitted.sets == 45 * 200
    m = fitted.matrix
    first, last = m["entries"].index(1), m["entries"].index(10)
    assert m["significant"][first][last] and m["z"][first][last] > 0 and not m["significant"][first][first]


def test_a_pair_that_throws_its_sets_stands_out_and_honest_pairs_do_not():
    strengths = [0.8 - 0.2 * i for i in range(8)]
    honest = _field(strengths, 60, random.Random(2))
    assert collusion(fit(honest), honest) == []
    thrown = _field(strengths, 60, random.Random(2), thrown=(1, 4))
    flagged = collusion(fit(thrown), thrown)
    assert [(r["a"], r["b"]) for r in flagged][:1] == [(2, 5)] and flagged[0]["z"] < 0


def test_recall_lists_who_gains_in_a_sets_last_game():
    rng = random.Random(3)

    def sums(entry_id: int, gain: float, n: int = 80) -> RecallSums:
        xs = [rng.gauss(gain, 4.0) for _ in range(n)]
        return RecallSums(entry_id, n, sum(xs), sum(x * x for x in xs))

    rows = recall([sums(1, 0.0), sums(2, 3.0), sums(3, 0.0), sums(4, -1.0)])
    assert [r["entry_id"] for r in rows] == [2]


def _even_field(sets: int) -> list[batchfit.PairSums]:
    """Four entrants, each pair met ``sets`` times; entrant 1 wins 80% against every other, the
    others are even."""
    out = []
    for a, b in itertools.combinations([1, 2, 3, 4], 2):
        out.append(batchfit.PairSums(a, b, sets, 0.8 * sets if a == 1 else 0.5 * sets))
    return out


def test_a_strengths_standard_error_shrinks_with_the_sets_and_orders_the_top():
    few, many = batchfit.fit(_even_field(10)), batchfit.fit(_even_field(400))
    se_few = {r["entry_id"]: r["se"] for r in few.table}
    se_many = {r["entry_id"]: r["se"] for r in many.table}
    for e in (1, 2, 3, 4):  # about 1/sqrt(sets): 40 times the sets, a sixth of the error at most
        assert se_many[e] < se_few[e] / 5
    top = many.table[0]
    assert top["entry_id"] == 1 and top["strength"] - 1.96 * top["se"] > 0  # ahead of the mean, for sure
    assert abs(sum(r["strength"] for r in many.table)) < 1e-6
    assert all(r["se"] < 0.2 for r in many.table)  # not the ridge's 1/sqrt(alpha n) = 5


def test_the_matrix_is_the_difference_test_whatever_the_centring():
    fitted = batchfit.fit(_even_field(100))
    z = np.array(fitted.matrix["z"])
    order = fitted.matrix["entries"]
    i = order.index(1)
    assert all(fitted.matrix["significant"][i][j] for j in range(4) if j != i)
    assert np.allclose(z, -z.T)
