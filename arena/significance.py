"""Means with 95% intervals and the significance of the difference between two entrants' means.

Pure (standard library only). Used by :mod:`arena.standings`; the method and why it was chosen
are in docs/ranking.md, "Standings: what is settled".

- :class:`Moments`: count, mean and sum of squared deviations of one entrant's game scores
  (Welford's method); :meth:`Moments.ci95` is the half-width of the Student t 95% interval of
  the mean.
- :class:`SharedSums`: sums over the games two entrants both played (``n``, ``sx``, ``sy``,
  ``sxy``: their scores and the products), from which their covariance is estimated.
- :func:`difference`: the difference of two means, the half-width of its 95% interval and
  whether it is significant: ``Var(m_a - m_b) = s_a^2/n_a + s_b^2/n_b - 2 n_ab c_ab/(n_a n_b)``
  with ``c_ab`` the covariance of their scores in the ``n_ab`` games both played, Student t
  with ``min(n_a, n_b) - 1`` degrees of freedom. When both played the same games it is the
  paired t test; when they shared none it is the two-sample test with unequal variances.
  A difference is called significant only when each of the two played at least
  :data:`MIN_TEST_GAMES` games (game scores are small integers: fewer games often have no
  spread at all; docs/ranking.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Two-sided 95% Student t quantiles t(0.975, df) for df = 1..30.
_T975 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]
_T975_LARGE = [(40, 2.021), (60, 2.000), (120, 1.980)]

#: Fewest games of each of two entrants before their difference may be called significant.
#: Game scores are small integers (Million Doubt: a win of 1 to 6 points between sample bots),
#: so a few games often have no spread at all (two games won by the same margin: an interval
#: of width 0): identical bots were called different in 13% of 2-game Million Doubt duels and
#: 10% of 4-game ones, 5.9% at 6 to 8 games, 5.1% at 10 (docs/ranking.md).
MIN_TEST_GAMES = 10


def t975(df: int) -> float:
    """t quantile for a two-sided 95% interval with ``df`` degrees of freedom (conservative
    above 30: the value of the next smaller tabulated df; 1.96 above 120).

    Raises:
        ValueError: ``df`` < 1.
    """
    if df < 1:
        raise ValueError("df must be >= 1")
    if df <= 30:
        return _T975[df - 1]
    value = 2.042
    for limit, t in _T975_LARGE:
        if df >= limit:
            value = t
    return value if df < 120 else 1.960


@dataclass
class Moments:
    """One entrant's game scores: ``n`` games, their ``mean``, ``m2`` (sum of squared
    deviations from the mean) and ``total`` (sum)."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0
    total: float = 0.0

    def add(self, x: float) -> None:
        """Fold one game's score (Welford's update)."""
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)
        self.total += x

    def variance(self) -> float | None:
        """Sample variance of the scores (``n - 1`` in the denominator); None below 2 games."""
        return self.m2 / (self.n - 1) if self.n >= 2 else None

    def ci95(self) -> float | None:
        """Half-width of the 95% interval of the mean (Student t, ``n - 1`` degrees of
        freedom); None below 2 games."""
        var = self.variance()
        if var is None:
            return None
        return t975(self.n - 1) * math.sqrt(max(var, 0.0) / self.n)

    def to_list(self) -> list[float]:
        return [self.n, self.mean, self.m2, self.total]

    @classmethod
    def from_list(cls, v: list[float]) -> Moments:
        return cls(int(v[0]), float(v[1]), float(v[2]), float(v[3]))


@dataclass
class SharedSums:
    """The games two entrants a and b both played: ``n`` of them, the sums of a's scores
    (``sx``), of b's (``sy``) and of their products (``sxy``). Sums, not deviations, so
    that they can be folded before the means are known."""

    n: int = 0
    sx: float = 0.0
    sy: float = 0.0
    sxy: float = 0.0

    def add(self, x: float, y: float) -> None:
        self.n += 1
        self.sx += x
        self.sy += y
        self.sxy += x * y

    def swapped(self) -> SharedSums:
        """The same sums seen from b's side."""
        return SharedSums(self.n, self.sy, self.sx, self.sxy)

    def covariance(self, mean_x: float, mean_y: float) -> float:
        """Covariance of a's and b's scores in the shared games, around each one's mean over
        ALL its games (the means the ranking compares); ``n - 1`` in the denominator (``n`` for
        a single shared game, 0 without one)."""
        if self.n == 0:
            return 0.0
        c = self.sxy - mean_y * self.sx - mean_x * self.sy + self.n * mean_x * mean_y
        return c / (self.n - 1) if self.n >= 2 else c

    def to_list(self) -> list[float]:
        return [self.n, self.sx, self.sy, self.sxy]

    @classmethod
    def from_list(cls, v: list[float]) -> SharedSums:
        return cls(int(v[0]), float(v[1]), float(v[2]), float(v[3]))


@dataclass(frozen=True)
class Difference:
    """``a``'s mean minus ``b``'s: ``difference``; ``ci95`` the half-width of its 95% interval
    (None when either played fewer than 2 games); ``shared_games`` the games both played;
    ``significant``: the interval excludes 0 (two-sided test at 5%) and each played at least
    :data:`MIN_TEST_GAMES` games; ``too_few_games``: one of them played fewer (the test is
    not made, whatever the interval)."""

    difference: float
    ci95: float | None
    shared_games: int
    significant: bool
    too_few_games: bool = False


def difference(a: Moments, b: Moments, shared: SharedSums | None = None) -> Difference:
    """The difference ``mean(a) - mean(b)`` and its significance (module docstring).

    ``shared`` are the sums over the games both played, a's score as ``x`` (None: none shared).
    The variance estimate is clipped at 0; with a variance of 0 any non-zero difference is
    significant (both scored the same in every game, or were always apart by the same amount),
    from :data:`MIN_TEST_GAMES` games each: never below.
    """
    d = a.mean - b.mean
    shared = shared or SharedSums()
    va, vb = a.variance(), b.variance()
    if va is None or vb is None:
        return Difference(d, None, shared.n, False, min(a.n, b.n) < MIN_TEST_GAMES)
    cov = shared.covariance(a.mean, b.mean)
    var = va / a.n + vb / b.n - 2.0 * shared.n * cov / (a.n * b.n)
    half = t975(min(a.n, b.n) - 1) * math.sqrt(max(var, 0.0))
    tie = abs(d) <= 1e-12 * max(1.0, abs(a.mean), abs(b.mean))  # float noise is no difference
    enough = min(a.n, b.n) >= MIN_TEST_GAMES
    return Difference(d, half, shared.n, enough and not tie and abs(d) > half, not enough)
