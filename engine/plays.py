"""Every legal face-up play of a hand, generated form by form (RULES C-3..C-5, C-8, LR-3, TM-5).

:func:`face_up_plays` takes what the play must beat (the reference's readings, C-5, C-9) and
the number lock's rank (LR-3), and builds, from the hand, the singles and the lone joker, the
joker pair, the groups, then the stairs, keeping those that match the suit lock (C-8) and
that may empty the hand (TM-5). The two jokers are identical: each distinct play appears
once, and a joker standing in carries its declared rank (C-4). The order of the plays is
part of the wire (``legal_actions``): see :func:`face_up_plays`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations

from engine.cards import JOKER
from engine.forms import ALL_RANKS, Readings, beating_mask, satisfies_lock

#: A face-up play as ``(card codes, declared joker ranks or None)`` (C-4).
Play = tuple[list[int], list[int] | None]
#: ``refuse(naturals, jokers)``: True if a play of these cards may not empty the hand (TM-5).
FinishRefused = Callable[[Sequence[int], int], bool]


def face_up_plays(
    hand: list[int],
    count: int,
    lock: tuple[int, ...],
    ref: Readings | None,
    reversed_order: bool,
    restrict: int | None,
    refuse: FinishRefused,
) -> list[Play]:
    """Every face-up play of ``hand`` of ``count`` cards (0: any, on an empty field) that
    beats the reference ``ref`` (C-5, C-9; None: anything goes), of the ranks of ``restrict``
    only (LR-3 number lock: singles and groups; None: no restriction), meeting the suit
    ``lock`` (C-8) and ``refuse`` (TM-5).

    Order: singles (ranks ascending, hand order within a rank; when following a single with
    no lock and more than one card in hand, card code order), the lone joker, the joker pair,
    groups (by rank, then size, then jokers standing in), stairs (by suit, lowest rank,
    length, jokers standing in).
    """
    if ref is None:
        s_ok = g_ok = st_ok = ALL_RANKS
        js_ok = jp_ok = True
    else:  # as forms.beating (C-5): a lone joker beats natural singles, the joker pair pairs
        s_ok = 0 if ref.joker else beating_mask(ALL_RANKS, ref.single, reversed_order)
        js_ok = bool(ref.single) and not ref.joker
        g_ok = 0 if ref.joker_pair else beating_mask(ALL_RANKS, ref.group, reversed_order)
        jp_ok = bool(ref.group) and not ref.joker_pair
        st_ok = beating_mask(ALL_RANKS, ref.stairs, reversed_order)
    if restrict is not None:
        s_ok &= restrict
        g_ok &= restrict
        st_ok = 0
        js_ok = jp_ok = False
    if count == 1 and not lock and len(hand) > 1:
        return _following_single(hand, s_ok, js_ok)
    return _by_form(hand, count, lock, refuse, s_ok, js_ok, g_ok, jp_ok, st_ok)


def _following_single(hand: list[int], ranks: int, joker: bool) -> list[Play]:
    """The singles of ``ranks`` and the lone joker (if ``joker``) that follow a single with
    no lock: the common case, kept short (no play here empties the hand: it holds more than
    one card)."""
    plays: list[Play] = []
    held = 0  # the hand as a bit mask of card codes (the jokers share bit 52)
    for c in hand:
        held |= 1 << c
    wanted = 0  # the cards of the ranks of ``ranks``
    r = 0
    while ranks >> r:
        if ranks >> r & 1:
            wanted |= 15 << (r << 2)
        r += 1
    cards = held & wanted
    while cards:  # code order: rank order, then suit
        low = cards & -cards
        plays.append(([low.bit_length() - 1], None))
        cards ^= low
    if joker and held >> JOKER & 1:
        plays.append(([JOKER], None))
    return plays


def _by_form(
    hand: list[int],
    count: int,
    lock: tuple[int, ...],
    refuse: FinishRefused,
    s_ok: int,
    js_ok: bool,
    g_ok: int,
    jp_ok: bool,
    st_ok: int,
) -> list[Play]:
    """The general case of :func:`face_up_plays`: the hand indexed by rank (cards in hand
    order) and by suit (rank -> card), then each form in turn."""
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
    ranks = sorted(by_rank)
    size = len(hand)
    plays: list[Play] = []
    keep = _Keep(plays, lock, size, refuse)
    direct = not lock  # a play smaller than the hand is kept as it is
    if count <= 1:
        _singles(plays, keep, by_rank, ranks, s_ok, direct and size > 1)
        if jokers and js_ok:
            keep.add([JOKER], [], 1, None)
    if count in (0, 2) and jokers == 2 and jp_ok:
        keep.add([JOKER, JOKER], [], 2, None)
    if count != 1 and g_ok:
        _groups(plays, keep, by_rank, ranks, jokers, g_ok, count, size if direct else 0)
    if (count == 0 or count >= 3) and st_ok:
        _stairs(keep, by_suit, jokers, st_ok, count)
    return plays


class _Keep:
    """Adds a play to ``plays`` unless it misses the suit ``lock`` (C-8) or, emptying the hand
    of ``size`` cards, ``refuse`` refuses it (TM-5)."""

    __slots__ = ("plays", "lock", "size", "refuse")

    def __init__(self, plays: list[Play], lock: tuple[int, ...], size: int, refuse: FinishRefused):
        self.plays = plays
        self.lock = lock
        self.size = size
        self.refuse = refuse

    def add(self, cards: list[int], nat: Sequence[int], jokers: int, declared: list[int] | None) -> None:
        if self.lock and not satisfies_lock(self.lock, nat, jokers):
            return
        if len(cards) == self.size and self.refuse(nat, jokers):
            return
        self.plays.append((cards, declared))


def _singles(
    plays: list[Play], keep: _Keep, by_rank: dict[int, list[int]], ranks: list[int], mask: int, direct: bool
) -> None:
    """Natural singles of the ranks of ``mask`` (C-2, C-5); ``direct``: no filter applies."""
    for r in ranks:
        if mask >> r & 1:
            for c in by_rank[r]:
                if direct:
                    plays.append(([c], None))
                else:
                    keep.add([c], [c], 0, None)


def _groups(
    plays: list[Play],
    keep: _Keep,
    by_rank: dict[int, list[int]],
    ranks: list[int],
    jokers: int,
    mask: int,
    count: int,
    direct_below: int,
) -> None:
    """Groups (2 to 6 cards of one rank, jokers standing in, C-3, C-4) of the ranks of
    ``mask``, of ``count`` cards (0: every size); a group of fewer than ``direct_below``
    cards is kept without the filters (0: every group is filtered)."""
    for r in ranks:
        if not mask >> r & 1:
            continue
        nat = by_rank[r]
        top = min(6, len(nat) + jokers)
        if top < 2:
            continue
        for k in range(2, top + 1) if not count else ((count,) if count <= top else ()):
            for j in range(0, min(jokers, k - 1) + 1):
                if k - j > len(nat):
                    continue
                for combo in combinations(nat, k - j):
                    if k < direct_below:
                        plays.append((list(combo) + [JOKER] * j, [r] * j if j else None))
                    else:
                        keep.add(list(combo) + [JOKER] * j, list(combo), j, [r] * j if j else None)


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


def _stairs(keep: _Keep, by_suit: list[dict[int, int]], jokers: int, mask: int, count: int) -> None:
    """Stairs (3+ consecutive ranks of one suit, jokers standing in, C-3, C-4) whose lowest
    rank is in ``mask``, of ``count`` cards (0: every length)."""
    for present in by_suit:
        if not present or len(present) + jokers < 3 or not _has_run(present, jokers):
            continue
        for lo in range(0, 11):
            if mask >> lo & 1 and (jokers or lo in present):
                _stairs_from(keep, present, jokers, lo, count)


def _stairs_from(keep: _Keep, present: dict[int, int], jokers: int, lo: int, count: int) -> None:
    """Stairs from rank ``lo`` of the suit whose cards are ``present`` (rank -> card)."""
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
        _stairs_span(keep, present, lo, hi, have, jokers - missing)
        if count:
            break


def _stairs_span(keep: _Keep, present: dict[int, int], lo: int, hi: int, have: list[int], spare: int) -> None:
    """The stairs ``lo``..``hi`` of one suit: jokers fill the ranks not ``present``, and up
    to ``spare`` more jokers stand in for held ranks (``have``), keeping one natural card."""
    for rep in range(0, min(spare, len(have) - 1) + 1):
        for replaced in combinations(have, rep):
            used = [present[x] for x in have if x not in replaced]
            jr = sorted([x for x in range(lo, hi + 1) if x not in present] + list(replaced))
            keep.add(used + [JOKER] * len(jr), used, len(jr), jr or None)
