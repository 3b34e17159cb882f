"""The candidate actions of one seat's turn: what index ``i`` of the environment's
``Discrete(MAX_ACTIONS)`` action means now (docs/env.md, "Actions").

A :class:`Turn` follows one engine decision (ACT) of one seat through its sub-steps:

* ``start``: the decision's listed answers (face-up plays and pass, doubt/through, the
  exchange, the rates), in the engine's order; in Million Doubt also ``pick_up`` /
  ``pick_down`` candidates that begin a play with face-down cards (MD-2, MD-3); a list longer
  than :data:`MAX_ACTIONS` is shown in pages, each ending with a ``more`` candidate;
* ``compose`` (Million Doubt): one card at a time, face up or face down, then ``done``; every
  card offered keeps the play completable, so ``done`` is always reachable;
* ``pick`` (``penalty``, ``give``, ``discard``): one card at a time, then ``done``; the
  choice is applied at once when it holds its maximum number of cards.

Everything is read from the seat's observation (C-11) and its own legal actions: the engine
is asked only :meth:`engine.Game.legal_actions` and :meth:`engine.Game.is_legal` for this
seat.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import engine
from engine.cards import parse_card, sort_key

#: Size of the action space: ``Discrete(MAX_ACTIONS)`` (docs/env.md gives the measured maxima).
MAX_ACTIONS = 256
#: Candidate kinds, in the order of their one-hot columns.
KINDS = (
    "play",
    "pass",
    "doubt",
    "through",
    "accept",
    "decline",
    "rate",
    "pick_up",
    "pick_down",
    "pick",
    "done",
    "more",
)
#: The phases of a turn.
PHASES = ("start", "compose", "pick")


@dataclass(slots=True)
class Candidate:
    """One index of the action space.

    Attributes:
        kind: one of :data:`KINDS`.
        cards: wire cards the candidate plays / gives (``done``: the whole selection;
            ``pick*``: the one card added).
        face_down: wire cards put face down (``done`` of a composed play, ``pick_down``).
        jokers: ranks declared for face-up jokers (C-4), as in the ACT action.
        value: the rate of a ``rate`` candidate, else 0.
        action: the ACT action applied at once when chosen, or None for a sub-step.
    """

    kind: str
    cards: list[str] = field(default_factory=list)
    face_down: list[str] = field(default_factory=list)
    jokers: list[str] = field(default_factory=list)
    value: int = 0
    action: dict[str, Any] | None = None


def _direct(action: Mapping[str, Any]) -> Candidate:
    """The candidate of a listed ACT action."""
    t = action["type"]
    act = dict(action)
    if t == "play":
        return Candidate("play", list(action["cards"]), [], list(action.get("jokers") or []), 0, act)
    if t == "exchange":
        return Candidate("accept" if action["accept"] else "decline", action=act)
    if t == "rate":
        return Candidate("rate", value=int(action["rate"]), action=act)
    return Candidate(t, action=act)  # pass, doubt, through


def _minus(cards: Sequence[str], taken: Sequence[str]) -> list[str]:
    rest = list(cards)
    for c in taken:
        rest.remove(c)
    return rest


def _distinct(cards: Sequence[str]) -> list[str]:
    return sorted(set(cards), key=_card_order)


def _card_order(card: str) -> tuple[int, int]:
    return sort_key(parse_card(card))


class Turn:
    """One seat's engine decision and the sub-steps taken in it.

    Args:
        game: the engine state (read through ``legal_actions``/``is_legal`` of ``seat``).
        d: ``game.decision()``, the decision of the seat asked (``d.seat``).
        obs: ``game.observation(d.seat)`` (C-11).
    """

    def __init__(self, game: engine.Game, d: engine.Decision, obs: Mapping[str, Any]):
        self.game = game
        self.seat = d.seat
        self.kind = d.kind
        self.info = dict(d.info)
        self.hand: list[str] = list(obs["hand"])
        self.trick_count = int(obs["trick_count"] or 0)
        self.phase = "pick" if self.kind in ("penalty", "give", "discard") else "start"
        self.page = 0
        self.substep = 0
        self.up: list[str] = []  # compose: face-up cards chosen
        self.down: list[str] = []  # compose: face-down cards chosen
        self.picked: list[str] = []  # pick: cards chosen
        self.pool: list[str] = []
        self.min = self.max = 0
        self.to: int | None = None
        if self.phase == "pick":
            self._choice_limits(obs)
        self._start: list[Candidate] | None = None
        self._full_ok: bool | None = None
        self._cached: list[Candidate] | None = None

    # -- limits of a card choice (as the protocol's ``choice``) ------------------------------
    def _choice_limits(self, obs: Mapping[str, Any]) -> None:
        info = self.info
        if self.kind == "penalty":  # MD-7: cards of the revealed field, MD-16 min
            self.pool = [c for p in obs["field"] for c in p["cards"]]
            self.min, self.max, self.to = int(info.get("min", 0)), len(self.pool), 1 - self.seat
        elif "count" in info:  # JDF-4: exactly count cards
            self.pool = list(self.hand)
            self.min = self.max = int(info["count"])
            self.to = info.get("to")
        else:  # LR-5 give, LR-6 discard: 0..max cards
            self.pool = list(self.hand)
            self.min, self.max = 0, min(int(info.get("max", 0)), len(self.hand))
            self.to = info.get("to")

    # -- candidates ---------------------------------------------------------------------------
    def candidates(self) -> list[Candidate]:
        """The candidates now (at most :data:`MAX_ACTIONS`), index = action."""
        if self._cached is None:
            if self.phase == "start":
                self._cached = self._paged()
            elif self.phase == "compose":
                self._cached = self._compose()
            else:
                self._cached = self._picks()
        return self._cached

    @property
    def listed(self) -> int:
        """Length of the whole start list (before pages; 0 outside the start phase)."""
        if self.phase != "start":
            return 0
        self.candidates()
        return len(self._start or [])

    def _paged(self) -> list[Candidate]:
        if self._start is None:
            listed = [_direct(a) for a in self.game.legal_actions(self.seat)]
            if self.kind == "play" and self.game.FACE_DOWN_PLAYS:
                listed += self._compose()
            self._start = listed
        full = self._start
        if len(full) <= MAX_ACTIONS:
            return full
        per = MAX_ACTIONS - 1
        chunk = full[self.page * per : (self.page + 1) * per]
        if (self.page + 1) * per < len(full):
            chunk = chunk + [Candidate("more")]
        return chunk

    def _play(self, up: Sequence[str], down: Sequence[str]) -> dict[str, Any]:
        return {"type": "play", "cards": list(up) + list(down), "face_down": list(down)}

    def _completable(self, up: Sequence[str], down: Sequence[str]) -> bool:
        """Some play of at least one face-down card holds ``up`` face up and ``down`` face
        down (MD-2, MD-3): tried with the rest face down, as face-down cards are wild."""
        rest = _minus(self.hand, list(up) + list(down))
        have = len(up) + len(down)
        counts = [self.trick_count] if self.trick_count else range(1, len(self.hand) + 1)
        for n in counts:
            extra = n - have
            if extra < 0 or extra > len(rest) or n - len(up) < 1:
                continue
            if self.game.is_legal(self.seat, self._play(up, list(down) + rest[:extra])):
                return True
        return False

    def _compose(self) -> list[Candidate]:
        """``done`` (the selection is a legal play with a face-down card), then ``pick_up``
        and ``pick_down`` of each distinct card left that keeps the play completable."""
        out: list[Candidate] = []
        up, down = self.up, self.down
        if down and self.game.is_legal(self.seat, self._play(up, down)):
            out.append(Candidate("done", list(up) + list(down), list(down), action=self._play(up, down)))
        rest = _distinct(_minus(self.hand, up + down))
        if not rest:
            return out
        for c in rest:
            if self._completable(up + [c], down):
                out.append(Candidate("pick_up", [c]))
        if self._completable(up, down + [rest[0]]):  # a face-down card's identity does not matter
            out.extend(Candidate("pick_down", [c], [c]) for c in rest)
        return out

    def _choice_action(self, cards: Sequence[str]) -> dict[str, Any]:
        return {"type": self.kind, "cards": list(cards)}

    def _may_take_all(self) -> bool:
        """Whether a give/discard of the whole hand is legal (TM-5 may refuse it)."""
        if self._full_ok is None:
            self._full_ok = self.kind == "penalty" or self.game.is_legal(self.seat, self._choice_action(self.pool))
        return self._full_ok

    def _picks(self) -> list[Candidate]:
        """``done`` (once ``min`` cards are chosen), then ``pick`` of each distinct card left."""
        out: list[Candidate] = []
        n = len(self.picked)
        if n >= self.min:
            out.append(Candidate("done", list(self.picked), action=self._choice_action(self.picked)))
        if n < self.max and not (n + 1 == len(self.pool) and not self._may_take_all()):
            out.extend(Candidate("pick", [c]) for c in _distinct(_minus(self.pool, self.picked)))
        return out

    # -- choosing ------------------------------------------------------------------------------
    def choose(self, index: int) -> dict[str, Any] | None:
        """Take candidate ``index`` (already checked legal); return the ACT action to apply
        to the engine, or None when the turn goes on with another sub-step."""
        cand = self.candidates()[index]
        self._cached = None
        self.substep += 1
        if cand.action is not None:
            return cand.action
        if cand.kind == "more":
            self.page += 1
        elif cand.kind in ("pick_up", "pick_down"):
            self.phase = "compose"
            (self.up if cand.kind == "pick_up" else self.down).append(cand.cards[0])
        elif cand.kind == "pick":
            self.picked.append(cand.cards[0])
            if len(self.picked) == self.max:
                return self._choice_action(self.picked)
        return None

    def index_of(self, action: Mapping[str, Any]) -> int:
        """The candidate index that moves toward the ACT ``action`` (a bot's answer to this
        decision): the listed action itself, or the next card of a composed play / card choice,
        or ``more``.

        Raises:
            ValueError: no candidate leads to ``action`` (it is not legal now).
        """
        cands = self.candidates()
        want = action_key(action)
        for i, c in enumerate(cands):
            if c.action is not None and action_key(c.action) == want:
                return i
        t = action.get("type")
        nxt: tuple[str, str] | None = None
        if t == "play" and action.get("face_down"):
            down_left = _minus_safe(action["face_down"], self.down)
            up_left = _minus_safe(_minus_safe(action["cards"], action["face_down"]), self.up)
            if down_left:
                nxt = ("pick_down", down_left[0])
            elif up_left:
                nxt = ("pick_up", up_left[0])
        elif t == self.kind and self.phase == "pick":
            left = _minus_safe(action.get("cards") or [], self.picked)
            if left:
                nxt = ("pick", left[0])
        if nxt is not None:
            for i, c in enumerate(cands):
                if c.kind == nxt[0] and c.cards == [nxt[1]]:
                    return i
        for i, c in enumerate(cands):
            if c.kind == "more":
                return i
        raise ValueError(f"no candidate leads to {dict(action)!r} at this {self.kind} decision")


def _minus_safe(cards: Sequence[str], taken: Sequence[str]) -> list[str]:
    rest = list(cards)
    for c in taken:
        if c in rest:
            rest.remove(c)
    return rest


def action_key(action: Mapping[str, Any]) -> tuple[Any, ...]:
    """A comparable form of an ACT action (card lists as multisets)."""
    return (
        action.get("type"),
        tuple(sorted(Counter(action.get("cards") or []).items())),
        tuple(sorted(Counter(action.get("face_down") or []).items())),
        tuple(action.get("jokers") or ()),
        action.get("accept"),
        action.get("rate"),
    )


__all__ = ["MAX_ACTIONS", "KINDS", "PHASES", "Candidate", "Turn", "action_key"]
