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

Everything is read from what the seat may see (C-11: its hand, the field as its observation
shows it, its own decision) and its own legal actions: the engine is asked only
:meth:`engine.Game.legal_plays`, :meth:`engine.Game.legal_actions`,
:meth:`engine.Game.is_legal_play` and :meth:`engine.Game.is_legal` for this seat.

Internally a turn keeps card codes and typed actions (:class:`Cand`); :meth:`Turn.candidates`
gives the same list in wire notation (:class:`Candidate`) for bots and tests.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import engine
from engine.actions import (
    ACTION_TYPE,
    DOUBT,
    PASS,
    THROUGH,
    DiscardAction,
    ExchangeAction,
    GiveAction,
    PenaltyAction,
    PlayAction,
    RateAction,
    TypedAction,
    to_wire,
)
from engine.cards import CARD_NAMES, RANKS
from engine.million_doubt import MillionDoubt

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
#: Column of each kind in the one-hot ``kind`` part of a row.
KIND_INDEX: dict[str, int] = {k: i for i, k in enumerate(KINDS)}
#: The phases of a turn.
PHASES = ("start", "compose", "pick")
_CARD_CHOICES: dict[str, type[PenaltyAction] | type[GiveAction] | type[DiscardAction]] = {
    "penalty": PenaltyAction,
    "give": GiveAction,
    "discard": DiscardAction,
}
_PLAIN: dict[str, TypedAction] = {"pass": PASS, "doubt": DOUBT, "through": THROUGH}


@dataclass(slots=True)
class Candidate:
    """One index of the action space, in wire notation.

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


class Cand:
    """One index of the action space as the environment keeps it: card codes, declared joker
    ranks as indices, and the typed action applied at once when chosen (None: a sub-step)."""

    __slots__ = ("kind", "cards", "face_down", "jokers", "value", "action")

    def __init__(
        self,
        kind: str,
        cards: list[int] | None = None,
        face_down: list[int] | None = None,
        jokers: list[int] | None = None,
        value: int = 0,
        action: TypedAction | None = None,
    ):
        self.kind = kind
        self.cards = cards if cards is not None else []
        self.face_down = face_down if face_down is not None else []
        self.jokers = jokers if jokers is not None else []
        self.value = value
        self.action = action

    def typed(self) -> TypedAction | None:
        """The typed action applied at once when chosen (a listed play's is made here), or
        None for a sub-step."""
        if self.action is None and self.kind == "play":
            self.action = PlayAction(self.cards, [], self.jokers or None)
        return self.action

    def wire(self) -> Candidate:
        """The :class:`Candidate` of this candidate."""
        action = self.typed()
        return Candidate(
            self.kind,
            [CARD_NAMES[c] for c in self.cards],
            [CARD_NAMES[c] for c in self.face_down],
            [RANKS[r] for r in self.jokers],
            self.value,
            to_wire(action) if action is not None else None,
        )


def _listed(action: TypedAction) -> Cand:
    """The candidate of a listed answer."""
    if isinstance(action, PlayAction):
        return Cand("play", action.cards, [], action.jokers or [], 0, action)
    if isinstance(action, ExchangeAction):
        return Cand("accept" if action.accept else "decline", action=action)
    if isinstance(action, RateAction):
        return Cand("rate", value=action.rate, action=action)
    return Cand(ACTION_TYPE[type(action)], action=action)  # pass, doubt, through


def _minus(cards: Sequence[int], taken: Sequence[int]) -> list[int]:
    rest = list(cards)
    for c in taken:
        rest.remove(c)
    return rest


def _distinct(cards: Sequence[int]) -> list[int]:
    """Distinct codes in display order (rank, suit; jokers last: code order)."""
    return sorted(set(cards))


class Turn:
    """One seat's engine decision and the sub-steps taken in it.

    Args:
        game: the engine state (read through ``legal_plays``/``legal_actions``/``is_legal*``
            of ``d.seat``, its hand and the field as the seat sees it).
        d: ``game.decision()``, the decision of the seat asked.
    """

    def __init__(self, game: engine.Game, d: engine.Decision):
        self.game = game
        self.seat = d.seat
        self.kind = d.kind
        self.info: Mapping[str, Any] = d.info  # read-only (engine.Decision)
        self.hand: list[int] = list(game.hands[d.seat])
        self.trick_count = game.count
        self.phase = "pick" if self.kind in _CARD_CHOICES else "start"
        self.page = 0
        self.substep = 0
        self.up: list[int] = []  # compose: face-up cards chosen
        self.down: list[int] = []  # compose: face-down cards chosen
        self.picked: list[int] = []  # pick: cards chosen
        self.pool: list[int] = []
        self.min = self.max = 0
        self.to: int | None = None
        if self.phase == "pick":
            self._choice_limits()
        self._start: list[Cand] | None = None
        self._full_ok: bool | None = None
        self._cached: list[Cand] | None = None
        self._fit: dict[tuple[tuple[int, ...], int], bool] = {}

    # -- limits of a card choice (as the protocol's ``choice``) ------------------------------
    def _choice_limits(self) -> None:
        info = self.info
        if self.kind == "penalty":  # MD-7: cards of the revealed field, MD-16 min
            self.pool = [c for p in self.game.field for c in p.cards]
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
    def cands(self) -> list[Cand]:
        """The candidates now (at most :data:`MAX_ACTIONS`), index = action."""
        if self._cached is None:
            if self.phase == "start":
                self._cached = self._paged()
            elif self.phase == "compose":
                self._cached = self._compose()
            else:
                self._cached = self._picks()
        return self._cached

    def candidates(self) -> list[Candidate]:
        """The candidates now in wire notation (at most :data:`MAX_ACTIONS`), index = action."""
        return [c.wire() for c in self.cands()]

    @property
    def listed(self) -> int:
        """Length of the whole start list (before pages; 0 outside the start phase)."""
        if self.phase != "start":
            return 0
        self.cands()
        return len(self._start or [])

    def _listed_answers(self) -> list[Cand]:
        g = self.game
        if self.kind == "play":
            plays, may_pass = g.legal_plays(self.seat)
            out = [Cand("play", cards, [], declared or [], 0, None) for cards, declared in plays]
            if may_pass:
                out.append(Cand("pass", action=PASS))
            return out
        return [_listed(_typed(a)) for a in g.legal_actions(self.seat)]

    def _paged(self) -> list[Cand]:
        if self._start is None:
            listed = self._listed_answers()
            if self.kind == "play" and self.game.FACE_DOWN_PLAYS:
                listed += self._compose()
            self._start = listed
        full = self._start
        if len(full) <= MAX_ACTIONS:
            return full
        per = MAX_ACTIONS - 1
        chunk = full[self.page * per : (self.page + 1) * per]
        if (self.page + 1) * per < len(full):
            chunk = chunk + [Cand("more")]
        return chunk

    def _fits(self, up: Sequence[int], wild: int) -> bool:
        """MD-3: ``up`` face up and ``wild`` face-down cards of the hand make a legal play
        (``MillionDoubt.accepts_face_down``: a face-down card's identity does not matter);
        remembered for the turn."""
        key = (tuple(sorted(up)), wild)
        ok = self._fit.get(key)
        if ok is None:
            g = cast(MillionDoubt, self.game)  # the only rule set with face-down plays (MD-2)
            ok = self._fit[key] = g.accepts_face_down(up, wild)
        return ok

    def _completable(self, up: Sequence[int], down: Sequence[int]) -> bool:
        """Some play of at least one face-down card holds ``up`` face up and ``down`` face
        down (MD-2, MD-3): the rest of the hand may go face down too."""
        have = len(up) + len(down)
        rest = len(self.hand) - have
        counts = [self.trick_count] if self.trick_count else range(1, len(self.hand) + 1)
        for n in counts:
            extra = n - have
            if 0 <= extra <= rest and n - len(up) >= 1 and self._fits(up, n - len(up)):
                return True
        return False

    def _compose(self) -> list[Cand]:
        """``done`` (the selection is a legal play with a face-down card), then ``pick_up``
        and ``pick_down`` of each distinct card left that keeps the play completable."""
        out: list[Cand] = []
        up, down = self.up, self.down
        if down and self._fits(up, len(down)):
            out.append(Cand("done", [*up, *down], list(down), action=PlayAction([*up, *down], list(down), None)))
        rest = _distinct(_minus(self.hand, up + down))
        if not rest:
            return out
        for c in rest:
            if self._completable([*up, c], down):
                out.append(Cand("pick_up", [c]))
        if self._completable(up, [*down, rest[0]]):  # a face-down card's identity does not matter
            out.extend(Cand("pick_down", [c], [c]) for c in rest)
        return out

    def _choice_action(self, cards: Sequence[int]) -> TypedAction:
        return _CARD_CHOICES[self.kind](list(cards))

    def _may_take_all(self) -> bool:
        """Whether a give/discard of the whole hand is legal (TM-5 may refuse it)."""
        if self._full_ok is None:
            whole = to_wire(self._choice_action(self.pool))
            self._full_ok = self.kind == "penalty" or self.game.is_legal(self.seat, whole)
        return self._full_ok

    def _picks(self) -> list[Cand]:
        """``done`` (once ``min`` cards are chosen), then ``pick`` of each distinct card left."""
        out: list[Cand] = []
        n = len(self.picked)
        if n >= self.min:
            out.append(Cand("done", list(self.picked), action=self._choice_action(self.picked)))
        if n < self.max and not (n + 1 == len(self.pool) and not self._may_take_all()):
            out.extend(Cand("pick", [c]) for c in _distinct(_minus(self.pool, self.picked)))
        return out

    # -- choosing ------------------------------------------------------------------------------
    def choose(self, index: int) -> TypedAction | None:
        """Take candidate ``index`` (already checked legal); return the typed action to push
        to the engine (:meth:`engine.Game.push`), or None when the turn goes on with another
        sub-step."""
        cand = self.cands()[index]
        self._cached = None
        self.substep += 1
        action = cand.typed()
        if action is not None:
            return action
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
        cands = self.cands()
        want = action_key(action)
        for i, c in enumerate(cands):
            typed = c.typed()
            if typed is not None and action_key(to_wire(typed)) == want:
                return i
        t = action.get("type")
        nxt: tuple[str, int] | None = None
        if t == "play" and action.get("face_down"):
            down_left = _minus_safe(_codes(action["face_down"]), self.down)
            up_left = _minus_safe(_minus_safe(_codes(action["cards"]), _codes(action["face_down"])), self.up)
            if down_left:
                nxt = ("pick_down", down_left[0])
            elif up_left:
                nxt = ("pick_up", up_left[0])
        elif t == self.kind and self.phase == "pick":
            left = _minus_safe(_codes(action.get("cards") or []), self.picked)
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


def _typed(action: Mapping[str, Any]) -> TypedAction:
    """The typed action of an answer the engine listed for a doubt, exchange or rate decision
    (well-formed: the engine's own)."""
    t = action["type"]
    if t == "exchange":
        return ExchangeAction(bool(action["accept"]))
    if t == "rate":
        return RateAction(int(action["rate"]))
    return _PLAIN[t]


def _codes(cards: Sequence[Any]) -> list[int]:
    return [engine.parse_card(c) for c in cards]


def _minus_safe(cards: Sequence[int], taken: Sequence[int]) -> list[int]:
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


__all__ = ["MAX_ACTIONS", "KINDS", "PHASES", "Candidate", "Cand", "Turn", "action_key"]
