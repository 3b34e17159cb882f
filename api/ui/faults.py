"""Fault details in the page's language, by code.

A fault record (a match log's, a check's fault row, a replay frame's fault) carries its code,
its parameters and the rule id it breaks (:mod:`arena.faults`: the arena's codes and the
engine's refusals), beside its English ``detail``. :func:`fault_detail` shows the page's own
message of the code (:data:`MESSAGES`, a gettext msgid per code, translated in
``api/ui/translations``) with the record's parameters (cards, numbers, exception names kept as
they are) and the rule id after it. The engine's and the runner's English templates are not
read here: rewording one changes no page.

A record without a code (a log written before codes, version 1) or with a code this page has
no message for shows its English ``detail`` as it is. ``tests/api/ui/test_papercuts.py``
checks that every code has a message whose fields are the code's parameters, and that every
message is translated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from flask_babel import gettext as _

from api.ui.i18n import N_
from arena.faults import FaultCode, of_record
from engine.refusals import Refusal

#: The page's message of every code (its ``%(name)s`` fields are the code's parameters).
MESSAGES: Final[Mapping[str, str]] = {
    # the transport and the time bank
    FaultCode.NO_COMPLETE_ANSWER: N_("no complete answer within the bank (%(exc)s)"),
    FaultCode.NO_ANSWER: N_("no answer within the bank"),
    FaultCode.OVER_BANK: N_("the answer took %(ms)s ms, more than the bank"),
    FaultCode.OWN_TIME_OVER_BANK: N_("the answer took %(ms)s ms; the bank had %(bank)s ms"),
    FaultCode.CUT_OFF: N_("cut off at the end of the bank (%(exc)s: %(why)s)"),
    FaultCode.CONNECTION_FAILED: N_("connection failed (%(exc)s): %(why)s"),
    FaultCode.NOT_CONNECTED: N_("the bot had no connection to a gateway for %(ms)s ms"),
    FaultCode.HTTP_STATUS: N_("HTTP status %(status)s (not 200)"),
    FaultCode.BODY_OVER: N_("the answer body is over %(n)s bytes"),
    FaultCode.BODY_PIECES: N_("the answer body came in more than %(n)s pieces (chunks or reads)"),
    FaultCode.WIRE_OVER: N_(
        "the answer took more than %(n)s bytes on the wire (headers, 1xx answers and chunk framing included)"
    ),
    FaultCode.WITHDRAWN: N_("withdrawn: the bot was deleted"),
    FaultCode.BOT_RAISED: N_("the bot raised %(exc)s: %(why)s"),
    FaultCode.NOT_SERIALIZABLE: N_("the answer cannot be written as JSON: %(why)s"),
    FaultCode.MAX_FAULTS: N_("forfeits the rest of the match (FAULT-3)"),
    # the answer's JSON
    FaultCode.NOT_UTF8: N_("the answer is not UTF-8 (byte %(n)s)"),
    FaultCode.NOT_STRICT_JSON: N_("the answer is not strict JSON: %(why)s"),
    FaultCode.NOT_JSON: N_("the answer is not JSON: %(why)s (line %(line)s, column %(col)s)"),
    FaultCode.NOT_JSON_ERROR: N_("the answer is not JSON (%(exc)s)"),
    FaultCode.TOO_DEEP: N_("the answer nests deeper than %(n)s levels"),
    FaultCode.ANSWER_NOT_OBJECT: N_("the answer is not a JSON object"),
    FaultCode.LONE_SURROGATE: N_("the answer holds a lone surrogate (not UTF-8 text)"),
    FaultCode.FRAME_ID_MISMATCH: N_("the answer frame's id is not the request's"),
    FaultCode.FRAME_BODY_NOT_OBJECT: N_("the body of the answer frame is not a JSON object"),
    # a connection's frames
    FaultCode.BINARY_FRAME: N_("the bot sent a binary frame"),
    FaultCode.FRAME_NOT_OBJECT: N_("a frame is not a JSON object"),
    FaultCode.UNKNOWN_REQUEST_ID: N_("the bot sent an answer to an unknown request id"),
    FaultCode.NO_REQUEST_ID: N_("the bot sent an answer without a request id"),
    FaultCode.FRAME_OVER: N_("a frame over %(n)s bytes"),
    FaultCode.FLOOD: N_(
        "the gateway closed the connection: a flood of frames (more than %(burst)s pings, pongs or fragments"
        " at once, %(rate)s a second)"
    ),
    FaultCode.SLOW_READER: N_("the bot did not read its frames (slow reader): the connection was dropped"),
    FaultCode.BROKEN_RELAYED_FAULT: N_("the gateway sent a broken fault"),
    # the action's shape
    FaultCode.ACTION_NOT_OBJECT: N_("the action must be a JSON object"),
    FaultCode.TYPE_NOT_KNOWN: N_("field 'type' must be one of %(kinds)s"),
    FaultCode.KEY_NOT_ALLOWED: N_("key '%(key)s' is not allowed in a '%(kind)s' action"),
    FaultCode.KEY_NOT_ALLOWED_UNNAMED: N_("a key is not allowed in a '%(kind)s' action"),
    FaultCode.FIELD_REQUIRED: N_("field '%(field)s' is required in a '%(kind)s' action"),
    FaultCode.COMMENT_TOO_LONG: N_("field 'comment' must be a string of at most %(n)s characters"),
    FaultCode.CARDS_NOT_LIST: N_("field '%(field)s' must be a list of at most %(n)s cards (C-1)"),
    FaultCode.PLAY_EMPTY: N_("field 'cards' of a play must not be empty"),
    FaultCode.JOKERS_NOT_RANKS: N_("field 'jokers' must be a list of ranks (C-4)"),
    FaultCode.ACCEPT_NOT_BOOLEAN: N_("field 'accept' must be true or false"),
    FaultCode.RATE_NOT_INTEGER: N_("field 'rate' must be an integer of at least 1"),
    # the engine's refusals (engine.refusals)
    Refusal.GAME_OVER: N_("the game is over"),
    Refusal.NO_SEAT: N_("there is no seat %(seat)s in %(ruleset)s"),
    Refusal.NOT_AN_OBJECT: N_("the action must be a JSON object"),
    Refusal.MISSING_FIELD: N_("missing field '%(field)s'"),
    Refusal.UNKNOWN_TYPE: N_("unknown action type %(type)s"),
    Refusal.NO_DECISION: N_("no decision is pending"),
    Refusal.NOT_ASKED: N_("seat %(seat)s is not asked; seat %(asked)s must answer '%(kind)s'"),
    Refusal.NOT_AN_ANSWER: N_("action '%(type)s' does not answer a '%(kind)s' decision (expected %(expected)s)"),
    Refusal.NOT_AN_ANSWER_TYPED: N_("%(type)s of seat %(seat)s does not answer %(decision)s"),
    Refusal.NOT_CARD_LIST: N_("field '%(field)s' must be a list of card strings"),
    Refusal.UNKNOWN_CARD: N_("field '%(field)s': unknown card %(card)s"),
    Refusal.JOKER_RANKS: N_("field 'jokers' must be a list of ranks (C-4)"),
    Refusal.JOKER_COUNT: N_("'jokers' declares %(n)s rank(s) for %(jokers)s joker(s) in the play"),
    Refusal.FACE_DOWN_NOT_IN_CARDS: N_("'face_down' must be cards of 'cards'"),
    Refusal.FACE_DOWN_RULESET: N_("face-down cards exist only in Million Doubt, not in %(ruleset)s"),
    Refusal.EMPTY_PLAY: N_("a play needs at least one card"),
    Refusal.NOT_HELD: N_("seat %(seat)s does not hold %(cards)s"),
    Refusal.TRICK_COUNT: N_("the trick is of %(count)s card(s); this play has %(n)s"),
    Refusal.NO_FORM: N_("%(cards)s is not a legal form"),
    Refusal.NO_FORM_DECLARED: N_("%(cards)s is not a legal form with the declared joker ranks"),
    Refusal.SUIT_LOCK: N_("the suit lock %(suits)s is not matched"),
    Refusal.NOT_HIGHER: N_("%(cards)s does not beat the last play (%(ref)s)"),
    Refusal.NUMBER_LOCK: N_("under the number lock the play must be of rank %(rank)s"),
    Refusal.LAST_PLAY_SPECIAL: N_("a last play may not hold a joker, an 8 or a 2 (a 3 in revolution)"),
    Refusal.FOLLOW_UP_EMPTIES: N_(
        "this give or discard would empty the hand after a play with a joker, an 8 or a 2 (a 3 in revolution)"
    ),
    Refusal.GIVE_AT_MOST: N_("you may give at most %(n)s card(s)"),
    Refusal.DISCARD_AT_MOST: N_("you may discard at most %(n)s card(s)"),
    Refusal.GIVE_EXACTLY: N_("give exactly %(n)s card(s), not %(m)s"),
    Refusal.LEADER_PASS: N_("the leader may not pass"),
    Refusal.ACCEPT_BOOLEAN: N_("field 'accept' must be true or false"),
    Refusal.RATE_CHOICE: N_("the rate must be one of %(rates)s"),
    Refusal.JOKER_UNBEATABLE: N_("nothing beats a face-up lone joker or joker pair: pass"),
    Refusal.NO_READING_BEATS: N_("no reading of %(cards)s beats the reference (%(ref)s)"),
    Refusal.PENALTY_NOT_FIELD: N_("the penalty must be cards of the field; %(cards)s is not"),
    Refusal.PENALTY_EMPTY: N_("after a caught lie on the last card the penalty must hold at least one card"),
    Refusal.LOG_ACTION: N_("log action %(index)s: %(reason)s"),
}


def fault_detail(record: Mapping[str, Any] | None) -> str:
    """A fault's detail in the current locale (module docstring); ``""`` for None."""
    if not record:
        return ""
    english = str(record.get("detail") or "")
    fault = of_record(record)
    message = MESSAGES.get(fault.code) if fault is not None else None
    if fault is None or message is None:
        return english  # a log from before codes, or a code of a newer arena: its English as is
    try:
        text = _(message, **fault.params)
    except (KeyError, TypeError, ValueError):  # parameters that do not fit: the English
        return english or fault.text()
    return f"{text} [{fault.rule}]" if fault.rule else text
