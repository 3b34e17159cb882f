"""The rule-set registry (engine.RULESETS), the typed options and the result shape."""

from __future__ import annotations

import json

import pytest

import engine
from engine.selfplay import random_game


def test_registry_lists_the_rule_sets_in_rules_order_with_their_classes():
    assert list(engine.RULESETS) == ["million_doubt", "trump_millionaire", "jdf"]
    assert "jdf" in engine.RULESETS and len(engine.RULESETS) == 3
    md, tm, jdf = (engine.RULESETS[n] for n in engine.RULESETS)
    assert (md.seats, tm.seats, jdf.seats) == (2, 4, 4) == tuple(engine.SEATS.values())
    assert md.option_class is engine.MillionDoubtOptions and md.game_class.__name__ == "MillionDoubt"
    assert issubclass(tm.option_class, engine.LocalRuleOptions) and tm.local_rules and not md.local_rules
    assert md.games_per_match_option and md.duplicate_pairs and not jdf.games_per_match_option
    assert not md.lists_every_play and tm.lists_every_play
    assert md.face_down_rule() and jdf.face_down_rule() is None
    assert isinstance(jdf.options({"sets": 1}), engine.JdfOptions)
    with pytest.raises(engine.OptionsError, match="unknown rule set"):
        engine.get_ruleset("daifugo")


@pytest.mark.parametrize("name", list(engine.RULESETS))
def test_new_game_builds_the_registered_class_and_results_use_string_seat_keys(name):
    rs = engine.RULESETS[name]
    small = {"trump_millionaire": {"target_score": 10}, "jdf": {"sets": 1, "games_per_set": 2}}
    g = engine.new_game(name, small.get(name), seed=3)
    assert type(g) is rs.game_class and type(g.options) is rs.option_class
    random_game(g, __import__("random").Random(3))
    r = g.result()
    assert r is not None
    assert json.loads(json.dumps(r)) == r  # the wire's shape before JSON already
    assert set(r) >= {"winner", "scores", "ranks"}
    assert sorted(r["scores"]) == sorted(r["ranks"]) == [str(s) for s in range(rs.seats)]
    assert r["ranks"][str(r["winner"])] == 1
    u = g.unit_result()
    assert u is not None and json.loads(json.dumps(u)) == u
