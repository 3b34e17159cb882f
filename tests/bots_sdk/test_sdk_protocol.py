"""Protocol v1: every request and sample-bot answer validates; signatures; hidden information."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

import engine
from bots_sdk import protocol
from bots_sdk.bot import Request
from bots_sdk.md import trick_state
from bots_sdk.samples import SAMPLE_BOTS, RandomBot
from engine.cards import format_card
from engine.timebank import TimeRules

REPO = Path(__file__).resolve().parents[2]
CARD = re.compile(r"^([3-9TJQKA2][SHDC]|JK)$")
RULES = TimeRules(initial_ms=60_000, increment_ms=10_000, cap_ms=60_000)
GAMES = {"million_doubt": 40, "trump_millionaire": 2, "jdf": 1}
#: Each sample bot's arguments here: the search bot searches a bounded number of rollouts, so
#: its answers are searched ones but the test does not spend its 100 ms clock per decision.
BOT_ARGS = {"search": {"max_rollouts": 24}}
SMALL = {
    "million_doubt": {},
    "trump_millionaire": {"target_score": 20},
    "jdf": {"sets": 1, "games_per_set": 4, "seven_pass": True, "ten_discard": True},
}


def _request(g, seat):
    return json.loads(
        protocol.dumps(protocol.build_request(g, seat, match_id="m1", game=0, time_rules=RULES, remaining_ms=12_345))
    )


ALL_LOCAL = {name: True for name in engine.options.LOCAL_RULES}


@pytest.mark.parametrize(
    "ruleset,options",
    [
        ("million_doubt", {}),
        pytest.param("trump_millionaire", {}, marks=pytest.mark.slow),
        pytest.param("trump_millionaire", ALL_LOCAL, marks=pytest.mark.slow),
        ("jdf", {"sets": 1}),
        ("jdf", {"sets": 1, **ALL_LOCAL}),
    ],
)
def test_dumps_gives_the_standard_librarys_bytes(ruleset, options):
    """protocol.dumps (orjson) and json.dumps give the same bytes for every request and log:
    a request's SHA-256 in a match log must not depend on the serialiser."""
    import random

    from engine.selfplay import random_action

    assert protocol.dumps({"k": [1, "\u00e9"]}) == protocol._orjson_dumps({"k": [1, "\u00e9"]})
    checked = 0
    for seed in range(3):
        g = engine.new_game(ruleset, options, seed)
        rng = random.Random(seed)
        while not g.over:
            d = g.decision()
            req = protocol.build_request(
                g, d.seat, match_id="m\u00e9\u2028", game=seed, time_rules=RULES, remaining_ms=12_345
            )
            assert protocol.dumps(req) == protocol._json_dumps(req)
            checked += 1
            g.apply(*random_action(g, rng))
        assert protocol.dumps(g.log()) == protocol._json_dumps(g.log())
    assert checked > 30
    # keys that are not strings, non-ASCII text, and what orjson cannot take (an int over 64 bits)
    odd = {1: ["\u00e9", "\x00", None, True], "big": 2**70, "t": (1, 2)}
    assert (
        protocol.dumps(odd)
        == protocol._json_dumps(odd)
        == '{"1":["\u00e9","\\u0000",null,true],"big":1180591620717411303424,"t":[1,2]}'.encode()
    )


def test_docs_schemas_are_the_sdk_schemas():
    for name in protocol.SCHEMAS:
        doc = REPO / "docs" / "schema" / f"{name}.schema.json"
        sdk = protocol.SCHEMA_DIR / f"{name}.schema.json"
        assert json.loads(doc.read_text()) == json.loads(sdk.read_text()), name


@pytest.mark.slow
@pytest.mark.parametrize("ruleset", engine.RULESETS)
@pytest.mark.parametrize("bot_name", list(SAMPLE_BOTS))
def test_requests_and_sample_answers_validate(ruleset, bot_name):
    kinds = Counter()
    searched = 0
    for seed in range(GAMES[ruleset]):
        g = engine.new_game(ruleset, SMALL[ruleset], seed)
        bots = [SAMPLE_BOTS[bot_name](seed=seed * 4 + s, **BOT_ARGS.get(bot_name, {})) for s in range(g.seats)]
        while not g.over:
            d = g.decision()
            req = _request(g, d.seat)
            assert protocol.schema_errors("decision-request", req) == []
            assert req["time"]["remaining_ms"] == 12_345 and req["seat"] == d.seat
            action = bots[d.seat].decide(req)
            assert protocol.schema_errors("action-response", action) == []
            g.apply(d.seat, action)  # and it is legal
            kinds[d.kind] += 1
        searched += sum(b.stats["searched"] for b in bots if bot_name == "search")
    assert kinds["play"] > 0
    assert bot_name != "search" or searched > 0
    if ruleset == "million_doubt" and bot_name == "random":
        assert kinds["doubt"] > 0 and kinds["penalty"] > 0
    if ruleset == "jdf":
        assert kinds["give"] > 0


def test_schemas_reject_bad_messages():
    assert protocol.schema_errors("action-response", {"type": "play", "cards": ["1S"]})
    assert protocol.schema_errors("action-response", {"type": "pass", "comment": "x" * 257})
    assert protocol.schema_errors("action-response", {"type": "rate"})
    assert protocol.schema_errors("action-response", {"type": "pass", "extra": 1})
    assert protocol.schema_errors("action-response", {"type": "play", "cards": ["3S"], "face_down": ["3S"]}) == []
    assert protocol.schema_errors("health", protocol.health("x")) == []
    assert protocol.schema_errors("health", {"name": "x"})
    start = protocol.match_start_notice(
        match_id="m", ruleset="jdf", options={}, time_rules=RULES, players=["a", "b", "c", "d"], you=2, games=1
    )
    end = protocol.match_end_notice(match_id="m", ruleset="jdf", players=["a"], you=0, scores=[3], wins=[1], faults=[0])
    assert protocol.schema_errors("notice", start) == []
    assert protocol.schema_errors("notice", end) == []
    assert protocol.schema_errors("notice", {**end, "type": "other"})


def test_signatures():
    body = b'{"protocol":1}'
    headers = protocol.sign("s3cret", body, now=1_800_000_000)
    assert headers["X-Arena-Timestamp"] == "1800000000"
    assert re.fullmatch(r"sha256=[0-9a-f]{64}", headers["X-Arena-Signature"])
    protocol.verify("s3cret", body, headers, now=1_800_000_100)
    lower = {k.lower(): v for k, v in headers.items()}
    protocol.verify("s3cret", body, lower, now=1_800_000_000)
    with pytest.raises(protocol.SignatureError, match="does not match"):
        protocol.verify("other", body, headers, now=1_800_000_000)
    with pytest.raises(protocol.SignatureError, match="does not match"):
        protocol.verify("s3cret", body + b" ", headers, now=1_800_000_000)
    with pytest.raises(protocol.SignatureError, match="away from now"):
        protocol.verify("s3cret", body, headers, now=1_800_000_000 + 301)
    with pytest.raises(protocol.SignatureError, match="missing"):
        protocol.verify("s3cret", body, {}, now=1_800_000_000)
    assert "X-Arena-Signature" not in protocol.sign(None, body)
    # digits of other scripts are not whole Unix seconds: a clean refusal (401), not a crash (500)
    for ts in ("\u00b2", "\u0661\u0668\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660", "-5", ""):
        forged = {**headers, "X-Arena-Timestamp": ts}
        with pytest.raises(protocol.SignatureError):
            protocol.verify("s3cret", body, forged, now=1_800_000_000)


def _cards_in(obj) -> Counter:
    out = Counter()
    if isinstance(obj, dict):
        for v in obj.values():
            out += _cards_in(v)
    elif isinstance(obj, list):
        for v in obj:
            out += _cards_in(v)
    elif isinstance(obj, str) and CARD.match(obj):
        out[obj] += 1
    return out


@pytest.mark.parametrize(
    "ruleset,games",
    [pytest.param("million_doubt", 150, marks=pytest.mark.slow), ("trump_millionaire", 2), ("jdf", 1)],
)
def test_requests_never_show_hidden_cards(ruleset, games):
    """C-11, tracked independently of the engine's own event visibility: a request for seat
    s names no card that is now in another hand, face down and unrevealed on the field, or
    set aside / blind, unless s held that card earlier in this deal/game or saw it face up."""
    checked = 0
    for seed in range(games):
        g = engine.new_game(ruleset, SMALL[ruleset], seed)
        bots = [RandomBot(seed=seed * 4 + s) for s in range(g.seats)]
        unit = None
        while not g.over:
            if g.unit_index != unit or (ruleset == "million_doubt" and unit is None):
                unit = g.unit_index
                held = [set() for _ in range(g.seats)]
                public: set[str] = set()
            for s in range(g.seats):
                held[s] |= {format_card(c) for c in g.hands[s]}
            for rec in g.field:
                public |= {format_card(c) for c in rec.face_up()}
            d = g.decision()
            req = _request(g, d.seat)
            obs = req["observation"]
            assert sorted(obs["hand"]) == sorted(format_card(c) for c in g.hands[d.seat])
            assert "seed" not in json.dumps(req)
            hidden = set()
            for s in range(g.seats):
                if s != d.seat:
                    hidden |= {format_card(c) for c in g.hands[s]}
            for rec in g.field:
                if rec.seat != d.seat and rec.face_down and not rec.revealed:
                    hidden |= {format_card(c) for c in rec.face_down}
            hidden |= {format_card(c) for c in g.outside}
            hidden -= held[d.seat] | public
            hidden.discard("JK")  # jokers are identical: a seat may hold one while another is hidden
            leaked = hidden & set(_cards_in(req))
            assert not leaked, f"seat {d.seat} sees {leaked} in {d.kind} request"
            # an opponent's unrevealed face-down play is only counted
            for p in obs["field"]:
                if p["seat"] != d.seat and not p.get("revealed") and "face_down" in p:
                    assert isinstance(p["face_down"], int)
            g.apply(d.seat, bots[d.seat].decide(req))
            checked += 1
    assert checked > 100


def test_trick_state_matches_the_engine():
    """The SDK's Million Doubt trick reconstruction (reference, lock, order) from a request
    equals the engine's hidden state."""
    checked = 0
    for seed in range(120):
        g = engine.new_game("million_doubt", {}, seed)
        bots = [RandomBot(seed=2 * seed), RandomBot(seed=2 * seed + 1)]
        while not g.over:
            d = g.decision()
            req = _request(g, d.seat)
            if d.kind in ("play", "doubt"):
                st = trick_state(req["observation"])
                assert (st.ref, tuple(st.lock), st.reversed_order) == (g.ref, tuple(g.lock), g.reversed_order)
                checked += 1
            g.apply(d.seat, bots[d.seat].decide(Request(req)))
    assert checked > 1000


def test_protocol_doc_examples_are_generated_and_valid():
    from bots_sdk.examples import SECRET, TIMESTAMP, all_examples, render

    text = (REPO / "docs" / "protocol.md").read_text()
    examples = all_examples()
    assert render(text, examples) == text, "run: python -m bots_sdk.examples --write docs/protocol.md"
    for ex in examples.values():
        assert protocol.schema_errors("decision-request", ex["request"]) == []
        assert protocol.schema_errors("action-response", ex["response"]) == []
        assert ex["response"] in ex["request"]["legal_actions"]
        body = protocol.dumps(ex["request"])
        protocol.verify(SECRET, body, ex["headers"], now=TIMESTAMP)
