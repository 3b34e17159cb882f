"""A single-agent Gymnasium view of a table: the learner in one seat, the other seats played by
opponents (docs/env.md, "One learner: Gymnasium").

>>> from bots_sdk.env.single import SingleAgentEnv
>>> env = SingleAgentEnv("million_doubt", opponents=["greedy"], seed=0)
>>> obs, info = env.reset()
>>> mask = env.action_masks()                 # what sb3-contrib's MaskablePPO asks for
>>> obs, reward, terminated, truncated, info = env.step(int(mask.argmax()))

Opponents, one per other seat (a shorter list is repeated): a sample bot name (``random``,
``greedy``, ``heuristic``, ``search``), a :class:`bots_sdk.Bot`, an ``http://`` URL of a bot
served over the protocol (a registered bot: :class:`HttpBot`, signed with its secret), a
policy (:class:`PolicyOpponent`: a function of the seat's observation and mask, e.g. an earlier
copy of the learner) or :class:`Uniform` (a uniform choice among the candidates). The learner's
seat alternates over the seats, one episode each (``seat=`` fixes it).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import gymnasium
import httpx
import numpy as np

from bots_sdk import protocol
from bots_sdk.bot import Bot
from bots_sdk.env.aec import DaifugoEnv
from bots_sdk.env.candidates import MAX_ACTIONS
from bots_sdk.env.encoding import CANDIDATE_WIDTH, size
from bots_sdk.samples import SAMPLE_BOTS

#: Units played out in a row without the learner's decision before :meth:`SingleAgentEnv.reset` gives up.
MAX_UNPLAYED = 100
#: ``policy(observation, action_mask) -> index``: observation as the learner sees it.
Policy = Callable[[dict[str, np.ndarray], np.ndarray], int]


class Opponent(Protocol):
    """A player of one seat of the table: picks the index to step for ``agent`` now."""

    def act(self, env: DaifugoEnv, agent: str) -> int: ...


class BotOpponent:
    """A bot that answers protocol requests (``Bot.decide``); its answer is followed sub-step by
    sub-step (``DaifugoEnv.index_of``)."""

    def __init__(self, bot: Any):
        self.bot = bot
        self._answer: dict[str, Any] | None = None

    def act(self, env: DaifugoEnv, agent: str) -> int:
        if env.substep == 0 or self._answer is None:  # a new decision: ask once
            self._answer = self.bot.decide(env.request(agent))
        return env.index_of(self._answer)


class HttpBot:
    """A bot served over the protocol (docs/protocol.md) at ``url``: each request is posted,
    signed with ``secret`` (its ``ARENA_BOT_SECRET``; None: unsigned, for a local bot that does
    not check), the answer is the action. A :class:`BotOpponent` plays it."""

    def __init__(self, url: str, secret: str | None = None, timeout_s: float = 30.0):
        self.url = url
        self.secret = secret
        self.client = httpx.Client(timeout=timeout_s)

    def decide(self, request: Mapping[str, Any]) -> dict[str, Any]:
        body = protocol.dumps(dict(request))
        answer = self.client.post(self.url, content=body, headers=protocol.sign(self.secret, body))
        answer.raise_for_status()
        action: dict[str, Any] = answer.json()
        return action


class PolicyOpponent:
    """A policy over the environment's arrays (``policy(observation, action_mask) -> index``),
    e.g. an earlier copy of the learner: ``PolicyOpponent(lambda o, m: int(model.predict(o,
    action_masks=m, deterministic=True)[0]))``. It sees its seat's observation, in the
    learner's format."""

    def __init__(self, policy: Policy, view: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] | None = None):
        self.policy = policy
        self.view = view

    def act(self, env: DaifugoEnv, agent: str) -> int:
        obs = env.observe(agent)
        mask = obs["action_mask"].astype(bool)
        return int(self.policy(self.view(obs) if self.view else obs, mask))


class Uniform:
    """A uniform choice among the candidates of each step (what a masked random policy does:
    not the ``random`` sample bot, which chooses among the protocol's listed answers, bluffs
    and doubts at its own rates; docs/env.md)."""

    def __init__(self, seed: int | None = None):
        self.rng = random.Random(seed)

    def act(self, env: DaifugoEnv, agent: str) -> int:
        legal = np.flatnonzero(env.observe(agent)["action_mask"])
        return int(legal[int(self.rng.random() * len(legal))])


def opponent(spec: Any, seed: int | None = None) -> Opponent:
    """An :class:`Opponent` from a sample bot name, ``"uniform"``, an ``http://`` or ``https://``
    URL (:class:`HttpBot`, unsigned: build one with its secret for a registered bot), a bot
    (anything with ``decide``) or an opponent (anything with ``act``).

    Raises:
        ValueError: an unknown name.
    """
    if isinstance(spec, str):
        if spec.startswith(("http://", "https://")):
            return BotOpponent(HttpBot(spec))
        if spec == "uniform":
            return Uniform(seed)
        if spec not in SAMPLE_BOTS:
            raise ValueError(f"unknown opponent {spec!r}: a sample bot ({', '.join(SAMPLE_BOTS)}), uniform or a URL")
        return BotOpponent(SAMPLE_BOTS[spec](seed=seed))
    if hasattr(spec, "act"):
        given: Opponent = spec
        return given
    if isinstance(spec, Bot) or hasattr(spec, "decide"):
        return BotOpponent(spec)
    raise ValueError(f"an opponent is a name, a URL, a bot or an Opponent, not {spec!r}")


class SingleAgentEnv(gymnasium.Env):
    """One learner seat of a ``ruleset`` table as a Gymnasium environment.

    Args:
        ruleset: the rule-set id.
        opponents: one per other seat, repeated when shorter (see the module docstring).
        options: engine options (``engine.make_options``).
        seat: the learner's seat, or None to alternate (episode k: seat k mod seats).
        seed: seeds the deals and the opponents.
        observation: ``"dict"`` (``observation`` and the candidate table ``actions``, uint8:
            for a features extractor that scores candidates, docs/env.md) or ``"vector"``
            (the observation vector alone: a stock ``MlpPolicy``).

    Spaces: ``action_space`` is ``Discrete(256)``, an index into the candidates (docs/env.md,
    "Actions"); :meth:`action_masks` marks the legal ones (sb3-contrib's ``MaskablePPO`` calls
    it). An episode is one engine unit (a Million Doubt game, a Trump Millionaire game, a JDF
    match), opponents' turns played in between; the reward is the learner's score change
    (docs/env.md, "Rewards"); ``info["result"]`` is the engine's result at the end, with
    ``info["won"]`` (the learner's seat won the game, or took place 1: ties share it).
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        ruleset: str,
        opponents: Sequence[Any] = ("random",),
        *,
        options: Mapping[str, Any] | None = None,
        seat: int | None = None,
        seed: int | None = None,
        observation: str = "dict",
    ):
        super().__init__()
        if observation not in ("dict", "vector"):
            raise ValueError(f"observation must be 'dict' or 'vector', not {observation!r}")
        self.aec = DaifugoEnv(ruleset, options, seed)
        seats = self.aec.seats
        if not opponents:
            raise ValueError("opponents: at least one")
        self.opponents = [
            opponent(opponents[i % len(opponents)], None if seed is None else seed + i) for i in range(seats - 1)
        ]
        if seat is not None and not 0 <= seat < seats:
            raise ValueError(f"seat must be 0..{seats - 1}")
        self.fixed_seat = seat
        self.observation_kind = observation
        vector = gymnasium.spaces.Box(-np.inf, np.inf, (size(seats),), np.float32)
        if observation == "vector":
            self.observation_space = vector
        else:
            table = gymnasium.spaces.Box(0, 255, (MAX_ACTIONS, CANDIDATE_WIDTH), np.uint8)
            self.observation_space = gymnasium.spaces.Dict({"observation": vector, "actions": table})
        self.action_space = gymnasium.spaces.Discrete(MAX_ACTIONS)
        self._seed = seed
        self.episodes = 0
        self.seat = 0
        self.agent = ""
        self._by_agent: dict[str, Opponent] = {}
        self._obs: dict[str, np.ndarray] = {}

    # -- the Gymnasium API -------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """A new unit, the learner in its seat; the opponents play up to its first decision.

        A unit that ends before the learner is asked anything (a Million Doubt opponent may
        empty its hand in two leads) has no step: it is played out and another is dealt (the
        next seed); ``info["unplayed"]`` lists the results of such units, for win rates."""
        super().reset(seed=seed)
        if seed is None and self._seed is not None and self.episodes == 0:
            seed = self._seed
        seats = self.aec.seats
        self.seat = self.fixed_seat if self.fixed_seat is not None else self.episodes % seats
        self.episodes += 1
        self.agent = self.aec.possible_agents[self.seat]
        others = [a for a in self.aec.possible_agents if a != self.agent]
        self._by_agent = dict(zip(others, self.opponents))
        unplayed = []
        fixed = bool(options and options.get("setup"))  # a setup deals the same unit again
        for attempt in range(1 if fixed else MAX_UNPLAYED + 1):
            self.aec.reset(seed=None if seed is None else seed + attempt, options=options)
            reward = self._play_opponents()
            if self.aec.agents:
                break
            unplayed.append(self.aec.result())
        else:
            raise RuntimeError(f"{len(unplayed)} unit(s) in a row ended before the learner was asked anything")
        obs = self._observe()
        info = self._info(reward)
        info["unplayed"] = unplayed
        return obs, info

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """The learner's candidate ``action``, then the opponents up to its next decision (or
        the end of the unit).

        Raises:
            bots_sdk.env.IllegalActionError: ``action`` is not a legal index now.
        """
        self.aec.step(int(action))
        reward = self.aec.rewards[self.agent]
        reward += self._play_opponents()
        terminated = not self.aec.agents or self.aec.terminations[self.agent]
        obs = self._observe() if not terminated else self._empty()
        return obs, float(reward), bool(terminated), False, self._info(reward, terminated)

    def action_masks(self) -> np.ndarray:
        """The legal indices of the learner's step now (bool, ``[256]``)."""
        return self._obs["action_mask"].astype(bool) if self._obs else np.zeros(MAX_ACTIONS, dtype=bool)

    # -- inside ------------------------------------------------------------------------------
    def _play_opponents(self) -> float:
        """Step the opponents until the learner is asked or the unit is over; the learner's
        rewards on the way (a deal or game that ends on an opponent's action)."""
        aec = self.aec
        total = 0.0
        while aec.agents and aec.agent_selection != self.agent:
            agent = aec.agent_selection
            if aec.terminations[agent]:
                aec.step(None)
            else:
                aec.step(self._by_agent[agent].act(aec, agent))
            total += aec.rewards.get(self.agent, 0.0)
        if aec.agents and aec.terminations[self.agent]:  # over: everyone terminated together
            for _ in list(aec.agents):
                if not aec.agents:
                    break
                aec.step(None)
        return total

    def _observe(self) -> Any:
        self._obs = self.aec.observe(self.agent)
        if self.observation_kind == "vector":
            return self._obs["observation"]
        return {"observation": self._obs["observation"], "actions": self._obs["actions"].astype(np.uint8)}

    def _empty(self) -> Any:
        """The observation after the end (every array zero: nothing is asked)."""
        self._obs = {}
        vector = np.zeros(size(self.aec.seats), np.float32)
        if self.observation_kind == "vector":
            return vector
        return {"observation": vector, "actions": np.zeros((MAX_ACTIONS, CANDIDATE_WIDTH), np.uint8)}

    def _info(self, reward: float, over: bool = False) -> dict[str, Any]:
        info: dict[str, Any] = {"seat": self.seat}
        result = self.aec.result()
        if over and result is not None:
            info["result"] = result
            info["won"] = result["ranks"][str(self.seat)] == 1
        return info
