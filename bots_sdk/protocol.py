"""Bot protocol v1: the messages between the arena and a bot, and their signatures.

Transport (see ``docs/protocol.md``): the arena ``POST``\\ s a JSON message to the bot's URL and
expects ``200`` with a JSON body. ``GET`` on the same URL is the health check. Messages:

* a **decision request** (``"type": "decision"``, :func:`build_request`), answered by an
  ACT action (docs/rules.md, ACT) plus an optional short ``comment``;
* **notices** (``"type": "match_start"`` / ``"match_end"``, :func:`match_start_notice`,
  :func:`match_end_notice`), answered by anything (an error answer is never a fault).

Every message the arena sends carries two headers (:func:`sign`):

* ``X-Arena-Timestamp``: Unix time in whole seconds, as decimal text;
* ``X-Arena-Signature``: ``sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>``;
* during the 24 h after the owner rotated the bot's secret, also
  ``X-Arena-Signature-Previous``: the same HMAC with the previous secret.

:func:`verify` checks them with a maximum clock skew (default 300 s), and accepts a message
whose current or previous signature matches the bot's secret: a bot still holding the old
secret keeps working through the grace period, one holding the new secret works at once.

The JSON Schemas (2020-12) of every message live in ``bots_sdk/schema/`` (copied to
``docs/schema/``); :func:`validate` checks a message against one of them (needs the
``jsonschema`` package, imported only when used).
"""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import orjson  # the fast serialiser of dumps (a dependency; same bytes as the standard library)

import engine
from engine.timebank import TimeRules

#: The protocol version this SDK speaks.
PROTOCOL_VERSION = 1
#: Every version this SDK can answer (the health check reports it, see docs/protocol.md).
SUPPORTED_PROTOCOLS = (1,)

TIMESTAMP_HEADER = "X-Arena-Timestamp"
SIGNATURE_HEADER = "X-Arena-Signature"
PREVIOUS_SIGNATURE_HEADER = "X-Arena-Signature-Previous"
PROTOCOL_HEADER = "X-Arena-Protocol"
#: Largest accepted difference, in seconds, between a request's timestamp and the bot's clock.
MAX_SKEW_S = 300
#: Largest ``comment`` a bot may add to an action, in characters (longer is an invalid action).
MAX_COMMENT_CHARS = 256

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
#: Schema names: file ``<name>.schema.json`` in :data:`SCHEMA_DIR`.
SCHEMAS = ("decision-request", "action-response", "notice", "health")

#: Decision kinds whose answers are listed in ``legal_actions`` (ACT).
LISTED_KINDS = ("play", "doubt", "exchange", "rate")
#: Decision kinds answered by choosing cards (``choice`` describes them).
CHOICE_KINDS = ("penalty", "give", "discard")


class SignatureError(ValueError):
    """A request whose signature headers are missing, malformed, stale or wrong."""


class ProtocolError(ValueError):
    """A message that does not follow protocol v1 (the message says which field)."""


# -- JSON ------------------------------------------------------------------------------------
def _json_dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _orjson_dumps(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:  # e.g. an int over 64 bits in a bot's answer: json copes
        return _json_dumps(obj)


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON bytes of ``obj`` (what goes on the wire): no spaces, non-ASCII
    characters as UTF-8, integer dict keys as strings.

    Serialised by orjson (3 to 7 times faster than the standard library on decision
    requests); what orjson cannot carry (an int over 64 bits) goes through :mod:`json`: both give
    the same bytes for protocol messages (ints, strings, booleans, null, lists, objects;
    ``tests/bots_sdk/test_sdk_protocol.py`` checks it on requests of every rule set), so the
    SHA-256 of a request (match logs) does not depend on which one made it.

    Raises:
        TypeError: ``obj`` holds something JSON cannot represent.
    """
    return _orjson_dumps(obj)


def loads(body: bytes | str) -> Any:
    """Parse JSON bytes/text; raises :class:`ValueError` (``json.JSONDecodeError``) when bad."""
    return json.loads(body)


# -- signatures ----------------------------------------------------------------------------
def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>`` of HMAC-SHA256(``secret``, ``timestamp + "." + body``)."""
    # hmac.digest: OpenSSL's one-shot HMAC, several times faster than an hmac.new object
    return "sha256=" + hmac.digest(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, "sha256").hex()


def sign(secret: str | None, body: bytes, now: float | None = None, *, previous: str | None = None) -> dict[str, str]:
    """Headers to send with ``body``: content type, protocol and, with a secret, the signature
    (and with ``previous``, a rotated secret in its grace period, the previous signature)."""
    headers = {"Content-Type": "application/json", PROTOCOL_HEADER: str(PROTOCOL_VERSION)}
    if secret:
        ts = str(int(time.time() if now is None else now))
        headers[TIMESTAMP_HEADER] = ts
        headers[SIGNATURE_HEADER] = signature(secret, ts, body)
        if previous:
            headers[PREVIOUS_SIGNATURE_HEADER] = signature(previous, ts, body)
    return headers


def verify(
    secret: str, body: bytes, headers: Mapping[str, str], *, max_skew_s: float = MAX_SKEW_S, now: float | None = None
) -> None:
    """Check the signature headers of a received message (``headers`` keys case-insensitive).

    Raises:
        SignatureError: a header is missing or malformed, the timestamp is more than
            ``max_skew_s`` seconds from ``now`` (default: the clock), or the HMAC differs.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    ts = lower.get(TIMESTAMP_HEADER.lower())
    sig = lower.get(SIGNATURE_HEADER.lower())
    if not ts or not sig:
        raise SignatureError(f"missing {TIMESTAMP_HEADER} or {SIGNATURE_HEADER} header")
    if not (ts.isascii() and ts.isdigit()):  # isdigit alone takes "\u00b2" and other scripts' digits
        raise SignatureError(f"{TIMESTAMP_HEADER} must be whole Unix seconds")
    clock = time.time() if now is None else now
    if abs(clock - int(ts)) > max_skew_s:
        raise SignatureError(f"{TIMESTAMP_HEADER} is more than {max_skew_s:g} s away from now")
    expected = signature(secret, ts, body)
    previous = lower.get(PREVIOUS_SIGNATURE_HEADER.lower(), "")
    # both compared, always: no timing difference between a current and a previous match
    current_ok = hmac.compare_digest(expected, sig.strip())
    previous_ok = hmac.compare_digest(expected, previous.strip()) if previous else False
    if not (current_ok or previous_ok):
        raise SignatureError("signature does not match the body")


# -- decision requests ----------------------------------------------------------------------
def time_block(rules: TimeRules, remaining_ms: int) -> dict[str, Any]:
    """The ``time`` object of a request (milliseconds, TIME-1)."""
    return {
        "initial_ms": rules.initial_ms,
        "increment_ms": rules.increment_ms,
        "cap_ms": rules.cap_ms,
        "remaining_ms": int(remaining_ms),
    }


def _choice(g: engine.Game, d: engine.Decision, obs: dict[str, Any]) -> dict[str, Any]:
    """What a card-choosing decision (penalty, give, discard) may pick."""
    info = d.info
    if d.kind == "penalty":  # MD-7: any cards of the (revealed) field, MD-16 min
        pool = [c for p in obs["field"] for c in p["cards"]]
        return {"from": pool, "min": int(info.get("min", 0)), "max": len(pool), "to": 1 - d.seat}
    hand = list(obs["hand"])
    if d.kind == "give" and "count" in info:  # JDF-4
        n = int(info["count"])
        return {"from": hand, "min": n, "max": n, "to": info.get("to")}
    n = min(int(info.get("max", 0)), len(hand))  # LR-5 give, LR-6 discard
    return {"from": hand, "min": 0, "max": n, "to": info.get("to")}


def build_request(
    g: engine.Game,
    seat: int,
    *,
    match_id: str,
    game: int,
    time_rules: TimeRules,
    remaining_ms: int,
    banks_ms: Sequence[int] | None = None,
) -> dict[str, Any]:
    """The decision request (protocol v1) for ``seat``, which must be the seat asked now.

    Shape (see ``schema/decision-request.schema.json``)::

        {"protocol": 1, "type": "decision", "match_id": str, "game": int, "unit": int,
         "ruleset": str, "options": {...}, "seat": int,
         "decision": {"kind": "play"|"doubt"|..., "info": {...}},
         "legal_actions": [ACT, ...] | null,   # play, doubt, exchange, rate
         "choice": {"from": [cards], "min": n, "max": n, "to": seat|null} | null,
         "face_down": {"allowed": true, "rule": str} | null,   # million_doubt plays
         "observation": {...},                 # engine.Game.observation(seat), C-11
         "time": {"initial_ms", "increment_ms", "cap_ms", "remaining_ms"},
         "banks_ms": [int, ...]}               # every seat's remaining bank, by seat

    ``game`` is the index of the engine game in the match (Million Doubt game number; 0 for
    the one Trump Millionaire game / JDF match); ``unit`` is the deal (TM) or game of the
    match (JDF) index, 0 in Million Doubt. Everything comes from the seat's observation and
    its own hand: nothing another seat hides (C-11). ``banks_ms``: every seat's remaining
    time bank in milliseconds, by seat, as the runner holds them when it sends the request
    (clocks are public, TIME-1: the live view shows them to any watcher); the asked seat's is
    ``remaining_ms`` whatever ``banks_ms`` says. None: no other seat has spent time yet
    (every other seat at ``time_rules.initial_ms``, as at the start of a deal or game).

    Raises:
        ProtocolError: ``seat`` is not the seat asked, or the game is over.
        ValueError: ``banks_ms`` does not have one entry per seat.
    """
    d = g.decision()
    if d is None or d.seat != seat:
        raise ProtocolError(f"seat {seat} is not asked for a decision")
    seats = g.seats
    banks = [int(b) for b in banks_ms] if banks_ms is not None else [time_rules.initial_ms] * seats
    if len(banks) != seats:
        raise ValueError(f"banks_ms has {len(banks)} entries for {seats} seats")
    banks[seat] = int(remaining_ms)
    obs = g.observation(seat)
    listed = d.kind in LISTED_KINDS
    req = {
        "protocol": PROTOCOL_VERSION,
        "type": "decision",
        "match_id": str(match_id),
        "game": int(game),
        "unit": int(g.unit_index),
        "ruleset": g.ruleset,
        "options": g.options.to_dict(),
        "seat": seat,
        "decision": {"kind": d.kind, "info": dict(d.info)},
        "legal_actions": list(g.legal_actions(seat)) if listed else None,
        "choice": None if listed else _choice(g, d, obs),
        "face_down": None,
        "observation": obs,
        "time": time_block(time_rules, remaining_ms),
        "banks_ms": banks,
    }
    rule = engine.get_ruleset(g.ruleset).face_down_rule()
    if rule is not None and d.kind == "play":
        req["face_down"] = {"allowed": True, "rule": rule}
    return req


# -- notices --------------------------------------------------------------------------------
def match_start_notice(
    *,
    match_id: str,
    ruleset: str,
    options: Mapping[str, Any],
    time_rules: TimeRules,
    players: list[str],
    you: int,
    games: int,
) -> dict[str, Any]:
    """``match_start`` notice: ``players`` are the bot names by player index, ``you`` is the
    receiver's index; seats per game are given in each decision request."""
    return {
        "protocol": PROTOCOL_VERSION,
        "type": "match_start",
        "match_id": str(match_id),
        "ruleset": ruleset,
        "options": dict(options),
        "time": time_block(time_rules, time_rules.initial_ms),
        "players": list(players),
        "you": you,
        "games": games,
    }


def match_end_notice(
    *,
    match_id: str,
    ruleset: str,
    players: list[str],
    you: int,
    scores: list[int],
    wins: list[int],
    faults: list[int],
    your_faults: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``match_end`` notice: per-player match scores, wins and fault counts (by player index);
    ``your_faults`` (when given): the receiving bot's own faults, each ``{"game", "n", "kind",
    "code", "params", "rule", "detail"}`` (docs/protocol.md, "Fault codes")."""
    out: dict[str, Any] = {
        "protocol": PROTOCOL_VERSION,
        "type": "match_end",
        "match_id": str(match_id),
        "ruleset": ruleset,
        "players": list(players),
        "you": you,
        "scores": list(scores),
        "wins": list(wins),
        "faults": list(faults),
    }
    if your_faults is not None:
        out["your_faults"] = list(your_faults)
    return out


def health(name: str) -> dict[str, Any]:
    """Body of the health check answer."""
    return {"name": name, "protocol": PROTOCOL_VERSION, "protocols": list(SUPPORTED_PROTOCOLS)}


# -- schemas --------------------------------------------------------------------------------
@cache
def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema ``name`` (one of :data:`SCHEMAS`) as a dict."""
    if name not in SCHEMAS:
        raise KeyError(f"unknown schema {name!r}; known: {', '.join(SCHEMAS)}")
    schema: dict[str, Any] = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    return schema


@cache
def _validator(name: str) -> Any:  # a jsonschema validator (jsonschema is imported when first needed)
    import jsonschema
    from referencing import Registry, Resource

    registry = Registry().with_resources(
        (load_schema(n)["$id"], Resource.from_contents(load_schema(n))) for n in SCHEMAS
    )
    schema = load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=registry)


def schema_errors(name: str, message: Any) -> list[str]:
    """Messages of every way ``message`` breaks schema ``name`` (empty when valid)."""
    out = []
    for e in sorted(_validator(name).iter_errors(message), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        out.append(f"{where}: {e.message}")
    return out


def validate(name: str, message: Any) -> None:
    """Raise :class:`ProtocolError` naming the first problem if ``message`` breaks schema ``name``."""
    errors = schema_errors(name, message)
    if errors:
        raise ProtocolError(errors[0])
