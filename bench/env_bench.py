"""The training environment's bench: PettingZoo's API test, then random self-play.

    python bench/env_bench.py [--steps N] [--cycles C] [--seed S]

For each rule set prints one line, exactly::

    env <ruleset>: api_test passed, N steps/s

``N`` counts environment steps (sub-steps included) of masked random actions through the
usual AEC loop (``last()`` then ``step()``) over whole episodes, until at least ``--steps``
steps were taken; one process.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
import warnings

import numpy as np
from pettingzoo.test import api_test

from bots_sdk.env import RULESETS, env


def self_play_rate(ruleset: str, steps: int, seed: int) -> float:
    """Steps per second of masked random self-play over whole episodes (at least ``steps``)."""
    e = env(ruleset, seed=seed)
    rng = np.random.default_rng(seed)
    done = 0
    episode = 0
    start = time.perf_counter()
    while done < steps:
        e.reset(seed=seed + episode)
        episode += 1
        for _agent in e.agent_iter():
            obs, _reward, terminated, truncated, _info = e.last()
            if terminated or truncated:
                e.step(None)
                continue
            e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            done += 1
    return done / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description="api_test and random self-play of bots_sdk.env")
    ap.add_argument("--steps", type=int, default=20_000, help="least steps of self-play per rule set")
    ap.add_argument("--cycles", type=int, default=1000, help="api_test's num_cycles")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    for ruleset in RULESETS:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the Dict observation's advice (as PettingZoo's classic envs)
            api_test(env(ruleset, seed=args.seed), num_cycles=args.cycles)  # raises on a failure
        rate = self_play_rate(ruleset, args.steps, args.seed)
        print(f"env {ruleset}: api_test passed, {int(rate)} steps/s", flush=True)


if __name__ == "__main__":
    main()
