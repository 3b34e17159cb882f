"""Strength of the ``heuristic`` sample bot against ``random`` (issue 4 benchmark).

Prints::

    million_doubt heuristic vs random: win rate 0.78 over 1000 games
    trump_millionaire heuristic vs 3 random: first place rate 0.45 over 200 games
    jdf heuristic vs 3 random: first place rate 0.60 over 200 games

Million Doubt: 1,000 games in duplicate pairs (each deal played twice, seats swapped), the
heuristic must win at least 0.70 of them (exit status 1 otherwise). Trump Millionaire and
JDF: 200 games (one engine game each: a game of deals to the target; a 3-set match) with the
heuristic's seat rotated; first place shared on a tie counts.

Games go through :func:`arena.runner.match.run_match` with in-process players (the runner's
request building, JSON round trip and time accounting; no HTTP), split over the CPU cores.
Usage: ``python bench/bot_strength.py [--md-games N] [--games N] [--workers N]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.runner.match import run_match  # noqa: E402
from arena.seeds import derive_seed  # noqa: E402
from bots_sdk.samples import HeuristicBot, RandomBot  # noqa: E402

SEED = 20261129


def md_chunk(first: int, count: int) -> tuple[int, int]:
    """Million Doubt games ``first``..``first+count`` (pairs): (heuristic wins, games)."""
    wins = games = 0
    for pair in range(first, first + count):
        log = run_match(
            [HeuristicBot(seed=pair), RandomBot(seed=10**6 + pair)],
            "million_doubt",
            seed=derive_seed(SEED, pair),
            games=2,
            notices=False,
        )
        wins += log["result"]["wins"][0]
        games += log["result"]["games"]
    return wins, games


def four_chunk(ruleset: str, first: int, count: int) -> tuple[int, int]:
    """Games of a 4-player rule set: (heuristic first places, games)."""
    firsts = 0
    for i in range(first, first + count):
        seat = i % 4
        players = [RandomBot(seed=10**6 + i * 4 + s) for s in range(4)]
        players[seat] = HeuristicBot(seed=i)
        log = run_match(players, ruleset, seed=derive_seed(SEED, 10**5 + i), notices=False)
        firsts += log["result"]["ranks"][seat] == 1
    return firsts, count


def _split(total: int, parts: int) -> list[tuple[int, int]]:
    size, extra = divmod(total, parts)
    out, start = [], 0
    for k in range(parts):
        n = size + (1 if k < extra else 0)
        if n:
            out.append((start, n))
        start += n
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--md-games", type=int, default=1000)
    ap.add_argument("--games", type=int, default=200)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    ok = True
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        t = time.perf_counter()
        jobs = [pool.submit(md_chunk, s, n) for s, n in _split(args.md_games // 2, args.workers * 4)]
        wins = games = 0
        for j in jobs:
            w, g = j.result()
            wins += w
            games += g
        rate = wins / games
        ok = rate >= 0.70
        print(
            f"million_doubt heuristic vs random: win rate {rate:.2f} over {games} games"
            f"  ({time.perf_counter() - t:.1f} s)",
            flush=True,
        )
        for ruleset in ("trump_millionaire", "jdf"):
            t = time.perf_counter()
            jobs = [pool.submit(four_chunk, ruleset, s, n) for s, n in _split(args.games, args.workers * 4)]
            firsts = total = 0
            for j in jobs:
                f, g = j.result()
                firsts += f
                total += g
            print(
                f"{ruleset} heuristic vs 3 random: first place rate {firsts / total:.2f} over {total} games"
                f"  ({time.perf_counter() - t:.1f} s)",
                flush=True,
            )
    if not ok:
        print("FAIL: the Million Doubt heuristic must win at least 0.70 of its games", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
