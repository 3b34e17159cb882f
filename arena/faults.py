"""Faults as codes with parameters: the one catalogue of what a bot's fault says (FAULT-1).

A fault's detail is a :class:`Fault`: a code, its parameters (``str`` or ``int`` values) and,
for an invalid action, the rule id it breaks. The codes are :class:`FaultCode` (the runner,
the answer parser, the action's shape, the gateways: this module) and
:class:`engine.Refusal` (the engine's refusals, with their templates in
:mod:`engine.refusals`). Each code has one English template (``%(name)s`` fields: the
parameters); :meth:`Fault.text` renders it, with `` [RULE]`` after it when there is a rule,
and that text is the ``detail`` the match log, the API and the CLI show. The log keeps the
code and parameters beside it (:func:`record_fields`; log version 2, docs/protocol.md), the
pages translate by code (``api/ui/faults.py``), and a bot sees them in its ``match_end``
notice.

A log written before codes (version 1) has the English detail alone; :func:`of_record` gives
None for such a fault, and readers show its detail as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from engine.refusals import TEMPLATES as REFUSAL_TEMPLATES
from engine.refusals import Refusal

#: A fault's parameters: template field -> text or integer.
Params = Mapping[str, "str | int"]
#: Longest text parameter kept (an exception's own words, a frame's complaint), characters.
MAX_PARAM_CHARS = 300


class FaultCode(StrEnum):
    """The arena's fault codes (the value is what the log, the relay and notices carry)."""

    # the transport and the time bank (arena.runner.players, .connected, .local_gateway, .match)
    NO_COMPLETE_ANSWER = "no_complete_answer"
    NO_ANSWER = "no_answer"
    OVER_BANK = "over_bank"
    OWN_TIME_OVER_BANK = "own_time_over_bank"
    CUT_OFF = "cut_off"
    CONNECTION_FAILED = "connection_failed"
    NOT_CONNECTED = "not_connected"
    HTTP_STATUS = "http_status"
    BODY_OVER = "body_over"
    BODY_PIECES = "body_pieces"
    WIRE_OVER = "wire_over"
    WITHDRAWN = "withdrawn"
    BOT_RAISED = "bot_raised"
    NOT_SERIALIZABLE = "not_serializable"
    MAX_FAULTS = "max_faults"
    # the answer's JSON (arena.safejson.parse_answer, and an answer frame's wrapper)
    NOT_UTF8 = "not_utf8"
    NOT_STRICT_JSON = "not_strict_json"
    NOT_JSON = "not_json"
    NOT_JSON_ERROR = "not_json_error"
    TOO_DEEP = "too_deep"
    ANSWER_NOT_OBJECT = "answer_not_object"
    LONE_SURROGATE = "lone_surrogate"
    FRAME_ID_MISMATCH = "frame_id_mismatch"
    FRAME_BODY_NOT_OBJECT = "frame_body_not_object"
    # a connection's frames (daifugo_arena.gateway.server, arena.runner.local_gateway): its requests in flight
    BINARY_FRAME = "binary_frame"
    FRAME_NOT_OBJECT = "frame_not_object"
    UNKNOWN_REQUEST_ID = "unknown_request_id"
    NO_REQUEST_ID = "no_request_id"
    FRAME_OVER = "frame_over"
    FLOOD = "flood"
    SLOW_READER = "slow_reader"
    BROKEN_RELAYED_FAULT = "broken_relayed_fault"
    RELAYED = "relayed"
    # the action's shape (arena.runner.answers.check_action, rule ACT)
    ACTION_NOT_OBJECT = "shape_not_object"
    TYPE_NOT_KNOWN = "shape_type"
    KEY_NOT_ALLOWED = "shape_key"
    KEY_NOT_ALLOWED_UNNAMED = "shape_key_unnamed"
    FIELD_REQUIRED = "shape_required"
    COMMENT_TOO_LONG = "shape_comment"
    CARDS_NOT_LIST = "shape_cards"
    PLAY_EMPTY = "shape_play_empty"
    JOKERS_NOT_RANKS = "shape_jokers"
    ACCEPT_NOT_BOOLEAN = "shape_accept"
    RATE_NOT_INTEGER = "shape_rate"


#: The English template of each arena code; its ``%(name)s`` fields are the parameters.
TEMPLATES: Final[Mapping[FaultCode, str]] = {
    FaultCode.NO_COMPLETE_ANSWER: "no complete answer within the bank (%(exc)s)",
    FaultCode.NO_ANSWER: "no answer within the bank",
    FaultCode.OVER_BANK: "answer took %(ms)s ms, more than the bank",
    FaultCode.OWN_TIME_OVER_BANK: "answer took %(ms)s ms of the bot's own time, the bank had %(bank)s ms",
    FaultCode.CUT_OFF: "cut off at the end of the bank (%(exc)s: %(why)s)",
    FaultCode.CONNECTION_FAILED: "%(exc)s: %(why)s",
    FaultCode.NOT_CONNECTED: "the bot had no connection to a gateway for %(ms)s ms",
    FaultCode.HTTP_STATUS: "HTTP status %(status)s",
    FaultCode.BODY_OVER: "answer body over %(n)s bytes",
    FaultCode.BODY_PIECES: "answer body in more than %(n)s pieces (chunks or reads)",
    FaultCode.WIRE_OVER: "answer over %(n)s bytes on the wire (headers, 1xx answers and chunk framing included)",
    FaultCode.WITHDRAWN: "withdrawn: the bot was deleted",
    FaultCode.BOT_RAISED: "%(exc)s: %(why)s",
    FaultCode.NOT_SERIALIZABLE: "answer is not JSON-serializable: %(why)s",
    FaultCode.MAX_FAULTS: "forfeits the rest of the match (FAULT-3)",
    FaultCode.NOT_UTF8: "answer is not UTF-8 (byte %(n)s)",
    FaultCode.NOT_STRICT_JSON: "answer is not strict JSON: %(why)s",
    FaultCode.NOT_JSON: "answer is not JSON: %(why)s (line %(line)s column %(col)s)",
    FaultCode.NOT_JSON_ERROR: "answer is not JSON (%(exc)s)",
    FaultCode.TOO_DEEP: "answer nests deeper than %(n)s levels",
    FaultCode.ANSWER_NOT_OBJECT: "answer is not a JSON object",
    FaultCode.LONE_SURROGATE: "answer holds a lone surrogate (not UTF-8 text)",
    FaultCode.FRAME_ID_MISMATCH: "the answer frame's id is not the request's",
    FaultCode.FRAME_BODY_NOT_OBJECT: "the answer's body is not a JSON object",
    FaultCode.BINARY_FRAME: "the bot sent a binary frame",
    FaultCode.FRAME_NOT_OBJECT: "a frame is not a JSON object",
    FaultCode.UNKNOWN_REQUEST_ID: "the bot sent an answer to an unknown request id",
    FaultCode.NO_REQUEST_ID: "the bot sent an answer without a request id",
    FaultCode.FRAME_OVER: "a frame over %(n)s bytes",
    FaultCode.FLOOD: (
        "the gateway closed the connection: a flood of frames (more than %(burst)s pings, pongs or fragments"
        " at once, %(rate)s a second)"
    ),
    FaultCode.SLOW_READER: "the bot did not read its frames (slow reader): connection dropped",
    FaultCode.BROKEN_RELAYED_FAULT: "the gateway sent a broken fault",
    FaultCode.RELAYED: "%(detail)s",
    FaultCode.ACTION_NOT_OBJECT: "the action must be a JSON object",
    FaultCode.TYPE_NOT_KNOWN: "field 'type' must be one of %(kinds)s",
    FaultCode.KEY_NOT_ALLOWED: "key not allowed in a '%(kind)s' action: '%(key)s'",
    FaultCode.KEY_NOT_ALLOWED_UNNAMED: "key not allowed in a '%(kind)s' action",
    FaultCode.FIELD_REQUIRED: "field '%(field)s' is required in a '%(kind)s' action",
    FaultCode.COMMENT_TOO_LONG: "field 'comment' must be a string of at most %(n)s characters",
    FaultCode.CARDS_NOT_LIST: "field '%(field)s' must be a list of at most %(n)s cards (C-1)",
    FaultCode.PLAY_EMPTY: "field 'cards' of a play must not be empty",
    FaultCode.JOKERS_NOT_RANKS: "field 'jokers' must be a list of ranks (C-4)",
    FaultCode.ACCEPT_NOT_BOOLEAN: "field 'accept' must be a boolean",
    FaultCode.RATE_NOT_INTEGER: "field 'rate' must be an integer >= 1",
}

_FIELD = re.compile(r"%\((\w+)\)s")
_ARENA_CODES = frozenset(c.value for c in FaultCode)
_REFUSAL_CODES = frozenset(c.value for c in Refusal)


def template(code: str) -> str | None:
    """The English template of ``code`` (an arena code or an engine refusal), or None for a
    code this version does not know (a newer gateway's)."""
    if code in _ARENA_CODES:
        return TEMPLATES[FaultCode(code)]
    if code in _REFUSAL_CODES:
        return REFUSAL_TEMPLATES[Refusal(code)]
    return None


def param_names(code: str) -> frozenset[str]:
    """The parameters ``code`` takes: its template's fields (its shape)."""
    return frozenset(_FIELD.findall(template(code) or ""))


def _clip(value: Any) -> str | int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).encode("utf-8", "replace").decode("utf-8")  # strict UTF-8 (a log is)
    return text if len(text) <= MAX_PARAM_CHARS else text[:MAX_PARAM_CHARS] + "..."


@dataclass(frozen=True)
class Fault:
    """One fault's detail: ``code``, ``params`` (text parameters clipped to
    :data:`MAX_PARAM_CHARS` characters of strict UTF-8) and ``rule`` (the rule id of an
    invalid action, else None). ``str(fault)`` is :meth:`text`."""

    code: str
    params: Mapping[str, str | int] = field(default_factory=dict)
    rule: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", {k: _clip(v) for k, v in self.params.items()})

    def text(self) -> str:
        """The English detail: the code's template with the parameters, `` [RULE]`` after."""
        return render(self.code, self.params, self.rule)

    def __str__(self) -> str:
        return self.text()

    def fields(self) -> dict[str, Any]:
        """``{"code", "params"}`` and ``"rule"`` when there is one: what a log's fault record,
        a relayed fault, a check's fault row and a notice carry."""
        out: dict[str, Any] = {"code": str(self.code), "params": dict(self.params)}
        if self.rule is not None:
            out["rule"] = self.rule
        return out


def plain(why: Fault | None) -> str:
    """The English of ``why`` without its rule id (a refusal shown beside its rule's link);
    ``""`` for None."""
    return render(why.code, why.params, None) if why is not None else ""


def fault(code: FaultCode, rule: str | None = None, **params: Any) -> Fault:
    """A :class:`Fault` of an arena code (``params`` as keywords)."""
    return Fault(code.value, params, rule)


def refused(code: Refusal, params: Params, rule: str) -> Fault:
    """The :class:`Fault` of an engine refusal (``engine.InvalidAction``'s code, params, rule)."""
    return Fault(code.value, params, rule)


def render(code: str, params: Params, rule: str | None = None) -> str:
    """The English text of a code with its parameters (`` [RULE]`` after it when given); a
    code this version does not know, or parameters that do not fit its template, render as
    the code and the parameters."""
    tpl = template(code)
    try:
        text = tpl % params if tpl is not None else ""
    except (KeyError, TypeError, ValueError):
        text = ""
    if not text:
        text = f"{code} {dict(params)}" if params else str(code)
    return f"{text} [{rule}]" if rule else text


def of_record(record: Mapping[str, Any]) -> Fault | None:
    """The :class:`Fault` of a log's fault record (or a check's fault row, a relayed fault),
    or None for one written before codes (log version 1: its ``detail`` is all there is)."""
    code, params = record.get("code"), record.get("params")
    if not isinstance(code, str) or not isinstance(params, dict):
        return None
    rule = record.get("rule")
    return Fault(code, params, rule if isinstance(rule, str) else None)
