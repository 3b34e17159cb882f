"""Typed actions: the ACT shapes of docs/rules.md as the rule sets' handlers receive them.

On the wire, and in the log, an action is an ACT dict (``{"type": "play", "cards": ["5H"]}``).
:meth:`engine.game.Game.apply` parses it once, at the engine's boundary, into one of these
values (as python-chess turns a UCI string into a ``Move``): cards become codes (C-1),
declared joker ranks rank indices (C-4). A malformed field is refused there with an
:class:`~engine.game.InvalidAction` naming the field (``ACT``, ``C-1``, ``C-4``, ``MD-2``,
``TM-3``); the handlers never read a dict.

The values are read-only by convention (slotted dataclasses, not frozen: a frozen one costs
three times as much to build, on the engine's hottest path); their lists are their own, fresh
per parse. Their ``__init__`` is written out (``init=False``): the compiled build compiles it,
where the dataclass's generated one would run as interpreted Python on every play.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from engine.cards import CARD_NAMES, RANKS


@dataclass(slots=True, init=False)
class PlayAction:
    """``{"type": "play", "cards", "face_down"?, "jokers"?}`` (ACT), parsed.

    Attributes:
        cards: codes of every card of the play, held by the seat (C-12).
        face_down: codes of the cards put face down, a sub-multiset of ``cards`` (MD-2;
            always empty outside ``million_doubt``).
        jokers: the ranks (indices) declared for the face-up jokers (C-4), or None.
    """

    cards: list[int]
    face_down: list[int]
    jokers: list[int] | None

    def __init__(self, cards: list[int], face_down: list[int], jokers: list[int] | None) -> None:
        self.cards = cards
        self.face_down = face_down
        self.jokers = jokers


@dataclass(slots=True)
class PassAction:
    """``{"type": "pass"}`` (C-6, C-7, MD-9, TM-6)."""


@dataclass(slots=True)
class DoubtAction:
    """``{"type": "doubt"}`` (MD-6, MD-7)."""


@dataclass(slots=True)
class ThroughAction:
    """``{"type": "through"}`` (MD-6)."""


@dataclass(slots=True, init=False)
class PenaltyAction:
    """``{"type": "penalty", "cards"}`` (MD-7): codes of the field cards given."""

    cards: list[int]

    def __init__(self, cards: list[int]) -> None:
        self.cards = cards


@dataclass(slots=True, init=False)
class ExchangeAction:
    """``{"type": "exchange", "accept"}`` (TM-3 (1))."""

    accept: bool

    def __init__(self, accept: bool) -> None:
        self.accept = accept


@dataclass(slots=True, init=False)
class RateAction:
    """``{"type": "rate", "rate"}`` (TM-3 (2)): one of the options' ``rate_choices``."""

    rate: int

    def __init__(self, rate: int) -> None:
        self.rate = rate


@dataclass(slots=True, init=False)
class GiveAction:
    """``{"type": "give", "cards"}`` (JDF-4, LR-5): codes of the cards given."""

    cards: list[int]

    def __init__(self, cards: list[int]) -> None:
        self.cards = cards


@dataclass(slots=True, init=False)
class DiscardAction:
    """``{"type": "discard", "cards"}`` (LR-6): codes of the cards discarded."""

    cards: list[int]

    def __init__(self, cards: list[int]) -> None:
        self.cards = cards


#: The actions without fields: one value each.
PASS: Final = PassAction()
DOUBT: Final = DoubtAction()
THROUGH: Final = ThroughAction()

#: Any typed action.
TypedAction = (
    PlayAction
    | PassAction
    | DoubtAction
    | ThroughAction
    | PenaltyAction
    | ExchangeAction
    | RateAction
    | GiveAction
    | DiscardAction
)

#: The wire ``type`` of each typed action class.
ACTION_TYPE: Final[dict[type, str]] = {
    PlayAction: "play",
    PassAction: "pass",
    DoubtAction: "doubt",
    ThroughAction: "through",
    PenaltyAction: "penalty",
    ExchangeAction: "exchange",
    RateAction: "rate",
    GiveAction: "give",
    DiscardAction: "discard",
}


def to_wire(action: TypedAction) -> dict[str, Any]:
    """The ACT dict of a typed action, as :meth:`engine.Game.apply` takes it and the log keeps
    it: ``{"type": "play", "cards": ["5H", "JK"], "jokers": ["5"]}``, ``{"type": "pass"}``...
    (``face_down`` only when some card is face down, ``jokers`` only when declared)."""
    if isinstance(action, PlayAction):
        out: dict[str, Any] = {"type": "play", "cards": [CARD_NAMES[c] for c in action.cards]}
        if action.face_down:
            out["face_down"] = [CARD_NAMES[c] for c in action.face_down]
        if action.jokers is not None:
            out["jokers"] = [RANKS[r] for r in action.jokers]
        return out
    if isinstance(action, (PenaltyAction, GiveAction, DiscardAction)):
        return {"type": ACTION_TYPE[type(action)], "cards": [CARD_NAMES[c] for c in action.cards]}
    if isinstance(action, ExchangeAction):
        return {"type": "exchange", "accept": action.accept}
    if isinstance(action, RateAction):
        return {"type": "rate", "rate": action.rate}
    return {"type": ACTION_TYPE[type(action)]}


__all__ = [
    "ACTION_TYPE",
    "to_wire",
    "PlayAction",
    "PassAction",
    "DoubtAction",
    "ThroughAction",
    "PenaltyAction",
    "ExchangeAction",
    "RateAction",
    "GiveAction",
    "DiscardAction",
    "PASS",
    "DOUBT",
    "THROUGH",
    "TypedAction",
]
