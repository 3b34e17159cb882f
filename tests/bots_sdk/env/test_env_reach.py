"""Every engine action is reachable: whatever legal answer the engine's random player picks
(Million Doubt bluffs, penalties, gives, discards included), ``index_of`` steps the
environment to exactly that action in the engine's log."""

from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("pettingzoo")

from bots_sdk.env import raw_env  # noqa: E402
from bots_sdk.env.candidates import action_key  # noqa: E402
from engine.selfplay import random_action  # noqa: E402

LOCAL = {k: True for k in ("eleven_back", "stairs_revolution", "number_lock", "five_skip", "seven_pass", "ten_discard")}


@pytest.mark.parametrize(
    ("ruleset", "options", "games"),
    [
        ("million_doubt", {}, 40),
        ("trump_millionaire", dict(LOCAL, target_score=20), 2),
        ("jdf", dict(LOCAL, sets=1, games_per_set=2), 1),
    ],
)
def test_every_random_engine_action_is_reached_through_the_candidates(
    ruleset: str, options: dict[str, Any], games: int
) -> None:
    kinds: set[str] = set()
    for seed in range(games):
        e = raw_env(ruleset, options)
        e.reset(seed=seed)
        rng = random.Random(seed)
        g = e.game
        assert g is not None
        while not g.over:
            seat, act = random_action(g, rng, bluff_rate=0.5)
            kinds.add(act["type"] + ("_face_down" if act.get("face_down") else ""))
            logged = len(g.actions)
            while len(g.actions) == logged:
                assert e.agent_selection == f"seat_{seat}"
                e.step(e.index_of(act))
            assert action_key(g.actions[-1]["action"]) == action_key(act)
    want = {
        "million_doubt": {"play", "play_face_down", "pass", "doubt", "through", "penalty"},
        "trump_millionaire": {"play", "pass", "exchange", "rate", "give", "discard"},
        "jdf": {"play", "pass", "give", "discard"},
    }[ruleset]
    assert kinds == want
