"""The training environment's bench: PettingZoo's API test, then masked random self-play per
CPU second, the pure and the compiled engine interleaved on one pinned core.

    python bench/env_bench.py [--seconds S] [--rounds R] [--cpu N] [--cycles C] [--no-api-test]

Prints the load average and the core, then per rule set ``api_test <ruleset>: passed`` (PettingZoo's
``api_test``, ``--cycles`` cycles; ``--no-api-test`` skips it), then exactly::

    env <ruleset>: N steps/s

N counts environment steps (sub-steps included) per CPU second with the compiled engine (the
pure one's when the compiled engine is not built: ``bash infra/build_engine.sh``); a line
``env <ruleset> with the pure engine: P steps/s`` follows. The steps are the usual AEC loop of
a user's (``last()``, then ``step()`` of a uniformly random legal index: ``np.flatnonzero`` of
the mask, ``random.random``) on :func:`bots_sdk.env.env`, whole episodes; each build runs in a
worker process of its own (``ARENA_ENGINE``), pinned to core ``--cpu`` (``taskset``), asked in
turn for ``--seconds`` of CPU time per rule set, ``--rounds`` times. Goal (issue 41): at least
25,000 steps/s in every rule set with the compiled engine.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
import warnings
from pathlib import Path

from pinned import Worker, engine_workers, load_line

ROOT = Path(__file__).resolve().parent.parent
RULESETS = ("million_doubt", "trump_millionaire", "jdf")


def _worker() -> None:
    sys.path.insert(0, str(ROOT))
    import random

    import numpy as np

    import engine
    from bots_sdk.env import env

    print(json.dumps({"build": engine.BUILD}), flush=True)
    envs = {rs: env(rs, seed=0) for rs in RULESETS}
    episodes = dict.fromkeys(RULESETS, 0)
    rng = random.Random(0)
    for line in sys.stdin:
        cmd = json.loads(line)
        rs, seconds = cmd["ruleset"], cmd["seconds"]
        e = envs[rs]
        steps = 0
        start = time.process_time()
        while True:
            e.reset(seed=episodes[rs])
            episodes[rs] += 1
            for _agent in e.agent_iter():
                obs, _reward, terminated, truncated, _info = e.last()
                if terminated or truncated:
                    e.step(None)
                    continue
                legal = np.flatnonzero(obs["action_mask"])
                e.step(int(legal[int(rng.random() * len(legal))]))
                steps += 1
            cpu = time.process_time() - start
            if cpu >= seconds:
                break
        print(json.dumps({"count": steps, "cpu": cpu}), flush=True)


def api_tests(cycles: int) -> None:
    from pettingzoo.test import api_test

    sys.path.insert(0, str(ROOT))
    from bots_sdk.env import env

    for ruleset in RULESETS:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the Dict observation's advice (as PettingZoo's classic envs)
            api_test(env(ruleset, seed=0), num_cycles=cycles)  # raises on a failure
        print(f"api_test {ruleset}: passed", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description="api_test and random self-play of bots_sdk.env")
    ap.add_argument("--seconds", type=float, default=1.0, help="CPU seconds per build and rule set, per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1, help="the core every worker is pinned to")
    ap.add_argument("--cycles", type=int, default=1000, help="api_test's num_cycles")
    ap.add_argument("--no-api-test", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker()
        return
    workers: list[Worker] = engine_workers([sys.executable, str(Path(__file__).resolve()), "--worker"], args.cpu)
    try:
        if not workers:
            sys.exit("env_bench: no engine to run")
        before = os.getloadavg()[0]
        for r in range(args.rounds):
            for rs in RULESETS:
                for w in workers if r % 2 == 0 else workers[::-1]:
                    w.run(rs, args.seconds)
        print(load_line("env_bench", before, args.cpu, args.rounds, args.seconds), flush=True)
        if not args.no_api_test:
            api_tests(args.cycles)
        by_build = {w.name: w for w in workers}
        for rs in RULESETS:
            best = by_build.get("compiled", by_build.get("pure"))
            assert best is not None
            print(f"env {rs}: {best.rate(rs):.0f} steps/s", flush=True)
            if "pure" in by_build and best.name != "pure":
                print(f"env {rs} with the pure engine: {by_build['pure'].rate(rs):.0f} steps/s", flush=True)
    finally:
        for w in workers:
            w.stop()


if __name__ == "__main__":
    main()
