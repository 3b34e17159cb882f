"""The engine's random draws (deals, first leaders), the same draws as :mod:`random`'s.

:func:`below`, :func:`shuffle` and :func:`sample` give exactly what ``rng.randrange(n)``,
``rng.shuffle(x)`` and ``rng.sample(population, k)`` give for a :class:`random.Random` (they
draw the same ``getrandbits`` the same way, CPython 3.11's algorithms), so a seed deals the
same cards as before and a stored log replays; they cost a fraction of those methods (no
frame of interpreted Python per draw in the compiled build). ``tests/engine/test_draws.py``
checks them against :mod:`random`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


#: ``random.Random``'s C base class's ``seed`` (what ``random.Random.seed`` calls for an int).
_SEED: Callable[[random.Random, int], None] = random.Random.__mro__[1].seed  # type: ignore[attr-defined]


def seeded(seed: Any) -> random.Random:
    """``random.Random(seed)``: for an int ``seed`` the same state without the two frames of
    interpreted Python (``__init__``, ``seed``) around the C seeding; anything else (a
    string seeds otherwise in Python) through ``random.Random`` itself."""
    if not isinstance(seed, int):
        return random.Random(seed)
    rng = random.Random.__new__(random.Random)
    _SEED(rng, seed)
    rng.gauss_next = None  # type: ignore[attr-defined]  # as random.Random.__init__ sets it
    return rng


def below(rng: random.Random, n: int) -> int:
    """A random int in ``[0, n)``, ``n >= 1``: ``rng.randrange(n)`` (``_randbelow``)."""
    k = n.bit_length()
    r: int = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r


def shuffle(rng: random.Random, x: list[T]) -> None:
    """Shuffle ``x`` in place: ``rng.shuffle(x)``."""
    getrandbits = rng.getrandbits
    i = len(x) - 1
    while i >= 1:
        n = i + 1
        k = n.bit_length()
        j: int = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        x[i], x[j] = x[j], x[i]
        i -= 1


def sample(rng: random.Random, population: Sequence[T], k: int) -> list[T]:
    """``k`` distinct positions of ``population`` in selection order: ``rng.sample(population,
    k)`` (its pool algorithm, which :mod:`random` uses for populations of at most 21 items, or
    more when ``k`` is large: the other cases are handed to ``rng.sample``).

    Raises:
        ValueError: ``k`` is negative or larger than the population.
    """
    n = len(population)
    if not 0 <= k <= n:
        raise ValueError("Sample larger than population or is negative")
    setsize = 21
    if k > 5:
        setsize += 4 ** _ceil_log4(k * 3)
    if n > setsize:
        return rng.sample(population, k)
    getrandbits = rng.getrandbits
    pool = list(population)
    result: list[T] = []
    for i in range(k):
        m = n - i
        bits = m.bit_length()
        j: int = getrandbits(bits)
        while j >= m:
            j = getrandbits(bits)
        result.append(pool[j])
        pool[j] = pool[m - 1]
    return result


def _ceil_log4(x: int) -> int:
    """``math.ceil(math.log(x, 4))`` for the small ``x`` of :func:`sample` (``x >= 1``)."""
    e = 0
    p = 1
    while p < x:
        p *= 4
        e += 1
    return e
