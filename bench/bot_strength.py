"""Strength of the sample bots: ``heuristic`` against ``random`` (issue 4), ``search``
against ``heuristic`` (issue 26), and ``search`` on the compiled engine against ``search`` on
the pure one (issue 41, ``--builds``).

Prints::

    million_doubt heuristic vs random: win rate 0.78 over 1000 games
    trump_millionaire heuristic vs 3 random: first place rate 0.45 over 200 games
    jdf heuristic vs 3 random: first place rate 0.60 over 200 games
    strength million_doubt: search ahead of heuristic by D (95% CI L..H)
    strength trump_millionaire: search ahead of heuristic by D (95% CI L..H)
    strength jdf: search ahead of heuristic by D (95% CI L..H)

The ``strength`` lines (``--strength``, on by default; ``--no-strength`` skips them) play
``search`` at ``--budget-ms`` (100) per decision against ``heuristic``. D is the mean score
difference per game, seat-balanced, with a normal 95% interval over independent samples:

* Million Doubt: duplicate pairs (each deal played twice, seats swapped); score = the game's
  points (MD-17, +n / -n, the burst score 11 at most); a sample is one pair: search's points
  minus heuristic's, per game, averaged over the pair.
* Trump Millionaire: one search against three heuristics; each seed is played four times,
  search in each seat in turn (a sample is the seed's mean); score = the game's total points
  (TM-7) of a game to ``--tm-target`` points (30: shorter than the default 100, for time);
  D = search's total minus the heuristics' mean total.
* JDF: the same seating; score = the match points (JDF-13) of a match of ``--jdf-sets`` sets
  (1 set = 4 games, set bonus included); D = search's points minus the heuristics' mean.

Million Doubt: 1,000 games in duplicate pairs (each deal played twice, seats swapped), the
heuristic must win at least 0.70 of them (exit status 1 otherwise). Trump Millionaire and
JDF: 200 games (one engine game each: a game of deals to the target; a 3-set match) with the
heuristic's seat rotated; first place shared on a tie counts.

``--builds`` (off by default; ``--skip-random --no-strength --builds`` for it alone) plays
``search`` at ``--budget-ms`` on the compiled engine against ``search`` at the same budget on
the pure engine, Million Doubt duplicate pairs (``--builds-md-pairs``), and prints::

    builds million_doubt: compiled search ahead of pure search by D (95% CI L..H); <rollouts>

(``<rollouts>``: ``rollouts per decision compiled R, pure P``.)

D is the compiled bot's points minus the pure bot's per game, a sample per pair. Each bot is
served over HTTP by a process of its own (``ARENA_ENGINE``, the SDK's server) and both are
pinned to one core (``--cpu``, ``taskset``): only one thinks at a time, and the budget is CPU
time (``--clock cpu``, the default: the machine is shared; ``--clock wall`` for the bot's own
clock). It needs the compiled engine (``bash infra/build_engine.sh``).

Games go through :func:`arena.runner.match.run_match` with in-process players (the runner's
request building, JSON round trip and time accounting; no HTTP), split over the CPU cores.
Usage: ``python bench/bot_strength.py [--md-games N] [--games N] [--workers N]
[--no-strength] [--skip-random] [--strength-md-pairs N] [--strength-tm-seeds N]
[--strength-jdf-seeds N] [--budget-ms MS] [--tm-target N] [--jdf-sets N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.runner.match import run_match  # noqa: E402
from arena.seeds import derive_seed  # noqa: E402
from bots_sdk.samples import HeuristicBot, RandomBot, SearchBot  # noqa: E402

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


def md_strength(first: int, count: int, budget_ms: float) -> list[float]:
    """Million Doubt duplicate pairs: per pair, search minus heuristic points per game."""
    players = [
        [SearchBot(seed=p, budget_ms=budget_ms), HeuristicBot(seed=10**6 + p)] for p in range(first, first + count)
    ]
    return [md_pair(ps, 2 * 10**5 + p) for p, ps in zip(range(first, first + count), players)]


def md_pair(players: list, pair: int) -> float:
    """One Million Doubt duplicate pair (seats swapped) of ``players`` on seed ``pair``: the
    first player's points minus the second's, per game."""
    log = run_match(players, "million_doubt", seed=derive_seed(SEED, pair), games=2, notices=False)
    scores = log["result"]["scores"]
    return (scores[0] - scores[1]) / log["result"]["games"]


def four_strength(ruleset: str, options: dict, first: int, count: int, budget_ms: float) -> list[float]:
    """Seeds ``first``.. of one search against three heuristics, search in each seat in turn:
    per seed, the mean of search's score minus the heuristics' mean score."""
    out = []
    for i in range(first, first + count):
        diffs = []
        for seat in range(4):
            players: list = [HeuristicBot(seed=10**6 + i * 4 + s) for s in range(4)]
            players[seat] = SearchBot(seed=i * 4 + seat, budget_ms=budget_ms)
            log = run_match(players, ruleset, options, seed=derive_seed(SEED, 3 * 10**5 + i), notices=False)
            scores = log["result"]["scores"]
            diffs.append(scores[seat] - sum(scores[s] for s in range(4) if s != seat) / 3)
        out.append(sum(diffs) / 4)
    return out


def interval(xs: list[float]) -> tuple[float, float, float]:
    """Mean and normal 95% interval of the mean."""
    n = len(xs)
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    half = 1.96 * (var / n) ** 0.5
    return mean, mean - half, mean + half


def _split(total: int, parts: int) -> list[tuple[int, int]]:
    size, extra = divmod(total, parts)
    out, start = [], 0
    for k in range(parts):
        n = size + (1 if k < extra else 0)
        if n:
            out.append((start, n))
        start += n
    return out


def serve_search(budget_ms: float, clock: str, seed: int) -> None:
    """(A ``--builds`` worker) serve ``search`` on 127.0.0.1 (first line: its URL and build);
    at the end of stdin, print its stats and stop."""
    import engine
    from bots_sdk import start

    bot = SearchBot(seed=seed, budget_ms=budget_ms, clock=time.process_time if clock == "cpu" else time.perf_counter)
    server = start(bot, "127.0.0.1", 0)
    print(json.dumps({"url": server.url, "build": engine.BUILD}), flush=True)
    sys.stdin.read()
    server.close()
    print(json.dumps(bot.stats), flush=True)


def builds_strength(args: argparse.Namespace) -> None:
    """``search`` compiled against ``search`` pure (module docstring)."""
    os.environ.setdefault("ARENA_ALLOW_PRIVATE_BOT_URLS", "1")
    me = [sys.executable, str(Path(__file__).resolve())]
    taskset = shutil.which("taskset")
    procs: dict[str, subprocess.Popen[str]] = {}
    urls: dict[str, str] = {}
    try:
        for k, build in enumerate(("compiled", "pure")):
            argv = [*me, "--serve-search", "--budget-ms", str(args.budget_ms), "--clock", args.clock, "--seed", str(k)]
            env = {**os.environ, "ARENA_ENGINE": build}
            cmd = ([taskset, "-c", str(args.cpu)] if taskset else []) + argv
            p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
            procs[build] = p
            assert p.stdout is not None
            first = p.stdout.readline()
            if not first:
                print(f"builds: the {build} search did not start (bash infra/build_engine.sh?)", file=sys.stderr)
                return
            hello = json.loads(first)
            assert hello["build"] == build, hello
            urls[build] = hello["url"]
        t = time.perf_counter()
        diffs = [md_pair([urls["compiled"], urls["pure"]], 4 * 10**5 + pair) for pair in range(args.builds_md_pairs)]
        stats = {}
        for build, p in procs.items():
            out, _ = p.communicate(input="", timeout=60)
            stats[build] = json.loads(out.strip().splitlines()[-1])
        per = {b: s["rollouts"] / max(1, s["searched"]) for b, s in stats.items()}
        d, lo, hi = interval(diffs)
        print(
            f"builds million_doubt: compiled search ahead of pure search by {d:.2f} (95% CI {lo:.2f}..{hi:.2f}); "
            f"rollouts per decision compiled {per['compiled']:.0f}, pure {per['pure']:.0f}",
            flush=True,
        )
        print(
            f"  ({len(diffs)} pairs, budget {args.budget_ms:g} ms of {args.clock} time, pinned to CPU {args.cpu}, "
            f"{time.perf_counter() - t:.0f} s; load average {os.getloadavg()[0]:.2f})",
            flush=True,
        )
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--md-games", type=int, default=1000)
    ap.add_argument("--games", type=int, default=200)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--strength", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--strength-md-pairs", type=int, default=100)
    ap.add_argument("--strength-tm-seeds", type=int, default=15, help="TM seeds, 4 games each")
    ap.add_argument("--strength-jdf-seeds", type=int, default=20, help="JDF seeds, 4 games each")
    ap.add_argument("--budget-ms", type=float, default=100.0)
    ap.add_argument("--tm-target", type=int, default=30)
    ap.add_argument("--jdf-sets", type=int, default=1)
    ap.add_argument("--skip-random", action="store_true", help="only the strength lines")
    ap.add_argument("--builds", action="store_true", help="search compiled against search pure (issue 41)")
    ap.add_argument("--builds-md-pairs", type=int, default=100)
    ap.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1, help="--builds: the core of both bots")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="--builds: the budget's clock")
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--serve-search", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve_search:
        serve_search(args.budget_ms, args.clock, args.seed)
        return 0
    ok = True
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        if not args.skip_random:
            ok = _against_random(pool, args)
        if args.strength:
            _strength(pool, args)
    if args.builds:
        builds_strength(args)
    if not ok:
        print("FAIL: the Million Doubt heuristic must win at least 0.70 of its games", file=sys.stderr)
    return 0 if ok else 1


def _strength(pool: ProcessPoolExecutor, args: argparse.Namespace) -> None:
    chunks = args.workers * 4
    t = time.perf_counter()
    runs = []
    if args.strength_md_pairs:
        js = [pool.submit(md_strength, s, n, args.budget_ms) for s, n in _split(args.strength_md_pairs, chunks)]
        runs.append(("million_doubt", js, args.strength_md_pairs, "pairs"))
    for ruleset, options, seeds in (
        ("trump_millionaire", {"target_score": args.tm_target}, args.strength_tm_seeds),
        ("jdf", {"sets": args.jdf_sets}, args.strength_jdf_seeds),
    ):
        if seeds:
            js = [pool.submit(four_strength, ruleset, options, s, n, args.budget_ms) for s, n in _split(seeds, chunks)]
            runs.append((ruleset, js, seeds * 4, "games"))
    for ruleset, js, n, what in runs:
        xs = [x for j in js for x in j.result()]
        d, lo, hi = interval(xs)
        print(f"strength {ruleset}: search ahead of heuristic by {d:.2f} (95% CI {lo:.2f}..{hi:.2f})", flush=True)
        print(f"  ({n} {what}, {time.perf_counter() - t:.1f} s since the strength runs began)", flush=True)


def _against_random(pool: ProcessPoolExecutor, args: argparse.Namespace) -> bool:
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
        f"million_doubt heuristic vs random: win rate {rate:.2f} over {games} games  ({time.perf_counter() - t:.1f} s)",
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
    return ok


if __name__ == "__main__":
    sys.exit(main())
