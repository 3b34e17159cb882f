"""The environment plays the attacker's game: a seat's observation never depends on another
seat's hidden cards (C-11, MD-8): two deals differing only there look the same to it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from bots_sdk.env import raw_env  # noqa: E402


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), f"the observation part {k!r} differs"


def _pair(ruleset: str, setup_a: dict[str, Any], setup_b: dict[str, Any]):
    envs = [raw_env(ruleset), raw_env(ruleset)]
    envs[0].reset(options={"setup": setup_a})
    envs[1].reset(options={"setup": setup_b})
    return envs


def _check_all_steps_look_alike(envs, watcher: str) -> None:
    _same(envs[0].observe(watcher), envs[1].observe(watcher))
    if envs[0].agent_selection == watcher:
        assert envs[0].request(watcher)["observation"] == envs[1].request(watcher)["observation"]


def test_million_doubt_face_down_card_is_hidden() -> None:
    hand_0 = ["3S", "5H", "7D", "9C", "JS", "KH", "2D"]
    setup_a = {"hands": {"0": hand_0, "1": ["4S", "6H", "8D", "TC", "QS", "AH", "3H"]}, "leader": 0}
    setup_b = {"hands": {"0": hand_0, "1": ["4C", "6H", "8D", "TC", "QS", "AH", "3H"]}, "leader": 0}
    envs = _pair("million_doubt", setup_a, setup_b)
    _check_all_steps_look_alike(envs, "seat_0")
    for e in envs:
        e.step(e.index_of({"type": "play", "cards": ["3S"]}))
    _check_all_steps_look_alike(envs, "seat_0")
    # seat 1 composes a one-card face-down play of the card that differs (4S / 4C)
    acts = [{"type": "play", "cards": [c], "face_down": [c]} for c in ("4S", "4C")]
    while envs[0].agent_selection == "seat_1":
        for e, act in zip(envs, acts):
            e.step(e.index_of(act))
        _check_all_steps_look_alike(envs, "seat_0")  # seat 0 sees none of the sub-steps' cards
    assert envs[0].turn is not None and envs[0].turn.kind == "doubt"
    _check_all_steps_look_alike(envs, "seat_0")
    for e in envs:
        e.step(e.index_of({"type": "through"}))
    assert envs[0].agent_selection == "seat_0"
    _check_all_steps_look_alike(envs, "seat_0")


@pytest.mark.parametrize("ruleset", ["trump_millionaire", "jdf"])
def test_climbing_other_hands_and_set_aside_are_hidden(ruleset: str) -> None:
    deck = [r + s for r in "3456789TJQKA2" for s in "SHDC"]
    n = 10 if ruleset == "trump_millionaire" else 12  # hands need not be full: room for 2 aside
    hands = {str(s): deck[s * n : (s + 1) * n] for s in range(4)}
    aside = deck[4 * n : 4 * n + 2]
    other = {k: list(v) for k, v in hands.items()}
    other["1"][0], other["2"][0] = hands["2"][0], hands["1"][0]  # swap a card between seats 1 and 2
    other_aside = [hands["3"][1], aside[1]]
    other["3"][1] = aside[0]  # and one between seat 3 and the set-aside / blind cards
    envs = _pair(
        ruleset,
        {"hands": hands, "leader": 0, "set_aside": aside},
        {"hands": other, "leader": 0, "set_aside": other_aside},
    )
    for _ in range(3):  # seat 0 leads its first candidate, the others pass: the trick clears
        _check_all_steps_look_alike(envs, "seat_0")
        for e in envs:
            e.step(0)
        while envs[0].agent_selection != "seat_0":
            for e in envs:
                e.step(e.index_of({"type": "pass"}))
            _check_all_steps_look_alike(envs, "seat_0")
    _check_all_steps_look_alike(envs, "seat_0")
