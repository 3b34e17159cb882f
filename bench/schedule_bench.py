"""4-player schedules for every field from 4 to 128 bots: balance, spread and build time.

    python bench/schedule_bench.py [--seed S] [--max-n N]
    python bench/schedule_bench.py --search [--seeds 5] [--steps 200000] [--max-n N]

The first form prints one line per field size ``n``:
``n  k  tables  meets min-max  crowd  wait  ms``: tables per bot ``k``, tables, the fewest and
most times a pair of bots meets, ``crowd`` the most tables of one bot in any ``n/4`` consecutive
tables of the queue, ``wait`` the longest distance (in tables, the queue taken as cyclic)
between two tables of a bot, and the time (milliseconds) of ``build_schedule`` with one round.
Then the worst time and the time of ``spread_tables(128)`` alone, the first call (which parses
the stored families) and a later one. Goal (issue 15): well under a second for 128 bots.
Times vary with the machine's load.

``--search`` finds the families anew with :func:`arena.designs.search_family` (from the
base table count upwards, ``--seeds`` seeds of ``--steps`` steps each per count), arranges them
for spread (:func:`arena.designs.arrange_family`) and prints the entries of
``arena.designs.FAMILIES`` as one line each (about 15 minutes: the counts that have no
cyclic family use up every seed; the defaults reproduce the stored entries).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from arena import (
    designs,  # noqa: E402
    schedule,  # noqa: E402
)


def measure(n: int, seed: int) -> tuple[int, int, int, int, int, int, float]:
    """``(k, tables, min meets, max meets, crowd, wait, milliseconds)`` for a field of ``n``."""
    start = time.perf_counter()
    plan = schedule.build_schedule(4, list(range(n)), 1, seed)
    ms = (time.perf_counter() - start) * 1000
    passes = plan[: len(plan) // 4]  # one rotation: every table once, in queue order
    tables = [tuple(sorted(m.seats)) for m in passes]
    meets = collections.Counter(p for t in tables for p in itertools.combinations(t, 2))
    counts = [meets[p] for p in itertools.combinations(range(n), 2)]
    k = sum(len(t) for t in tables) // n
    crowd, wait = designs.spread_metrics([tuple(int(x) for x in t) for t in tables], n)
    return k, len(tables), min(counts), max(counts), crowd, wait, ms


def bench(seed: int, max_n: int) -> None:
    print(f"{'n':>4} {'k':>3} {'tables':>6} {'meets':>6} {'crowd':>5} {'wait':>5} {'ms':>7}")
    worst = 0.0
    for n in range(4, max_n + 1):
        k, tables, low, high, crowd, wait, ms = measure(n, seed)
        worst = max(worst, ms)
        print(f"{n:>4} {k:>3} {tables:>6} {low:>3}-{high:<2} {crowd:>5} {wait:>5} {ms:>7.1f}")
    print(f"worst build_schedule time: {worst:.1f} ms")
    designs._stored_families.cache_clear()
    start = time.perf_counter()
    designs.spread_tables(max_n, seed)
    cold = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    designs.spread_tables(max_n, seed + 1)
    warm = (time.perf_counter() - start) * 1000
    print(f"spread_tables({max_n}): {cold:.1f} ms first call (parses the stored families), {warm:.1f} ms later")


def search(seeds: int, steps: int, max_n: int) -> None:
    for n in range(4, max_n + 1):
        m = 4 // math.gcd(n, 4)
        k = designs.base_tables_per_entrant(n)
        found = None
        while found is None:
            if designs.family_shape(n, k) is not None:
                for s in range(seeds):
                    found = designs.search_family(n, k, s, steps)
                    if found is not None:
                        break
            if found is None:
                k += m
        arranged = designs.arrange_family(found)
        if n > 8:  # the stored families above 8 were arranged a second time, judging 40 candidates
            arranged = designs.arrange_family(arranged, judged=40)
        print(designs.family_line(arranged), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-n", type=int, default=128)
    parser.add_argument("--search", action="store_true")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200_000)
    args = parser.parse_args()
    if args.search:
        search(args.seeds, args.steps, args.max_n)
    else:
        bench(args.seed, args.max_n)


if __name__ == "__main__":
    main()
