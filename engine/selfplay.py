"""Random self-play: a random legal player, for benchmarks and property tests.

:func:`random_action` picks uniformly among :meth:`Game.legal_actions`; in Million Doubt it
sometimes bluffs instead (any rule set whose ``LISTS_EVERY_PLAY`` is False) (random cards of the trick's
count, some of them face down, kept only
if the engine accepts the play, MD-3).
"""

from __future__ import annotations

import random

from engine.actions import DOUBT, PASS, THROUGH, DiscardAction, GiveAction, PenaltyAction, PlayAction, to_wire
from engine.cards import RANKS, format_cards
from engine.climbing import Climbing
from engine.decisions import Action, InvalidAction
from engine.draws import sample
from engine.game import Game


def _bluff_play(g: Game, seat: int, rng: random.Random) -> PlayAction | None:
    """Random cards of ``seat`` of the trick's count (1 to 4 on a lead), some face down; not
    checked. None when the hand is too small."""
    hand = g.hands[seat]
    n = g.count or 1 + int(rng.random() * min(4, len(hand)))
    if n > len(hand):
        return None
    cards = sample(rng, hand, n)
    k = 1 + int(rng.random() * n)
    return PlayAction(cards, cards[:k], None)


def _bluff(g: Game, seat: int, rng: random.Random) -> Action | None:
    """:func:`_bluff_play` as an ACT dict."""
    play = _bluff_play(g, seat, rng)
    return None if play is None else to_wire(play)


def random_bluff(g: Game, seat: int, rng: random.Random) -> Action | None:
    """A random face-down play of ``seat`` that the engine accepts, or None (MD-2, MD-3)."""
    action = _bluff(g, seat, rng)
    return action if action is not None and g.is_legal(seat, action) else None


def random_action(g: Game, rng: random.Random, bluff_rate: float = 0.2) -> tuple[int, Action]:
    """(seat, action) for the pending decision, chosen at random among legal actions.

    Raises:
        ValueError: the game is over (no decision is pending).
    """
    d = g.decision()
    if d is None:
        raise ValueError("the game is over: no decision is pending")
    if d.kind == "play" and not g.LISTS_EVERY_PLAY and rng.random() < bluff_rate:
        a = random_bluff(g, d.seat, rng)
        if a is not None:
            return d.seat, a
    if d.kind == "doubt":
        return d.seat, {"type": "doubt" if rng.random() < 0.5 else "through"}
    if d.kind == "penalty":
        pool = [c for p in g.field for c in p.cards]
        lo = d.info.get("min", 0)
        k = lo + int(rng.random() * (len(pool) - lo + 1))
        return d.seat, {"type": "penalty", "cards": format_cards(sample(rng, pool, k))}
    if d.kind == "play" and not d.info.get("stuck"):
        # the same set as legal_actions(), picked before formatting (cheaper)
        plays = g.face_up_plays(d.seat)
        n = len(plays) + (1 if g.field else 0)
        i = int(rng.random() * n)
        if i == len(plays):
            return d.seat, {"type": "pass"}
        cards, declared = plays[i]
        action: Action = {"type": "play", "cards": format_cards(cards)}
        if declared:
            action["jokers"] = [RANKS[r] for r in declared]
        return d.seat, action
    actions = list(g.legal_actions(d.seat))
    return d.seat, actions[int(rng.random() * len(actions))]


def random_game(g: Game, rng: random.Random, max_decisions: int = 1_000_000, bluff_rate: float = 0.2) -> int:
    """Play ``g`` to its end with random actions (as :func:`random_action` picks them); return
    the number of decisions.

    Every action goes to :meth:`Game.push` as a typed action (no wire dict): face-up plays
    (listed by :meth:`Game.face_up_plays`: a stuck leader only passes, TM-6; a pass is legal
    on a non-empty field, C-6), passes, doubts and throughs as the engine generated them (the
    trusted path); Million Doubt bluffs and penalties are judged by the engine (a refused
    bluff changes nothing, C-12, and is not counted), gives and discards too
    (:meth:`Climbing.card_choices`, the pick :func:`random_action` makes); exchanges and
    rates (rare) go through :meth:`random_action` and :meth:`Game.apply`.
    """
    n = 0
    bluffs = not g.LISTS_EVERY_PLAY  # face-down plays are not listed: try them (MD-2)
    decision, face_up_plays, push = g.decision, g.face_up_plays, g.push
    random_ = rng.random
    while True:
        d = decision()
        if d is None:
            break
        seat, kind, info = d
        if kind == "play":
            if bluffs and random_() < bluff_rate:
                play = _bluff_play(g, seat, rng)
                if play is not None:
                    try:
                        push(seat, play)
                    except InvalidAction:
                        pass
                    else:
                        n += 1
                        continue
            plays = [] if info and info.get("stuck") else face_up_plays(seat)  # stuck (TM-6): a pass
            k = len(plays)
            i = int(random_() * (k + 1 if g.field or not k else k))  # a pass but for a leader (C-6)
            if i == k:
                push(seat, PASS)
            else:
                cards, declared = plays[i]
                push(seat, PlayAction(cards, [], declared))
        elif kind == "doubt":
            push(seat, DOUBT if random_() < 0.5 else THROUGH)
        elif kind == "penalty":  # as random_action
            pool = [c for p in g.field for c in p.cards]
            lo = d.info.get("min", 0)
            push(seat, PenaltyAction(sample(rng, pool, lo + int(random_() * (len(pool) - lo + 1)))))
        elif (kind == "give" or kind == "discard") and isinstance(g, Climbing):  # as random_action
            choices = g.card_choices(seat)
            cards = choices[int(random_() * len(choices))]
            push(seat, GiveAction(cards) if kind == "give" else DiscardAction(cards))
        else:
            seat, action = random_action(g, rng, 0.0)
            g.apply(seat, action)
        n += 1
        if n >= max_decisions:
            raise RuntimeError("game did not terminate")
    return n
