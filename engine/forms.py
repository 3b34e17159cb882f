"""Forms, readings, comparison and locks (RULES C-2 to C-5, C-8, C-9, MD-3, MD-5).

The engine never guesses what a play "is": it computes all its **readings**. A reading is a
form (single, group, stairs) with a rank (for stairs: the lowest rank), or one of the two
joker forms (a lone joker, the joker pair). A set of readings of one play is kept as a
:class:`Readings` of three 13-bit rank masks plus two flags, which makes "does some reading of
this play beat some reading of the reference" a couple of bit operations:

* face-up plays in ``trump_millionaire`` and ``jdf`` have one reading once C-4 has chosen;
* in ``million_doubt`` a face-down card is a **wild** card (any card, jokers included), so a
  play with face-down cards has many readings; those that beat the reference are kept as the
  new reference's readings, which is exactly MD-5's "blanks".

Ranks are indices 0..12 of ``3 4 5 6 7 8 9 T J Q K A 2`` (see :mod:`engine.cards`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from engine.cards import JOKER, RANKS

ALL_RANKS: Final = (1 << 13) - 1

SINGLE, GROUP, STAIRS = "single", "group", "stairs"


class Readings:
    """All readings of one play, as rank masks (bit r set: a reading of rank r exists).
    Immutable by convention; equal when every field is.

    Attributes:
        single: ranks of natural-single readings.
        group: ranks of group readings (2 to 6 cards of one rank, C-3).
        stairs: lowest ranks of stairs readings (3+ consecutive ranks of one suit, C-3).
        joker: True if the play can be a lone joker (C-2).
        joker_pair: True if the play can be the joker pair (C-3).
    """

    __slots__ = ("single", "group", "stairs", "joker", "joker_pair")

    def __init__(self, single: int = 0, group: int = 0, stairs: int = 0, joker: bool = False, joker_pair: bool = False):
        self.single = single
        self.group = group
        self.stairs = stairs
        self.joker = joker
        self.joker_pair = joker_pair

    def _key(self) -> tuple[int, int, int, bool, bool]:
        return (self.single, self.group, self.stairs, self.joker, self.joker_pair)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Readings) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return "Readings(single={}, group={}, stairs={}, joker={}, joker_pair={})".format(*self._key())

    def empty(self) -> bool:
        """True when no reading is left."""
        return not (self.single or self.group or self.stairs or self.joker or self.joker_pair)

    def describe(self) -> str:
        """Short human text of the readings, for error messages and logs."""
        parts = []
        for name, mask in ((SINGLE, self.single), (GROUP, self.group), (STAIRS, self.stairs)):
            if mask:
                ranks = "".join(RANKS[r] for r in range(13) if mask >> r & 1)
                parts.append(f"{name} of {ranks}" if name != STAIRS else f"stairs from {ranks}")
        if self.joker:
            parts.append("lone joker")
        if self.joker_pair:
            parts.append("joker pair")
        return ", ".join(parts) or "no legal form"


NO_READINGS: Final = Readings()
#: The one reading of a natural single of each rank; of a group of each rank; of stairs from
#: each lowest rank; of the lone joker; of the joker pair: shared (readings never change).
SINGLE_READINGS: Final[tuple[Readings, ...]] = tuple(Readings(1 << r) for r in range(13))
GROUP_READINGS: Final[tuple[Readings, ...]] = tuple(Readings(0, 1 << r) for r in range(13))
STAIRS_READINGS: Final[tuple[Readings, ...]] = tuple(Readings(0, 0, 1 << r) for r in range(13))
LONE_JOKER: Final = Readings(0, 0, 0, True, False)
JOKER_PAIR: Final = Readings(0, 0, 0, False, True)
#: The readings of one face-down card (MD-3: any single, or the lone joker).
ANY_SINGLE: Final = Readings(ALL_RANKS, 0, 0, True, False)


def _span_mask(lo: int, n: int) -> int:
    return ((1 << n) - 1) << lo


def readings(
    naturals: Sequence[int], jokers: int = 0, wild: int = 0, declared: Sequence[int] | None = None
) -> Readings:
    """All forms (C-3) that a play can be read as.

    Args:
        naturals: codes of the play's natural cards that are known (face up, or all of them
            when checking honesty, MD-7).
        jokers: number of jokers that are known to be jokers (they stand in for any rank, C-4).
        wild: number of face-down cards (MD-2): each may be any card, joker included.
        declared: the ``jokers`` field of the action (C-4), ranks the known jokers stand for,
            or None. It restricts the readings to those where the jokers have these ranks, and
            excludes the lone-joker and joker-pair readings (declaring those is malformed).

    Returns:
        The :class:`Readings` (possibly empty: not a legal form).
    """
    nat = len(naturals)
    n = nat + jokers + wild
    if n == 1:
        if nat:
            return SINGLE_READINGS[naturals[0] >> 2]
        if jokers:
            return NO_READINGS if declared else LONE_JOKER
        return ANY_SINGLE
    if n == 0:
        return NO_READINGS
    ranks = 0
    suits = 0
    for c in naturals:
        ranks |= 1 << (c >> 2)
        suits |= 1 << (c & 3)
    decl_mask = 0
    if declared:
        for r in declared:
            decl_mask |= 1 << r
    if n > 6:
        group = 0
    elif nat:  # the common case, inline: one rank, matching the declared one
        group = ranks if ranks & (ranks - 1) == 0 and (not declared or decl_mask == ranks) else 0
    else:
        group = _group_ranks(wild, declared, decl_mask)
    joker_pair = n == 2 and nat == 0 and not declared and jokers + wild == 2
    stairs = 0
    if 3 <= n <= 13 and (nat or wild) and suits & (suits - 1) == 0 and (nat == 0 or ranks.bit_count() == nat):
        stairs = _stairs_lows(n, ranks, declared, decl_mask)
    return Readings(0, group, stairs, False, joker_pair)


def generated_reading(nat: Sequence[int], jokers: int, declared: Sequence[int] | None) -> Readings:
    """The one reading of a face-up play as :mod:`engine.plays` generates it: natural cards
    ``nat``, ``jokers`` jokers, every joker standing in declared (C-4; a lone joker and the
    joker pair declare nothing). Equal to ``choose(readings(nat, jokers, 0, declared))`` for
    such a play (the property tests check it), at a fraction of the cost: a single, a lone
    joker, the joker pair, a group (one rank) or stairs (its lowest rank)."""
    if not nat:
        return LONE_JOKER if jokers == 1 else JOKER_PAIR
    if len(nat) == 1 and not jokers:
        return SINGLE_READINGS[nat[0] >> 2]
    ranks = 0
    for c in nat:
        ranks |= 1 << (c >> 2)
    if declared:
        for r in declared:
            ranks |= 1 << r
    if ranks & (ranks - 1) == 0:
        return GROUP_READINGS[ranks.bit_length() - 1]
    return STAIRS_READINGS[(ranks & -ranks).bit_length() - 1]


def _group_ranks(wild: int, declared: Sequence[int] | None, decl_mask: int) -> int:
    """Ranks of the group readings (C-3: one rank, 2..6 cards) of a play with no natural card
    known: ``wild`` face-down cards (one of them natural, MD-3), its jokers at the
    ``declared`` ranks (mask ``decl_mask``) when given."""
    if not wild:
        return 0
    if declared:
        return decl_mask if decl_mask & (decl_mask - 1) == 0 else 0
    return ALL_RANKS


def _stairs_lows(n: int, ranks: int, declared: Sequence[int] | None, decl_mask: int) -> int:
    """Lowest ranks of the stairs readings (C-3: ``n`` consecutive ranks of one suit, no wrap)
    of a play whose natural cards have the distinct ``ranks``, its jokers at the ``declared``
    ranks (mask ``decl_mask``, each declared once and none a natural card's) when given."""
    if declared:
        if decl_mask.bit_count() != len(declared) or decl_mask & ranks:
            return 0
        known = ranks | decl_mask
    else:
        known = ranks
    stairs = 0
    for lo in range(0, 14 - n):
        if known & ~_span_mask(lo, n) == 0:
            stairs |= 1 << lo
    return stairs


def beating_mask(mask: int, ref: int, reversed_order: bool) -> int:
    """Ranks of ``mask`` that beat some rank of ``ref`` in the effective order (C-5, C-9):
    stronger than the weakest rank of ``ref``; 0 if ``ref`` is empty."""
    if not ref or not mask:
        return 0
    if reversed_order:
        top = ref.bit_length() - 1  # weakest in reversed order = highest rank
        return mask & ((1 << top) - 1)
    low = (ref & -ref).bit_length() - 1
    return mask & ~((1 << (low + 1)) - 1)


def beating(play: Readings, ref: Readings | None, reversed_order: bool) -> Readings:
    """The readings of ``play`` that beat some reading of the reference ``ref`` (C-5, MD-5).

    ``ref`` None means an empty field or a trick with no reference: every reading is kept.
    A lone joker beats any natural single; the joker pair beats any pair; nothing beats a lone
    joker or the joker pair (the spade-3 return, JDF-9, is checked by the caller).
    """
    if ref is None:
        return play
    single = 0 if ref.joker else beating_mask(play.single, ref.single, reversed_order)
    joker = bool(play.joker and ref.single and not ref.joker)
    group = 0 if ref.joker_pair else beating_mask(play.group, ref.group, reversed_order)
    joker_pair = bool(play.joker_pair and ref.group and not ref.joker_pair)
    stairs = beating_mask(play.stairs, ref.stairs, reversed_order)
    return Readings(single, group, stairs, joker, joker_pair)


def choose(r: Readings, reversed_order: bool) -> Readings:
    """C-4's choice among legal readings when no joker reading was declared.

    A group before stairs; among stairs the strongest in the current order. Singles and the
    joker forms are unambiguous. Returns a :class:`Readings` with a single reading.
    """
    if r.group:
        g = r.group
        return Readings(group=g & -g)
    if r.stairs:
        s = r.stairs
        bit = (s & -s) if reversed_order else 1 << (s.bit_length() - 1)
        return Readings(stairs=bit)
    if r.single:
        s = r.single
        return Readings(single=s & -s)
    return r


def only_rank(mask: int) -> int:
    """The rank of a one-bit mask (the lowest set bit otherwise)."""
    return (mask & -mask).bit_length() - 1


def signature(naturals: Sequence[int]) -> tuple[int, ...]:
    """Suit signature of a play (C-8): sorted suits of its face-up natural cards."""
    if len(naturals) == 1:
        return (naturals[0] & 3,)
    return tuple(sorted([c & 3 for c in naturals]))


def satisfies_lock(lock: Sequence[int], naturals: Iterable[int], wild: int) -> bool:
    """Whether a play meets a suit lock (C-8).

    Every suit of ``lock`` (a multiset of suit indices) must be matched by a different card:
    a natural card of that suit or a wild card (``wild``: jokers, and face-down cards in
    ``million_doubt``).
    """
    if not lock:
        return True
    counts = [0, 0, 0, 0]
    for c in naturals:
        counts[c & 3] += 1
    need = [0, 0, 0, 0]
    for s in lock:
        need[s] += 1
    deficit = 0
    for s in range(4):
        if need[s] > counts[s]:
            deficit += need[s] - counts[s]
    return deficit <= wild


def split(cards: Sequence[int]) -> tuple[list[int], int]:
    """Split a sequence of card codes into (naturals, number of jokers); the naturals are
    ``cards`` itself when it is a list without a joker (read it, never change it)."""
    if JOKER not in cards:
        return (cards if isinstance(cards, list) else list(cards)), 0
    nat = [c for c in cards if c != JOKER]
    return nat, len(cards) - len(nat)
