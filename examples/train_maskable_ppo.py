"""Train sb3-contrib's MaskablePPO in one seat against a sample bot (docs/env.md, "Training").

    python examples/train_maskable_ppo.py --ruleset million_doubt --opponent heuristic --steps 60000

Needs the ``train`` extra (torch, sb3-contrib: install torch's CPU build first, docs/env.md) and
is much faster on the compiled engine (``ARENA_ENGINE_BUILD=compiled``). The learner plays
through :class:`bots_sdk.env.single.SingleAgentEnv` (its seat alternating, the other seats
played by the opponent); the policy scores each candidate of the table from the state and the
candidate's row (:class:`CandidateScorer`), and those scores are the action logits
(:class:`CandidatePolicy`), masked by ``action_masks()``. Before and after training, the win rate
of the learner (deterministic) over ``--eval-games`` episodes on fixed seeds is printed with
its 95% interval (Wilson)::

    <ruleset> vs <opponent>: before B (95% CI L-H), after A (95% CI L-H) over N games; S steps in T CPU-s

(docs/env.md gives a run's figures.)

One process, one torch thread (``--threads``); ``--seed`` makes a run reproducible.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import gymnasium
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from bots_sdk.env.single import SingleAgentEnv


class CandidateScorer(BaseFeaturesExtractor):
    """Features of ``{"observation": state, "actions": candidate table}``: one score per
    candidate row, ``score(h(state) + g(row))`` (the same weights for every row: a candidate's
    score does not depend on its index), then the state's own features ``h(state)``.

    ``features_dim`` = rows + ``hidden``; :class:`CandidatePolicy` takes the first ``rows`` as
    the action logits."""

    def __init__(self, observation_space: gymnasium.spaces.Dict, hidden: int = 64):
        n_state = observation_space["observation"].shape[0]
        rows, width = observation_space["actions"].shape
        super().__init__(observation_space, features_dim=rows + hidden)
        self.rows = rows
        self.state = nn.Sequential(nn.Linear(n_state, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.candidate = nn.Linear(width, hidden)
        self.score = nn.Sequential(nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        s = self.state(obs["observation"])  # (batch, hidden)
        c = self.candidate(obs["actions"])  # (batch, rows, hidden)
        scores = self.score(c + s.unsqueeze(1)).squeeze(-1)  # (batch, rows)
        return torch.cat([scores, torch.relu(s)], dim=1)


class _First(nn.Module):
    """The first ``n`` features, unchanged: the candidates' scores as logits."""

    def __init__(self, n: int):
        super().__init__()
        self.n = n

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, : self.n]


class CandidatePolicy(MaskableMultiInputActorCriticPolicy):
    """sb3-contrib's masked actor-critic whose action logits are :class:`CandidateScorer`'s
    scores (``net_arch=dict(pi=[], vf=[...])``: the policy head adds nothing); the value head
    reads every feature."""

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = _First(int(self.action_space.n))
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)


def make_model(env: SingleAgentEnv, seed: int, n_steps: int = 512) -> MaskablePPO:
    return MaskablePPO(
        CandidatePolicy,
        env,
        n_steps=n_steps,
        batch_size=128,
        n_epochs=4,
        learning_rate=3e-4,
        gamma=0.99,
        ent_coef=0.01,
        policy_kwargs={"features_extractor_class": CandidateScorer, "net_arch": {"pi": [], "vf": [64]}},
        seed=seed,
        verbose=0,
    )


def wilson(wins: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a win rate of ``wins`` out of ``n``."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def win_rate(model: MaskablePPO, env: SingleAgentEnv, games: int, seed: int) -> tuple[int, int]:
    """``(wins, games)`` of the model's deterministic policy over ``games`` episodes on the seeds
    ``seed``, ``seed + 1``... (the learner's seat alternating)."""
    wins = played = 0
    while played < games:
        obs, info = env.reset(seed=seed + played)
        for result in info["unplayed"][: games - played]:  # units over before the learner was asked: counted
            wins += result["ranks"][str(env.seat)] == 1
            played += 1
        if played >= games:
            break
        done = False
        while not done:
            action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
            obs, _reward, done, _trunc, info = env.step(int(action))
        wins += bool(info["won"])
        played += 1
    return wins, played


def train(
    ruleset: str, opponent: str, steps: int, eval_games: int, seed: int, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Train, and measure the win rate before and after: ``{"before": (wins, games), "after":
    (wins, games), "cpu_s": ..., "model": ...}``."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    env = SingleAgentEnv(ruleset, [opponent], options=options, seed=seed)
    eval_env = SingleAgentEnv(ruleset, [opponent], options=options, seed=10**6 + seed)
    model = make_model(env, seed)
    start = time.process_time()
    before = win_rate(model, eval_env, eval_games, 10**6)
    model.learn(total_timesteps=steps)
    after = win_rate(model, eval_env, eval_games, 10**6)
    return {"before": before, "after": after, "cpu_s": time.process_time() - start, "model": model}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ruleset", default="million_doubt", choices=["million_doubt", "trump_millionaire", "jdf"])
    ap.add_argument("--opponent", default="heuristic", help="a sample bot name, uniform, or a bot's URL")
    ap.add_argument("--steps", type=int, default=60_000, help="the learner's steps of training")
    ap.add_argument("--eval-games", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out = train(args.ruleset, args.opponent, args.steps, args.eval_games, args.seed)
    parts = []
    for name in ("before", "after"):
        wins, games = out[name]
        lo, hi = wilson(wins, games)
        parts.append(f"{name} {wins / games:.2f} (95% CI {lo:.2f}-{hi:.2f})")
    print(
        f"{args.ruleset} vs {args.opponent}: {', '.join(parts)} over {args.eval_games} games; "
        f"{args.steps} steps in {out['cpu_s']:.0f} CPU-s",
        flush=True,
    )


if __name__ == "__main__":
    main()
