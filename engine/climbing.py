"""Face-up climbing flow shared by ``trump_millionaire`` and ``jdf`` (RULES C-5..C-8, C-13, LR).

:class:`Climbing` validates a face-up play (form C-3, jokers C-4, following C-5, suit lock
C-8, number lock LR-3, the spade-3 return JDF-9 where the preset allows it), then applies its
effects in the order of C-13:

1. revolution toggle (TM-4 / JDF-7 / LR-2);
2. J-back toggle (LR-1);
3. suit lock (C-8) and number lock (LR-3);
4. direction reversal (TM-4, a natural 9);
5. ``give`` (LR-5) then ``discard`` (LR-6) decisions, each only if the hand is not empty;
6. the finish check (TM-7, JDF-10, JDF-11), defined by the rule set;
7. the clear by 8-cut or spade-3 return, else the five-skip (LR-4), else the next turn.

Rule sets set the class attributes that differ (which plays are revolutions, which cut) and
implement :meth:`Climbing._finish`.
"""

from __future__ import annotations

from itertools import combinations
from typing import Iterator

from engine.cards import R2, R3, R5, R7, R9, RANKS, RJ, RT, SPADE_3, format_cards
from engine.forms import (
    Readings, beating, choose, only_rank, readings, satisfies_lock, signature, split,
)
from engine.game import Game, InvalidAction, PlayRecord, _remove_all, _take, cards_text


class PlayInfo:
    """A validated face-up play: its cards, naturals, jokers and chosen reading (C-4)."""

    __slots__ = ("cards", "nat", "jokers", "declared", "reading", "kind", "rank", "is_return")

    def __init__(self, cards, nat, jokers, declared, reading: Readings, is_return: bool):
        self.cards = cards
        self.nat = nat
        self.jokers = jokers
        self.declared = declared
        self.reading = reading
        self.is_return = is_return
        if reading.joker:
            self.kind, self.rank = "joker", None
        elif reading.joker_pair:
            self.kind, self.rank = "joker_pair", None
        elif reading.group:
            self.kind, self.rank = "group", only_rank(reading.group)
        elif reading.stairs:
            self.kind, self.rank = "stairs", only_rank(reading.stairs)
        else:
            self.kind, self.rank = "single", only_rank(reading.single)

    def count(self, rank: int) -> int:
        """Number of natural cards of ``rank`` in the play."""
        return sum(1 for c in self.nat if c >> 2 == rank)


class Climbing(Game):
    """Common flow of the 4-seat face-up rule sets; see the module docstring."""

    #: TM-5: a finishing play with a joker, 8 or 2 (3 in revolution) is invalid.
    FORBIDDEN_FINISH_INVALID = False
    #: JDF-9: a single 3S beats a lone joker and clears.
    SPADE_3_RETURN = False
    #: TM-4: a natural 9 reverses the direction.
    NINE_REVERSES = False

    def __init__(self, options, seed, setup):
        super().__init__(options, seed, setup)
        self.follow: dict | None = None  # the C-13 steps still to run after a play

    # -- presets ------------------------------------------------------------------------------
    def _is_revolution(self, p: PlayInfo) -> bool:
        raise NotImplementedError

    def _is_eight_cut(self, p: PlayInfo) -> bool:
        raise NotImplementedError

    def _special_last_play(self, p: PlayInfo, revolution_before: bool) -> bool:
        """Whether ``p`` may not end a hand cleanly: TM-5 (forbidden) or JDF-10 (foul).

        ``revolution_before`` is the revolution flag before the play (J-back never counts).
        """
        raise NotImplementedError

    @staticmethod
    def _holds_two(p: PlayInfo, revolution_before: bool) -> bool:
        """The play holds a joker or a natural 2 (a natural 3 while in revolution)."""
        bad = R3 if revolution_before else R2
        return p.jokers > 0 or any(c >> 2 == bad for c in p.nat)

    # -- validation ---------------------------------------------------------------------------
    def _rank_restriction(self) -> int | None:
        if not self.nlock:
            return None
        want = self._step_rank(self.last_rank) if self.last_rank is not None else None
        return 0 if want is None else 1 << want

    def _extra_plays(self, seat: int) -> list:
        if (self.SPADE_3_RETURN and self.ref is not None and self.ref.joker
                and SPADE_3 in self.hands[seat]):
            return [([SPADE_3], None)]
        return []

    def _step_rank(self, rank: int) -> int | None:
        nxt = rank - 1 if self.reversed_order else rank + 1
        return nxt if 0 <= nxt <= 12 else None

    def _evaluate(self, seat: int, action: dict) -> PlayInfo:
        """Check a play (C-3..C-8, LR-3, JDF-9, TM-5) without changing anything."""
        cards = self._cards_field(action)
        if action.get("face_down"):
            raise InvalidAction("MD-2", f"face-down cards exist only in million_doubt, not {self.ruleset}")
        self._hand_check(seat, cards)
        nat, jk = split(cards)
        declared = self._declared(action, jk)
        return self._judge(seat, cards, nat, jk, declared)

    def _judge(self, seat: int, cards, nat, jk, declared) -> PlayInfo:
        """C-3..C-8, LR-3, JDF-9, TM-5 on parsed cards held by ``seat``; raises InvalidAction."""
        n = len(cards)
        if self.count and n != self.count:
            raise InvalidAction("C-5", f"the trick is of {self.count} card(s); this play has {n}")
        r = readings(nat, jk, 0, declared)
        if r.empty():
            rule = "C-4" if declared else "C-3"
            raise InvalidAction(rule, lambda: f"{cards_text(cards)} is not a legal form" + (
                " with the declared joker ranks" if declared else ""))
        ref = self.ref
        if (self.SPADE_3_RETURN and n == 1 and cards[0] == SPADE_3 and ref is not None
                and ref.joker):
            return PlayInfo(cards, nat, jk, declared, Readings(single=1 << R3), True)
        if ref is not None:
            b = beating(r, ref, self.reversed_order)
            if b.empty():
                raise InvalidAction("C-5", lambda: f"{cards_text(cards)} does not beat the last play ({ref.describe()})")
        else:
            b = r
        if self.lock and not satisfies_lock(self.lock, nat, jk):
            locked = "".join("SHDC"[s] for s in self.lock)
            raise InvalidAction("C-8", f"the suit lock {locked} is not matched")
        mask = self._rank_restriction()
        if mask is not None:
            b = Readings(b.single & mask, b.group & mask, 0, False, False)
            if b.empty():
                need = RANKS[only_rank(mask)] if mask else "nothing"
                raise InvalidAction("LR-3", f"under the number lock the play must be of rank {need}")
        chosen = choose(b, self.reversed_order)
        info = PlayInfo(cards, nat, jk, declared, chosen, False)
        if (self.FORBIDDEN_FINISH_INVALID and n == len(self.hands[seat])
                and self._special_last_play(info, self.revolution)):
            raise InvalidAction("TM-5", "a last play may not hold a joker, an 8 or a 2 (a 3 in revolution)")
        return info

    # -- play and its effects (C-13) ----------------------------------------------------------
    def _do_play(self, seat: int, action: dict) -> None:
        p = self._evaluate(seat, action)
        self._before_play(seat)
        rev_before = self.revolution
        reversed_before = self.reversed_order
        _take(self.hands[seat], p.cards)
        rec = PlayRecord(seat, p.cards, [], p.declared)
        self.field.append(rec)
        if not self.count:
            self.count = len(p.cards)
        self._event({"type": "play", **rec.view(None), "form": p.kind})
        # (1) revolution
        if self._is_revolution(p):
            self.revolution = not self.revolution
            self._event({"type": "revolution", "on": self.revolution})
        # (2) J-back (LR-1)
        if self.options.eleven_back and p.count(RJ):
            self.jback = not self.jback
            self._event({"type": "jback", "on": self.jback})
        # (3) suit lock (C-8: a play with a joker cannot start one here) and number lock
        sig = signature(p.nat)
        if not self.lock and sig and sig == self.prev_sig and not p.jokers:
            self.lock = sig
            self._event({"type": "lock", "suits": ["SHDC"[s] for s in sig]})
        self.prev_sig = sig
        if self.options.number_lock and not p.is_return:
            if p.kind in ("single", "group"):
                if not self.nlock and self.last_rank is not None:
                    want = self.last_rank - 1 if reversed_before else self.last_rank + 1
                    if p.rank == want:
                        self.nlock = True
                        self._event({"type": "number_lock"})
                self.last_rank = p.rank
            else:
                self.last_rank = None
        # (4) direction (TM-4)
        if self.NINE_REVERSES and p.count(R9):
            self.direction = -self.direction
            self._event({"type": "direction", "direction": self.direction})
        self.ref = p.reading
        self.last_player = seat
        self.follow = {
            "seat": seat,
            "give": p.count(R7) if self.options.seven_pass else 0,
            "discard": p.count(RT) if self.options.ten_discard else 0,
            "cut": self._is_eight_cut(p),
            "return": p.is_return,
            "skip": p.count(R5) if self.options.five_skip else 0,
            "special": self._special_last_play(p, rev_before),
        }
        self._continue()

    def _before_play(self, seat: int) -> None:
        """Hook run once a play is validated, before it is applied."""

    def _continue(self) -> None:
        """Run the remaining C-13 steps (5)-(7) of the play in ``self.follow``."""
        f = self.follow
        seat = f["seat"]
        hand = self.hands[seat]
        if f["give"] and hand and self.still_in[seat]:
            to = self._next_still_in(seat)
            if to is not None:
                self._ask(seat, "give", max=f["give"], to=to)
                return
            f["give"] = 0
        if f["discard"] and hand and self.still_in[seat]:
            self._ask(seat, "discard", max=f["discard"])
            return
        self.follow = None
        if not hand and self.still_in[seat]:
            unit = self.unit_start
            self._finish(seat, f["special"])
            if self.over or self.unit_over or self.unit_start != unit:
                return  # the deal/game ended (a new one may have started)
        if f["cut"] or f["return"]:
            self._event({"type": "eight_cut" if f["cut"] else "spade_3_return", "seat": seat})
            self._clear(seat)
        elif f["skip"]:
            self._five_skip(seat, f["skip"])
        else:
            self._next_turn(seat)

    def _next_turn(self, seat: int) -> None:
        nxt = self._turn_after(seat)
        if nxt is None:
            self._clear(self.last_player)
        else:
            self._ask(nxt, "play")

    def _five_skip(self, seat: int, k: int) -> None:
        """LR-4: the turn passes over the next ``k`` seats still in that have not passed."""
        eligible = []
        s = seat
        for _ in range(self.seats - 1):
            s = self._step(s)
            if self.still_in[s] and not self.passed[s]:
                eligible.append(s)
        if k >= len(eligible):
            self._event({"type": "five_skip", "seats": eligible})
            self._clear(seat)
        else:
            self._event({"type": "five_skip", "seats": eligible[:k]})
            self._ask(eligible[k], "play")

    def _follow_up_cards(self, seat: int, action: dict, kind: str, rule: str) -> list[int]:
        """Validate the cards of a ``give`` (LR-5) or ``discard`` (LR-6): 0..k held cards."""
        cards = self._cards_field(action)
        f = self.follow
        hand = self.hands[seat]
        if len(cards) > f[kind]:
            raise InvalidAction(rule, f"you may {kind} at most {f[kind]} card(s)")
        if not _remove_all(hand, cards):
            raise InvalidAction("C-12", f"seat {seat} does not hold {cards_text(cards)}")
        if cards and len(cards) == len(hand):
            self._check_empty_by_follow_up(f)
        return cards

    def _do_give(self, seat: int, action: dict) -> None:
        """LR-5 give (the JDF exchange overrides this when it is running)."""
        cards = self._follow_up_cards(seat, action, "give", "LR-5")
        f = self.follow
        hand = self.hands[seat]
        to = self._decision.info["to"]
        _take(hand, cards)
        self.hands[to].extend(cards)
        self._event({"type": "give", "seat": seat, "to": to, "cards": format_cards(cards)},
                    (seat, to), {"type": "give", "seat": seat, "to": to, "count": len(cards)})
        f["give"] = 0
        self._continue()

    def _do_discard(self, seat: int, action: dict) -> None:
        """LR-6 discard: 0..k cards, shown to every seat (C-11)."""
        cards = self._follow_up_cards(seat, action, "discard", "LR-6")
        f = self.follow
        hand = self.hands[seat]
        _take(hand, cards)
        self.discards.extend(cards)
        self._event({"type": "discard", "seat": seat, "cards": format_cards(cards)})
        f["discard"] = 0
        self._continue()

    def _check_empty_by_follow_up(self, f: dict) -> None:
        """Hook: may refuse a give/discard that empties the hand (TM, section LR)."""

    def _do_pass(self, seat: int, action: dict) -> None:
        if not self.field:
            raise InvalidAction("C-6", "the leader may not pass")
        self.passed[seat] = True
        self._event({"type": "pass", "seat": seat})
        self._next_turn(seat)

    def _finish(self, seat: int, special: bool) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- legal actions ------------------------------------------------------------------------
    def legal_actions(self, seat: int) -> Iterator[dict]:
        """Every legal action of ``seat`` now (all of them can be listed: no face-down cards).

        Plays carry ``jokers`` when they hold jokers standing in (C-4). Gives and discards
        are listed from the empty one up.
        """
        d = self.decision()
        if d is None or d.seat != seat:
            return
        if d.kind == "play":
            if not d.info.get("stuck"):
                for cards, declared in self.face_up_plays(seat):
                    action = {"type": "play", "cards": format_cards(cards)}
                    if declared:
                        action["jokers"] = [RANKS[r] for r in declared]
                    yield action
            if self.field or d.info.get("stuck"):
                yield {"type": "pass"}
        elif d.kind in ("give", "discard"):
            hand = sorted(self.hands[seat])
            if "count" in d.info:
                sizes = [d.info["count"]]
            else:
                sizes = range(0, d.info["max"] + 1)
            for k in sizes:
                seen = set()
                for combo in combinations(hand, k):
                    if combo in seen:
                        continue
                    seen.add(combo)
                    a = {"type": d.kind, "cards": format_cards(combo)}
                    if k and k == len(hand):
                        try:
                            self.check(seat, a)
                        except InvalidAction:
                            continue
                    yield a
        else:
            yield from self._other_legal(d)

    def _other_legal(self, d) -> Iterator[dict]:
        return iter(())


__all__ = ["Climbing", "PlayInfo"]
