"""Play the SDK's sample bots through the training environment (docs/env.md).

    python examples/env_play.py --ruleset trump_millionaire --bots heuristic,random --seed 7

Each bot answers the protocol request of its seat (``env.unwrapped.request()``, what the
arena would send it); ``env.unwrapped.index_of(answer)`` turns the answer into the index to
step, sub-step by sub-step (a composed face-down play, a card choice). Needs the ``env`` extra.
"""

from __future__ import annotations

import argparse
import json
from itertools import cycle
from typing import Any

from bots_sdk.env import env
from bots_sdk.samples import SAMPLE_BOTS


def play(ruleset: str, bots: list[str], seed: int = 0, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """One episode of ``ruleset`` with the sample bots ``bots`` (names, repeated over the seats):
    ``{"result": engine result, "rewards": {agent: summed reward}, "steps": n}``."""
    e = env(ruleset, options, seed=seed)
    e.reset(seed=seed)
    players = {a: SAMPLE_BOTS[name](seed=seed + i) for i, (a, name) in enumerate(zip(e.possible_agents, cycle(bots)))}
    answer: dict[str, dict[str, Any]] = {}
    rewards = dict.fromkeys(e.possible_agents, 0.0)
    steps = 0
    for agent in e.agent_iter():
        _obs, reward, terminated, truncated, _info = e.last()
        rewards[agent] += reward
        if terminated or truncated:
            e.step(None)
            continue
        if e.unwrapped.substep == 0:  # a new decision: ask the bot once, then follow its answer
            answer[agent] = players[agent].decide(e.unwrapped.request())
        e.step(e.unwrapped.index_of(answer[agent]))
        steps += 1
    return {"result": e.unwrapped.result(), "rewards": rewards, "steps": steps}


def main() -> None:
    ap = argparse.ArgumentParser(description="Play the SDK's sample bots through bots_sdk.env")
    ap.add_argument("--ruleset", default="million_doubt", choices=["million_doubt", "trump_millionaire", "jdf"])
    ap.add_argument("--bots", default="heuristic,greedy,random", help="sample bot names, repeated over the seats")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--options", default="{}", help="engine options as JSON, e.g. '{\"target_score\": 30}'")
    args = ap.parse_args()
    out = play(args.ruleset, args.bots.split(","), args.seed, json.loads(args.options))
    print(f"{args.ruleset}: {out['steps']} steps, scores {out['result']['scores']}, rewards {out['rewards']}")


if __name__ == "__main__":
    main()
