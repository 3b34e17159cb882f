"""Million Doubt flow and bad input (MD-*, C-11, C-12)."""

import json

import pytest

import engine
from engine import InvalidAction


def md(hands, leader=0, **options):
    return engine.from_setup("million_doubt", options, {"hands": hands, "leader": leader})


def snapshot(g):
    return json.dumps([g.observation(s) for s in range(g.seats)], sort_keys=True) + repr(
        (g.hands, g.decision(), g.field_size())
    )


BAD_ACTIONS = [
    ({}, "ACT", "missing field 'type'"),
    ({"type": "fold"}, "ACT", "unknown action type"),
    ({"type": "play"}, "ACT", "missing field 'cards'"),
    ({"type": "play", "cards": "5H"}, "ACT", "must be a list"),
    ({"type": "play", "cards": ["5X"]}, "C-1", "'5X'"),
    ({"type": "play", "cards": ["AS"]}, "C-12", "does not hold AS"),
    ({"type": "play", "cards": ["5H"], "face_down": ["6H"]}, "MD-2", "sub-multiset"),
    ({"type": "doubt"}, "C-12", "does not answer a 'play' decision"),
    ({"type": "pass"}, "C-6", "leader may not pass"),
    ({"type": "play", "cards": ["5H", "6H"]}, "C-3", "not a legal form"),
    ({"type": "play", "cards": ["5H", "JK"], "jokers": ["6"]}, "C-4", "not a legal form"),
    ({"type": "play", "cards": ["5H", "JK"], "jokers": ["5", "5"]}, "C-4", "declares 2"),
]


@pytest.mark.parametrize("action,rule,text", BAD_ACTIONS)
def test_malformed_or_illegal_action_is_refused_and_changes_nothing(action, rule, text):
    g = md({"0": ["5H", "6H", "JK"], "1": ["9S", "KD"]})
    before = snapshot(g)
    with pytest.raises(InvalidAction) as e:
        g.apply(0, action)
    assert e.value.rule == rule
    assert text in str(e.value) and f"[{rule}]" in str(e.value)
    assert snapshot(g) == before
    assert g.actions == []


def test_wrong_seat_is_refused():
    g = md({"0": ["5H"], "1": ["9S"]})
    with pytest.raises(InvalidAction, match="seat 1 is not asked"):
        g.apply(1, {"type": "play", "cards": ["9S"]})
    with pytest.raises(InvalidAction, match="no seat 7"):
        g.apply(7, {"type": "play", "cards": ["9S"]})


def test_random_deal_is_reproducible_from_the_seed_md1():
    a, b, c = (engine.new_game("million_doubt", seed=s) for s in (5, 5, 6))
    assert a.hands == b.hands and a.decision() == b.decision()
    assert a.hands != c.hands
    assert [len(h) for h in a.hands] == [7, 7] and len(a.outside) == 40


def test_observation_hides_the_other_hand_and_face_down_identity_c11():
    g = md({"0": ["5H", "6H", "9C"], "1": ["9S", "KD", "3C"]})
    g.apply(0, {"type": "play", "cards": ["5H"], "face_down": ["5H"]})
    o1 = g.observation(1)
    text = json.dumps(o1)
    assert o1["hand"] == ["3C", "9S", "KD"]
    assert o1["hand_sizes"] == [2, 3]
    assert o1["field"] == [{"seat": 0, "cards": [], "face_down": 1}]
    for hidden in ("5H", "6H", "9C"):
        assert hidden not in text
    # the player sees its own face-down card
    assert g.observation(0)["field"][0]["face_down"] == ["5H"]
    # after a doubt the field is revealed to both (MD-8)
    g.apply(1, {"type": "doubt"})
    assert "5H" in json.dumps(g.observation(1)["field"])


def test_face_up_play_is_not_answered_and_through_gives_the_turn_md6():
    g = md({"0": ["5H", "6H"], "1": ["9S", "KD"]})
    g.apply(0, {"type": "play", "cards": ["5H"]})
    assert g.decision() == engine.Decision(1, "play", {})
    g.apply(1, {"type": "play", "cards": ["9S"], "face_down": ["9S"]})
    assert g.decision().kind == "doubt"
    g.apply(0, {"type": "through"})
    assert g.decision().seat == 0 and g.decision().kind == "play"


def test_pass_clears_at_once_and_last_player_leads_md9():
    g = md({"0": ["5H", "6H"], "1": ["9S", "KD"]})
    g.apply(0, {"type": "play", "cards": ["5H"]})
    g.apply(1, {"type": "pass"})
    assert g.field_size() == 0 and g.decision().seat == 0


def test_doubted_revolution_that_was_honest_still_toggles_md14():
    g = md({"0": ["4H", "4S", "4D", "4C", "9S"], "1": ["KD", "3C"]})
    g.apply(0, {"type": "play", "cards": ["4H", "4S", "4D", "4C"], "face_down": ["4C"]})
    g.apply(1, {"type": "doubt"})
    assert g.revolution is True
    g.apply(0, {"type": "penalty", "cards": []})
    assert g.revolution is True and g.field_size() == 0


def test_dishonest_revolution_has_no_effect():
    g = md({"0": ["4H", "4S", "4D", "9C", "9S"], "1": ["KD", "3C"]})
    g.apply(0, {"type": "play", "cards": ["4H", "4S", "4D", "9C"], "face_down": ["9C"]})
    g.apply(1, {"type": "doubt"})
    assert g.decision() == engine.Decision(1, "penalty", {"min": 0, "field_size": 4})
    g.apply(1, {"type": "penalty", "cards": ["4H", "4S", "4D", "9C"]})
    assert g.revolution is False and sorted(g.hands[0]) == sorted(engine.parse_cards(["4H", "4S", "4D", "9C", "9S"]))


def test_penalty_must_come_from_the_field():
    g = md({"0": ["KH", "5C"], "1": ["4D", "6D"]})
    g.apply(0, {"type": "play", "cards": ["KH"], "face_down": ["KH"]})
    g.apply(1, {"type": "doubt"})
    with pytest.raises(InvalidAction) as e:
        g.apply(0, {"type": "penalty", "cards": ["5C"]})
    assert e.value.rule == "MD-7"


def test_forfeit_loses_with_the_burst_score_fault2():
    g = md({"0": ["KH", "5C"], "1": ["4D", "6D"]}, burst_score=15)
    g.forfeit(1, "timeout")
    assert g.over and g.result()["scores"] == {"0": 15, "1": -15} and g.result()["forfeit"] == 1
    again = engine.replay(json.loads(json.dumps(g.log())))
    assert again.result() == g.result()


def test_face_down_rule_is_documented_for_bots():
    from engine.million_doubt import MillionDoubt

    assert "face down" in MillionDoubt.face_down_rule()
    g = md({"0": ["5H", "6H"], "1": ["9S", "KD"]})
    actions = list(g.legal_actions(0))
    assert {"type": "play", "cards": ["5H"]} in actions
    assert all("face_down" not in a for a in actions)
    assert g.is_legal(0, {"type": "play", "cards": ["5H", "6H"], "face_down": ["6H"]})
    assert not g.is_legal(0, {"type": "play", "cards": ["5H", "6H"]})


def test_replay_frames_follow_the_log():
    from engine.frames import frames

    g = md({"0": ["5H", "6H", "9C"], "1": ["9S", "KD", "3C"]})
    g.apply(0, {"type": "play", "cards": ["5H"], "face_down": ["5H"]})
    g.apply(1, {"type": "doubt"})
    fr = frames(json.loads(json.dumps(g.log())))
    assert len(fr) == 3
    assert fr[0]["hands"] == [["5H", "6H", "9C"], ["3C", "9S", "KD"]] and fr[0]["to_act"] == 0
    assert fr[1]["field"] == [{"seat": 0, "cards": ["5H"], "face_down": ["5H"]}]
    assert fr[1]["decision"] == "doubt" and fr[1]["hands"][0] == ["6H", "9C"]
    assert fr[2]["field"][0]["revealed"] is True and fr[2]["decision"] == "penalty"
    assert [e["type"] for e in fr[2]["events"]] == ["doubt", "reveal"]


def test_declared_face_up_joker_binds_in_the_honesty_check_c4_md7():
    g = md({"0": ["6S", "6H", "6D", "3C"], "1": ["JK", "JK", "9D", "4C"]})
    g.apply(0, {"type": "play", "cards": ["6S", "6H", "6D"]})
    g.apply(
        1, {"type": "play", "cards": ["JK", "JK", "9D"], "face_down": ["JK", "9D"], "jokers": ["7"]}
    )  # claims a triple of 7s; 9D + JK(7) + JK is no triple
    g.apply(0, {"type": "doubt"})
    assert g.decision().seat == 0  # the doubt succeeds: the doubter executes
    reveal = [e for e in g.history(None) if e["type"] == "reveal"][0]
    assert reveal["honest"] is False


def test_declared_joker_ranks_must_be_single_rank_letters_c4():
    g = md({"0": ["3S", "JK", "9C"], "1": ["KD", "4C"]})
    for bad in ([""], ["TJ"], ["10"], [3], "3"):
        with pytest.raises(InvalidAction) as e:
            g.apply(0, {"type": "play", "cards": ["3S", "JK"], "jokers": bad})
        assert e.value.rule == "C-4"
    g.apply(0, {"type": "play", "cards": ["3S", "JK"], "jokers": ["3"]})
    assert g.log()["actions"][0]["action"]["jokers"] == ["3"]
