"""arena.live: the public view never carries a hand or an unrevealed face-down card; a
dead Redis never fails a match."""

from __future__ import annotations

import json

from arena import live
from arena.runner.match import run_match
from arena.runner.players import LocalPlayer
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules


def _views(ruleset: str, n: int, **kw):
    out = []

    def on_step(gi, g, ex):
        out.append((live.public_view(g, 0), live.full_view(g, 0), [list(h) for h in g.hands]))

    players = [LocalPlayer(SAMPLE_BOTS["random"](seed=i), f"p{i}") for i in range(n)]
    run_match(
        players,
        ruleset,
        kw.pop("options", {}),
        seed=3,
        time_rules=TimeRules(60000, 10000, 60000),
        max_faults=3,
        on_step=on_step,
        **kw,
    )
    return out


def test_public_view_hides_hands_and_face_down_cards():
    views = _views("million_doubt", 2, games=4)
    hidden_seen = 0
    for public, full, _hands in views:
        text = json.dumps(public)
        assert "hands" not in public and '"hand"' not in text
        for pp, fp in zip(public["field"], full["field"]):
            if fp.get("face_down") and not fp.get("revealed"):
                hidden_seen += 1
                assert pp["face_down"] == len(fp["face_down"])  # a count, never the cards
                for c in fp["face_down"]:
                    if c != "JK":
                        assert pp["cards"].count(c) < fp["cards"].count(c)
        for e in public["events"]:
            assert e.get("type") != "hand"
            if e.get("type") == "play" and isinstance(e.get("face_down"), list):
                raise AssertionError("a face-down play's cards reached the public view")
    assert hidden_seen > 0, "the random bots must have played face-down cards"
    # the full view has the hands
    assert all(len(full["hands"]) == 2 for _p, full, _h in views)


def test_four_player_public_view_has_no_hand_or_exchange_cards():
    for public, _full, _hands in _views("trump_millionaire", 4, options={"target_score": 10}):
        assert "hands" not in public and '"hand":' not in json.dumps(public)
        for e in public["events"]:
            assert e.get("type") not in ("hand",)
            if e.get("type") == "exchange":
                assert "hand" not in e  # the Millionaire's new hand is private (TM-3)


def test_a_dead_redis_never_fails_the_match():
    pub = live.LivePublisher("redis://127.0.0.1:1/0", "m1")
    players = [LocalPlayer(SAMPLE_BOTS["random"](seed=i), f"p{i}") for i in range(2)]
    log = run_match(
        players,
        "million_doubt",
        {},
        seed=1,
        games=2,
        time_rules=TimeRules(60000, 10000, 60000),
        max_faults=3,
        on_step=pub.step,
    )
    pub.end()
    assert log["result"] is not None and pub._redis is None
