"""``heuristic``: a stronger sample bot for each rule set (a few plain rules, no search).

Million Doubt:

* finishes with a face-up play whenever a listed play empties the hand;
* leads its weakest rank with every copy of it, follows with the weakest winning play and
  keeps jokers and 2s for the end (passes rather than spend them while both hands are big);
* baits doubts: with probability ``bait_rate`` an honest play goes out with one card face
  down (a failed doubt makes this bot the penalty executor, MD-7);
* doubts by odds (:func:`bots_sdk.md.honest_probability`), more readily when the claim would
  end the game, hardly ever when a failed doubt would burst it (MD-10);
* as penalty executor gives every field card when that bursts the opponent, otherwise all
  but the jokers, 2s and 8s.

Trump Millionaire and JDF: finishes when it can, leads the weakest rank with all its copies,
follows with the weakest winning play without jokers and 2s until the hand is small,
accepts the Millionaire's exchange (TM-3) with a weak hand and raises the rate with a strong
one, gives and discards its weakest cards.
"""

from __future__ import annotations

import random
from typing import Any

from bots_sdk.bot import DOUBT, PASS, THROUGH, Bot, Request, play_strength, rank
from bots_sdk.md import all_face_down_ok, face_down_variants, honest_probability, trick_state

POWER = ("JK",)


def _is_power(card: str, reversed_order: bool) -> bool:
    if card == "JK":
        return True
    return card[0] == ("3" if reversed_order else "2")


def _foul_card(card: str, revolution: bool) -> bool:
    return card == "JK" or card[0] == ("3" if revolution else "2") or card[0] == "8" or card == "3S"


def _foul(play: dict[str, Any], revolution: bool) -> bool:
    """JDF-10: would this play be a foul as a last play (approximation: stairs never cut)."""
    cards = play["cards"]
    if "JK" in cards or any(c[0] == ("3" if revolution else "2") for c in cards):
        return True
    if cards == ["3S"]:
        return True
    naturals = [c for c in cards if c != "JK"]
    return bool(naturals) and all(c[0] == "8" for c in naturals)


class HeuristicBot(Bot):
    """See the module docstring. ``seed`` makes the bait and sampling reproducible."""

    name = "heuristic"

    def __init__(self, seed: int | None = None, bait_rate: float = 0.5):
        super().__init__()
        self.rng = random.Random(seed)
        self.bait_rate = bait_rate

    # -- common play choice ---------------------------------------------------------------
    def _choose(self, req: Request) -> dict[str, Any] | None:
        plays = req.plays()
        if not plays:
            return None
        hand = req.hand
        rev = req.reversed_order
        jdf = req.ruleset == "jdf"
        rev_flag = bool(req.observation.get("revolution"))
        for p in plays:  # a finishing play (in JDF only a clean one, JDF-10)
            if len(p["cards"]) == len(hand) and not (jdf and _foul(p, rev_flag)):
                return p
        if jdf:
            # JDF-10: a last play with a joker, a 2 (3 in revolution), an 8-cut or a lone 3S is
            # a foul: spend such cards while other cards are left
            bad = sum(1 for c in hand if _foul_card(c, rev_flag))
            spend = [p for p in plays if _foul(p, rev_flag) and len(p["cards"]) < len(hand)]
            if spend and bad and len(hand) - bad <= 2:
                return spend[-1] if req.leading else spend[0]
        sizes = req.observation["hand_sizes"]
        opp_small = (
            min(n for s, n in enumerate(sizes) if s != req.seat and n > 0) <= 3
            if any(n > 0 for s, n in enumerate(sizes) if s != req.seat)
            else True
        )
        endgame = len(hand) <= 4 or opp_small
        cheap = [p for p in plays if not any(_is_power(c, rev) for c in p["cards"])]
        if req.leading:
            pool = cheap or plays
            low = play_strength(pool[0], rev)[0]
            block = [p for p in pool if play_strength(p, rev)[0] == low]
            return max(block, key=lambda p: len(p["cards"]))
        if cheap:
            return cheap[0]
        return plays[0] if endgame else None

    # -- Million Doubt ----------------------------------------------------------------------
    def play(self, req: Request) -> dict[str, Any]:
        choice = self._choose(req)
        if req.ruleset != "million_doubt":
            if choice is None:
                return PASS if req.can_pass else req.plays()[0]
            return choice
        hand = req.hand
        if choice is None:
            state = trick_state(req.observation)
            if state.count == len(hand) and all_face_down_ok(state, len(hand)):
                return {"type": "play", "cards": hand, "face_down": hand}  # last-card bluff
            return PASS if req.can_pass else req.plays()[0]
        finishing = len(choice["cards"]) == len(hand)
        has_eight = any(c[0] == "8" for c in choice["cards"])
        if not finishing and not has_eight and self.rng.random() < self.bait_rate:
            honest = face_down_variants(choice, hand, k=1)
            if honest and honest[0]["face_down"] != honest[0]["cards"] or (honest and len(choice["cards"]) == 1):
                return honest[0]
        return choice

    def doubt(self, req: Request) -> dict[str, Any]:
        obs = req.observation
        p = honest_probability(obs, self.rng)
        opp = 1 - req.seat
        field = obs["field_size"]
        if obs["hand_sizes"][opp] == 0:
            return DOUBT if p < 0.95 else THROUGH
        if len(req.hand) + field >= 11:
            return DOUBT if p < 0.1 else THROUGH
        return DOUBT if p < 0.5 else THROUGH

    def penalty(self, req: Request) -> dict[str, Any]:
        ch = req.choice
        opp = ch["to"]
        cards = list(ch["from"])
        if req.observation["hand_sizes"][opp] + len(cards) >= 11:
            return {"type": "penalty", "cards": cards}
        give = [c for c in cards if c != "JK" and c[0] not in "28"]
        if len(give) < ch["min"]:
            give = sorted(cards, key=rank)[: ch["min"]]
        return {"type": "penalty", "cards": give}

    # -- Trump Millionaire / JDF --------------------------------------------------------------
    def exchange(self, req: Request) -> dict[str, Any]:
        avg = sum(min(rank(c), 12) for c in req.hand) / max(1, len(req.hand))
        return {"type": "exchange", "accept": avg < 5.5}

    def rate(self, req: Request) -> dict[str, Any]:
        choices = sorted(req.info.get("choices") or [1])
        strong = sum(1 for c in req.hand if rank(c) >= 10)
        return {"type": "rate", "rate": choices[-1] if strong >= 4 else choices[0]}

    def give(self, req: Request) -> dict[str, Any]:
        ch = req.choice
        n = ch["min"] if ch["min"] == ch["max"] else min(ch["max"], len(ch["from"]) - 1)
        return {"type": "give", "cards": req.weakest_cards(max(n, ch["min"]), ch["from"])}

    def discard(self, req: Request) -> dict[str, Any]:
        ch = req.choice
        n = min(ch["max"], len(ch["from"]) - 1)
        return {"type": "discard", "cards": req.weakest_cards(max(n, 0), ch["from"])}
