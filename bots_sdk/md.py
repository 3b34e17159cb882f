"""Million Doubt helpers for bots: read the trick from an observation, make safe face-down
plays, judge a claim.

Everything here uses only what a decision request shows (RULES C-11) and the engine's form
arithmetic (:mod:`engine.forms`):

* :func:`trick_state` rebuilds the trick's reference (MD-5, blanks included), suit lock (C-8),
  J-back (MD-12) and order from the observation's ``field``;
* :func:`face_down_variants` turns a listed face-up play into plays with some cards face
  down that are **certain** to be accepted (MD-3: the face-up play itself is one identity of
  the face-down cards);
* :func:`all_face_down_ok` says whether ``n`` cards all face down would be accepted;
* :func:`honest_probability` estimates how likely the pending face-down play is honest
  (MD-7), over the cards the seat cannot see.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any, NamedTuple

from engine.cards import JOKER, R8, RANKS, RJ, full_deck, parse_card
from engine.forms import Readings, beating, choose, readings, satisfies_lock, signature, split
from engine.million_doubt import honest_play


class TrickState(NamedTuple):
    """The trick as a seat can know it.

    Attributes:
        ref: readings of the reference (MD-5), None when there is none.
        lock: suit indices of the suit lock (C-8), empty when unlocked.
        reversed_order: effective order (C-9) for the next play.
        count: the trick's card count (MD-4), 0 on an empty field.
        pending: the play awaiting doubt/through (a ``field`` entry), or None.
    """

    ref: Readings | None
    lock: tuple[int, ...]
    reversed_order: bool
    count: int  # type: ignore[assignment]  # the trick's card count (MD-4), shadows tuple.count
    pending: Mapping[str, Any] | None


def face_down_count(play: Mapping[str, Any]) -> int:
    """Face-down cards of a field play (MD-2): its ``face_down`` list, or their number as another seat sees it."""
    fd = play.get("face_down")
    if fd is None:
        return 0
    return fd if isinstance(fd, int) else len(fd)


def _face_up(play: Mapping[str, Any]) -> list[int]:
    """Face-up card codes of a field entry (own plays list every card plus 'face_down')."""
    cards = [parse_card(c) for c in play.get("cards", [])]
    fd = play.get("face_down")
    if isinstance(fd, list) and not play.get("revealed"):
        for c in fd:
            cards.remove(parse_card(c))
    return cards


def trick_state(obs: Mapping[str, Any]) -> TrickState:
    """Rebuild the trick from a Million Doubt observation (state before a pending play)."""
    field = list(obs.get("field") or [])
    pending = field[-1] if obs.get("pending_doubt") and field else None
    accepted = field[:-1] if pending is not None else field
    count = int(obs.get("trick_count") or 0)
    rev = bool(obs.get("revolution"))
    if count >= 4 and len(accepted) % 2:  # undo the revolutions of this trick's plays (MD-11)
        rev = not rev
    jback = False
    lock: tuple[int, ...] = ()
    prev_sig = None
    ref: Readings | None = None
    for p in accepted:
        if p.get("revealed"):
            break  # a doubted trick: about to clear
        fu = _face_up(p)
        wild = face_down_count(p)
        nat, jk = split(fu)
        order = rev != jback
        declared = [RANKS.index(r) for r in p["jokers"]] if p.get("jokers") else None
        n = len(fu) + wild
        r = readings(nat, jk, wild, declared)
        b = beating(r, ref, order)
        if nat:
            ref = b if wild else choose(b, order)
        elif not wild and (n == 1 or (n == 2 and jk == 2)):
            ref = Readings(joker=(n == 1), joker_pair=(n == 2))
        if n >= 4:
            rev = not rev
        if any(c >> 2 == RJ for c in nat):
            jback = not jback
        sig = signature(nat)
        if not lock and sig and sig == prev_sig:
            lock = sig
        prev_sig = sig
    return TrickState(ref, lock, rev != jback, count, pending)


def face_down_variants(
    play: Mapping[str, Any], hand: list[str], rng: random.Random | None = None, k: int | None = None
) -> list[dict[str, Any]]:
    """Face-down versions of a listed face-up ``play`` that MD-3 must accept.

    Each variant keeps some natural cards of ``play`` face up and puts ``k`` (default: every
    possible number 1..n) face-down cards in place of the others: the replaced cards
    themselves (an honest play) or other cards of ``hand`` (a bluff). Jokers of ``play`` are
    always among the replaced cards, so no ``jokers`` declaration is needed. With ``rng`` the
    bluff cards are drawn at random; without it the weakest other cards are used.
    """
    cards = list(play["cards"])
    naturals = [c for c in cards if c != "JK"]
    n = len(cards)
    jokers = n - len(naturals)
    out = []
    sizes = [k] if k is not None else range(max(1, jokers), n + 1)
    for size in sizes:
        if size < jokers or size > n:
            continue
        keep = naturals[: n - size]
        replaced = naturals[n - size :] + ["JK"] * jokers
        # honest: the replaced cards face down
        out.append({"type": "play", "cards": keep + replaced, "face_down": replaced})
        others = Counter(hand) - Counter(keep)
        pool = list(others.elements())
        if len(pool) >= size:
            if rng is not None:
                bluff = rng.sample(pool, size)
            else:
                bluff = sorted(pool, key=lambda c: (13 if c == "JK" else RANKS.index(c[0]), c))[:size]
            if Counter(bluff) != Counter(replaced):
                out.append({"type": "play", "cards": keep + bluff, "face_down": bluff})
    return out


def all_face_down_ok(state: TrickState, n: int) -> bool:
    """True if a play of ``n`` cards, all face down, would be accepted now (MD-3..MD-5, C-8)."""
    if state.count and n != state.count:
        return False
    ref = state.ref
    if ref is not None and (ref.joker or ref.joker_pair):
        return False
    r = readings([], 0, n, None)
    if not satisfies_lock(state.lock, [], n):
        return False
    return not beating(r, ref, state.reversed_order).empty()


def unseen_cards(obs: Mapping[str, Any]) -> Counter[int]:
    """Cards (as a multiset of codes) the seat has not seen leave play: the 54-card deck less
    its hand and every card shown face up in this game, except cards a penalty gave to the
    opponent (they are in its hand again)."""
    deck = Counter(full_deck())
    deck -= Counter(parse_card(c) for c in obs["hand"])
    gone: Counter[int] = Counter()
    me = obs["seat"]
    for ev in obs.get("history", []):
        t = ev.get("type")
        if t == "play":  # own plays list every card, face-down ones included
            gone += Counter(parse_card(c) for c in ev.get("cards", []))
        elif t == "reveal":
            for p in ev.get("field", []):
                if p.get("seat") != me:
                    shown = Counter(parse_card(c) for c in p.get("cards", []))
                    gone |= shown
        elif t == "penalty" and ev.get("to") != me:
            gone -= Counter(parse_card(c) for c in ev.get("cards", []))
    return deck - gone


def _honest(state: TrickState, cards: list[int], declared: list[int] | None) -> bool:
    return honest_play(cards, declared, state.ref, state.lock, state.reversed_order)


def honest_probability(obs: Mapping[str, Any], rng: random.Random | None = None, samples: int = 400) -> float:
    """Share of the identities of the pending play's face-down cards, drawn from
    :func:`unseen_cards`, under which the play is honest (MD-7). 1.0 when nothing is pending.

    Exact for up to ``samples`` combinations, a random sample of ``samples`` otherwise.
    """
    state = trick_state(obs)
    p = state.pending
    if p is None:
        return 1.0
    fu = _face_up(p)
    k = face_down_count(p)
    declared = [RANKS.index(r) for r in p["jokers"]] if p.get("jokers") else None
    pool = list(unseen_cards(obs).elements())
    if k == 0 or len(pool) < k:
        return 1.0
    total = 1
    for i in range(k):
        total = total * (len(pool) - i) // (i + 1)
    combos: Iterable[Sequence[int]]
    if total <= samples:
        combos = combinations(pool, k)
    else:
        rng = rng or random.Random(0)
        combos = (rng.sample(pool, k) for _ in range(samples))
    honest = tried = 0
    for combo in combos:
        tried += 1
        cards = list(combo)
        honest += _honest(state, fu + cards, None if JOKER in cards else declared)
    return honest / tried if tried else 1.0


__all__ = [
    "TrickState",
    "trick_state",
    "face_down_variants",
    "all_face_down_ok",
    "unseen_cards",
    "honest_probability",
    "JOKER",
    "R8",
]
