"""Poison-pill answers (issue 13, item 1): every answer body becomes an action or a fault.

The answer path is what the runner does with a bot's bytes: ``parse_answer`` (fault
``invalid_json``), ``check_action`` (fault ``invalid_action``, rule ACT), then the engine
(``InvalidAction``). Whatever the bytes, none of it raises, and whatever it accepts (and the
text a fault keeps) encodes as strict JSON in UTF-8 (``arena.matchlog.encode``).
Hypothesis generates 10,500 bodies (binary, JSON-like text with NaN/surrogates/deep nesting,
action-shaped objects with mutations); the corpus holds the cases of the issue.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from arena import matchlog
from arena.runner.answers import check_action, safe_text
from arena.runner.players import RECEIVED_LOG_CHARS
from arena.safejson import MAX_DEPTH, parse_answer
from bots_sdk import protocol
from engine.timebank import TimeRules
from tests.helpers import examples

GAMES = {rs: engine.new_game(rs, None, 7) for rs in engine.RULESETS}


def answer_path(raw: bytes, ruleset: str = "million_doubt") -> tuple[dict | None, str | None, str]:
    """(accepted action, None, "") or (None, fault kind, detail): the runner's steps."""
    obj, why = parse_answer(raw)
    if obj is None:
        assert why is not None
        return None, "invalid_json", why.text()
    shape = check_action(obj)
    if shape is not None:
        return None, "invalid_action", shape.text()
    g = GAMES[ruleset]
    d = g.decision()
    try:
        g.check(d.seat, obj)
    except engine.InvalidAction as e:
        return None, "invalid_action", e.reason
    return obj, None, ""


def assert_safe(raw: bytes, ruleset: str = "million_doubt") -> tuple[dict | None, str | None, str]:
    action, fault, detail = answer_path(raw, ruleset)
    assert (action is None) == (fault is not None)
    received = safe_text(raw, RECEIVED_LOG_CHARS)
    # what the log would keep of this exchange is strict JSON in UTF-8
    record = {"response": action, "fault": fault, "detail": detail, "received": received}
    data = matchlog.encode(record)
    json.loads(data.decode("utf-8"), parse_constant=pytest.fail)
    assert len(received) <= RECEIVED_LOG_CHARS + 3
    return action, fault, detail


# -- the corpus of the issue, and its neighbours -------------------------------------------------
CORPUS: list[tuple[str, bytes, str]] = [
    ("deep array", b"[" * 60000, "invalid_json"),
    ("deep array closed", b"[" * 30000 + b"]" * 30000, "invalid_json"),
    ("deep object", b'{"a":' * 20000 + b"1" + b"}" * 20000, "invalid_json"),
    ("deep inside a legal action", b'{"type":"pass","x":' + b"[" * 40 + b"]" * 40 + b"}", "invalid_json"),
    ("lone surrogate in comment", b'{"type":"pass","comment":"\\ud800"}', "invalid_json"),
    ("lone low surrogate in a card", b'{"type":"play","cards":["\\udfff"]}', "invalid_json"),
    ("lone surrogate in a key", b'{"type":"pass","\\ud800":1}', "invalid_json"),
    ("NaN", b'{"type":"rate","rate":NaN}', "invalid_json"),
    ("Infinity", b'{"type":"pass","comment":"x","n":Infinity}', "invalid_json"),
    ("-Infinity", b'{"type":"pass","n":-Infinity}', "invalid_json"),
    ("overflowing float", b'{"type":"pass","n":1e999}', "invalid_json"),
    ("huge integer", b'{"type":"rate","rate":' + b"9" * 5000 + b"}", "invalid_json"),
    ("integer over the int-string limit", b'{"type":"rate","rate":' + b"1" * 60000 + b"}", "invalid_json"),
    ("duplicate key", b'{"type":"pass","type":"doubt"}', "invalid_json"),
    ("invalid UTF-8", b'{"type":"pass","comment":"\xff\xfe"}', "invalid_json"),
    ("overlong UTF-8", b'{"type":"pass","comment":"\xc0\xaf"}', "invalid_json"),
    ("UTF-8 encoded surrogate", b'{"type":"pass","comment":"\xed\xa0\x80"}', "invalid_json"),
    ("UTF-16", '{"type":"pass"}'.encode("utf-16"), "invalid_json"),
    ("UTF-8 BOM", b'\xef\xbb\xbf{"type":"pass"}', "invalid_json"),
    ("empty body", b"", "invalid_json"),
    ("null", b"null", "invalid_json"),
    ("array", b'[{"type":"pass"}]', "invalid_json"),
    ("trailing garbage", b'{"type":"pass"} x', "invalid_json"),
    ("NUL byte", b'{"type":"pass"}\x00', "invalid_json"),
    ("unknown key", b'{"type":"pass","extra":1}', "invalid_action"),
    ("unknown key of another type", b'{"type":"doubt","cards":[]}', "invalid_action"),
    ("unknown type", b'{"type":"fold"}', "invalid_action"),
    ("type not a string", b'{"type":1}', "invalid_action"),
    ("card not a string", b'{"type":"play","cards":[1]}', "invalid_action"),
    ("card not a card", b'{"type":"play","cards":["ZZ"]}', "invalid_action"),
    ("too many cards", b'{"type":"play","cards":[' + b",".join([b'"3S"'] * 55) + b"]}", "invalid_action"),
    ("comment too long", b'{"type":"pass","comment":"' + b"x" * 257 + b'"}', "invalid_action"),
    ("comment not a string", b'{"type":"pass","comment":{"a":1}}', "invalid_action"),
    ("rate a bool", b'{"type":"rate","rate":true}', "invalid_action"),
    ("rate a float", b'{"type":"rate","rate":2.0}', "invalid_action"),
    ("accept a number", b'{"type":"exchange","accept":1}', "invalid_action"),
]


@pytest.mark.parametrize(("name", "raw", "kind"), CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus_is_a_fault(name, raw, kind):
    action, fault, detail = assert_safe(raw)
    assert fault == kind, (name, detail)
    assert detail and len(detail) < 200
    assert raw.decode("latin-1")[:50] not in detail or len(raw) < 3  # the reason never quotes the body


def test_a_legal_action_passes_and_a_comment_is_kept():
    g = GAMES["million_doubt"]
    req = protocol.build_request(g, g.decision().seat, match_id="m", game=0, time_rules=TimeRules(), remaining_ms=60000)
    legal = req["legal_actions"][0]
    body = json.dumps({**legal, "comment": "\u00e9\U0001f600 ok"}).encode()
    action, fault, detail = assert_safe(body)
    assert fault is None, detail
    assert action["comment"] == "\u00e9\U0001f600 ok"


def test_depth_limit_is_exact():
    ok = b'{"type":"pass","comment":"' + b"[" * 1000 + b'"}'  # brackets inside a string are text
    assert parse_answer(ok)[0] is not None
    at_limit = b'{"a":' + b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"}"
    assert parse_answer(at_limit)[0] is not None
    over = b'{"a":' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}"
    assert parse_answer(over)[0] is None


def test_safe_text_of_surrogates_and_bad_bytes():
    assert matchlog.encode(safe_text("a\ud800b", 10)) == b'"a?b"'
    assert safe_text(b"\xff" * 1000, 5) == "\ufffd" * 5 + "..."


# -- fuzz: 10,500 generated bodies ----------------------------------------------------------------
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=20),
    st.sampled_from(["3S", "JK", "AH", "2C", "pass", "play", "\ud800", "\udfff"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
_KEYS = ["type", "cards", "face_down", "jokers", "accept", "rate", "comment", "extra", "\ud800"]
_TYPES = ["play", "pass", "doubt", "through", "penalty", "give", "discard", "exchange", "rate", "fold", ""]


@st.composite
def action_like(draw) -> bytes:
    obj = {"type": draw(st.sampled_from(_TYPES))}
    for k in draw(st.lists(st.sampled_from(_KEYS), max_size=4)):
        obj[k] = draw(_values)
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()), allow_nan=True)
    cut = draw(st.integers(0, 3))
    if cut == 1:  # duplicate a key
        text = text[:-1] + (', "type": "pass"}' if len(obj) > 0 else "}")
    elif cut == 2:  # wrap deep
        n = draw(st.integers(1, 200))
        text = "[" * n + text + "]" * n
    return text.encode("utf-8", "surrogatepass")


def _json_text_bytes(value) -> bytes:
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


def fuzz(n: int):
    return settings(
        max_examples=examples(n),
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@fuzz(3500)
@given(st.binary(max_size=300))
def test_fuzz_random_bytes(raw):
    assert_safe(raw)


@fuzz(3500)
@given(_values.map(_json_text_bytes))
def test_fuzz_json_values(raw):
    assert_safe(raw)


@fuzz(3500)
@given(action_like(), st.sampled_from(sorted(engine.RULESETS)))
def test_fuzz_action_shaped(raw, ruleset):
    assert_safe(raw, ruleset)
