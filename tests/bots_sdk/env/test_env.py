"""The training environment (bots_sdk.env): PettingZoo's API test, seeding, illegal actions,
whole random games against the engine's result, every decision kind, long lists in pages."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, seed_test  # noqa: E402

import engine  # noqa: E402
from bots_sdk.env import MAX_ACTIONS, RULESETS, IllegalActionError, env, raw_env  # noqa: E402
from bots_sdk.env.encoding import CANDIDATE_COLUMNS  # noqa: E402

LOCAL = {k: True for k in ("eleven_back", "stairs_revolution", "number_lock", "five_skip", "seven_pass", "ten_discard")}
#: Small units: a whole episode in well under a second.
SMALL = {"million_doubt": {}, "trump_millionaire": {"target_score": 20}, "jdf": {"sets": 1, "games_per_set": 2}}


def random_episode(e: Any, seed: int) -> tuple[dict[str, float], set[str], int]:
    """Masked random actions to the end: (summed rewards, decision kinds seen, steps)."""
    rng = np.random.default_rng(seed)
    e.reset(seed=seed)
    total = dict.fromkeys(e.possible_agents, 0.0)
    kinds: set[str] = set()
    steps = 0
    for agent in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        total[agent] += reward
        if terminated or truncated:
            e.step(None)
            continue
        kinds.add(info["decision"])
        e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        steps += 1
    return total, kinds, steps


# api_test warns that a Dict observation is "not a NumPy array" and not a Box or Discrete:
# a documented choice (docs/env.md); PettingZoo exempts its own card games by name.
API_TEST_WARNINGS = [
    pytest.mark.filterwarnings("ignore:Observation is not a NumPy array:UserWarning"),
    pytest.mark.filterwarnings("ignore:Observation space:UserWarning"),
]


@pytest.mark.parametrize("ruleset", RULESETS)
@API_TEST_WARNINGS[0]
@API_TEST_WARNINGS[1]
def test_pettingzoo_api_test_passes(ruleset: str) -> None:
    api_test(env(ruleset, SMALL[ruleset], seed=1), num_cycles=200)


@pytest.mark.slow
@pytest.mark.parametrize("ruleset", RULESETS)
@API_TEST_WARNINGS[0]
@API_TEST_WARNINGS[1]
def test_pettingzoo_api_test_passes_full_units(ruleset: str) -> None:
    api_test(env(ruleset, seed=2), num_cycles=1000)


@pytest.mark.parametrize("ruleset", RULESETS)
def test_a_random_game_ends_with_the_engines_scores(ruleset: str) -> None:
    e = env(ruleset, SMALL[ruleset])
    total, _, steps = random_episode(e, seed=5)
    result = e.unwrapped.result()
    assert e.unwrapped.game.over and steps > 0 and e.agents == []
    assert total == {f"seat_{s}": float(v) for s, v in result["scores"].items()}
    assert engine.replay(e.unwrapped.game.log()).result() == result


@pytest.mark.parametrize(
    ("ruleset", "options", "kinds"),
    [
        ("million_doubt", {}, {"play", "doubt", "penalty"}),
        ("trump_millionaire", dict(LOCAL, target_score=40), {"play", "exchange", "rate", "give", "discard"}),
        ("jdf", dict(LOCAL, sets=1), {"play", "give", "discard"}),
    ],
)
def test_every_decision_kind_is_asked_and_answered(ruleset: str, options: dict[str, Any], kinds: set[str]) -> None:
    seen: set[str] = set()
    for seed in range(20):
        seen |= random_episode(raw_env(ruleset, options), seed)[1]
        if seen >= kinds:
            break
    assert seen == kinds


@pytest.mark.parametrize("ruleset", RULESETS)
def test_a_seeded_reset_is_reproducible(ruleset: str) -> None:
    a, b = raw_env(ruleset, SMALL[ruleset]), raw_env(ruleset, SMALL[ruleset])
    for e in (a, b):
        e.reset(seed=11)
    for _ in range(40):
        if not a.agents:
            break
        assert a.agent_selection == b.agent_selection
        oa, ob = a.observe(a.agent_selection), b.observe(b.agent_selection)
        for k in oa:
            assert np.array_equal(oa[k], ob[k])
        legal = np.flatnonzero(oa["action_mask"])
        i = None if a.terminations[a.agent_selection] else int(legal[-1])
        a.step(i)
        b.step(i)
    a.reset(seed=11)
    b.reset(seed=12)
    assert a.game is not None and b.game is not None
    assert a.game.hands != b.game.hands


@pytest.mark.parametrize("ruleset", RULESETS)
def test_pettingzoo_seed_test_passes(ruleset: str) -> None:
    seed_test(lambda: env(ruleset, SMALL[ruleset]), num_cycles=100)


def test_an_illegal_index_is_refused_with_a_clear_error_and_changes_nothing() -> None:
    e = raw_env("million_doubt")
    e.reset(seed=3)
    agent = e.agent_selection
    before = e.observe(agent)
    bad = int(np.flatnonzero(before["action_mask"] == 0)[0])
    with pytest.raises(IllegalActionError, match=rf"{agent}: action {bad} is not legal now \(play, start\)"):
        e.step(bad)
    for wrong in (None, 0.0, True, MAX_ACTIONS):
        with pytest.raises(IllegalActionError, match="is not legal now"):
            e.step(wrong)  # type: ignore[arg-type]
    after = e.observe(agent)
    assert e.agent_selection == agent
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_a_candidate_row_describes_its_action() -> None:
    e = raw_env("jdf")
    e.reset(seed=4)
    obs = e.observe(e.agent_selection)
    assert e.turn is not None
    for i, cand in enumerate(e.turn.candidates()):
        row = obs["actions"][i]
        assert cand.action is not None and cand.action["type"] == "play"
        bits = np.flatnonzero(row[CANDIDATE_COLUMNS["cards"]])
        assert len(bits) == len(cand.cards)
        assert row[CANDIDATE_COLUMNS["kind"]].argmax() == 0  # "play"


def test_a_list_longer_than_the_action_space_is_paged() -> None:
    """13 spades and both jokers on a lead: 1,878 plays (the worst hand), in 8 pages."""
    spades = [r + "S" for r in "3456789TJQKA2"]
    setup = {"hands": {"0": spades + ["JK", "JK"], "1": ["3H"], "2": ["4H"], "3": ["5H"]}, "leader": 0}
    e = raw_env("jdf")
    e.reset(options={"setup": setup})
    assert e.turn is not None
    listed = list(e.game.legal_actions(0))
    assert len(listed) > MAX_ACTIONS
    target = listed[-1]
    pages = 0
    while e.agent_selection == "seat_0" and e.turn.substep == pages:
        cands = e.turn.candidates()
        assert len(cands) <= MAX_ACTIONS
        i = e.index_of(target)
        if cands[i].kind == "more":
            pages += 1
        e.step(i)
    assert pages == (len(listed) - 1) // (MAX_ACTIONS - 1)
    assert e.game.field[-1].cards == engine.parse_cards(target["cards"])


def test_without_the_extra_the_import_error_says_what_to_install() -> None:
    code = (
        "import sys\nsys.modules['pettingzoo'] = None\n"
        "try:\n    import bots_sdk.env\nexcept ImportError as e:\n    print(e)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == (
        "bots_sdk.env needs the 'env' extra (pettingzoo is missing): pip install 'daifugo-arena[env]'"
    )
