"""The official table's batch fit (arena/batchfit.py): the standard error of a strength is that
of the mean-0 strengths, not the ridge's hold on their common constant."""

from __future__ import annotations

import itertools

import numpy as np

from arena import batchfit


def _field(sets: int) -> list[batchfit.PairSums]:
    """Four entrants, each pair met ``sets`` times; entrant 1 wins 80% against every other, the
    others are even."""
    out = []
    for a, b in itertools.combinations([1, 2, 3, 4], 2):
        out.append(batchfit.PairSums(a, b, sets, 0.8 * sets if a == 1 else 0.5 * sets))
    return out


def test_a_strengths_standard_error_shrinks_with_the_sets_and_orders_the_top():
    few, many = batchfit.fit(_field(10)), batchfit.fit(_field(400))
    se_few = {r["entry_id"]: r["se"] for r in few.table}
    se_many = {r["entry_id"]: r["se"] for r in many.table}
    for e in (1, 2, 3, 4):  # about 1/sqrt(sets): 40 times the sets, a sixth of the error at most
        assert se_many[e] < se_few[e] / 5
    top = many.table[0]
    assert top["entry_id"] == 1 and top["strength"] - 1.96 * top["se"] > 0  # ahead of the mean, for sure
    assert abs(sum(r["strength"] for r in many.table)) < 1e-6
    assert all(r["se"] < 0.2 for r in many.table)  # not the ridge's 1/sqrt(alpha n) = 5


def test_the_matrix_is_the_difference_test_whatever_the_centring():
    fitted = batchfit.fit(_field(100))
    z = np.array(fitted.matrix["z"])
    order = fitted.matrix["entries"]
    i = order.index(1)
    assert all(fitted.matrix["significant"][i][j] for j in range(4) if j != i)
    assert np.allclose(z, -z.T)
