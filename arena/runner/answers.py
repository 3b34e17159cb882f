"""A bot's answer bytes -> an action, or a fault (FAULT-1), never an exception.

Two steps, both total functions (they return, whatever the bytes):

1. :func:`arena.safejson.parse_answer` (fault ``invalid_json``): strict JSON in UTF-8, a
   JSON object at the top (the strict-JSON reader's rules for bot answers).
2. :func:`check_action` (fault ``invalid_action``, rule ``ACT``): the object is exactly one
   shape of ``docs/schema/action-response.schema.json``: a known ``type``, only the keys of
   that type (plus ``comment``: a string of at most 256 characters), each of the right JSON
   type (cards: card strings of C-1, at most 54; jokers: rank letters; ``accept`` a boolean;
   ``rate`` an integer >= 1). Any other key is invalid (docs/protocol.md, FAULT-1).

Both run in time linear in the body and never run a regular expression on a bot's text
(docs/operations.md, "Hostile input and outages").

What passes both steps holds only finite numbers, bounded integers and strings that encode
to UTF-8, so a log holding it is strict JSON (:func:`arena.matchlog.encode` cannot fail
on it). :func:`safe_text` makes the raw text kept with a fault (``received``) the same.
"""

from __future__ import annotations

from typing import Any

from arena.faults import Fault, FaultCode, fault

#: Longest ``comment`` of an action, characters (docs/protocol.md).
MAX_COMMENT_CHARS = 256
#: Most cards in one ``cards``/``face_down`` list (a 54-card deck).
MAX_CARDS = 54

_RANKS = frozenset("3456789TJQKA2")
#: Every card string of C-1 (a set: no regular expression ever runs on a bot's text).
_CARDS = frozenset({r + s for r in _RANKS for s in "SHDC"} | {"JK"})
#: Keys allowed per action type (``type`` and ``comment`` are allowed for every type).
_KEYS: dict[str, frozenset[str]] = {
    "play": frozenset({"cards", "jokers", "face_down"}),
    "pass": frozenset(),
    "doubt": frozenset(),
    "through": frozenset(),
    "penalty": frozenset({"cards"}),
    "give": frozenset({"cards"}),
    "discard": frozenset({"cards"}),
    "exchange": frozenset({"accept"}),
    "rate": frozenset({"rate"}),
}
_REQUIRED: dict[str, frozenset[str]] = {
    "play": frozenset({"cards"}),
    "penalty": frozenset({"cards"}),
    "give": frozenset({"cards"}),
    "discard": frozenset({"cards"}),
    "exchange": frozenset({"accept"}),
    "rate": frozenset({"rate"}),
}


def check_action(action: Any) -> Fault | None:
    """Check an action's shape (module docstring, step 2). Returns None when valid, else the
    fault (rule ``ACT``) naming the field (never quoting the bot's values)."""
    if not isinstance(action, dict):
        return fault(FaultCode.ACTION_NOT_OBJECT, "ACT")
    kind = action.get("type")
    if not isinstance(kind, str) or kind not in _KEYS:
        return fault(FaultCode.TYPE_NOT_KNOWN, "ACT", kinds=", ".join(sorted(_KEYS)))
    return _check_keys(kind, action) or _check_cards(kind, action) or _check_scalars(action)


def _check_keys(kind: str, action: dict[str, Any]) -> Fault | None:
    """Only the keys of ``kind`` (and ``comment``), the required ones present."""
    allowed = _KEYS[kind]
    for key in action:
        if key not in allowed and key not in ("type", "comment"):
            if isinstance(key, str) and len(key) <= 32 and key.isidentifier():
                return fault(FaultCode.KEY_NOT_ALLOWED, "ACT", kind=kind, key=key)
            return fault(FaultCode.KEY_NOT_ALLOWED_UNNAMED, "ACT", kind=kind)
    missing = _REQUIRED.get(kind, frozenset()) - action.keys()
    if missing:
        return fault(FaultCode.FIELD_REQUIRED, "ACT", field=sorted(missing)[0], kind=kind)
    return None


def _check_cards(kind: str, action: dict[str, Any]) -> Fault | None:
    """``comment``, the card lists and ``jokers``."""
    if "comment" in action:
        c = action["comment"]
        if not isinstance(c, str) or len(c) > MAX_COMMENT_CHARS:
            return fault(FaultCode.COMMENT_TOO_LONG, "ACT", n=MAX_COMMENT_CHARS)
    for key in ("cards", "face_down"):
        if key in action:
            v = action[key]
            if not isinstance(v, list) or len(v) > MAX_CARDS or not all(isinstance(c, str) and c in _CARDS for c in v):
                return fault(FaultCode.CARDS_NOT_LIST, "ACT", field=key, n=MAX_CARDS)
    if kind == "play" and not action["cards"]:
        return fault(FaultCode.PLAY_EMPTY, "ACT")
    if "jokers" in action:
        v = action["jokers"]
        if not isinstance(v, list) or len(v) > MAX_CARDS or not all(isinstance(r, str) and r in _RANKS for r in v):
            return fault(FaultCode.JOKERS_NOT_RANKS, "ACT")
    return None


def _check_scalars(action: dict[str, Any]) -> Fault | None:
    """``accept`` and ``rate``."""
    if "accept" in action and not isinstance(action["accept"], bool):
        return fault(FaultCode.ACCEPT_NOT_BOOLEAN, "ACT")
    if "rate" in action:
        r = action["rate"]
        if isinstance(r, bool) or not isinstance(r, int) or r < 1:
            return fault(FaultCode.RATE_NOT_INTEGER, "ACT")
    return None


def safe_text(raw: bytes | str, limit: int) -> str:
    """What a fault keeps of a bot's raw answer: at most ``limit`` characters of text that
    always encodes to UTF-8 (invalid bytes become U+FFFD, lone surrogates ``?``), with
    ``...`` when cut."""
    if isinstance(raw, bytes):
        text = raw[: limit * 4 + 4].decode("utf-8", "replace")
    else:
        text = raw.encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> '?'
    return text if len(text) <= limit else text[:limit] + "..."
