"""Tables of 4 for a field of ``n`` entrants (Trump Millionaire, JDF): the spread designs a
round-robin schedule seats (:func:`arena.schedule.build_schedule`). Cyclic families
(:class:`CyclicFamily`, found by :func:`search_family`, stored in :data:`FAMILIES`) give every
entrant the same number of tables and spread each pair's meetings; :func:`spread_tables` picks
one for ``n`` (a greedy design where none fits) and :func:`spread_order` orders tables so that
each entrant waits little between two of them. Pure functions, no database. Design and
figures: docs/design-notes.md, "Schedules".
"""

from __future__ import annotations

import functools
import itertools
import math
import random
import re
from dataclasses import dataclass

from arena.seeds import derive_seed


class ScheduleError(ValueError):
    """The schedule cannot be built (too few participants, ``games_per_pairing`` < 1...)."""


@dataclass(frozen=True)
class CyclicFamily:
    """Base tables over the integers mod ``n`` whose translates are the tables of a field of ``n``.

    ``full``: blocks ``{a, b, c, d}``, each developed over all ``n`` translates (``n`` tables,
    every entrant at 4 of them). ``halves``: numbers ``a``, each the block ``{0, a, n/2, n/2 + a}``
    developed over ``n/2`` translates (every entrant at 2 tables). ``quarter``: the block
    ``{0, n/4, n/2, 3n/4}`` developed over ``n/4`` translates (every entrant at 1 table).
    Entrants ``x`` and ``y`` meet as often as the blocks hold pairs whose distance mod ``n``
    (``min(|x - y|, n - |x - y|)``, the pair's *class*) is that of ``x`` and ``y``: a full block
    pair of class ``d`` counts once (twice for ``d = n/2``), a half block counts once for classes
    ``a`` and ``n/2 - a`` and twice for ``n/2``, the quarter block once for ``n/4`` and ``n/2``.
    """

    n: int
    full: tuple[tuple[int, ...], ...]
    halves: tuple[int, ...] = ()
    quarter: bool = False

    @property
    def per_entrant(self) -> int:
        """Tables each entrant sits at."""
        return 4 * len(self.full) + 2 * len(self.halves) + int(self.quarter)

    def class_counts(self) -> list[int]:
        """How often a pair of class ``d`` meets, at index ``d`` (``1 <= d <= n // 2``; index 0 is 0)."""
        n, h = self.n, self.n // 2
        counts = [0] * (h + 1)
        for block in self.full:
            for x, y in itertools.combinations(block, 2):
                d = _pair_class(n, x, y)
                counts[d] += 2 if 2 * d == n else 1
        for a in self.halves:
            counts[_pair_class(n, a, 0)] += 1
            counts[_pair_class(n, h - a, 0)] += 1
            counts[h] += 2
        if self.quarter:
            counts[n // 4] += 1
            counts[h] += 1
        return counts

    def is_even(self) -> bool:
        """True if every pair meets ``floor(3k / (n-1))`` or one more times (``k`` = :attr:`per_entrant`),
        every block is a valid table and every orbit has the length its kind says."""
        n, k = self.n, self.per_entrant
        if n < 4 or k < 1 or (self.halves and n % 2) or (self.quarter and n % 4):
            return False
        for block in self.full:
            if len(set(block)) != 4 or any(not 0 <= x < n for x in block) or _half_invariant(n, block):
                return False
        if any(not 0 < a < n // 2 or 4 * a == n for a in self.halves):
            return False
        low = 3 * k // (n - 1)
        return all(low <= c <= low + 1 for c in self.class_counts()[1:])

    def tables(self) -> list[tuple[int, ...]]:
        """Every translate of every block (sorted tuples), in queue order: translate ``t`` of each
        full block at time ``t``, of each half block at time ``2t``, of the quarter block at ``4t``."""
        n, h = self.n, self.n // 2
        timed: list[tuple[int, int, tuple[int, ...]]] = []
        for j, block in enumerate(self.full):
            for t in range(n):
                timed.append((t, j, tuple(sorted((x + t) % n for x in block))))
        for j, a in enumerate(self.halves):
            for t in range(h):
                timed.append((2 * t, len(self.full) + j, tuple(sorted((x + t) % n for x in (0, a, h, h + a)))))
        if self.quarter:
            q = n // 4
            for t in range(q):
                timed.append((4 * t, len(self.full) + len(self.halves), (t, t + q, t + 2 * q, t + 3 * q)))
        timed.sort(key=lambda item: (item[0], item[1]))
        return [table for _, _, table in timed]


def _pair_class(n: int, x: int, y: int) -> int:
    d = (x - y) % n
    return min(d, n - d)


def _half_invariant(n: int, block: tuple[int, ...] | list[int]) -> bool:
    """A block equal to itself shifted by ``n/2`` (its orbit would be short)."""
    return n % 2 == 0 and {(x + n // 2) % n for x in block} == set(block)


def base_tables_per_entrant(n: int) -> int:
    """``m * ceil((n-1) / (3m))`` with ``m = 4 / gcd(n, 4)``: the fewest tables per entrant that
    fill whole tables (``n * k`` divisible by 4) and let every entrant meet the ``n - 1`` others
    (``3k >= n - 1``)."""
    m = 4 // math.gcd(n, 4)
    return m * max(1, math.ceil((n - 1) / (3 * m)))


def family_shape(n: int, k: int) -> tuple[int, int, bool] | None:
    """``(full blocks, half blocks, quarter block?)`` making ``k`` tables per entrant for a field
    of ``n``, with class ``n/2`` able to meet ``floor(3k/(n-1))`` or one more times; None if no
    cyclic family over the integers mod ``n`` can (e.g. ``k = 4s + 3`` for ``n = 128``)."""
    low = 3 * k // (n - 1)
    for quarter in (False, True) if n % 4 == 0 else (False,):
        for halves in range(3) if n % 2 == 0 else range(1):
            rest = k - int(quarter) - 2 * halves
            if rest < 0 or rest % 4:
                continue
            full = rest // 4
            # class n/2 meets 2 * (full-block pairs at distance n/2) + 2 * halves + quarter times
            if n % 2 == 0 and not any(low <= 2 * f + 2 * halves + int(quarter) <= low + 1 for f in range(full + 1)):
                continue
            return full, halves, quarter
    return None


def search_family(n: int, k: int, seed: int, max_steps: int) -> CyclicFamily | None:
    """A local search for an even :class:`CyclicFamily` with ``k`` tables per entrant.

    Starts from random blocks of the :func:`family_shape`; each step picks a class met too
    rarely or too often and tries four changes of one block element (most of them aimed at that
    class: an element set at distance ``d`` from another element of its block), applying the
    best if it does not make the total shortfall and excess worse (else with probability 2%).
    Deterministic for a given ``seed``; at most ``max_steps`` steps. Returns None if the shape
    does not exist or the search ran out of steps.
    """
    shape = family_shape(n, k)
    if shape is None:
        return None
    s, nh, quarter = shape
    rng = random.Random(derive_seed(seed, "family", n, k))
    low = 3 * k // (n - 1)
    h = n // 2

    def weight(d: int) -> int:
        return 2 if 2 * d == n else 1

    def pen(c: int) -> int:
        return low - c if c < low else (c - low - 1 if c > low + 1 else 0)

    full: list[list[int]] = []
    while len(full) < s:
        block = rng.sample(range(n), 4)
        if not _half_invariant(n, block):
            full.append(block)
    halves = [rng.choice([a for a in range(1, h) if 4 * a != n]) for _ in range(nh)]
    counts = CyclicFamily(n, tuple(tuple(b) for b in full), tuple(halves), quarter).class_counts()
    cost = sum(pen(c) for c in counts[1:])
    bad: list[int] = []
    step = 0
    while cost and step < max_steps:
        if step % 16 == 0 or not bad:
            bad = [d for d in range(1, h + 1) if pen(counts[d])]
        step += 1
        target = rng.choice(bad)
        best: tuple[int, dict[int, int], tuple[int, int, int]] | None = None
        for _ in range(4):
            change: dict[int, int] = {}
            if nh and rng.random() * (s + nh) < nh:
                i = rng.randrange(nh)
                new = target if counts[target] < low and rng.random() < 0.7 else rng.randrange(1, h)
                if 4 * new == n or new in (0, h, halves[i]):
                    continue
                for d, sign in ((halves[i], -1), (h - halves[i], -1), (new, 1), (h - new, 1)):
                    c = _pair_class(n, d, 0)
                    change[c] = change.get(c, 0) + sign
                move = (-1, i, new)
            else:
                if not s:
                    continue
                bi = rng.randrange(s)
                block = full[bi]
                j = rng.randrange(4)
                if counts[target] < low and rng.random() < 0.7:
                    other = block[(j + 1 + rng.randrange(3)) % 4]
                    new = (other + (target if rng.random() < 0.5 else -target)) % n
                else:
                    new = rng.randrange(n)
                if new in block:
                    continue
                moved = list(block)
                moved[j] = new
                if _half_invariant(n, moved):
                    continue
                for i2, x in enumerate(block):
                    if i2 != j:
                        c = _pair_class(n, block[j], x)
                        change[c] = change.get(c, 0) - weight(c)
                        c = _pair_class(n, new, x)
                        change[c] = change.get(c, 0) + weight(c)
                move = (bi, j, new)
            delta = sum(pen(counts[c] + dc) - pen(counts[c]) for c, dc in change.items())
            if best is None or delta < best[0]:
                best = (delta, change, move)
        if best is None or (best[0] > 0 and rng.random() >= 0.02):
            continue
        delta, change, (bi, j, new) = best
        for c, dc in change.items():
            counts[c] += dc
        if bi < 0:
            halves[j] = new
        else:
            full[bi][j] = new
        cost += delta
    if cost:
        return None
    fam = CyclicFamily(n, tuple(tuple(sorted(b)) for b in full), tuple(sorted(halves)), quarter)
    return fam if fam.is_even() else None


def spread_metrics(tables: list[tuple[int, ...]], n: int) -> tuple[int, int]:
    """``(most tables of one entrant in any n/4 consecutive tables, longest wait)`` of a queue of
    tables, counting the queue as cyclic (it is repeated for every seat rotation and round); the
    wait is the distance, in tables, from an entrant's table to its next one (``n/4`` is ideal)."""
    total = len(tables)
    window = max(1, n // 4)
    positions: list[list[int]] = [[] for _ in range(n)]
    for i, table in enumerate(tables):
        for x in table:
            positions[x].append(i)
    crowd = wait = 0
    for pos in positions:
        if not pos:
            continue
        ext = pos + [p + total for p in pos]
        wait = max(wait, *(b - a for a, b in zip(ext, ext[1 : len(pos) + 1])))
        j = 0
        for i in range(len(pos)):
            while ext[j] < ext[i] + window:
                j += 1
            crowd = max(crowd, j - i)
    return crowd, wait


def arrange_family(fam: CyclicFamily, multipliers: list[int] | None = None, judged: int = 4) -> CyclicFamily:
    """The same family multiplied by a unit ``u`` mod ``n`` and with each full block translated,
    chosen so that :meth:`CyclicFamily.tables` spreads every entrant's tables over the queue.

    Multiplying every block by a unit maps class ``d`` to class ``u*d`` and translating a block
    keeps its classes, so the result is as even as ``fam``. For each ``u`` (all units, or
    ``multipliers``) the translations are chosen block by block to keep entrant 0's tables apart
    (the others' follow by symmetry); the best ``judged`` candidates are judged by :func:`spread_metrics`.
    Deterministic. Time: about ``units * blocks * n * n/k`` steps (2 s for ``n = 128``).
    """
    n, h = fam.n, fam.n // 2
    units = multipliers or [u for u in range(1, n) if math.gcd(u, n) == 1]
    s = len(fam.full)
    reach = max(1, 2 * n // max(1, 4 * s))  # ideal distance between entrant 0's full-block times
    scored: list[tuple[int, int, CyclicFamily]] = []
    for u in units:
        occ = [0] * n
        blocks: list[tuple[int, ...]] = []
        for block in fam.full:
            scaled = [u * x % n for x in block]
            best_c, best_cost = 0, -1
            for c in range(n):
                cost = 0
                for x in scaled:
                    t = -(x + c)
                    for d in range(1 - reach, reach):
                        cost += occ[(t + d) % n] * (reach - abs(d))
                if best_cost < 0 or cost < best_cost:
                    best_c, best_cost = c, cost
            for x in scaled:
                occ[-(x + best_c) % n] += 1
            blocks.append(tuple(sorted((x + best_c) % n for x in scaled)))
        spread = sum(v * v for v in occ)
        halves = tuple(sorted(u * a % n % h for a in fam.halves))
        scored.append((spread, u, CyclicFamily(n, tuple(blocks), halves, fam.quarter)))
    scored.sort(key=lambda item: item[:2])
    ranked = [(spread_metrics(cand.tables(), n), i, cand) for i, (_, _, cand) in enumerate(scored[:judged])]
    return min(ranked, key=lambda item: item[:2])[2]


def spread_tables(n: int, seed: int) -> list[tuple[int, ...]]:
    """Tables of 4 (sorted tuples of indexes ``0..n-1``) for ``n >= 4`` entrants, in queue order.

    The tables are every translate of the blocks of the even cyclic family of :func:`family`
    (stored for ``n <= 128``), with the indexes relabelled by a permutation drawn from ``seed``:

    - every index sits at the same number of tables ``k``: :func:`base_tables_per_entrant`
      (``m * ceil((n-1) / (3m))``, ``m = 4 / gcd(n, 4)``), or the next count a cyclic family
      reaches (the exceptions: docs/design-notes.md, "Schedules");
    - every pair of indexes meets ``floor(3k / (n-1))`` or one more times (max - min <= 1), at
      least once;
    - queue order: translate by translate (:meth:`CyclicFamily.tables`, :func:`arrange_family`),
      so each index's tables are spread over the queue (:func:`spread_metrics`; ``n/4`` apart is
      ideal).

    Deterministic: the same ``n`` and ``seed`` give the same tables (the seed only relabels). A
    field above 128 gets a family from :func:`search_family` (bounded) or, failing that, the
    greedy :func:`_greedy_tables` (every index at ``k`` tables, pairs meeting 0 to 3 times).

    Raises:
        ScheduleError: ``n < 4``.
    """
    if n < 4:
        raise ScheduleError("a 4-player schedule needs at least 4 entrants")
    fam = family(n)
    tables = fam.tables() if fam is not None else _greedy_tables(n, seed)
    perm = list(range(n))
    random.Random(derive_seed(seed, "tables", n)).shuffle(perm)
    return [tuple(sorted(perm[i] for i in table)) for table in tables]


@functools.cache
def family(n: int) -> CyclicFamily | None:
    """The even cyclic family used for a field of ``n``: the stored one (:data:`FAMILIES`) if it
    checks out, else the first found by :func:`search_family` (seed 0, 20,000 steps) for ``k`` =
    :func:`base_tables_per_entrant` and the next 3 table counts; None if none was found.
    Cached (the result depends on ``n`` only)."""
    fam = _stored_families().get(n)
    if fam is not None and fam.is_even():
        return fam
    m = 4 // math.gcd(n, 4)
    k = base_tables_per_entrant(n)
    for extra in range(4):
        found = search_family(n, k + extra * m, 0, 20_000)
        if found is not None:
            return arrange_family(found, [1])
    return None


def _greedy_tables(n: int, seed: int) -> list[tuple[int, ...]]:
    """The fallback when no even family is known or found (fields above 128): a greedy
    construction that always succeeds. Every index sits at :func:`base_tables_per_entrant`
    tables; the next table takes every index whose remaining seats equal the remaining tables
    (so the rest always fits), else the index with the most seats left (then the most others not
    yet met, then a seeded order), and adds the indexes that have met the table's members least
    often. Pairs meet 0 to 3 times. Time: O(k n^2)."""
    per_entrant = base_tables_per_entrant(n)
    total = per_entrant * n // 4
    meet = [[0] * n for _ in range(n)]
    unmet = [n - 1] * n  # how many others each index has not met yet
    left = [per_entrant] * n
    rng = random.Random(derive_seed(seed, "greedy tables", n))
    tie = [rng.random() for _ in range(n)]
    out: list[tuple[int, ...]] = []
    for t in range(total):
        remaining = total - t
        table = [i for i in range(n) if left[i] == remaining]
        cand = [i for i in range(n) if left[i] and i not in table]
        if not table:
            table = [max(cand, key=lambda i: (left[i], unmet[i], tie[i]))]
            cand.remove(table[0])
        score = [0] * n  # meetings of each index with the table's members so far
        for j in table:
            score = [a + b for a, b in zip(score, meet[j])]
        while len(table) < 4:
            best = min(cand, key=lambda i: (score[i], -left[i], -unmet[i], tie[i]))
            table.append(best)
            cand.remove(best)
            score = [a + b for a, b in zip(score, meet[best])]
        for a, b in itertools.combinations(table, 2):
            if meet[a][b] == 0:
                unmet[a] -= 1
                unmet[b] -= 1
            meet[a][b] += 1
            meet[b][a] += 1
        for i in table:
            left[i] -= 1
        out.append(tuple(sorted(table)))
    return out


def spread_order(tables: list[tuple[int, ...]], n: int) -> list[tuple[int, ...]]:
    """``tables`` (tuples of indexes ``0..n-1``) reordered so that each index's tables are
    spread over the sequence: the next table is the one whose members have sat least so far
    (the most-seated member first, then the sum; ties keep the given order). With every
    4-subset of 8 indexes, each table is followed by its complement, so every two tables
    seat every index once; for 5 to 7 indexes, at every point of the sequence the tables
    seated so far differ by at most 2 between two indexes (why: docs/design-notes.md,
    "Schedules"). Time O(len(tables)^2); used for at most :data:`TABLE_LIMIT` tables."""
    seated = [0] * n
    left = list(tables)
    out: list[tuple[int, ...]] = []
    while left:
        best = min(
            range(len(left)), key=lambda j: (max(seated[i] for i in left[j]), sum(seated[i] for i in left[j]), j)
        )
        table = left.pop(best)
        for i in table:
            seated[i] += 1
        out.append(table)
    return out


#: Even cyclic families for fields of 4 to 128, found by :func:`search_family` (``python
#: bench/schedule_bench.py --search`` prints them, arranged by :func:`arrange_family`). One entry
#: per field (indented lines continue it): ``n: full blocks | halves | q``, a full block written
#: ``a.b.c.d``, ``q`` when the quarter block is used. Checked by :meth:`CyclicFamily.is_even` on use.
FAMILIES = """
4:  |  | q
5: 0.1.3.4 |  |
6:  | 2 |
7: 0.3.4.5 |  |
8: 1.2.6.7 |  |
9: 3.4.6.8 |  |
10: 0.4.5.8 |  |
11: 3.5.6.10 |  |
12: 3.7.9.10 |  |
13: 1.7.9.10 |  |
14: 0.3.5.9 | 1 |
15: 2.4.6.12 0.8.9.12 |  |
16: 4.7.9.13 | 7 |
17: 6.7.10.14 0.1.3.12 |  |
18: 0.5.7.11 2.3.12.15 |  |
19: 2.5.7.11 0.8.15.16 |  |
20: 2.4.9.18 6.7.14.17 |  |
21: 6.9.11.17 0.1.5.14 |  |
22: 0.8.17.19 5.11.12.15 |  |
23: 6.14.18.19 1.4.8.10 |  |
24: 5.8.9.18 0.14.17.22 |  | q
25: 3.14.17.19 0.6.7.24 9.12.18.22 |  |
26: 0.11.12.16 3.5.6.23 | 7 |
27: 4.13.14.25 8.10.16.21 0.1.20.23 |  |
28: 9.20.25.27 4.13.16.17 | 8 |
29: 3.7.8.16 1.11.21.28 2.14.17.25 |  |
30: 1.7.17.28 13.20.21.25 | 13 |
31: 4.5.20.25 0.12.21.29 10.14.17.23 |  |
32: 3.11.28.31 15.16.21.25 5.7.21.26 |  |
33: 1.3.6.14 11.17.26.27 9.19.23.30 |  |
34: 2.3.13.29 17.19.23.32 8.11.20.25 |  |
35: 9.23.25.29 3.4.12.15 6.16.21.34 |  |
36: 16.17.22.26 8.10.25.32 3.11.14.34 |  | q
37: 1.8.21.22 2.28.30.33 5.13.17.32 |  |
38: 8.12.18.34 1.4.15.24 17.22.29.30 | 17 |
39: 2.6.22.33 8.12.15.29 0.24.32.37 13.18.19.28 |  |
40: 17.21.29.32 0.2.9.26 8.13.14.35 |  | q
41: 3.14.19.27 10.24.31.32 0.25.35.39 2.8.17.20 |  |
42: 0.12.17.26 6.33.35.41 5.23.24.27 | 10 |
43: 1.11.23.36 6.15.29.30 8.19.25.35 0.3.39.41 |  |
44: 0.4.16.38 8.9.26.33 12.21.24.35 28.30.38.43 |  |
45: 21.23.31.41 1.4.16.35 5.12.18.27 8.9.13.37 |  |
46: 1.5.6.31 11.13.19.42 17.24.36.45 16.26.29.40 |  |
47: 0.6.10.32 18.23.25.37 4.13.42.43 3.14.27.30 |  |
48: 0.15.22.43 27.28.30.39 5.9.34.40 1.11.19.35 |  |
49: 1.5.33.43 10.12.28.37 16.21.22.35 0.26.29.41 |  |
50: 2.16.28.39 3.10.43.47 7.22.25.30 13.15.34.35 | 9 |
51: 23.24.31.45 8.10.16.50 1.4.29.39 14.19.34.46 3.36.38.42 |  |
52: 4.11.44.46 17.20.31.35 0.6.22.27 10.30.38.39 |  | q
53: 29.30.39.50 2.4.8.15 12.20.37.42 9.25.28.44 19.34.46.48 |  |
54: 6.12.21.37 31.32.42.49 3.25.45.53 14.17.19.38 | 13 |
55: 7.15.32.33 20.39.41.44 12.25.47.53 3.18.27.28 4.36.48.52 |  |
56: 7.15.16.28 10.33.37.52 2.19.22.47 21.27.43.53 1.39.41.46 |  |
57: 20.23.29.34 4.5.9.39 14.26.47.55 13.31.44.51 1.16.18.48 |  |
58: 23.24.45.52 11.13.29.37 6.17.50.55 34.40.44.57 1.4.20.47 |  |
59: 1.8.27.36 41.42.52.54 16.19.24.46 6.12.29.50 14.18.32.57 |  |
60: 2.27.35.40 10.46.50.56 14.17.33.59 13.20.22.43 5.6.37.54 |  |
61: 5.14.36.49 20.30.41.44 26.53.58.59 4.8.16.23 10.12.35.55 |  |
62: 7.10.32.60 28.36.44.51 4.15.39.56 3.8.21.22 19.25.45.49 | 29 |
63: 13.16.28.38 8.43.47.56 19.25.33.62 4.5.49.51 10.31.37.42 21.53.54.61 |  |
64: 1.7.10.11 17.28.46.51 3.34.41.55 15.23.40.59 19.21.34.61 |  | q
65: 3.7.19.34 39.40.50.63 6.12.14.57 2.27.45.62 23.30.49.58 18.21.33.54 |  |
66: 2.58.59.61 8.13.36.52 0.11.29.42 19.31.45.51 4.21.25.40 | 25 |
67: 14.26.45.52 9.20.30.35 25.38.58.60 1.4.31.54 40.41.49.65 6.10.16.34 |  |
68: 6.44.46.51 22.35.38.39 9.33.58.67 16.28.43.63 4.18.50.56 12.23.54.62 |  |
69: 22.59.64.67 3.5.15.34 11.17.39.50 9.26.30.44 1.45.54.55 19.42.49.62 |  |
70: 41.42.51.68 5.20.56.59 11.24.29.36 15.23.63.65 0.14.35.46 6.10.47.53 |  |
71: 27.42.65.69 3.17.48.58 10.21.45.53 22.34.39.59 5.14.63.70 29.31.32.50 |  |
72: 26.40.62.68 2.4.15.55 20.44.47.51 8.9.18.34 23.38.56.61 12.24.32.67 |  |
73: 45.62.63.65 8.23.51.72 2.6.13.38 17.29.55.71 19.33.41.46 28.34.57.67 |  |
74: 18.27.40.51 4.10.30.46 24.52.67.71 7.56.63.64 34.36.48.57 3.13.42.72 | 34 |
75: 3.12.41.48 29.53.58.64 0.15.18.34 37.45.68.70 9.20.21.63 5.25.52.74 30.40.44.57 |  |
76: 20.56.61.62 40.44.68.70 1.21.34.50 4.14.26.29 7.16.30.75 10.47.54.65 |  | q
77: 39.52.66.76 14.22.57.60 3.35.43.71 8.27.29.30 4.48.65.69 9.16.34.63 13.18.24.75 |  |
78: 0.9.13.36 3.27.44.60 21.32.47.67 25.54.72.73 10.16.38.50 56.59.64.66 | 25 |
79: 2.41.70.76 7.15.27.58 20.29.36.66 12.31.46.72 26.48.50.51 9.61.65.78 19.22.40.54 |  |
80: 18.20.35.68 50.53.58.76 5.9.30.79 14.25.45.59 28.47.64.71 0.40.41.68 14.23.36.52 |  |
81: 55.56.63.80 4.20.25.47 10.13.39.50 59.68.74.78 15.33.35.65 7.30.42.43 23.37.70.76 |  |
82: 14.16.22.63 4.8.54.68 30.35.42.58 3.45.48.72 18.27.61.80 39.40.50.65 11.24.55.76 |  |
83: 4.13.30.53 22.58.59.80 47.63.65.76 8.36.40.71 17.24.27.29 0.42.50.69 9.33.39.77 |  |
84: 0.54.65.78 6.10.38.48 16.21.28.83 33.42.58.73 34.67.69.70 5.26.44.52 18.41.61.75 |  |
85: 13.24.38.39 7.60.63.83 19.29.70.77 32.50.54.67 2.26.45.57 11.16.44.80 35.73.75.81 |  |
86: 18.22.55.81 34.41.46.49 11.28.29.73 2.38.67.78 7.13.26.61 1.51.71.85 10.35.57.66 | 15 |
87: 2.20.70.78 51.61.63.83 7.14.31.45 40.66.73.74 17.23.53.58 26.35.39.80 1.4.29.44 11.32.48.71 |  |
88: 22.61.68.82 12.35.44.47 0.30.50.54 9.27.56.72 66.74.79.85 4.14.40.41 3.18.20.51 |  | q
89: 8.59.81.83 41.64.75.76 23.28.32.69 1.18.46.71 5.35.51.66 9.48.56.88 14.40.43.61 20.26.33.53 |  |
90: 13.39.64.68 25.45.58.85 1.3.4.76 28.33.74.80 19.29.43.51 34.55.62.71 9.21.57.80 | 11 |
91: 4.37.51.87 45.56.66.72 12.29.61.90 18.32.71.78 1.20.24.25 42.67.79.82 7.9.27.55 15.49.75.84 |  |
92: 51.66.77.89 10.29.38.46 24.26.56.70 19.39.61.82 7.31.34.86 3.13.44.60 15.16.21.74 65.68.72.90 |  |
93: 41.47.61.71 7.18.56.88 13.21.26.80 9.36.52.92 32.65.83.84 4.69.72.76 0.29.31.46 5.41.50.63 |  |
94: 14.16.80.81 1.21.32.72 26.43.51.67 6.64.86.90 11.55.58.90 4.37.46.52 22.27.40.61 19.31.38.76 |  |
95: 6.24.66.67 1.18.34.72 56.61.75.88 15.44.80.90 10.29.41.50 23.38.45.49 32.55.80.83 36.86.92.94 |  |
96: 52.85.89.90 0.16.27.44 22.35.56.65 4.10.29.77 15.60.62.70 21.39.81.95 33.36.48.68 3.10.49.75 |  |
97: 42.43.54.88 2.6.76.94 12.18.33.49 24.60.82.95 17.37.65.67 31.69.72.86 7.26.36.80 15.22.47.55 |  |
98: 19.24.25.48 13.42.68.75 1.32.54.82 10.29.88.92 46.59.61.86 7.17.63.97 5.52.66.73 37.69.78.81 | 38 |
99: 0.21.26.53 5.42.66.81 48.55.58.91 6.12.34.76 44.71.84.96 16.30.34.50 39.70.87.89 10.18.19.63 25.74.83.94 |
    |
100: 28.33.36.92 2.16.20.42 48.57.59.69 11.50.63.82 4.39.77.97 24.54.71.87 8.14.65.80 29.74.75.98 |  | q
101: 16.25.60.61 66.78.86.89 7.11.45.93 4.20.33.50 6.38.74.97 28.53.71.92 1.41.55.96 56.80.82.87 21.49.73.100
    |  |
102: 28.55.72.91 1.12.34.44 22.62.74.82 67.68.93.97 3.49.51.58 9.24.40.77 10.15.38.99 5.19.83.86 | 6 |
103: 12.48.64.69 1.35.41.89 53.57.75.95 21.71.80.81 17.25.44.91 29.30.32.100 6.14.86.93 9.39.84.101
    37.50.62.76 |  |
104: 3.72.96.102 8.29.65.79 18.34.35.60 24.39.84.87 13.45.53.55 26.48.60.91 17.21.40.69 0.49.67.76
    43.81.94.101 |  |
105: 26.40.41.98 16.18.48.57 7.10.31.62 23.83.91.102 52.69.74.86 12.35.77.81 1.29.45.96 5.32.61.67 3.21.88.101
    |  |
106: 0.37.41.83 46.56.64.96 6.15.32.67 19.52.72.91 8.11.23.101 59.81.86.88 13.27.28.71 22.47.53.77 2.40.61.97
    |  |
107: 14.50.83.96 0.1.88.91 6.20.29.31 36.54.64.103 41.47.73.97 11.15.42.77 25.59.80.102 9.21.63.68
    56.85.93.100 |  |
108: 2.60.68.100 8.12.23.42 48.49.74.86 37.55.76.90 20.27.29.81 0.6.33.92 16.39.83.96 42.66.71.102
    14.17.60.105 |  |
109: 16.54.55.67 25.44.73.78 6.61.98.101 39.60.85.107 18.49.82.92 12.28.30.72 9.36.88.95 2.11.22.105
    34.42.66.70 |  |
110: 1.2.74.77 33.35.43.49 12.53.64.68 22.27.55.100 7.67.86.93 18.58.79.106 9.39.83.96 24.44.62.87
    31.73.90.102 | 46 |
111: 16.68.71.85 40.46.50.76 26.55.90.98 31.36.59.80 11.20.42.107 4.8.62.102 21.28.94.105 2.63.65.81
    0.33.74.86 5.37.96.97 |  |
112: 19.40.54.87 25.66.78.108 5.72.99.109 28.34.92.94 11.36.45.62 1.51.58.73 79.83.84.103 8.46.57.89
    13.16.29.52 |  | q
113: 33.48.90.107 7.75.79.112 16.38.100.101 26.52.60.95 43.56.66.68 28.81.86.105 18.21.85.96 4.11.25.31
    10.41.50.71 14.46.62.109 |  |
114: 20.53.65.104 1.8.10.95 26.27.40.80 43.46.51.74 33.59.70.111 13.17.34.93 31.87.97.103 39.64.83.107
    4.22.71.86 | 35 |
115: 15.72.90.92 8.32.77.103 47.54.84.97 12.23.59.110 35.43.64.98 3.28.87.102 19.38.52.61 46.81.108.113
    18.57.67.79 0.3.6.7 |  |
116: 26.40.45.106 3.50.56.85 17.65.90.111 8.12.21.52 35.67.95.97 27.76.79.102 44.60.61.71 2.10.81.114
    23.30.88.108 16.31.55.73 |  |
117: 30.44.98.99 49.59.66.86 23.104.106.110 2.11.90.93 14.54.73.115 6.18.84.112 35.57.78.102 19.38.63.95
    29.68.76.81 7.25.40.71 |  |
118: 6.53.73.98 34.58.112.117 25.42.63.107 16.29.47.84 12.39.87.88 62.69.78.101 3.8.37.93 21.67.79.82
    20.31.50.72 95.103.105.109 |  |
119: 35.38.47.79 14.18.84.110 6.23.91.105 27.60.75.96 8.43.53.116 2.26.64.69 12.72.100.101 31.33.39.52
    48.88.95.113 0.16.58.80 |  |
120: 2.13.81.113 19.27.46.64 36.67.91.107 56.58.73.119 25.94.98.101 8.41.47.107 31.61.84.89 2.40.52.74
    78.79.104.114 8.21.85.99 |  |
121: 24.71.92.119 37.45.77.79 15.51.54.108 6.64.65.83 28.42.98.114 9.21.87.120 89.100.106.113 4.29.34.49
    18.22.59.68 12.35.73.104 |  |
122: 71.78.83.117 12.34.89.97 6.42.62.100 18.39.108.109 10.24.26.50 54.60.73.103 2.20.43.115 29.32.94.104
    49.66.91.120 36.69.80.84 | 35 |
123: 33.71.111.119 2.76.86.98 39.50.63.81 11.44.45.91 0.6.20.25 55.58.90.116 30.66.83.94 36.40.103.105
    16.60.69.110 8.23.53.74 5.12.28.80 |  |
124: 27.50.59.85 19.33.75.94 12.39.67.120 54.61.105.111 6.40.99.117 3.43.81.91 15.30.69.102 9.10.21.116
    0.4.24.45 49.71.74.79 | 2 |
125: 15.31.64.77 20.21.38.102 43.82.97.117 47.55.88.112 1.8.35.107 57.62.68.93 25.72.108.122 3.13.86.90
    30.59.115.118 6.51.61.73 69.78.99.101 |  |
126: 4.27.55.120 46.61.80.85 10.40.109.111 16.17.99.125 23.37.91.103 30.62.68.97 67.71.74.119 33.44.53.75
    9.50.58.114 3.39.79.92 | 16 |
127: 64.76.92.97 23.36.46.110 0.14.102.126 41.70.84.118 31.53.120.122 4.58.69.89 19.27.74.78 5.49.95.115
    9.16.35.87 12.98.104.107 51.63.81.108 |  |
128: 41.50.53.108 24.58.59.80 0.14.29.66 4.75.92.122 45.71.87.95 31.82.100.105 9.20.99.112 86.113.117.119
    34.36.77.116 8.15.40.68 44.63.107.127 |  |
"""


@functools.cache
def _stored_families() -> dict[int, CyclicFamily]:
    out: dict[int, CyclicFamily] = {}
    for line in re.split(r"\n(?=\d)", FAMILIES.strip()):  # an indented line continues the one above
        head, _, rest = line.partition(":")
        full_text, _, tail = rest.partition("|")
        halves_text, _, quarter_text = tail.partition("|")
        full = tuple(tuple(int(x) for x in block.split(".")) for block in full_text.split())
        out[int(head)] = CyclicFamily(
            int(head), full, tuple(int(a) for a in halves_text.split()), quarter_text.strip() == "q"
        )
    return out


def family_line(fam: CyclicFamily) -> str:
    """``fam`` as a line of :data:`FAMILIES`."""
    full = " ".join(".".join(map(str, b)) for b in fam.full)
    return f"{fam.n}: {full} | {' '.join(map(str, fam.halves))} | {'q' if fam.quarter else ''}".rstrip()
