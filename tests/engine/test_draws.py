"""The engine's draws (``engine.draws``) are :mod:`random`'s: the same seed deals the same
cards, so stored logs replay (C-1, MD-1, TM-2, JDF-2). Run in whichever build is loaded."""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine import draws


@pytest.mark.parametrize("seed", range(40))
def test_below_shuffle_and_sample_draw_what_random_draws(seed: int) -> None:
    ours, theirs = random.Random(seed), random.Random(seed)
    for n in (1, 2, 3, 4, 5, 13, 54, 1000):
        assert draws.below(ours, n) == theirs.randrange(n)
    for size in (0, 1, 2, 52, 54):
        a, b = list(range(size)), list(range(size))
        draws.shuffle(ours, a)
        theirs.shuffle(b)
        assert a == b
    for n, k in ((54, 14), (54, 0), (7, 7), (11, 3), (21, 5), (30, 4), (30, 12), (200, 60), (3, 1)):
        population = [c % 53 for c in range(n)]  # repeats allowed, as in a hand with two jokers
        assert draws.sample(ours, population, k) == theirs.sample(population, k)
    assert ours.getstate() == theirs.getstate()


@pytest.mark.parametrize("seed", [0, 1, 7, 2**31, 2**40 + 3, -5, True, "7", 2.5])
def test_seeded_is_random_random(seed: Any) -> None:
    ours, theirs = draws.seeded(seed), random.Random(seed)
    assert ours.getstate() == theirs.getstate()
    assert [ours.random() for _ in range(3)] == [theirs.random() for _ in range(3)]


def test_sample_refuses_what_random_refuses() -> None:
    with pytest.raises(ValueError, match="larger than population"):
        draws.sample(random.Random(0), [1, 2], 3)
    with pytest.raises(ValueError, match="negative"):
        draws.sample(random.Random(0), [1, 2], -1)
