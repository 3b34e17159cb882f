"""The PettingZoo AEC environment of one rule set (docs/env.md).

Agents are ``seat_0``.. ``seat_{n-1}`` (engine seats). An episode is one engine unit: a
Million Doubt game, a Trump Millionaire game of deals to ``target_score``, a JDF match.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from pettingzoo import AECEnv

import engine
from bots_sdk.env.candidates import MAX_ACTIONS, Turn
from bots_sdk.env.encoding import CANDIDATE_WIDTH, Observer, fill_candidates, layout, size
from bots_sdk.env.rulesets import env_ruleset
from bots_sdk.md import face_down_count
from bots_sdk.protocol import build_request
from engine.timebank import TimeRules


class IllegalActionError(ValueError):
    """``step`` got an index whose ``action_mask`` entry is 0 (or no index at all)."""


class DaifugoEnv(AECEnv[str, dict[str, np.ndarray], int]):  # type: ignore[misc]  # pettingzoo ships no types
    """AEC environment of ``ruleset`` (``million_doubt``, ``trump_millionaire``, ``jdf``).

    Args:
        ruleset: the rule-set id.
        options: engine options of the rule set (``engine.make_options``), e.g. local rules.
        seed: seed of the first :meth:`reset` without a seed.
        render_mode: None or ``"ansi"`` (the public table as text).

    Spaces: ``action_space(agent)`` is ``Discrete(MAX_ACTIONS)``; ``observation_space(agent)``
    is a ``Dict`` of ``observation`` (float32 vector, named parts in :attr:`layout`),
    ``action_mask`` (int8, 1 for the candidates of the current step) and ``actions`` (float32
    ``[MAX_ACTIONS, CANDIDATE_WIDTH]``, one row per candidate, columns
    :data:`bots_sdk.env.encoding.CANDIDATE_COLUMNS`).

    Rewards: when a unit of scoring ends every seat gets its score change: Million Doubt the
    game score (MD-17), Trump Millionaire the deal's points (TM-7), JDF the game's rank points
    plus the set bonus (JDF-13); their sum over an episode is ``result()["scores"]``.

    Raises:
        engine.OptionsError: unknown rule set or bad options.
    """

    metadata = {"render_modes": ["ansi"], "name": "daifugo_v0", "is_parallelizable": False}

    def __init__(
        self,
        ruleset: str,
        options: Mapping[str, Any] | None = None,
        seed: int | None = None,
        render_mode: str | None = None,
    ):
        super().__init__()
        self.ruleset = ruleset
        self.engine_options = engine.make_options(ruleset, options)
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        self.render_mode = render_mode
        seats = engine.get_ruleset(ruleset).seats
        self.seats = seats
        #: The running totals behind the rewards (None: the rule set scores once, at the end).
        self.running_totals = env_ruleset(ruleset).totals
        self.possible_agents = [f"seat_{s}" for s in range(seats)]
        self._seat = {a: s for s, a in enumerate(self.possible_agents)}
        #: Name -> slice of the ``observation`` vector.
        self.layout = layout(seats)
        n = size(seats)
        obs_space = gymnasium.spaces.Dict(
            {
                "observation": gymnasium.spaces.Box(-np.inf, np.inf, (n,), np.float32),
                "action_mask": gymnasium.spaces.Box(0, 1, (MAX_ACTIONS,), np.int8),
                "actions": gymnasium.spaces.Box(0.0, np.inf, (MAX_ACTIONS, CANDIDATE_WIDTH), np.float32),
            }
        )
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: gymnasium.spaces.Discrete(MAX_ACTIONS) for a in self.possible_agents}
        self._seed = seed
        self._rng: np.random.Generator | None = None
        self.game: engine.Game | None = None
        self.turn: Turn | None = None
        self._totals = [0] * seats
        self._obs: dict[int, dict[str, Any]] = {}
        self._obs_at = -1
        self._observer = Observer(seats)

    # -- spaces --------------------------------------------------------------------------------
    def observation_space(self, agent: str) -> gymnasium.spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Space[Any]:
        return self.action_spaces[agent]

    # -- episode -------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new unit. ``seed`` draws the deal (reproducible); ``options={"setup": {...}}``
        starts from a scenario setup (``engine.from_setup``: one deal / game) instead; other
        keys of ``options`` are ignored."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        elif self._rng is None:
            self._rng = np.random.default_rng(self._seed)
        setup = (options or {}).get("setup")
        if setup is not None:
            self.game = engine.from_setup(self.ruleset, self.engine_options, setup)
        else:
            self.game = engine.new_game(self.ruleset, self.engine_options, int(self._rng.integers(0, 2**31 - 1)))
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self._totals = [0] * self.seats
        self._obs_at = -1
        self._new_turn()

    def _new_turn(self) -> None:
        g = self.game
        assert g is not None
        d = g.decision()
        if d is None:
            self.turn = None
            return
        self.turn = Turn(g, d)
        self.agent_selection = self.possible_agents[d.seat]
        self._set_infos()

    def _set_infos(self) -> None:
        for a in self.agents:
            self.infos[a] = {}
        t = self.turn
        if t is not None:
            self.infos[self.possible_agents[t.seat]] = {"decision": t.kind, "phase": t.phase, "substep": t.substep}

    @property
    def substep(self) -> int:
        """Sub-steps already taken in the current engine decision (0 at its start)."""
        return 0 if self.turn is None else self.turn.substep

    # -- observation ---------------------------------------------------------------------------
    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """The seat's view (C-11): ``observation``, ``action_mask``, ``actions``; the mask and
        the candidate rows are zero when ``agent`` is not the one to act."""
        g = self.game
        assert g is not None, "reset() first"
        seat = self._seat[agent]
        t = self.turn if self.turn is not None and self.turn.seat == seat else None
        vec = self._observer.vector(g, seat, t)
        mask, rows = fill_candidates(t.cands() if t is not None else (), MAX_ACTIONS)
        return {"observation": vec, "action_mask": mask, "actions": rows}

    def _observation(self, seat: int) -> dict[str, Any]:
        """``Game.observation(seat)``, computed once per engine state."""
        g = self.game
        assert g is not None
        if self._obs_at != len(g.actions):
            self._obs_at = len(g.actions)
            self._obs.clear()
        obs = self._obs.get(seat)
        if obs is None:
            obs = self._obs[seat] = g.observation(seat)
        return obs

    def request(self, agent: str | None = None) -> dict[str, Any]:
        """The protocol v1 decision request (``bots_sdk.protocol.build_request``) of the seat to
        act: what the arena would send its bot now (the SDK's sample bots answer it)."""
        g = self.game
        assert g is not None and self.turn is not None, "no decision is pending"
        seat = self.turn.seat if agent is None else self.possible_agents.index(agent)
        rules = TimeRules()
        return build_request(g, seat, match_id="env", game=0, time_rules=rules, remaining_ms=rules.initial_ms)

    def index_of(self, action: Mapping[str, Any]) -> int:
        """The index to step now toward the ACT ``action`` of the seat to act (see
        :meth:`bots_sdk.env.candidates.Turn.index_of`); raises ValueError if it is not legal."""
        assert self.turn is not None, "no decision is pending"
        return self.turn.index_of(action)

    # -- step ----------------------------------------------------------------------------------
    def step(self, action: int | None) -> None:
        """Take candidate ``action`` of ``agent_selection``; ``None`` for a terminated agent.

        Raises:
            IllegalActionError: ``action`` is not an integer (None for a live agent), or its
                ``action_mask`` entry is 0 (the state is unchanged).
        """
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        t = self.turn
        g = self.game
        assert t is not None and g is not None
        cands = t.cands()
        if not isinstance(action, int | np.integer) or isinstance(action, bool) or not 0 <= int(action) < len(cands):
            raise IllegalActionError(
                f"{agent}: action {action!r} is not legal now ({t.kind}, {t.phase}): "
                f"the legal indices are 0..{len(cands) - 1} (action_mask)"
            )
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        typed = t.choose(int(action))
        if typed is None:
            self._set_infos()
        else:
            g.push(t.seat, typed)  # every candidate is legal: a refusal here is a bug (InvalidAction)
            self._score()
            if g.over:
                self.turn = None
                for a in self.agents:
                    self.terminations[a] = True
                self._set_infos()
            else:
                self._new_turn()
        self._accumulate_rewards()

    def _score(self) -> None:
        """Rewards: the change of each seat's total since the last step (MD: the game score)."""
        g = self.game
        assert g is not None
        res = g.result()
        if res is not None:
            now = [res["scores"][str(s)] for s in range(self.seats)]
        elif self.running_totals is not None:
            now = list(self.running_totals(g))  # TM-7 deal points, JDF-13 game points and set bonus
        else:
            now = [0] * self.seats  # Million Doubt scores once, at the end (MD-17)
        for s, a in enumerate(self.possible_agents):
            self.rewards[a] = float(now[s] - self._totals[s])
        self._totals = now

    def result(self) -> engine.Result | None:
        """The engine's result of the unit once it is over (``engine.Game.result``)."""
        return None if self.game is None else self.game.result()

    # -- render --------------------------------------------------------------------------------
    def render(self) -> str | None:
        """The public table (hand sizes, field, flags) and the hand of the seat to act."""
        if self.render_mode != "ansi" or self.game is None:
            return None
        g = self.game
        d = g.decision()
        if d is None or self.turn is None:
            return f"{self.ruleset}: over, result {g.result()}"
        obs = self._observation(d.seat)
        field = " | ".join(" ".join(p["cards"]) + _down(p) for p in obs["field"])
        return (
            f"{self.ruleset}: seat {d.seat} to {d.kind}; hand sizes {obs['hand_sizes']}; field [{field}]; "
            f"revolution {obs['revolution']}; hand {' '.join(obs['hand'])}"
        )

    def close(self) -> None:
        """Nothing to release."""

    def __str__(self) -> str:
        return f"daifugo_{self.ruleset}_v0"


def _down(play: Mapping[str, Any]) -> str:
    n = face_down_count(play)
    return f" ({n} face down)" if n else ""


__all__ = ["DaifugoEnv", "IllegalActionError"]
