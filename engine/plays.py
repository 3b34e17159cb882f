"""Every legal face-up play of a hand, generated form by form (RULES C-3..C-5, C-8, LR-3, TM-5).

:func:`face_up_plays` takes the forms and ranks that may be played now (a :class:`Readings`:
what beats the reference, C-5, C-9, under the number lock, LR-3) and builds, from the hand,
the singles and the lone joker, the joker pair, the groups, then the stairs, keeping those
that match the suit lock (C-8) and that may empty the hand (TM-5). The two jokers are
identical: each distinct play appears once, and a joker standing in carries its declared
rank (C-4). The order of the plays is part of the wire (``legal_actions``): ranks ascending,
smaller plays first, as listed below.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations

from engine.cards import JOKER
from engine.forms import Readings, satisfies_lock

#: A face-up play as ``(card codes, declared joker ranks or None)`` (C-4).
Play = tuple[list[int], list[int] | None]
#: ``refuse(naturals, jokers)``: True if a play of these cards may not empty the hand (TM-5).
FinishRefused = Callable[[Sequence[int], int], bool]


def face_up_plays(
    hand: list[int], count: int, lock: tuple[int, ...], ok: Readings, refuse: FinishRefused
) -> list[Play]:
    """Every face-up play of ``hand`` of ``count`` cards (0: any, on an empty field) whose
    form and rank ``ok`` allows, meeting the suit ``lock`` (C-8) and ``refuse`` (TM-5).

    Order: singles (ranks ascending, hand order within a rank; when following a single with
    no lock and more than one card in hand, card code order), the lone joker, the joker pair,
    groups (by rank, then size, then jokers standing in), stairs (by suit, lowest rank,
    length, jokers standing in).
    """
    if count == 1 and not lock and len(hand) > 1:
        return _following_single(hand, ok)
    by_form = _ByForm(hand, lock, refuse)
    if count <= 1:
        by_form.singles(ok)
    if count in (0, 2) and by_form.jokers == 2 and ok.joker_pair:
        by_form.keep([JOKER, JOKER], [], 2, None)
    if count != 1 and ok.group:
        by_form.groups(ok.group, count)
    if (count == 0 or count >= 3) and ok.stairs:
        by_form.stairs(ok.stairs, count)
    return by_form.plays


def _following_single(hand: list[int], ok: Readings) -> list[Play]:
    """The singles and the lone joker that follow a single with no lock: the common case,
    kept short (no play here empties the hand: it holds more than one card)."""
    plays: list[Play] = []
    ranks = ok.single
    for c in sorted(hand):  # rank order, jokers last
        if c == JOKER:
            if ok.joker:
                plays.append(([JOKER], None))
            break
        if ranks >> (c >> 2) & 1:
            plays.append(([c], None))
    return plays


def _has_run(ranks: dict[int, int], jokers: int) -> bool:
    """Whether some 3 consecutive ranks hold ``3 - jokers`` of ``ranks`` (a quick test before
    looking for stairs in one suit; always True with 2 jokers)."""
    if jokers >= 2:
        return True
    m = 0
    for r in ranks:
        m |= 1 << r
    if jokers:
        return bool((m & (m >> 1)) | (m & (m >> 2)))
    return bool(m & (m >> 1) & (m >> 2))


class _ByForm:
    """The plays of one hand being collected (``plays``), with the hand indexed by rank
    (cards in hand order) and by suit (rank -> card)."""

    __slots__ = ("plays", "lock", "size", "refuse", "jokers", "by_rank", "ranks", "by_suit")

    def __init__(self, hand: list[int], lock: tuple[int, ...], refuse: FinishRefused):
        self.plays: list[Play] = []
        self.lock = lock
        self.size = len(hand)
        self.refuse = refuse
        jokers = 0
        by_rank: dict[int, list[int]] = {}
        by_suit: list[dict[int, int]] = [{}, {}, {}, {}]
        for c in hand:
            if c == JOKER:
                jokers += 1
            else:
                r = c >> 2
                cards_of = by_rank.get(r)
                if cards_of is None:
                    by_rank[r] = [c]
                else:
                    cards_of.append(c)
                by_suit[c & 3][r] = c
        self.jokers = jokers
        self.by_rank = by_rank
        self.ranks = sorted(by_rank)
        self.by_suit = by_suit

    def keep(self, cards: list[int], nat: Sequence[int], jokers: int, declared: list[int] | None) -> None:
        """Add the play unless it misses the suit lock (C-8) or may not empty the hand (TM-5)."""
        if self.lock and not satisfies_lock(self.lock, nat, jokers):
            return
        if len(cards) == self.size and self.refuse(nat, jokers):
            return
        self.plays.append((cards, declared))

    def singles(self, ok: Readings) -> None:
        """Natural singles of the ranks of ``ok.single``, then the lone joker (C-2, C-5)."""
        mask = ok.single
        plain = not self.lock and self.size > 1  # no single can miss a lock or empty the hand
        plays = self.plays
        for r in self.ranks:
            if mask >> r & 1:
                for c in self.by_rank[r]:
                    if plain:
                        plays.append(([c], None))
                    else:
                        self.keep([c], [c], 0, None)
        if self.jokers and ok.joker:
            self.keep([JOKER], [], 1, None)

    def groups(self, mask: int, count: int) -> None:
        """Groups (2 to 6 cards of one rank, jokers standing in, C-3, C-4) of the ranks of
        ``mask``, of ``count`` cards (0: every size)."""
        jokers = self.jokers
        for r in self.ranks:
            if not mask >> r & 1:
                continue
            nat = self.by_rank[r]
            top = min(6, len(nat) + jokers)
            if top < 2:
                continue
            for k in range(2, top + 1) if not count else ((count,) if count <= top else ()):
                self._groups_of(r, nat, k)

    def _groups_of(self, rank: int, nat: list[int], k: int) -> None:
        """Groups of ``k`` cards of ``rank`` from its natural cards ``nat`` and the jokers."""
        direct = not self.lock and k < self.size  # no group here can miss a lock or empty the hand
        plays = self.plays
        for j in range(0, min(self.jokers, k - 1) + 1):
            m = k - j
            if m > len(nat):
                continue
            for combo in combinations(nat, m):
                if direct:
                    plays.append((list(combo) + [JOKER] * j, [rank] * j if j else None))
                else:
                    self.keep(list(combo) + [JOKER] * j, list(combo), j, [rank] * j if j else None)

    def stairs(self, mask: int, count: int) -> None:
        """Stairs (3+ consecutive ranks of one suit, jokers standing in, C-3, C-4) whose
        lowest rank is in ``mask``, of ``count`` cards (0: every length)."""
        jokers = self.jokers
        for present in self.by_suit:
            if not present or len(present) + jokers < 3 or not _has_run(present, jokers):
                continue
            for lo in range(0, 11):
                if mask >> lo & 1 and (jokers or lo in present):
                    self._stairs_from(present, lo, count)

    def _stairs_from(self, present: dict[int, int], lo: int, count: int) -> None:
        """Stairs from rank ``lo`` of the suit whose cards are ``present`` (rank -> card)."""
        jokers = self.jokers
        missing = 0
        have: list[int] = []
        for hi in range(lo, 13):
            if hi in present:
                have.append(hi)
            else:
                missing += 1
                if missing > jokers:
                    break
            n = hi - lo + 1
            if n < 3 or not have or (count and n != count):
                continue
            self._stairs_span(present, lo, hi, have, jokers - missing)
            if count:
                break

    def _stairs_span(self, present: dict[int, int], lo: int, hi: int, have: list[int], spare: int) -> None:
        """The stairs ``lo``..``hi`` of one suit: jokers fill the ranks not ``present``, and up
        to ``spare`` more jokers stand in for held ranks (``have``), keeping one natural card."""
        for rep in range(0, min(spare, len(have) - 1) + 1):
            for replaced in combinations(have, rep):
                used = [present[x] for x in have if x not in replaced]
                jr = sorted([x for x in range(lo, hi + 1) if x not in present] + list(replaced))
                self.keep(used + [JOKER] * len(jr), used, len(jr), jr or None)
