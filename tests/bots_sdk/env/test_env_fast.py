"""The environment's fast encoders give, at every step of random episodes and for every seat,
exactly the arrays the reference encoders build from ``Game.observation(seat)`` (the
protocol's view, C-11) and from the wire candidates: the fast path reads the engine state and
keeps the cards seen played from the new events, so any leak or drift would show here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

import engine  # noqa: E402
from bots_sdk.env import MAX_ACTIONS, raw_env  # noqa: E402
from bots_sdk.env.encoding import candidate_rows, observation_vector  # noqa: E402
from bots_sdk.env.rulesets import ENV_RULESETS, env_ruleset  # noqa: E402

LOCAL = {k: True for k in ("eleven_back", "stairs_revolution", "number_lock", "five_skip", "seven_pass", "ten_discard")}


@pytest.mark.parametrize(
    ("ruleset", "options", "episodes"),
    [
        ("million_doubt", {}, 30),
        ("trump_millionaire", {"target_score": 30}, 4),
        ("trump_millionaire", dict(LOCAL, target_score=30), 4),
        ("jdf", {"sets": 1}, 1),
        ("jdf", dict(LOCAL, sets=1), 1),
    ],
    ids=["md", "tm", "tm-lr", "jdf", "jdf-lr"],
)
def test_fast_arrays_equal_the_reference_at_every_step_c11(ruleset: str, options: dict[str, Any], episodes: int):
    steps = 0
    for episode in range(episodes):
        e = raw_env(ruleset, options)
        e.reset(seed=episode)
        rng = np.random.default_rng(episode)
        while e.agents:
            agent = e.agent_selection
            if e.terminations[agent]:
                e.step(None)
                continue
            g, t = e.game, e.turn
            for seat, other in enumerate(e.possible_agents):
                fast = e.observe(other)
                mine = t if t is not None and t.seat == seat else None
                ref_vec = observation_vector(g.observation(seat), mine)
                ref_mask, ref_rows = candidate_rows(mine.candidates() if mine is not None else [], MAX_ACTIONS)
                assert np.array_equal(fast["observation"], ref_vec), (
                    steps,
                    seat,
                    np.flatnonzero(fast["observation"] != ref_vec),
                )
                assert np.array_equal(fast["action_mask"], ref_mask), (steps, seat)
                assert np.array_equal(fast["actions"], ref_rows), (steps, seat)
            mask = e.observe(agent)["action_mask"]
            e.step(int(rng.choice(np.flatnonzero(mask))))
            steps += 1
    assert steps > 200


def test_every_rule_set_has_its_environment_facts():
    """bots_sdk.env.rulesets: one EnvRuleSet per id of engine.RULESETS (the encoder and the
    rewards read it, never the rule set's id); running totals only where a unit is scored
    before the episode ends (TM deals, JDF games)."""
    assert tuple(ENV_RULESETS) == tuple(engine.RULESETS)
    for name, rs in ENV_RULESETS.items():
        assert env_ruleset(name) is rs and rs.name == name
        assert (rs.totals is not None) == (engine.RULESETS[name].scoring_unit is not None)
    with pytest.raises(engine.OptionsError):
        env_ruleset("chess")
