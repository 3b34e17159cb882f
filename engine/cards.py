"""Cards and their wire notation (RULES C-1).

A card is a small int, its **code**: ``rank * 4 + suit`` for the 52 natural cards and ``52``
for a joker (the two jokers are identical, so a hand may hold code 52 twice).

* ranks, weakest first in the normal order (C-2): ``3 4 5 6 7 8 9 T J Q K A 2`` -> 0..12
* suits: ``S H D C`` -> 0..3 (suits have no strength)
* wire notation: rank then suit, e.g. ``3S``, ``TH``, ``2C``; the joker is ``JK``

>>> parse_card("TH"), format_card(parse_card("TH")), parse_card("JK")
(29, 'TH', 52)
>>> parse_card("1S")
Traceback (most recent call last):
...
engine.cards.CardError: unknown card '1S': expected rank 3456789TJQKA2 then suit SHDC, or JK
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

RANKS: Final = "3456789TJQKA2"
SUITS: Final = "SHDC"
JOKER: Final = 52

#: Rank index of some ranks with rule meaning (``RANKS.index``; Final: the compiled build
#: inlines them).
R3: Final = 0
R5: Final = 2
R7: Final = 4
R8: Final = 5
R9: Final = 6
RT: Final = 7
RJ: Final = 8
R2: Final = 12
S_SPADES: Final = 0
#: Code of the spade 3 (JDF-9).
SPADE_3: Final = R3 * 4 + S_SPADES

CARD_NAMES: Final[tuple[str, ...]] = tuple(r + s for r in RANKS for s in SUITS) + ("JK",)
#: The code of each card name (``"3S"`` -> 0 ... ``"JK"`` -> 52): :data:`CARD_NAMES` inverted.
CARD_CODES: Final[dict[str, int]] = {name: i for i, name in enumerate(CARD_NAMES)}


class CardError(ValueError):
    """A card string that is not in the C-1 wire notation; the message names it."""


def parse_card(text: object) -> int:
    """Return the code of the card ``text`` (``"3S"``, ``"TH"``, ``"JK"``).

    Raises:
        CardError: ``text`` is not a card of C-1, a string or not (the message quotes it).
    """
    code = CARD_CODES.get(text) if isinstance(text, str) else None
    if code is None:
        raise CardError(f"unknown card {text!r}: expected rank {RANKS} then suit {SUITS}, or JK")
    return code


def parse_cards(texts: Iterable[object]) -> list[int]:
    """Parse a list of card strings; raises :class:`CardError` on the first bad one."""
    return [parse_card(t) for t in texts]


def format_card(code: int) -> str:
    """Wire notation of a card code (inverse of :func:`parse_card`)."""
    return CARD_NAMES[code]


def format_cards(codes: Iterable[int]) -> list[str]:
    """Wire notation of several card codes, in the given order."""
    return [CARD_NAMES[c] for c in codes]


def full_deck() -> list[int]:
    """The 54 card codes of C-1: 52 naturals in code order, then two jokers."""
    return list(range(52)) + [JOKER, JOKER]


def sort_key(code: int) -> tuple[int, int]:
    """Sort key for display: by normal-order rank, then suit S H D C; jokers last."""
    return (code >> 2, code & 3)
