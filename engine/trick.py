"""The trick's shared rules: judging a play (C-3, C-4, C-5, C-8), its shared effects (C-8
lock start, C-10 revolution, MD-12 / LR-1 J-back), the turn and the clear (C-6, C-7, LR-4),
and the legal face-up plays (the legal-move generation of a play decision).

:class:`TrickRules` extends :class:`engine.state.GameState`; :class:`engine.game.Game` extends it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar

from engine.cards import RANKS, format_cards
from engine.decisions import Action, InvalidAction
from engine.field import SUIT_LETTERS, cards_text, holds_all
from engine.forms import Readings, readings, satisfies_lock
from engine.plays import Play, face_up_plays
from engine.refusals import Refusal
from engine.state import GameState, mypyc_attr


@mypyc_attr(allow_interpreted_subclasses=True)
class TrickRules(GameState):
    """The rules of the trick every rule set shares, and their hooks (see :class:`engine.game.Game`)."""

    #: The rule ids of the count check and the comparison (C-5; MD-4 and MD-3 in Million Doubt).
    COUNT_RULE: ClassVar[str] = "C-5"
    #: The class overrides :meth:`_finish_refused` (set by :class:`engine.game.Game`): the
    #: play generator asks it only then.
    _refusing: bool

    # -- shared effects of an accepted play (C-8, C-10, MD-12, LR-1) ----------------------
    def _toggle_revolution(self) -> None:
        """C-10: the revolution flag toggles (a second revolution restores the order)."""
        self.revolution = not self.revolution
        if self.logged:
            self._event({"type": "revolution", "on": self.revolution})

    def _toggle_jback(self) -> None:
        """MD-12 / LR-1: the J-back flag toggles until the trick clears."""
        self.jback = not self.jback
        if self.logged:
            self._event({"type": "jback", "on": self.jback})

    def _suit_lock(self, sig: tuple[int, ...], may_start: bool = True) -> None:
        """C-8: a play whose non-empty suit signature ``sig`` equals the previous play's
        starts the lock (unless ``may_start`` is False: a joker in ``jdf`` and
        ``trump_millionaire``); once started it keeps its suits until the trick clears."""
        if not self.lock and sig and sig == self.prev_sig and may_start:
            self.lock = sig
            if self.logged:
                self._event({"type": "lock", "suits": [SUIT_LETTERS[s] for s in sig]})
        self.prev_sig = sig

    # -- shared judging of a play (C-3, C-4, C-5, C-8) ------------------------------------
    def _read_play(
        self, cards: Sequence[int], nat: Sequence[int], jokers: int, wild: int, declared: list[int] | None
    ) -> Readings:
        """Every reading of a play (C-3; jokers at their ``declared`` ranks, C-4) of the
        trick's count (C-5 / MD-4), not yet compared with the field.

        Raises:
            InvalidAction: wrong count (``COUNT_RULE``), no legal form (C-3) or none with the
                declared joker ranks (C-4).
        """
        n = len(cards)
        if self.count and n != self.count:
            raise InvalidAction(self.COUNT_RULE, Refusal.TRICK_COUNT, {"count": self.count, "n": n})
        r = readings(nat, jokers, wild, declared)
        if r.empty():
            rule = "C-4" if declared else "C-3"
            code = Refusal.NO_FORM_DECLARED if declared else Refusal.NO_FORM
            raise InvalidAction(rule, code, lambda: {"cards": cards_text(cards)})
        return r

    def _check_lock(self, nat: Sequence[int], wild: int) -> None:
        """C-8: raise :class:`InvalidAction` when the suit lock is not matched by the play's
        natural cards and ``wild`` wild cards."""
        if self.lock and not satisfies_lock(self.lock, nat, wild):
            locked = "".join(SUIT_LETTERS[s] for s in self.lock)
            raise InvalidAction("C-8", Refusal.SUIT_LOCK, {"suits": locked})

    # -- rotation -----------------------------------------------------------------------
    def _step(self, seat: int) -> int:
        return (seat + self.direction) % self.seats

    def _next_still_in(self, seat: int) -> int | None:
        """First other seat still in after ``seat`` in the current direction (C-7, LR-5), or
        None when no other seat is still in."""
        s = seat
        for _ in range(self.seats - 1):
            s = self._step(s)
            if self.still_in[s]:
                return s
        return None

    def _clear(self, leader_hint: int | None) -> None:
        """Clear the trick (C-7): discard the field, reset trick flags, set the leader.

        ``leader_hint`` is the seat that made the last play; if it is no longer in, the first
        seat still in after it leads.
        """
        for p in self.field:
            self.discards.extend(p.cards)
        if self.logged:
            self._event({"type": "clear"})
        self._reset_trick_flags()
        if leader_hint is None:
            return
        leader = leader_hint if self.still_in[leader_hint] else self._next_still_in(leader_hint)
        if leader is not None:
            self._set_leader(leader)

    def _set_leader(self, seat: int) -> None:
        """Hook: ask ``seat`` to lead (C-6); TM-6 and JDF-5 refine who actually leads."""
        self._ask_lead(seat)

    # -- hooks with a default -------------------------------------------------------------------
    def _rank_restriction(self) -> int | None:
        """Hook: a mask of ranks singles/groups must have (LR-3 number lock), or None; the
        play generator asks it only while the number lock is on (``nlock``)."""
        return None

    def _finish_refused(self, nat: Sequence[int], jokers: int) -> bool:
        """Hook: True if a play of these cards may not empty the hand (TM-5)."""
        return False

    def _extra_plays(self, seat: int) -> Sequence[Play]:
        """Hook: plays legal outside the normal comparison (JDF-9 spade-3 return); the play
        generator asks it only on a lone joker (``ref.joker``)."""
        return ()

    # -- play validation shared by every rule set -----------------------------------------
    def _hand_check(self, seat: int, cards: list[int]) -> None:
        if not cards:
            raise InvalidAction("C-3", Refusal.EMPTY_PLAY)
        if not holds_all(self.hands[seat], cards):
            raise InvalidAction("C-12", Refusal.NOT_HELD, {"seat": seat, "cards": " ".join(format_cards(cards))})

    # -- legal face-up plays -----------------------------------------------------------------
    def face_up_plays(self, seat: int) -> list[Play]:
        """Every legal face-up play of ``seat`` now, as ``(card codes, declared ranks)``.

        Generated by form (C-3) from the hand, keeping only ranks that beat the reference
        (C-5, MD-5 masks), then the suit lock (C-8), number lock (LR-3) and forbidden finish
        (TM-5), then the rule set's extra plays (JDF-9); see :func:`engine.plays.face_up_plays`
        for the order. Used by :meth:`legal_actions`.
        """
        ref = self.ref
        plays = face_up_plays(
            self.hands[seat],
            self.count,
            self.lock,
            ref,
            self.revolution != self.jback,  # reversed_order (C-9)
            self._rank_restriction() if self.nlock else None,
            self._finish_refused if self._refusing else None,
        )
        if ref is not None and ref.joker:
            extra = self._extra_plays(seat)
            if extra:
                plays.extend(extra)
        return plays

    def legal_plays(self, seat: int) -> tuple[list[Play], bool]:
        """The play decision's answers that :meth:`legal_actions` lists, typed: ``(face-up
        plays as :meth:`face_up_plays` gives them, whether a pass is legal)``; ``([], False)``
        when ``seat`` has no play decision. C-6: a leader may not pass; TM-6: a stuck leader
        only passes; MD-5: nothing beats a face-up joker (a pass only)."""
        d = self._decision
        if d is None or self.over or d.seat != seat or d.kind != "play":
            return [], False
        if d.info and d.info.get("stuck"):
            return [], True
        return self.face_up_plays(seat), bool(self.field)

    def _play_answers(self, seat: int) -> Iterator[Action]:
        """A play decision's answers as :meth:`legal_actions` lists them: :meth:`legal_plays`
        as ACT dicts (``jokers`` when jokers stand in, C-4), then the pass when legal."""
        plays, may_pass = self.legal_plays(seat)
        for cards, declared in plays:
            action: Action = {"type": "play", "cards": format_cards(cards)}
            if declared:
                action["jokers"] = [RANKS[r] for r in declared]
            yield action
        if may_pass:
            yield {"type": "pass"}
