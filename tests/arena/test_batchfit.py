"""The ladder's official table and integrity views (arena.batchfit): a Bradley-Terry fit
over the pairs' sums recovers a graded field, says which neighbours differ, and lists a pair
that throws its sets and a bot that plays better once it has seen the deal."""

from __future__ import annotations

import itertools
import math
import random

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
