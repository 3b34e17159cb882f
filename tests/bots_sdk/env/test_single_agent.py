"""The single-agent Gymnasium view (bots_sdk.env.single): the API sb3-contrib expects
(``action_masks()``, Gymnasium's reset/step), rewards that add up to the engine's score, the
learner's seat alternating, every kind of opponent (a sample bot, a bot object, a bot served
over the protocol and signed, an earlier policy, the uniform one); and examples/
train_maskable_ppo.py in a short form: MaskablePPO's learning moves the win rate."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

import gymnasium  # noqa: E402
import httpx  # noqa: E402

from bots_sdk.env import IllegalActionError  # noqa: E402
from bots_sdk.env.single import BotOpponent, HttpBot, PolicyOpponent, SingleAgentEnv, Uniform  # noqa: E402
from bots_sdk.samples import GreedyBot, HeuristicBot  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SMALL = {"million_doubt": None, "trump_millionaire": {"target_score": 20}, "jdf": {"sets": 1, "games_per_set": 2}}


def uniform_episode(env: SingleAgentEnv, rng: random.Random, seed: int | None = None) -> tuple[float, dict[str, Any]]:
    obs, info = env.reset(seed=seed)
    assert env.observation_space.contains(obs)
    total, done = 0.0, False
    while not done:
        mask = env.action_masks()
        assert mask.dtype == bool and mask.shape == (256,) and mask.any()
        legal = np.flatnonzero(mask)
        obs, reward, done, truncated, info = env.step(int(legal[int(rng.random() * len(legal))]))
        assert truncated is False and isinstance(reward, float)
        total += reward
    assert not env.action_masks().any()
    return total, info


@pytest.mark.parametrize("ruleset", ["million_doubt", "trump_millionaire", "jdf"])
def test_an_episode_gives_the_learner_its_engine_score_and_seats_alternate(ruleset: str) -> None:
    env = SingleAgentEnv(ruleset, ["greedy", "random"], options=SMALL[ruleset], seed=3)
    assert isinstance(env, gymnasium.Env) and env.action_space == gymnasium.spaces.Discrete(256)
    rng = random.Random(0)
    seats = []
    for _ in range(env.aec.seats + 1):
        total, info = uniform_episode(env, rng)
        assert total == info["result"]["scores"][str(info["seat"])]
        assert info["won"] == (info["result"]["ranks"][str(info["seat"])] == 1)
        seats.append(info["seat"])
    assert seats == [s % env.aec.seats for s in range(env.aec.seats + 1)]


def test_a_unit_over_before_the_learner_is_asked_is_dealt_again_and_reported() -> None:
    """MD: an opponent leading stairs with an 8 (an 8-cut: it leads again) then four cards can
    empty its hand before the learner's first decision: no step to take, another deal."""
    env = SingleAgentEnv("million_doubt", ["heuristic"], seat=0, seed=0)
    obs, info = env.reset(seed=17415)  # found by a scan: about one seed in 10,000
    assert env.action_masks().any() and env.aec.game is not None and not env.aec.game.over
    (result,) = info["unplayed"]
    assert result["winner"] == 1 and result["ranks"] == {"1": 1, "0": 2}
    assert env.reset(seed=17416)[1]["unplayed"] == []
    setup = {"hands": {"0": ["3S", "4S"], "1": ["6C", "7C", "8C", "JK"]}, "leader": 1}  # 8-cut, then the joker
    with pytest.raises(RuntimeError, match="ended before the learner was asked anything"):
        env.reset(options={"setup": setup})


def test_a_fixed_seat_and_the_vector_observation() -> None:
    env = SingleAgentEnv("million_doubt", ["heuristic"], seat=1, seed=5, observation="vector")
    assert isinstance(env.observation_space, gymnasium.spaces.Box)
    rng = random.Random(1)
    for _ in range(3):
        _, info = uniform_episode(env, rng)
        assert info["seat"] == 1


def test_an_illegal_index_is_refused_and_changes_nothing() -> None:
    env = SingleAgentEnv("jdf", ["greedy"], options=SMALL["jdf"], seed=1)
    obs, _ = env.reset()
    bad = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.raises(IllegalActionError):
        env.step(bad)
    assert np.array_equal(env.action_masks(), obs["actions"].any(axis=1))


class CountingBot(HeuristicBot):
    """A heuristic bot that counts its decisions (served over HTTP below)."""

    def __init__(self, seed: int):
        super().__init__(seed=seed)
        self.decided = 0

    def decide(self, request: Any) -> dict:
        self.decided += 1
        return super().decide(request)


def test_every_kind_of_opponent_plays(bot_server) -> None:
    bot = CountingBot(seed=2)
    served = bot_server(bot, "s3cret")  # a registered bot: it checks each request's signature
    earlier = PolicyOpponent(lambda obs, mask: int(np.flatnonzero(mask)[-1]))  # a stand-in for a past model
    env = SingleAgentEnv(
        "trump_millionaire",
        [GreedyBot(seed=1), BotOpponent(HttpBot(served.url, "s3cret")), earlier],
        options=SMALL["trump_millionaire"],
        seed=4,
    )
    total, info = uniform_episode(env, random.Random(2))
    assert total == info["result"]["scores"][str(info["seat"])]
    assert bot.decided > 0
    unsigned = SingleAgentEnv("million_doubt", [served.url], seat=0, seed=1)  # a URL alone: unsigned
    with pytest.raises(httpx.HTTPStatusError, match="401"):
        uniform_episode(unsigned, random.Random(3))
    with pytest.raises(ValueError, match="unknown opponent 'champion'"):
        SingleAgentEnv("jdf", ["champion"])


def test_the_uniform_policy_beats_the_random_sample_bot() -> None:
    """docs/env.md: the ``random`` sample bot is no uniform policy (it picks among the listed
    answers, bluffs and doubts at its own rates): a uniform choice among the candidates beats
    it in most Million Doubt games."""
    env = SingleAgentEnv("million_doubt", ["random"], seed=8)
    uniform = Uniform(seed=9)
    wins = 0
    for k in range(200):
        env.reset(seed=k)
        done, info = False, {}
        while not done:
            _, _, done, _, info = env.step(uniform.act(env.aec, env.agent))
        wins += info["won"]
    assert wins / 200 > 0.65


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("train_maskable_ppo", ROOT / "examples" / "train_maskable_ppo.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_maskable_ppo_learning_moves_the_win_rate() -> None:
    """The example in short: a few thousand steps against ``heuristic`` in Million Doubt, the
    deterministic win rate over 100 games before and after (one torch thread, seeded)."""
    pytest.importorskip("sb3_contrib")
    import torch

    torch.set_num_threads(1)
    example = _example()
    out = example.train("million_doubt", "heuristic", steps=4096, eval_games=100, seed=0)
    (before, n), (after, n2) = out["before"], out["after"]
    assert n == n2 == 100
    assert after > before, (before, after)
    lo, hi = example.wilson(after, n)
    assert lo < after / n < hi
    model = out["model"]
    assert model.num_timesteps >= 4096
