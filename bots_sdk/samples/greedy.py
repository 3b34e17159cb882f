"""``greedy``: the weakest winning play; in Million Doubt it never bluffs and doubts only a
claim that is impossible given the cards it can see."""

from __future__ import annotations

from typing import Any

from bots_sdk.bot import DOUBT, THROUGH, Bot, Request
from bots_sdk.md import honest_probability


class GreedyBot(Bot):
    """Plays the weakest listed play (passes only when it cannot play); gives away as many
    cards as allowed (penalty, LR-5 give, LR-6 discard; never the last card) and the weakest
    ones when it must give (JDF-4). Million Doubt: no face-down card ever; ``doubt`` only when
    no identity of the face-down cards among the unseen cards makes the play honest."""

    name = "greedy"

    def __init__(self, seed: int | None = None):
        super().__init__()

    def doubt(self, req: Request) -> dict[str, Any]:
        return DOUBT if honest_probability(req.observation) == 0.0 else THROUGH

    def _dump(self, req: Request, kind: str) -> dict[str, Any]:
        ch = req.choice
        n = max(ch["min"], min(ch["max"], len(ch["from"]) - 1))
        return {"type": kind, "cards": req.weakest_cards(n, ch["from"])}

    def give(self, req: Request) -> dict[str, Any]:
        return self._dump(req, "give")

    def discard(self, req: Request) -> dict[str, Any]:
        return self._dump(req, "discard")
