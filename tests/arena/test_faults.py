"""The fault catalogue (:mod:`arena.faults`, :mod:`engine.refusals`) and its codecs: the
relay's fault item between a gateway and a worker, a log's fault record (pure: no services)."""

from __future__ import annotations

import json

import engine
from arena import relay
from arena.faults import TEMPLATES, Fault, FaultCode, fault, of_record, param_names, refused, render
from engine.refusals import TEMPLATES as REFUSAL_TEMPLATES
from engine.refusals import Refusal


def test_every_code_has_one_template_and_no_code_is_both_an_arena_and_an_engine_one():
    assert set(TEMPLATES) == set(FaultCode) and set(REFUSAL_TEMPLATES) == set(Refusal)
    assert not {c.value for c in FaultCode} & {c.value for c in Refusal}


def test_a_refusal_carries_its_code_params_and_rule():
    g = engine.new_game("million_doubt", None, 7)
    d = g.decision()
    try:
        g.check(d.seat, {"type": "play", "cards": ["3S", "3S", "3S", "3S", "3S"]})
    except engine.InvalidAction as e:
        refusal = e
    else:
        raise AssertionError("five 3S were accepted")
    assert refusal.rule == "C-12" and refusal.code == Refusal.NOT_HELD
    assert set(refusal.params) == param_names(refusal.code) == {"seat", "cards"}
    assert str(refusal) == f"{refusal.reason} [C-12]" == render(refusal.code, refusal.params, "C-12")
    assert refused(refusal.code, refusal.params, refusal.rule).text() == str(refusal)


def test_a_fault_item_goes_from_a_gateway_to_a_worker_with_its_code():
    why = fault(FaultCode.FRAME_OVER, n=65536)
    item = relay.fault_item("body_too_large", why, "xx")
    assert item[:1] == b"F"
    assert json.loads(item[1:]) == {
        "kind": "body_too_large",
        "code": "frame_over",
        "params": {"n": 65536},
        "detail": "a frame over 65536 bytes",
        "received": "xx",
    }
    assert relay.read_fault(item) == ("body_too_large", why, "xx")
    assert relay.read_fault(relay.answer_item("{}")) is None  # an answer, not a fault


def test_a_fault_item_of_an_earlier_gateway_keeps_its_english_and_a_broken_one_is_named():
    relayed = relay.read_fault(b'F{"kind": "invalid_json", "detail": "a frame is not a JSON object"}')
    assert relayed is not None
    kind, why, received = relayed
    assert (kind, why.code, why.text(), received) == ("invalid_json", "relayed", "a frame is not a JSON object", "")
    broken = relay.read_fault(b"F[1, 2")
    assert broken is not None and (broken.kind, broken.why.code) == ("connection_error", "broken_relayed_fault")


def test_a_record_without_a_code_is_an_old_one():
    assert of_record({"kind": "timeout", "detail": "no answer within the bank"}) is None
    record = {"kind": "timeout", "code": "over_bank", "params": {"ms": 61000}, "rule": None, "detail": "..."}
    assert of_record(record) == Fault("over_bank", {"ms": 61000})


def test_text_params_are_clipped_strict_utf8_and_unknown_codes_still_render():
    long = fault(FaultCode.CONNECTION_FAILED, exc="OSError", why="x" * 1000 + "\ud800")
    assert len(str(long.params["why"])) == 303 and str(long.params["why"]).endswith("...")
    bad = fault(FaultCode.CONNECTION_FAILED, exc="OSError", why="\ud800")
    assert bad.params["why"] == "?" and bad.text() == "OSError: ?"
    assert render("from_a_newer_arena", {"n": 1}) == "from_a_newer_arena {'n': 1}"
    assert render("over_bank", {}) == "over_bank"  # parameters that do not fit: the code
