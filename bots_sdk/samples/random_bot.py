"""``random``: uniform among the legal actions; in Million Doubt also random bluffs and doubts.

A weak baseline, and not a uniform policy over the training environment's candidates (which
bluffs on most Million Doubt plays and wins about 80% of its games against this bot:
docs/env.md, "`random` is not a uniform policy"). Measure a bot against ``heuristic`` and
``search``."""

from __future__ import annotations

import random
from typing import Any

from bots_sdk.bot import DOUBT, THROUGH, Bot, Request
from bots_sdk.md import face_down_variants


class RandomBot(Bot):
    """Uniform random legal actions (seeded with ``seed``).

    Million Doubt: with probability ``bluff_rate`` a play is replaced by a face-down variant
    of a random legal play (:func:`bots_sdk.md.face_down_variants`, honest or a bluff, always
    accepted); a face-down play of the opponent is doubted with probability ``doubt_rate``.
    Card choices (penalty, give, discard) take a uniform number of cards between ``min`` and
    ``max``, then uniform cards.
    """

    name = "random"

    def __init__(self, seed: int | None = None, bluff_rate: float = 0.25, doubt_rate: float = 0.5):
        super().__init__()
        self.rng = random.Random(seed)
        self.bluff_rate = bluff_rate
        self.doubt_rate = doubt_rate

    def _any(self, req: Request) -> dict[str, Any]:
        if not req.legal_actions:
            raise ValueError(f"no legal_actions listed for a {req.kind} decision")
        return self.rng.choice(req.legal_actions)

    def play(self, req: Request) -> dict[str, Any]:
        action = self._any(req)
        if req.ruleset == "million_doubt" and action["type"] == "play" and self.rng.random() < self.bluff_rate:
            variants = face_down_variants(action, req.hand, self.rng)
            if variants:
                return self.rng.choice(variants)
        return action

    def doubt(self, req: Request) -> dict[str, Any]:
        return DOUBT if self.rng.random() < self.doubt_rate else THROUGH

    def _pick(self, req: Request, kind: str) -> dict[str, Any]:
        ch = req.choice
        n = self.rng.randint(ch["min"], ch["max"])
        return {"type": kind, "cards": self.rng.sample(list(ch["from"]), n)}

    def penalty(self, req: Request) -> dict[str, Any]:
        return self._pick(req, "penalty")

    def give(self, req: Request) -> dict[str, Any]:
        ch = req.choice
        if ch["min"] == ch["max"]:  # JDF-4: a fixed number
            return self._pick(req, "give")
        n = self.rng.randint(0, min(ch["max"], max(0, len(ch["from"]) - 1)))  # LR-5, keep a card
        return {"type": "give", "cards": self.rng.sample(list(ch["from"]), n)}

    def discard(self, req: Request) -> dict[str, Any]:
        ch = req.choice  # never empty the hand by a discard (it may be refused, TM-5)
        n = self.rng.randint(ch["min"], min(ch["max"], max(0, len(ch["from"]) - 1)))
        return {"type": "discard", "cards": self.rng.sample(list(ch["from"]), n)}

    def exchange(self, req: Request) -> dict[str, Any]:
        return self._any(req)

    def rate(self, req: Request) -> dict[str, Any]:
        return self._any(req)
