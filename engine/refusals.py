"""The engine's refusals of an action as codes with parameters (C-12).

Every :class:`engine.InvalidAction` carries one :class:`Refusal` code, its parameters (a dict
of ``str`` or ``int`` values) and the rule id it breaks. Its English reason is rendered from
the code's template (:data:`TEMPLATES`, ``%(name)s`` fields) and its parameters, never written
at the raise: the match log stores the code and the parameters beside the rendered English,
and the pages translate by code (``api/ui/faults.py``), so a reworded template changes no page.

This module is data (not compiled by mypyc: ``engine/_build.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final


class Refusal(StrEnum):
    """The engine's refusal codes (the value is what the log stores)."""

    GAME_OVER = "game_over"
    NO_SEAT = "no_seat"
    NOT_AN_OBJECT = "action_not_object"
    MISSING_FIELD = "missing_field"
    UNKNOWN_TYPE = "unknown_action_type"
    NO_DECISION = "no_decision"
    NOT_ASKED = "seat_not_asked"
    NOT_AN_ANSWER = "not_an_answer"
    NOT_AN_ANSWER_TYPED = "not_an_answer_typed"
    NOT_CARD_LIST = "not_card_list"
    UNKNOWN_CARD = "unknown_card"
    JOKER_RANKS = "joker_ranks"
    JOKER_COUNT = "joker_count"
    FACE_DOWN_NOT_IN_CARDS = "face_down_not_in_cards"
    FACE_DOWN_RULESET = "face_down_ruleset"
    EMPTY_PLAY = "empty_play"
    NOT_HELD = "not_held"
    TRICK_COUNT = "trick_count"
    NO_FORM = "no_form"
    NO_FORM_DECLARED = "no_form_declared"
    SUIT_LOCK = "suit_lock"
    NOT_HIGHER = "not_higher"
    NUMBER_LOCK = "number_lock"
    LAST_PLAY_SPECIAL = "last_play_special"
    FOLLOW_UP_EMPTIES = "follow_up_empties"
    GIVE_AT_MOST = "give_at_most"
    DISCARD_AT_MOST = "discard_at_most"
    GIVE_EXACTLY = "give_exactly"
    LEADER_PASS = "leader_pass"
    ACCEPT_BOOLEAN = "accept_boolean"
    RATE_CHOICE = "rate_choice"
    JOKER_UNBEATABLE = "joker_unbeatable"
    NO_READING_BEATS = "no_reading_beats"
    PENALTY_NOT_FIELD = "penalty_not_field"
    PENALTY_EMPTY = "penalty_empty"
    LOG_ACTION = "log_action"


#: The English template of each code; its ``%(name)s`` fields are the code's parameters.
TEMPLATES: Final[Mapping[Refusal, str]] = {
    Refusal.GAME_OVER: "the game is over",
    Refusal.NO_SEAT: "no seat %(seat)s in %(ruleset)s",
    Refusal.NOT_AN_OBJECT: "an action must be a JSON object",
    Refusal.MISSING_FIELD: "missing field '%(field)s'",
    Refusal.UNKNOWN_TYPE: "unknown action type %(type)s",
    Refusal.NO_DECISION: "no decision is pending",
    Refusal.NOT_ASKED: "seat %(seat)s is not asked; seat %(asked)s must %(kind)s",
    Refusal.NOT_AN_ANSWER: "action '%(type)s' does not answer a '%(kind)s' decision (expected %(expected)s)",
    Refusal.NOT_AN_ANSWER_TYPED: "%(type)s of seat %(seat)s does not answer %(decision)s",
    Refusal.NOT_CARD_LIST: "field '%(field)s' must be a list of card strings",
    Refusal.UNKNOWN_CARD: "field '%(field)s': unknown card %(card)s",
    Refusal.JOKER_RANKS: "field 'jokers' must be a list of ranks from %(ranks)s",
    Refusal.JOKER_COUNT: "'jokers' declares %(n)s rank(s) for %(jokers)s joker(s) in the play",
    Refusal.FACE_DOWN_NOT_IN_CARDS: "'face_down' must be a sub-multiset of 'cards'",
    Refusal.FACE_DOWN_RULESET: "face-down cards exist only in million_doubt, not %(ruleset)s",
    Refusal.EMPTY_PLAY: "a play needs at least one card",
    Refusal.NOT_HELD: "seat %(seat)s does not hold %(cards)s",
    Refusal.TRICK_COUNT: "the trick is of %(count)s card(s); this play has %(n)s",
    Refusal.NO_FORM: "%(cards)s is not a legal form",
    Refusal.NO_FORM_DECLARED: "%(cards)s is not a legal form with the declared joker ranks",
    Refusal.SUIT_LOCK: "the suit lock %(suits)s is not matched",
    Refusal.NOT_HIGHER: "%(cards)s does not beat the last play (%(ref)s)",
    Refusal.NUMBER_LOCK: "under the number lock the play must be of rank %(rank)s",
    Refusal.LAST_PLAY_SPECIAL: "a last play may not hold a joker, an 8 or a 2 (a 3 in revolution)",
    Refusal.FOLLOW_UP_EMPTIES: (
        "this give/discard would empty the hand after a play with a joker, an 8 or a 2 (a 3 in revolution)"
    ),
    Refusal.GIVE_AT_MOST: "you may give at most %(n)s card(s)",
    Refusal.DISCARD_AT_MOST: "you may discard at most %(n)s card(s)",
    Refusal.GIVE_EXACTLY: "give exactly %(n)s card(s), not %(m)s",
    Refusal.LEADER_PASS: "the leader may not pass",
    Refusal.ACCEPT_BOOLEAN: "field 'accept' must be true or false",
    Refusal.RATE_CHOICE: "rate must be one of %(rates)s",
    Refusal.JOKER_UNBEATABLE: "nothing beats a face-up lone joker or joker pair: pass",
    Refusal.NO_READING_BEATS: "no reading of %(cards)s beats the reference (%(ref)s)",
    Refusal.PENALTY_NOT_FIELD: "the penalty must be cards of the field; %(cards)s is not",
    Refusal.PENALTY_EMPTY: "after a caught lie on the last card the penalty must hold at least one card",
    Refusal.LOG_ACTION: "log action %(index)s: %(reason)s",
}

#: A refusal's parameters: names of the template's fields -> text or integers.
Params = Mapping[str, "str | int"]


def render(code: Refusal, params: Params) -> str:
    """The English reason of ``code`` with ``params`` (its template's fields)."""
    return TEMPLATES[code] % params
