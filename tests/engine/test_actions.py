"""Actions at the engine's boundary (ACT): the wire dict is parsed once into a typed action,
and the handler of its type is the one of the game's own class, overrides included."""

from __future__ import annotations

from typing import Any

import pytest

import engine
from engine.actions import PASS, GiveAction, PassAction, PlayAction, RateAction
from engine.jdf import Jdf
from engine.million_doubt import MillionDoubt
from engine.trump_millionaire import TrumpMillionaire


def from_setup(cls: type[engine.Game], ruleset: str, setup: dict, options: dict | None = None) -> Any:
    """``engine.from_setup`` building an instance of ``cls``, a subclass of the rule set's class."""
    opts = engine.make_options(ruleset, options)
    return cls(opts, None, engine._parse_setup(opts, setup))


class SpyMillionDoubt(MillionDoubt):
    """Overrides the play handler without listing it in HANDLERS."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.seen: list[object] = []

    def _do_play(self, seat: int, action: PlayAction) -> None:
        self.seen.append(action)
        super()._do_play(seat, action)


class SpyTrumpMillionaire(TrumpMillionaire):
    """Overrides the pass handler that TrumpMillionaire itself overrides (a third level)."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.passes: list[int] = []

    def _do_pass(self, seat: int, action: PassAction) -> None:
        self.passes.append(seat)
        super()._do_pass(seat, action)


def test_a_subclass_overriding_the_play_handler_is_dispatched_to_act():
    g = SpyMillionDoubt(engine.make_options("million_doubt", None), 3, None)
    d = g.decision()
    assert d is not None and d.kind == "play"
    hand = engine.format_cards(sorted(g.hands[d.seat]))
    g.apply(d.seat, {"type": "play", "cards": hand[:2], "face_down": hand[1:2]})
    assert g.seen == [PlayAction(engine.parse_cards(hand[:2]), engine.parse_cards(hand[1:2]), None)]
    assert g.decision() == engine.Decision(1 - d.seat, "doubt", {})  # MD-6: the play is on the field
    assert g.actions == [{"seat": d.seat, "action": {"type": "play", "cards": hand[:2], "face_down": hand[1:2]}}]


def test_a_subclass_overriding_an_overridden_pass_handler_is_dispatched_to_c7():
    hands = {"0": ["4S", "3C"], "1": ["5S", "3D"], "2": ["6S"], "3": ["7S"]}
    g = from_setup(SpyTrumpMillionaire, "trump_millionaire", {"hands": hands})
    g.apply(0, {"type": "play", "cards": ["4S"]})
    g.apply(1, {"type": "pass"})
    assert g.passes == [1]
    assert g.passed[1] and g.decision() == engine.Decision(2, "play", {})  # C-7, by the parent handler


def test_a_handler_table_naming_a_missing_method_fails_at_class_creation():
    with pytest.raises(TypeError, match=r"Broken.HANDLERS\['pass'\] = '_do_fold' is not a method"):

        class Broken(Jdf):
            HANDLERS = {**Jdf.HANDLERS, "pass": "_do_fold"}


def test_a_handler_table_naming_an_unknown_action_type_fails_at_class_creation():
    with pytest.raises(TypeError, match="unknown action type 'fold'"):

        class Broken(Jdf):
            HANDLERS = {**Jdf.HANDLERS, "fold": "_do_pass"}


def test_a_handled_type_without_its_parser_fails_at_class_creation():
    with pytest.raises(TypeError, match="handles 'rate' but has no parser '_parse_rate'"):

        class Broken(MillionDoubt):
            HANDLERS = {**MillionDoubt.HANDLERS, "rate": "_do_pass"}


def test_each_wire_action_reaches_its_handler_typed_act():
    class Spy(TrumpMillionaire):
        def _do_rate(self, seat: int, action: RateAction) -> None:
            seen.append(action)
            super()._do_rate(seat, action)

        def _do_give(self, seat: int, action: GiveAction) -> None:
            seen.append(action)
            super()._do_give(seat, action)

        def _do_pass(self, seat: int, action: PassAction) -> None:
            seen.append(action)
            super()._do_pass(seat, action)

    seen: list[object] = []
    hands = {"0": ["7S", "4H", "5D"], "1": ["3C", "4C", "8H"], "2": ["3D", "4D"], "3": ["3H", "6D"]}
    g = from_setup(Spy, "trump_millionaire", {"hands": hands, "state": {"millionaire": 0}}, {"seven_pass": True})
    g.apply(0, {"type": "exchange", "accept": False})
    g.apply(0, {"type": "rate", "rate": 2})
    g.apply(0, {"type": "play", "cards": ["7S"]})
    g.apply(0, {"type": "give", "cards": ["4H"]})  # LR-5: to seat 1
    g.apply(1, {"type": "pass"})
    assert seen == [RateAction(2), GiveAction([engine.parse_card("4H")]), PASS]
    assert sorted(engine.format_cards(g.hands[1])) == ["3C", "4C", "4H", "8H"]


def test_a_penalty_is_parsed_before_it_is_judged_md7():
    g = engine.from_setup("million_doubt", None, {"hands": {"0": ["5H", "6H"], "1": ["9S", "KD"]}})
    g.apply(0, {"type": "play", "cards": ["5H"], "face_down": ["5H"]})
    g.apply(1, {"type": "doubt"})
    d = g.decision()
    assert d is not None and d.kind == "penalty"
    for action, rule, text in [
        ({"type": "penalty"}, "ACT", "missing field 'cards'"),
        ({"type": "penalty", "cards": "5H"}, "ACT", "field 'cards' must be a list"),
        ({"type": "penalty", "cards": ["5X"]}, "C-1", "field 'cards': unknown card '5X'"),
        ({"type": "penalty", "cards": ["9S"]}, "MD-7", "must be cards of the field"),
    ]:
        with pytest.raises(engine.InvalidAction) as e:
            g.apply(d.seat, action)
        assert (e.value.rule, text in e.value.reason) == (rule, True)
    g.apply(d.seat, {"type": "penalty", "cards": ["5H"]})
    assert g.actions[-1] == {"seat": d.seat, "action": {"type": "penalty", "cards": ["5H"]}}


def test_an_answer_with_a_stray_field_is_applied_and_logged_whole_act():
    hands = {"0": ["4S", "3C"], "1": ["5S", "3D"], "2": ["6S"], "3": ["7S"]}
    g = engine.from_setup("trump_millionaire", None, {"hands": hands})
    g.apply(0, {"type": "play", "cards": ["4S"]})
    g.apply(1, {"type": "pass", "cards": -1})  # a pass ignores the field; the log keeps it
    assert g.actions[-1] == {"seat": 1, "action": {"type": "pass", "cards": -1}}
    assert g.passed[1] and engine.replay(g.log()).log() == g.log()
