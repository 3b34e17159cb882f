"""What lies on the field and in the hands: a play on the field (:class:`PlayRecord`), the
hand's multiset checks, cards as text for messages and views.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from engine.cards import RANKS, format_card, format_cards, sort_key

#: The suit letters by suit index (C-1), as views and events name the suits of a lock (C-8).
SUIT_LETTERS: Final = "SHDC"


class PlayRecord:
    """One play on the field: who made it and its cards (codes).

    ``face_down`` lists the face-down codes (``million_doubt``); ``revealed`` becomes True
    when a doubt turns the field face up (MD-8); ``declared`` the joker ranks (C-4).
    """

    __slots__ = ("seat", "cards", "face_down", "revealed", "declared")

    def __init__(self, seat: int, cards: list[int], face_down: list[int], declared: list[int] | None = None):
        self.seat = seat
        self.cards = cards
        self.face_down = face_down
        self.revealed = False
        self.declared = declared

    def copy(self) -> PlayRecord:
        """A copy (the card lists are shared: never changed in place)."""
        new = PlayRecord(self.seat, self.cards, self.face_down, self.declared)
        new.revealed = self.revealed
        return new

    def face_up(self) -> list[int]:
        """Face-up cards of the play (all of them once revealed)."""
        if not self.face_down or self.revealed:
            return self.cards
        rest = list(self.cards)
        for c in self.face_down:
            rest.remove(c)
        return rest

    def view(self, seat: int | None) -> dict[str, Any]:
        """JSON view of the play for ``seat`` (None: the full log view)."""
        d: dict[str, Any] = {"seat": self.seat}
        if self.face_down and not self.revealed and seat is not None and seat != self.seat:
            d["cards"] = format_cards(self.face_up())
            d["face_down"] = len(self.face_down)
        else:
            d["cards"] = format_cards(self.cards)
            if self.face_down:
                d["face_down"] = format_cards(self.face_down)
                if self.revealed:
                    d["revealed"] = True
        if self.declared:
            d["jokers"] = [RANKS[r] for r in self.declared]
        return d


def holds_all(hand: Sequence[int], cards: Sequence[int]) -> bool:
    """True if ``cards`` is a sub-multiset of ``hand`` (no change)."""
    if not cards:
        return True
    if len(cards) == 1:
        return cards[0] in hand
    if len(cards) > len(hand):
        return False
    rest = list(hand)
    for c in cards:
        if c in rest:
            rest.remove(c)
        else:
            return False
    return True


def remove_cards(hand: list[int], cards: Iterable[int]) -> None:
    """Remove ``cards`` from ``hand`` (one each; ValueError for a card not there)."""
    for c in cards:
        hand.remove(c)


def cards_text(codes: Iterable[int]) -> str:
    """Cards as a space-separated wire string, for messages."""
    return " ".join(format_card(c) for c in codes)


def hand_sorted(codes: Iterable[int]) -> list[str]:
    """Wire strings of a hand, sorted by rank then suit, jokers last."""
    return format_cards(sorted(codes, key=sort_key))
