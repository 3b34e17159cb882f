"""Largest number of candidates the environment shows in one step, over random games.

    python bench/env_actions.py [--games N]

Prints, per rule set (with and without every local rule), one line:
``actions <ruleset>[ +LR]: max M candidates (play P, other O) over G games, S steps, pages X``
(M must stay within MAX_ACTIONS; a longer start list is paged). Masked random actions.
"""

from __future__ import annotations

import argparse

import numpy as np

from bots_sdk.env import MAX_ACTIONS, RULESETS, raw_env

LOCAL = {k: True for k in ("eleven_back", "stairs_revolution", "number_lock", "five_skip", "seven_pass", "ten_discard")}


def measure(ruleset: str, options: dict, games: int) -> tuple[int, int, int, int, int]:
    e = raw_env(ruleset, options)
    rng = np.random.default_rng(0)
    play = other = steps = pages = 0
    for g in range(games):
        e.reset(seed=g)
        while e.agents:
            agent = e.agent_selection
            if e.terminations[agent]:
                e.step(None)
                continue
            t = e.turn
            assert t is not None
            n = len(t.candidates())
            full = t.listed if t.phase == "start" else n
            if t.kind == "play" and t.phase == "start":
                play = max(play, full)
            else:
                other = max(other, full)
            pages += full > MAX_ACTIONS
            mask = e.observe(agent)["action_mask"]
            e.step(int(rng.choice(np.flatnonzero(mask))))
            steps += 1
    return max(play, other), play, other, steps, pages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=200)
    args = ap.parse_args()
    for rs in RULESETS:
        for label, opts in (("", {}), (" +LR", LOCAL)):
            if rs == "million_doubt" and opts:
                continue
            games = args.games if rs != "jdf" else max(1, args.games // 10)
            m, p, o, s, x = measure(rs, opts, games)
            line = f"max {m} candidates (play {p}, other {o}) over {games} games, {s} steps, pages {x}"
            print(f"actions {rs}{label}: {line}", flush=True)


if __name__ == "__main__":
    main()
