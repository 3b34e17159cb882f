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
from typing import Any, Final

from engine._build import BUILD
from engine.cards import JOKER
from engine.forms import ALL_RANKS, Readings, beating_mask, satisfies_lock

#: A face-up play as ``(card codes, declared joker ranks or None)`` (C-4).
Play = tuple[list[int], list[int] | None]
#: ``refuse(naturals, jokers)``: True if a play of these cards may not empty the hand (TM-5).
FinishRefused = Callable[[Sequence[int], int], bool]


#: The compiled build runs (``engine.BUILD``): a loop over a hand is then cheaper than the C
#: builtins (``sum``, ``map``, ``sorted``) that do the same work in the pure build.
NATIVE: Final = BUILD == "compiled"
#: Each card code's bit in a hand's card mask (``sum`` over the hand); a joker adds ``1 << 52``,
#: so the mask over ``52`` is the number of jokers (non-zero when the hand holds one).
CARD_BITS: Final[tuple[int, ...]] = tuple(1 << c for c in range(JOKER + 1))
#: Each card code's bit in a hand's suit mask: suit ``s``, rank ``r`` at bit ``13 * s + r``
#: (four 13-bit rank masks, S H D C); a joker adds ``1 << 52``, as in :data:`CARD_BITS`.
SUIT_BITS: Final[tuple[int, ...]] = tuple(1 << (13 * (c & 3) + (c >> 2)) for c in range(JOKER)) + (1 << JOKER,)
#: The rank of each card code (a joker's: 13, above every rank).
RANK_OF: Final[tuple[int, ...]] = tuple(c >> 2 for c in range(JOKER + 1))
#: The cards of each suit, as a card mask.
_SUIT_CARDS: Final[tuple[int, ...]] = tuple(sum(1 << (r * 4 + s) for r in range(13)) for s in range(4))
#: The four cards of each rank of a rank mask, as a card mask: ranks 0..6 (``mask & 127``)...
_RANK_CARDS_LOW: Final[tuple[int, ...]] = tuple(
    sum(15 << (r << 2) for r in range(7) if m >> r & 1) for m in range(1 << 7)
)
#: ... and ranks 7..12 (``mask >> 7``).
_RANK_CARDS_HIGH: Final[tuple[int, ...]] = tuple(
    sum(15 << ((r + 7) << 2) for r in range(6) if m >> r & 1) for m in range(1 << 6)
)


def face_up_plays(
    hand: list[int],
    count: int,
    lock: tuple[int, ...],
    ref: Readings | None,
    reversed_order: bool,
    restrict: int | None,
    refuse: FinishRefused | None,
) -> list[Play]:
    """Every face-up play of ``hand`` of ``count`` cards (0: any, on an empty field) that
    beats the reference ``ref`` (C-5, C-9; None: anything goes), of the ranks of ``restrict``
    only (LR-3 number lock: singles and groups; None: no restriction), meeting the suit
    ``lock`` (C-8) and ``refuse`` (TM-5; None: every play may empty the hand).

    Order: singles (ranks ascending, hand order within a rank; when following a single with
    no lock and more than one card in hand, card code order), the lone joker, the joker pair,
    groups (by rank, then size, then jokers standing in), stairs (by suit, lowest rank,
    length, jokers standing in).
    """
    if count != 1 or len(lock) > 1 or len(hand) < 2:
        return _by_form(hand, count, lock, ref, reversed_order, restrict, refuse)
    # following a single (the common case, kept short): the singles of the ranks that beat
    # the reference, of the locked suit if any (C-8), in card code order, then the lone
    # joker (wild: it meets any lock); no play here empties the hand (it holds two cards+)
    if ref is None:
        ranks = ALL_RANKS
        joker = True
    else:  # as forms.beating (C-5): a lone joker beats natural singles
        single = ref.single
        if ref.joker or not single:
            ranks = 0
        elif reversed_order:  # below the highest rank of the reference (C-9)
            ranks = (1 << (single.bit_length() - 1)) - 1
        else:  # above its lowest rank
            ranks = ALL_RANKS & -((single & -single) << 1)
        joker = single != 0 and not ref.joker
    if restrict is not None:
        ranks &= restrict
        joker = False
    if NATIVE:
        held = 0
        for c in hand:
            held |= 1 << c
    else:
        held = sum(map(CARD_BITS.__getitem__, hand))
    cards = held & (_RANK_CARDS_LOW[ranks & 127] | _RANK_CARDS_HIGH[ranks >> 7])
    if lock:
        cards &= _SUIT_CARDS[lock[0]]
    plays: list[Play] = []
    while cards:
        low = cards & -cards
        plays.append(([low.bit_length() - 1], None))
        cards ^= low
    if joker and held >> JOKER:
        plays.append(([JOKER], None))
    return plays


def _by_form(
    hand: list[int],
    count: int,
    lock: tuple[int, ...],
    ref: Readings | None,
    reversed_order: bool,
    restrict: int | None,
    refuse: FinishRefused | None,
) -> list[Play]:
    """The general case of :func:`face_up_plays`: the hand as rank masks (held, held twice or
    more, held in each suit, from its suit mask), the cards of a rank held twice or more
    listed in hand order, then each form in turn. A play is added as it is when no filter
    can refuse it (no lock, smaller than the hand), else through :func:`_kept`."""
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
    if NATIVE:
        bits = 0
        for c in hand:
            bits += SUIT_BITS[c]
    else:
        bits = sum(map(SUIT_BITS.__getitem__, hand))
    s0 = bits & ALL_RANKS  # ranks held in each suit
    s1 = bits >> 13 & ALL_RANKS
    s2 = bits >> 26 & ALL_RANKS
    s3 = bits >> 39 & ALL_RANKS
    jokers = bits >> JOKER
    held = s0 | s1 | s2 | s3  # ranks held
    multi = (s0 & s1) | ((s0 | s1) & s2) | ((s0 | s1 | s2) & s3)  # ranks held twice or more
    suits = (s0, s1, s2, s3)
    # the ranks held twice or more of the groups (and of the singles, in the compiled build)
    wanted = multi & ((s_ok if count <= 1 and NATIVE else 0) | (g_ok if count != 1 else 0))
    by_rank = _cards_by_rank(hand, wanted) if wanted else _NO_CARDS
    size = len(hand)
    plays: list[Play] = []
    direct = not lock  # a play smaller than the hand is kept as it is
    if count <= 1:
        _singles(plays, hand, by_rank, suits, multi, s_ok & held, lock, size, refuse, direct and size > 1)
        if jokers and js_ok and _kept(lock, size, refuse, 1, [], 1):
            plays.append(([JOKER], None))
    if count in (0, 2) and jokers == 2 and jp_ok and _kept(lock, size, refuse, 2, [], 2):
        plays.append(([JOKER, JOKER], None))
    if count != 1:
        ranks = g_ok & (held if jokers else multi)  # a group holds a natural card and 2+ cards
        if ranks:
            _groups(plays, by_rank, suits, multi, ranks, jokers, count, lock, size, refuse, size if direct else 0)
    if (count == 0 or count >= 3) and st_ok and size >= 3 and (count == 0 or count <= size):
        # a joker, or a run of 3 ranks in a suit (as _has_run)
        if jokers or (s0 & s0 >> 1 & s0 >> 2) | (s1 & s1 >> 1 & s1 >> 2) | (s2 & s2 >> 1 & s2 >> 2) | (
            s3 & s3 >> 1 & s3 >> 2
        ):
            _stairs(plays, suits, jokers, st_ok, count, lock, size, refuse)  # a joker or a run of 3
    return plays


def _cards_by_rank(hand: list[int], ranks: int) -> list[list[int]]:
    """The cards of ``hand`` of each of the ``ranks`` (a mask), in hand order, by rank index
    (the other ranks: :data:`_NO_CARDS`)."""
    by_rank = [_NO_CARDS] * 13
    for c in hand:
        if c != JOKER and ranks >> (c >> 2) & 1:
            cards_of = by_rank[c >> 2]
            if cards_of is _NO_CARDS:
                by_rank[c >> 2] = [c]
            else:
                cards_of.append(c)
    return by_rank


#: ``by_rank`` when no rank is held twice (never read), and its empty slots (never changed).
_NO_CARDS: Final[list[Any]] = []


def _only_card(suits: tuple[int, int, int, int], r: int) -> int:
    """The code of the one card of rank ``r`` held (``suits``: the ranks held in each suit)."""
    _, s1, s2, s3 = suits
    return (r << 2) + (s1 >> r & 1) + (s2 >> r & 1) * 2 + (s3 >> r & 1) * 3


def _kept(
    lock: tuple[int, ...], size: int, refuse: FinishRefused | None, n: int, nat: Sequence[int], jokers: int
) -> bool:
    """Whether a play of ``n`` cards (naturals ``nat``, ``jokers`` wild) is kept: it meets the
    suit ``lock`` (C-8) and, emptying the hand of ``size`` cards, ``refuse`` allows it (TM-5)."""
    if lock and not satisfies_lock(lock, nat, jokers):
        return False
    return n != size or refuse is None or not refuse(nat, jokers)


def _singles(
    plays: list[Play],
    hand: list[int],
    by_rank: list[list[int]],
    suits: tuple[int, int, int, int],
    multi: int,
    ranks: int,
    lock: tuple[int, ...],
    size: int,
    refuse: FinishRefused | None,
    direct: bool,
) -> None:
    """Natural singles of the held ``ranks`` (C-2, C-5), ranks ascending, hand order within
    a rank; ``direct``: no filter applies. The pure build takes them from a stable sort of
    the hand by rank (one C call); the compiled build goes rank by rank (``by_rank``: the
    cards of the ranks of ``multi``, in hand order)."""
    if not NATIVE:
        in_order = sorted(hand, key=RANK_OF.__getitem__)  # jokers last (rank 13: in no mask)
        if direct:
            plays.extend([([c], None) for c in in_order if ranks >> RANK_OF[c] & 1])
            return
        for c in in_order:
            if ranks >> RANK_OF[c] & 1 and _kept(lock, size, refuse, 1, [c], 0):
                plays.append(([c], None))
        return
    _, s1, s2, s3 = suits
    while ranks:
        low = ranks & -ranks
        ranks ^= low
        r = low.bit_length() - 1
        if not multi & low:  # the one card of the rank (as _only_card)
            c = (r << 2) + (s1 >> r & 1) + (s2 >> r & 1) * 2 + (s3 >> r & 1) * 3
            if direct or _kept(lock, size, refuse, 1, [c], 0):
                plays.append(([c], None))
            continue
        for c in by_rank[r]:
            if direct or _kept(lock, size, refuse, 1, [c], 0):
                plays.append(([c], None))


def _groups(
    plays: list[Play],
    by_rank: list[list[int]],
    suits: tuple[int, int, int, int],
    multi: int,
    ranks: int,
    jokers: int,
    count: int,
    lock: tuple[int, ...],
    size: int,
    refuse: FinishRefused | None,
    direct_below: int,
) -> None:
    """Groups (2 to 6 cards of one rank, jokers standing in, C-3, C-4) of the held ``ranks``
    (``by_rank``: the cards of the ranks of ``multi``, in hand order), of ``count`` cards
    (0: every size); a group of fewer than ``direct_below`` cards is kept without the filters
    (0: every group is filtered)."""
    if not jokers:  # natural cards only: the ranks held twice or more, k of them at a time
        while ranks:
            low = ranks & -ranks
            ranks ^= low
            nat = by_rank[low.bit_length() - 1]
            for k in range(2, min(6, len(nat)) + 1) if not count else (count,) if count <= len(nat) else ():
                for combo in combinations(nat, k):
                    if k < direct_below or _kept(lock, size, refuse, k, list(combo), 0):
                        plays.append((list(combo), None))
        return
    while ranks:
        low = ranks & -ranks
        ranks ^= low
        r = low.bit_length() - 1
        nat = by_rank[r] if multi & low else [_only_card(suits, r)]
        top = min(6, len(nat) + jokers)
        if top < 2 or count > top:
            continue
        for k in range(2, top + 1) if not count else (count,):
            for j in range(0, min(jokers, k - 1) + 1):
                if k - j > len(nat):
                    continue
                for combo in combinations(nat, k - j):
                    cards = list(combo)
                    if j:
                        cards += [JOKER] * j
                    if k < direct_below or _kept(lock, size, refuse, k, list(combo), j):
                        plays.append((cards, [r] * j if j else None))


def _has_run(ranks: int, jokers: int) -> bool:
    """Whether some 3 consecutive ranks hold ``3 - jokers`` of the ``ranks`` (a mask; a quick
    test before looking for stairs in one suit; always True with 2 jokers)."""
    if jokers >= 2:
        return True
    m = ranks
    if jokers:
        return bool((m & (m >> 1)) | (m & (m >> 2)))
    return bool(m & (m >> 1) & (m >> 2))


def _stairs(
    plays: list[Play],
    suits: tuple[int, int, int, int],
    jokers: int,
    mask: int,
    count: int,
    lock: tuple[int, ...],
    size: int,
    refuse: FinishRefused | None,
) -> None:
    """Stairs (3+ consecutive ranks of one suit, jokers standing in, C-3, C-4) whose lowest
    rank is in ``mask``, of ``count`` cards (0: every length), suit by suit (S H D C;
    ``suits``: the ranks held in each), in the order of :func:`_suit_stairs`."""
    direct = not lock  # a play smaller than the hand is kept as it is
    for suit in range(4):
        present = suits[suit]
        if not present or present.bit_count() + jokers < 3 or not _has_run(present, jokers):
            continue
        for lo, cards, used, declared in _suit_stairs(suit, present, jokers):
            n = len(cards)
            if mask >> lo & 1 and (not count or n == count):
                if (direct and n != size) or _kept(lock, size, refuse, n, list(used), n - len(used)):
                    plays.append((list(cards), list(declared) if declared else None))


#: One stairs play of a suit: (lowest rank, cards, its natural cards, the ranks its jokers
#: stand for or None).
_Stairs = tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...] | None]
#: :func:`_suit_stairs` by ``(present, jokers, suit)`` (hands come back: most lookups find
#: their entry), emptied before it would hold more than :data:`_STAIRS_KEPT` stairs (about
#: 300 bytes each: some 12 MB at most, what random self-play of Trump Millionaire reaches).
_STAIRS: Final[dict[int, list[_Stairs]]] = {}
_STAIRS_KEPT: Final = 40_000
#: How many stairs :data:`_STAIRS` holds (one counter, changed in place).
_STAIRS_HELD: Final[list[int]] = [0]


def _suit_stairs(suit: int, present: int, jokers: int) -> list[_Stairs]:
    """Every stairs of ``suit`` whose held ranks are ``present`` (a mask) with up to
    ``jokers`` jokers (C-3, C-4): by lowest rank (a held one, or any with a joker), length,
    then jokers standing in (the fewest first: they fill the ranks not held, then stand in
    for held ones, keeping one natural card). Built once per ``(suit, present, jokers)``."""
    key = present << 4 | jokers << 2 | suit
    found = _STAIRS.get(key)
    if found is not None:
        return found
    out: list[_Stairs] = []
    for lo in range(0, 11):
        if not (jokers or present >> lo & 1):
            continue
        have: list[int] = []  # the held ranks of lo..hi
        codes: tuple[int, ...] = ()  # their cards
        gaps: list[int] = []  # the ranks of lo..hi not held: jokers fill them
        for hi in range(lo, 13):
            if present >> hi & 1:
                have.append(hi)
                codes += (hi * 4 + suit,)
            else:
                gaps.append(hi)
                if len(gaps) > jokers:
                    break
            if hi - lo < 2 or not have:
                continue
            out.append((lo, codes + (JOKER,) * len(gaps), codes, tuple(gaps) or None))
            for rep in range(1, min(jokers - len(gaps), len(have) - 1) + 1):
                for replaced in combinations(have, rep):
                    used = tuple([x * 4 + suit for x in have if x not in replaced])
                    declared = tuple(sorted(gaps + list(replaced)))
                    out.append((lo, used + (JOKER,) * len(declared), used, declared))
    if _STAIRS_HELD[0] + len(out) > _STAIRS_KEPT:
        _STAIRS.clear()
        _STAIRS_HELD[0] = 0
    _STAIRS[key] = out
    _STAIRS_HELD[0] += len(out)
    return out
