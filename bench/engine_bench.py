"""Engine speed: random self-play with a fixed seed, one line per rule set.

    python bench/engine_bench.py [--seconds S]

Prints e.g. ``million_doubt: 51234 decisions/s, 812 games/s``. A decision is one action
applied to the engine (play, pass, doubt, through, penalty, exchange, rate, give, discard);
each is chosen uniformly at random among the legal actions the engine lists (in Million Doubt,
one play in five is replaced by a random bluff: random cards of the trick's count, some face
down, checked by the engine). Targets (issues): million_doubt >= 50,000/s, the others >= 30,000/s
on one core. Runs on one core (one process); figures vary with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import engine  # noqa: E402
from engine.selfplay import random_game  # noqa: E402


def bench(ruleset: str, seconds: float, options: dict | None = None) -> tuple[float, float, int]:
    """Play random games for about ``seconds``; return (decisions/s, games/s, games)."""
    rng = random.Random(12345)
    decisions = games = 0
    start = time.perf_counter()
    seed = 0
    while True:
        g = engine.new_game(ruleset, options, seed=seed)
        decisions += random_game(g, rng)
        games += 1
        seed += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    return decisions / elapsed, games / elapsed, games


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="time per rule set (s)")
    ap.add_argument("--ruleset", choices=engine.RULESETS, action="append")
    args = ap.parse_args()
    for rs in args.ruleset or engine.RULESETS:
        dps, gps, n = bench(rs, args.seconds)
        unit = {"million_doubt": "games", "trump_millionaire": "games", "jdf": "matches"}[rs]
        print(f"{rs}: {dps:.0f} decisions/s, {gps:.1f} {unit}/s", flush=True)


if __name__ == "__main__":
    main()
