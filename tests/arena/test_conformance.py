"""The bot check's conformance games (issue 26 item 7): the fixed positions ask every decision
kind of each rule set whatever the bot plays, a fault in a forced kind fails the check with
that kind named, and the warning of a kind no position forces carries a code the pages
translate. Real HTTP bots on 127.0.0.1 (the SDK's server), no services."""

from __future__ import annotations

import flask
import pytest

import engine
from api.ui import i18n
from arena import conformance
from arena.conformance import DECISION_KINDS, PROBES, REQUIRED_KINDS, conformance_game
from bots_sdk.samples import SAMPLE_BOTS
from tests.fakes import FakeBot

RULESETS = ("million_doubt", "trump_millionaire", "jdf")
GreedyBot = type(SAMPLE_BOTS["greedy"]())


def _check(bot, ruleset: str, seed: int = 11) -> dict:
    server = FakeBot(bot)
    try:
        return conformance_game(server.url, ruleset, seed=seed, allow_private=True)
    finally:
        server.close()


def test_every_decision_kind_is_required_and_none_is_left_to_the_bots_choice():
    assert REQUIRED_KINDS == DECISION_KINDS
    assert conformance.CHOICE_KINDS == {rs: () for rs in RULESETS}
    forced = {rs: {k for p in PROBES[rs] for k in p.forces} for rs in RULESETS}
    assert forced == {rs: set(DECISION_KINDS[rs]) for rs in RULESETS}


@pytest.mark.parametrize("ruleset", RULESETS)
def test_each_opening_reaches_its_forced_kind_at_seat_0(ruleset):
    for probe in PROBES[ruleset]:
        if not probe.opening:
            continue
        g = engine.from_setup(ruleset, probe.options, probe.setup)
        for seat, action in probe.opening:
            d = g.decision()
            assert d is not None and d.seat == seat, (probe.name, d)
            g.apply(seat, action)
        d = g.decision()
        assert d is not None and (d.seat, d.kind) == (0, probe.forces[0]), probe.name


@pytest.mark.parametrize("ruleset", RULESETS)
@pytest.mark.parametrize("name", ["random", "greedy", "heuristic", "fakebot"])
def test_a_correct_bot_is_asked_every_decision_kind(ruleset, name):
    bot = None if name == "fakebot" else SAMPLE_BOTS[name]()  # FakeBot's own bot: greedy
    out = _check(bot, ruleset)
    assert out["ok"] is True and out["error"] is None, out
    assert set(out["kinds"]) == set(DECISION_KINDS[ruleset])
    assert all(row["asked"] >= 1 and row["faults"] == 0 for row in out["kinds"].values()), out["kinds"]
    assert out["warnings"] == [] and out["warning_codes"] == []
    assert [g["probe"] for g in out["games"]] == ["random", *(p.name for p in PROBES[ruleset])]


@pytest.mark.parametrize("ruleset", RULESETS)
def test_random_bots_of_any_seed_are_asked_every_kind(ruleset):
    for seed in range(4):
        out = _check(SAMPLE_BOTS["random"](seed=seed), ruleset, seed=100 + seed)
        assert out["ok"] is True, out
        assert min(row["asked"] for row in out["kinds"].values()) >= 1, (seed, out["kinds"])


@pytest.mark.parametrize("ruleset", RULESETS)
def test_each_position_alone_asks_its_forced_kinds_of_random_bots(ruleset, monkeypatch):
    for probe in PROBES[ruleset]:
        monkeypatch.setattr(conformance.games, "_runs", lambda rs, probe=probe: [probe])
        for seed in range(5):
            out = _check(SAMPLE_BOTS["random"](seed=seed), ruleset, seed=seed)
            asked = {k for k, row in out["kinds"].items() if row["asked"]}
            assert set(probe.forces) <= asked, (probe.name, seed, asked)


def test_the_openings_moves_are_not_counted_as_the_bots():
    out = _check(SAMPLE_BOTS["greedy"](), "jdf")
    give = next(g for g in out["games"] if g["probe"] == "give")
    # the check led the 7S; the bot then holds 7H TS TH: asked give, then plays until out
    assert 1 <= give["decisions"] <= 4


class WrongDiscardBot(GreedyBot):  # type: ignore[misc, valid-type]
    """Plays well, but discards a card it does not hold (LR-6)."""

    def discard(self, req):
        return {"type": "discard", "cards": ["JK"]}


class WrongPenaltyBot(GreedyBot):  # type: ignore[misc, valid-type]
    """Plays well, but gives a penalty card that is not on the field (MD-7)."""

    def penalty(self, req):
        held = [c for c in req.hand if c not in (req.choice or {}).get("from", [])]
        return {"type": "penalty", "cards": held[:1]}


@pytest.mark.parametrize("ruleset", ["trump_millionaire", "jdf"])
def test_a_bot_faulting_only_in_discard_fails_with_discard_named(ruleset):
    out = _check(WrongDiscardBot(), ruleset)
    assert out["ok"] is False
    assert out["kinds"]["discard"] == {"asked": 1, "faults": 1}
    assert [f["decision"] for f in out["faults"]] == ["discard"]
    # the give and discard positions both play with LR-5 and LR-6 on: either may ask it first
    assert out["faults"][0]["kind"] == "invalid_action" and out["faults"][0]["probe"] in ("give", "discard")
    assert out["error"].startswith(f"invalid_action answering discard ({out['faults'][0]['probe']}): ")


def test_a_bot_faulting_only_in_penalty_fails_with_penalty_named():
    out = _check(WrongPenaltyBot(), "million_doubt")
    assert out["ok"] is False and out["kinds"]["penalty"]["faults"] == 1
    assert out["faults"][0]["decision"] == "penalty" and out["faults"][0]["probe"] == "penalty"
    assert "answering penalty (penalty)" in out["error"]


def test_a_kind_no_position_forces_is_warned_about_with_a_code(monkeypatch):
    """The warning of CHOICE_KINDS (none today): without the penalty position, penalty left to
    the bot's choice, the greedy bot (it never doubts) passes with the warning."""
    monkeypatch.setitem(PROBES, "million_doubt", [p for p in PROBES["million_doubt"] if p.name != "penalty"])
    monkeypatch.setitem(REQUIRED_KINDS, "million_doubt", ("play", "doubt"))
    monkeypatch.setitem(conformance.CHOICE_KINDS, "million_doubt", ("penalty",))
    out = _check(SAMPLE_BOTS["greedy"](), "million_doubt")
    assert out["ok"] is True and out["kinds"]["penalty"]["asked"] == 0
    assert out["warning_codes"] == [
        {"code": "kind_not_asked", "params": {"ruleset": "million_doubt", "kind": "penalty"}}
    ]
    assert out["warnings"] == [
        "million_doubt: the bot was never asked 'penalty' (its own plays never called for it), "
        "so its penalty answers are not checked"
    ]


def _warnings_in(lang: str, result: dict) -> list[str]:
    app = flask.Flask("t")
    i18n.init_i18n(app)
    with app.test_request_context("/ui/bots/1", headers={"Cookie": f"{i18n.COOKIE}={lang}"}):
        return i18n.check_warnings(result)


def test_the_pages_translate_the_check_warnings_from_their_codes():
    w = conformance.kind_not_asked("million_doubt", "penalty")
    result = {
        "warnings": [w["text"], "an old warning, without a code", "the bot answered ... with HTTP 200"],
        "warning_codes": [
            {"code": w["code"], "params": w["params"]},
            {"code": "unknown_code", "params": {}},
            {"code": "signature_not_refused", "params": {"status": 200}},
        ],
    }
    en = _warnings_in("en", result)
    assert en[0] == (
        "Million Doubt: the bot was never asked 'penalty' (its own plays never called for it), "
        "so its penalty answers are not checked"
    )
    assert en[1] == "an old warning, without a code"
    assert en[2].startswith("the bot answered a badly signed request with HTTP 200, not 401")
    ja = _warnings_in("ja", result)
    assert ja[0] == (
        "ミリオンダウト：ボットは「ペナルティ」の判断を一度も求められませんでした"
        "（ボット自身の手の流れでその場面が来なかったため）。「ペナルティ」の応答は検査されていません"
    )
    assert ja[1] == "an old warning, without a code"
    assert ja[2].startswith("署名の不正なリクエストにボットが 401 ではなく HTTP 200 で答えました。")
    assert _warnings_in("ja", {"warnings": ["x"]}) == ["x"]  # an outcome from before the codes
