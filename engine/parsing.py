"""Action parsing (ACT): an action as on the wire (a dict) -> a typed action
(:mod:`engine.actions`), each malformed field refused with its rule id (ACT, C-1, C-4, MD-2,
C-12) and nothing changed.

:class:`ActionParsing` extends :class:`engine.trick.TrickRules`; :class:`engine.game.Game`
extends it and dispatches each parsed action to its handler.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

from engine.actions import (
    DOUBT,
    PASS,
    THROUGH,
    DiscardAction,
    DoubtAction,
    GiveAction,
    PassAction,
    PenaltyAction,
    PlayAction,
    ThroughAction,
)
from engine.cards import CARD_CODES, JOKER, RANKS, CardError, parse_card
from engine.decisions import ACTION_TYPES, ANSWERS, Action, InvalidAction
from engine.field import holds_all
from engine.refusals import Refusal
from engine.state import mypyc_attr
from engine.trick import TrickRules

#: The parser method of each action type (a method of :class:`Game` or of the rule set):
#: ``parser(game, seat, wire action) -> typed action`` (:mod:`engine.actions`); it raises
#: :class:`InvalidAction` naming the malformed field and changes nothing.
PARSERS: Final[dict[str, str]] = {
    "play": "_parse_play",
    "pass": "_parse_pass",
    "doubt": "_parse_doubt",
    "through": "_parse_through",
    "penalty": "_parse_penalty",
    "exchange": "_parse_exchange",
    "rate": "_parse_rate",
    "give": "_parse_give",
    "discard": "_parse_discard",
}


@mypyc_attr(allow_interpreted_subclasses=True)
class ActionParsing(TrickRules):
    """The parsers of the action types (``PARSERS``) and the checks every action passes first."""

    #: Whether a play may put cards face down (MD-2: only in Million Doubt).
    FACE_DOWN_PLAYS: ClassVar[bool] = False

    # -- action parsing (ACT): the wire dict -> a typed action --------------------------
    def _cards_field(self, action: Action, key: str = "cards", required: bool = True) -> list[int]:
        """The card codes of ``action[key]``; raises :class:`InvalidAction` (ACT, C-1)."""
        raw = action.get(key)
        if raw is None:
            if required:
                raise InvalidAction("ACT", Refusal.MISSING_FIELD, {"field": key})
            return []
        if type(raw) is not list:
            raise InvalidAction("ACT", Refusal.NOT_CARD_LIST, {"field": key})
        try:
            return [CARD_CODES[c] for c in raw]
        except (KeyError, TypeError):
            for c in raw:
                try:
                    parse_card(c)
                except CardError:
                    raise InvalidAction("C-1", Refusal.UNKNOWN_CARD, {"field": key, "card": repr(c)[:16]}) from None
            raise  # pragma: no cover

    def _declared(self, action: Action, jokers: int) -> list[int] | None:
        """The ``jokers`` field (C-4) as rank indices, or None when absent."""
        raw = action.get("jokers")
        if raw is None:
            return None
        if type(raw) is not list or not all(type(r) is str and len(r) == 1 and r in RANKS for r in raw):
            raise InvalidAction("C-4", Refusal.JOKER_RANKS, {"ranks": RANKS})
        if len(raw) != jokers:
            raise InvalidAction("C-4", Refusal.JOKER_COUNT, {"n": len(raw), "jokers": jokers})
        return [RANKS.index(r) for r in raw]

    def _parse_play(self, seat: int, action: Action) -> PlayAction:
        """The play of ``seat``: its cards (ACT, C-1), face-down cards (MD-2: a sub-multiset
        of the cards where ``FACE_DOWN_PLAYS``, refused elsewhere), held by the seat (C-3,
        C-12), then the ranks declared for its face-up jokers (C-4). Not judged yet."""
        cards = self._cards_field(action)
        if self.FACE_DOWN_PLAYS:
            face_down = self._cards_field(action, "face_down", required=False)
            if face_down and not holds_all(cards, face_down):
                raise InvalidAction("MD-2", Refusal.FACE_DOWN_NOT_IN_CARDS)
        elif action.get("face_down"):
            raise InvalidAction("MD-2", Refusal.FACE_DOWN_RULESET, {"ruleset": self.ruleset})
        else:
            face_down = []
        self._hand_check(seat, cards)
        up_jokers = cards.count(JOKER) - face_down.count(JOKER) if face_down else cards.count(JOKER)
        return PlayAction(cards, face_down, self._declared(action, up_jokers))

    def _check_face_down(self, seat: int, play: PlayAction) -> None:
        """What :meth:`_parse_play` checks of a typed play with face-down cards (MD-2, C-12,
        C-4), for :meth:`push`."""
        if not self.FACE_DOWN_PLAYS:
            raise InvalidAction("MD-2", Refusal.FACE_DOWN_RULESET, {"ruleset": self.ruleset})
        if not holds_all(play.cards, play.face_down):
            raise InvalidAction("MD-2", Refusal.FACE_DOWN_NOT_IN_CARDS)
        self._hand_check(seat, play.cards)
        up_jokers = play.cards.count(JOKER) - play.face_down.count(JOKER)
        if play.jokers is not None and len(play.jokers) != up_jokers:
            raise InvalidAction("C-4", Refusal.JOKER_COUNT, {"n": len(play.jokers), "jokers": up_jokers})

    def _parse_pass(self, seat: int, action: Action) -> PassAction:
        return PASS

    def _parse_doubt(self, seat: int, action: Action) -> DoubtAction:
        return DOUBT

    def _parse_through(self, seat: int, action: Action) -> ThroughAction:
        return THROUGH

    def _parse_penalty(self, seat: int, action: Action) -> PenaltyAction:
        return PenaltyAction(self._cards_field(action))

    def _parse_give(self, seat: int, action: Action) -> GiveAction:
        return GiveAction(self._cards_field(action))

    def _parse_discard(self, seat: int, action: Action) -> DiscardAction:
        return DiscardAction(self._cards_field(action))

    def _check_common(self, seat: Any, action: Any) -> str:
        if self.over:
            raise InvalidAction("C-12", Refusal.GAME_OVER)
        if type(seat) is not int or not 0 <= seat < self.seats:
            raise InvalidAction("C-12", Refusal.NO_SEAT, {"seat": repr(seat)[:16], "ruleset": self.ruleset})
        if type(action) is not dict:
            raise InvalidAction("ACT", Refusal.NOT_AN_OBJECT)
        t = action.get("type")
        d = self._decision
        if d is not None and seat == d.seat and t in ANSWERS[d.kind]:
            return t  # type: ignore[no-any-return]  # the common case, checked in one go
        if t is None:
            raise InvalidAction("ACT", Refusal.MISSING_FIELD, {"field": "type"})
        if t not in ACTION_TYPES:
            raise InvalidAction("ACT", Refusal.UNKNOWN_TYPE, {"type": repr(t)[:40]})
        if d is None:
            raise InvalidAction("C-12", Refusal.NO_DECISION)
        if seat != d.seat:
            raise InvalidAction("C-12", Refusal.NOT_ASKED, {"seat": seat, "asked": d.seat, "kind": d.kind})
        raise InvalidAction(
            "C-12", Refusal.NOT_AN_ANSWER, {"type": str(t), "kind": d.kind, "expected": " or ".join(ANSWERS[d.kind])}
        )
