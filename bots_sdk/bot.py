"""The :class:`Bot` base class and the typed view of a decision request.

Write a bot by subclassing :class:`Bot` and overriding the methods of the decisions you care
about; each receives a :class:`Request` and returns an ACT action dict (docs/rules.md, ACT)::

    class MyBot(Bot):
        name = "my-bot"

        def play(self, req):
            plays = req.plays()                 # legal face-up plays, weakest first
            return plays[0] if plays else PASS

Defaults (used for decisions you do not override) are always legal:

========== ========================================================================
play       the weakest listed play (pass only when nothing can be played)
doubt      ``through``
penalty    give every field card the choice allows (``max``)
exchange   ``{"accept": false}``
rate       the smallest rate offered
give       the weakest cards, as few as allowed (``min``)
discard    nothing (``[]``)
========== ========================================================================

:meth:`Bot.decide` dispatches a request to the method of its decision kind; it is what the
server (:mod:`bots_sdk.server`) and the local runner call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine.cards import JOKER, RANKS, parse_card

PASS = {"type": "pass"}
DOUBT = {"type": "doubt"}
THROUGH = {"type": "through"}


# -- card helpers ----------------------------------------------------------------------------
def rank(card: str) -> int:
    """Rank index of a card in the normal order (``3`` -> 0 ... ``2`` -> 12); 13 for ``JK``."""
    return 13 if card == "JK" else RANKS.index(card[0])


def suit(card: str) -> str | None:
    """Suit letter of a card (``S H D C``), None for ``JK``."""
    return None if card == "JK" else card[1]


def strength(card: str, reversed_order: bool = False) -> int:
    """Strength of a single card in the effective order (C-2, C-9): higher beats lower;
    a joker is always strongest (14)."""
    r = rank(card)
    if r == 13:
        return 14
    return 12 - r if reversed_order else r


def is_card(text: Any) -> bool:
    """True if ``text`` is a card in C-1 notation."""
    try:
        parse_card(text)
        return True
    except Exception:
        return False


def play_strength(action: Mapping[str, Any], reversed_order: bool = False) -> tuple[int, int]:
    """Sort key of a play, weakest first: by the rank it stands for in the effective order,
    lone jokers and 2s (3s in reversed order) last, then by card count."""
    cards = action.get("cards", [])
    jokers = list(action.get("jokers") or [])
    ranks = [rank(c) for c in cards if c != "JK"] + [RANKS.index(j) for j in jokers]
    if not ranks:
        return (99, len(cards))
    key = min(ranks) if not reversed_order else max(ranks)
    value = 12 - key if reversed_order else key
    return (value, len(cards))


class Request:
    """A decision request (``docs/protocol.md``) with convenient accessors.

    Attributes:
        raw: the request as received (dict).
        kind: decision kind (``play``, ``doubt``, ``penalty``, ``exchange``, ``rate``, ``give``,
            ``discard``).
        info: decision limits (``decision.info``).
        seat, ruleset, options, observation (dict, RULES C-11), legal_actions (list or None),
        choice (dict; empty when the decision offers none), remaining_ms (int, this seat's time bank in milliseconds),
        banks_ms (list of int: every seat's time bank in milliseconds, by seat; the clocks are public).
    """

    __slots__ = (
        "raw",
        "kind",
        "info",
        "seat",
        "ruleset",
        "options",
        "observation",
        "legal_actions",
        "choice",
        "remaining_ms",
        "banks_ms",
    )

    def __init__(self, raw: Mapping[str, Any]):
        self.raw = raw
        self.kind: str = raw["decision"]["kind"]
        self.info: dict[str, Any] = raw["decision"].get("info") or {}
        self.seat: int = raw["seat"]
        self.ruleset: str = raw["ruleset"]
        self.options: dict[str, Any] = raw.get("options") or {}
        self.observation: dict[str, Any] = raw["observation"]
        self.legal_actions: list[Any] | None = raw.get("legal_actions")
        self.choice: dict[str, Any] = raw.get("choice") or {}
        self.remaining_ms: int = raw.get("time", {}).get("remaining_ms", 0)
        self.banks_ms: list[int] = list(raw.get("banks_ms") or [])

    # -- views -----------------------------------------------------------------------------
    @property
    def hand(self) -> list[str]:
        """Own cards."""
        return list(self.observation["hand"])

    @property
    def reversed_order(self) -> bool:
        """Effective order reversed (C-9): revolution XOR J-back."""
        return bool(self.observation.get("revolution")) != bool(self.observation.get("jback"))

    @property
    def leading(self) -> bool:
        """True when the field is empty (the seat leads a new trick)."""
        return not self.observation.get("field")

    @property
    def can_pass(self) -> bool:
        return any(a.get("type") == "pass" for a in self.legal_actions or [])

    def plays(self) -> list[dict[str, Any]]:
        """Listed face-up plays (no pass), weakest first in the effective order."""
        plays = [a for a in self.legal_actions or [] if a.get("type") == "play"]
        return sorted(plays, key=lambda a: play_strength(a, self.reversed_order))

    def weakest_cards(self, n: int, cards: list[str] | None = None) -> list[str]:
        """The ``n`` weakest cards of ``cards`` (default: the hand) in the normal order,
        jokers last."""
        pool = list(self.hand if cards is None else cards)
        pool.sort(key=lambda c: (rank(c), c))
        return pool[: max(0, n)]


class Bot:
    """Base class of a bot; override the decisions you want (see the module docstring).

    Attributes:
        name: the bot's name (health check, logs). Default: the class name.
    """

    name: str = ""

    def __init__(self) -> None:
        if not self.name:
            self.name = type(self).__name__

    # -- dispatch --------------------------------------------------------------------------
    def decide(self, request: Mapping[str, Any] | Request) -> dict[str, Any]:
        """Answer a decision request (dict or :class:`Request`) with an ACT action dict.

        Raises:
            ValueError: an unknown decision kind.
        """
        req = request if isinstance(request, Request) else Request(request)
        method: Callable[[Request], dict[str, Any]] | None = getattr(self, req.kind, None)
        if req.kind not in ("play", "doubt", "penalty", "exchange", "rate", "give", "discard") or method is None:
            raise ValueError(f"unknown decision kind {req.kind!r}")
        return method(req)

    def notice(self, message: Mapping[str, Any]) -> None:
        """Handle a lifecycle notice: calls :meth:`on_match_start` / :meth:`on_match_end`."""
        kind = message.get("type")
        if kind == "match_start":
            self.on_match_start(message)
        elif kind == "match_end":
            self.on_match_end(message)

    # -- lifecycle (optional) ----------------------------------------------------------------
    def on_match_start(self, notice: Mapping[str, Any]) -> None:
        """A match begins: ``notice`` has ``match_id``, ``ruleset``, ``options``, ``time``,
        ``players`` (bot names), ``you`` (your player index), ``games``."""

    def on_match_end(self, notice: Mapping[str, Any]) -> None:
        """A match ended: ``notice`` has ``scores``, ``wins`` and ``faults`` per player, and
        ``your_faults``: this bot's own faults, each ``{"game", "n", "kind", "code", "params",
        "rule", "detail"}`` (docs/protocol.md, "Fault codes")."""

    # -- decisions (defaults) ----------------------------------------------------------------
    def play(self, req: Request) -> dict[str, Any]:
        """``play`` decision: a play (``{"type": "play", "cards": [...]}``) or ``pass``."""
        plays = req.plays()
        return plays[0] if plays else PASS

    def doubt(self, req: Request) -> dict[str, Any]:
        """``doubt`` decision (Million Doubt, MD-6): ``doubt`` or ``through``."""
        return THROUGH

    def penalty(self, req: Request) -> dict[str, Any]:
        """``penalty`` decision (MD-7): cards of ``req.choice["from"]`` given to the other player."""
        ch = req.choice or {"from": [], "max": 0}
        return {"type": "penalty", "cards": list(ch["from"])[: ch["max"]]}

    def exchange(self, req: Request) -> dict[str, Any]:
        """``exchange`` decision (TM-3): swap the hand for 10 set-aside cards or not."""
        return {"type": "exchange", "accept": False}

    def rate(self, req: Request) -> dict[str, Any]:
        """``rate`` decision (TM-3): one of ``req.info["choices"]``."""
        return {"type": "rate", "rate": min(req.info.get("choices") or [1])}

    def give(self, req: Request) -> dict[str, Any]:
        """``give`` decision (JDF-4 exchange, LR-5): ``min``..``max`` cards to seat ``choice["to"]``."""
        ch = req.choice or {"min": 0}
        return {"type": "give", "cards": req.weakest_cards(ch["min"])}

    def discard(self, req: Request) -> dict[str, Any]:
        """``discard`` decision (LR-6): 0..``max`` cards."""
        return {"type": "discard", "cards": []}


__all__ = [
    "Bot",
    "Request",
    "PASS",
    "DOUBT",
    "THROUGH",
    "rank",
    "suit",
    "strength",
    "is_card",
    "play_strength",
    "JOKER",
]
