"""Face-up climbing flow shared by ``trump_millionaire`` and ``jdf`` (RULES C-5..C-8, C-13, LR).

:class:`Climbing` validates a face-up play (form C-3, jokers C-4, following C-5, suit lock
C-8, number lock LR-3, the spade-3 return JDF-9 where the preset allows it, the forbidden
finish TM-5), then applies its effects in the order of C-13:

1. revolution toggle (TM-4 / JDF-7 / LR-2);
2. J-back toggle (LR-1);
3. suit lock (C-8) and number lock (LR-3);
4. direction reversal (TM-4, a natural 9);
5. ``give`` (LR-5) then ``discard`` (LR-6) decisions, each only if the hand is not empty;
6. the finish check (TM-7, JDF-10, JDF-11), defined by the rule set;
7. the clear by 8-cut or spade-3 return, else the five-skip (LR-4), else the next turn.

It also holds what both rule sets share around the tricks: the start of a deal/game (hands,
flags, events), a unit from a scenario setup, the forfeit tail (FAULT-2). A rule set
implements the abstract hooks (:meth:`Climbing._is_revolution`, :meth:`Climbing._is_eight_cut`,
:meth:`Climbing._special_last_play`, :meth:`Climbing._finish`) and may override the others.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from itertools import combinations
from typing import Any, ClassVar, Final

from engine.actions import DiscardAction, GiveAction, PassAction, PlayAction
from engine.cards import JOKER, R5, R7, RANKS, RJ, RT, SPADE_3, format_cards
from engine.decisions import Action, Decision, InvalidAction
from engine.field import PlayRecord, cards_text, holds_all, remove_cards
from engine.forms import (
    SINGLE_READINGS,
    Readings,
    beating,
    choose,
    generated_reading,
    only_rank,
    signature,
    split,
)
from engine.game import Game
from engine.options import LocalRuleOptions
from engine.plays import Play
from engine.refusals import Refusal
from engine.state import FOLLOW, mypyc_attr


class PlayInfo:
    """A validated face-up play: its cards, naturals, jokers and chosen reading (C-4).

    ``kind`` is ``single``, ``group``, ``stairs``, ``joker`` or ``joker_pair``; ``rank`` the
    rank index of singles and groups, the lowest rank of stairs, None for the joker forms;
    ``ranks`` the mask of the ranks of its natural cards; ``is_return`` marks the spade-3
    return (JDF-9). Built by :func:`play_info` from the reading (or by the trusted path with
    what the generator knows).
    """

    __slots__ = ("cards", "nat", "jokers", "declared", "reading", "kind", "rank", "ranks", "is_return")

    def __init__(
        self,
        cards: list[int],
        nat: list[int],
        jokers: int,
        declared: list[int] | None,
        reading: Readings,
        is_return: bool,
        kind: str,
        rank: int | None,
        ranks: int,
    ):
        self.cards = cards
        self.nat = nat
        self.jokers = jokers
        self.declared = declared
        self.reading = reading
        self.is_return = is_return
        self.kind = kind
        self.rank = rank
        self.ranks = ranks

    def count(self, rank: int) -> int:
        """Number of natural cards of ``rank`` in the play."""
        if not self.ranks >> rank & 1:
            return 0
        n = 0
        for c in self.nat:
            if c >> 2 == rank:
                n += 1
        return n


def play_info(
    cards: list[int], nat: list[int], jokers: int, declared: list[int] | None, reading: Readings, is_return: bool
) -> PlayInfo:
    """The :class:`PlayInfo` of a play read as ``reading`` (one reading, C-4)."""
    ranks = 0
    for c in nat:
        ranks |= 1 << (c >> 2)
    if reading.joker:
        return PlayInfo(cards, nat, jokers, declared, reading, is_return, "joker", None, ranks)
    if reading.joker_pair:
        return PlayInfo(cards, nat, jokers, declared, reading, is_return, "joker_pair", None, ranks)
    if reading.group:
        return PlayInfo(cards, nat, jokers, declared, reading, is_return, "group", only_rank(reading.group), ranks)
    if reading.stairs:
        return PlayInfo(cards, nat, jokers, declared, reading, is_return, "stairs", only_rank(reading.stairs), ranks)
    return PlayInfo(cards, nat, jokers, declared, reading, is_return, "single", only_rank(reading.single), ranks)


#: The :class:`PlayInfo` of each natural single (shared: a play's own cards are the action's).
SINGLE_INFOS: Final[tuple[PlayInfo, ...]] = tuple(
    PlayInfo([c], [c], 0, None, SINGLE_READINGS[c >> 2], False, "single", c >> 2, 1 << (c >> 2)) for c in range(JOKER)
)


class FollowUp:
    """The C-13 steps (5)-(7) still to run after a play of ``seat``.

    ``give`` / ``discard``: cards still to be asked (LR-5, LR-6; 0 when done); ``cut``:
    8-cut; ``is_return``: spade-3 return; ``skip``: natural 5s (LR-4); ``special``: the play
    may not end a hand cleanly (TM-5 forbidden / JDF-10 foul).
    """

    __slots__ = ("seat", "give", "discard", "cut", "is_return", "skip", "special")

    def __init__(self, seat: int, give: int, discard: int, cut: bool, is_return: bool, skip: int, special: bool):
        self.seat = seat
        self.give = give
        self.discard = discard
        self.cut = cut
        self.is_return = is_return
        self.skip = skip
        self.special = special

    def copy(self) -> FollowUp:
        return FollowUp(self.seat, self.give, self.discard, self.cut, self.is_return, self.skip, self.special)


@mypyc_attr(allow_interpreted_subclasses=True)
class Climbing(Game):
    """Common flow of the 4-seat face-up rule sets; see the module docstring."""

    options: LocalRuleOptions

    def __init__(self, options: LocalRuleOptions, seed: int | None, setup: dict[str, Any] | None, log: bool = True):
        super().__init__(options, seed, setup, log)
        self.follow: FollowUp | None = None  # the C-13 steps still to run after a play
        # the local rules, read on every play (LR-1, LR-3..LR-6)
        self._lr1_eleven_back = options.eleven_back
        self._lr3_number_lock = options.number_lock
        self._lr4_five_skip = options.five_skip
        self._lr5_seven_pass = options.seven_pass
        self._lr6_ten_discard = options.ten_discard

    def _copy_to(self, new: Game, log: bool) -> None:
        super()._copy_to(new, log)
        assert isinstance(new, Climbing)
        new.follow = self.follow.copy() if self.follow is not None else None
        new._lr1_eleven_back = self._lr1_eleven_back
        new._lr3_number_lock = self._lr3_number_lock
        new._lr4_five_skip = self._lr4_five_skip
        new._lr5_seven_pass = self._lr5_seven_pass
        new._lr6_ten_discard = self._lr6_ten_discard

    # -- the hooks a climbing rule set implements --------------------------------------------
    @abstractmethod
    def _is_revolution(self, p: PlayInfo) -> bool:
        """Whether ``p`` toggles the revolution (TM-4, JDF-7, LR-2)."""

    @abstractmethod
    def _is_eight_cut(self, p: PlayInfo) -> bool:
        """Whether ``p`` clears the trick as an 8-cut (TM-4, JDF-6)."""

    @abstractmethod
    def _special_last_play(self, p: PlayInfo, revolution_before: bool) -> bool:
        """Whether ``p`` may not end a hand cleanly: TM-5 (forbidden) or JDF-10 (foul).

        ``revolution_before`` is the revolution flag before the play (J-back never counts).
        """

    @abstractmethod
    def _finish(self, seat: int, special: bool) -> None:
        """``seat`` emptied its hand (C-13 step 6): TM-7 ends the deal; JDF-10/11/12."""

    def _reverses_direction(self, p: PlayInfo) -> bool:
        """Hook: whether ``p`` reverses the turn direction (TM-4: a natural 9)."""
        return False

    def _is_return(self, cards: Sequence[int]) -> bool:
        """Hook: whether ``cards`` played on a lone joker is the spade-3 return (JDF-9)."""
        return False

    def _check_empty_by_follow_up(self, f: FollowUp) -> None:
        """Hook: may refuse a give/discard that empties the hand (TM, section LR)."""

    def _before_play(self, seat: int) -> None:
        """Hook run once a play is validated, before it is applied (TM-6 counting)."""

    def _leader_pass(self, seat: int) -> bool:
        """Hook: a pass of the leader ``seat`` on an empty field; True when the rule set took
        it (TM-6: a stuck leader), False to refuse it (C-6)."""
        return False

    def _other_legal(self, d: Decision) -> Iterator[Action]:
        """Hook: legal actions of the rule set's own decisions (TM-3 exchange and rate)."""
        return iter(())

    # -- deals / games ----------------------------------------------------------------------
    def _start_unit(
        self, hands: list[list[int]], outside: list[int], still_in: list[bool], header: dict[str, Any]
    ) -> None:
        """A new deal (TM-2) / game (JDF-2): the hands, the cards out of it, fresh flags
        (C-10, TM-4), the ``header`` event and each seat's hand event (C-11)."""
        self.hands = hands
        self.outside = outside
        self.discards = []
        self._reset_deal_flags()
        self.still_in = still_in
        self.unit_over = False
        self.follow = None
        self.unit_start = len(self.events)
        self.unit_count += 1
        self._event(header)
        self._hand_events()

    def _setup_unit(self, setup: Mapping[str, Any]) -> list[int]:
        """A unit from a scenario setup: hands, state flags; the set-aside / blind cards are
        ``setup["set_aside"]`` (returned); the rest of the deck is out of this deal/game."""
        aside = list(setup["set_aside"])
        self.discards.extend(self._setup_hands(setup, aside))  # not in this deal/game
        self.outside = aside
        return aside

    def _forfeit_tail(self, seat: int, d: Decision | None) -> None:
        """After a retirement (FAULT-2) of the seat that was asked: drop its give/discard,
        or the next seat leads / plays (C-7)."""
        if d is None or d.seat != seat:
            return
        if d.kind in ("give", "discard"):
            f = self.follow
            assert f is not None
            f.give = f.discard = 0
            self._continue()
        elif not self.field:
            self._set_leader(seat)
        else:
            self._next_turn(seat)

    # -- validation ---------------------------------------------------------------------------
    def _rank_restriction(self) -> int | None:
        if not self.nlock:
            return None
        want = self._step_rank(self.last_rank) if self.last_rank is not None else None
        return 0 if want is None else 1 << want

    def _extra_plays(self, seat: int) -> Sequence[Play]:
        if self.ref is not None and self.ref.joker and SPADE_3 in self.hands[seat] and self._is_return([SPADE_3]):
            return [([SPADE_3], None)]
        return ()

    def _step_rank(self, rank: int) -> int | None:
        nxt = rank - 1 if self.reversed_order else rank + 1
        return nxt if 0 <= nxt <= 12 else None

    def _evaluate(self, seat: int, play: PlayAction) -> PlayInfo:
        """Check a play (C-3..C-8, LR-3, JDF-9, TM-5) without changing anything."""
        nat, jk = split(play.cards)
        return self._judge(seat, play.cards, nat, jk, play.jokers)

    def _generated(self, play: PlayAction) -> PlayInfo:
        """A face-up play as :meth:`face_up_plays` generated it (:meth:`Game.push`): its one
        reading (C-3, C-4: the generator declares every joker standing in), not judged."""
        cards = play.cards
        ref = self.ref
        if ref is not None and ref.joker and self._is_return(cards):
            nat, jk = split(cards)
            return play_info(cards, nat, jk, play.jokers, Readings(1 << (cards[0] >> 2)), True)
        if len(cards) == 1 and cards[0] != JOKER and play.jokers is None:  # a natural single: the common case
            return SINGLE_INFOS[cards[0]]
        nat, jk = split(cards)
        return play_info(cards, nat, jk, play.jokers, generated_reading(nat, jk, play.jokers), False)

    def _judge(self, seat: int, cards: list[int], nat: list[int], jk: int, declared: list[int] | None) -> PlayInfo:
        """C-3..C-8, LR-3, JDF-9, TM-5 on parsed cards held by ``seat``; raises InvalidAction."""
        r = self._read_play(cards, nat, jk, 0, declared)
        ref = self.ref
        if ref is not None and ref.joker and self._is_return(cards):
            return play_info(cards, nat, jk, declared, Readings(single=r.single), True)
        if ref is not None:
            b = beating(r, ref, self.reversed_order)
            if b.empty():
                raise InvalidAction(
                    "C-5", Refusal.NOT_HIGHER, lambda: {"cards": cards_text(cards), "ref": ref.describe()}
                )
        else:
            b = r
        self._check_lock(nat, jk)
        mask = self._rank_restriction()
        if mask is not None:
            b = Readings(b.single & mask, b.group & mask, 0, False, False)
            if b.empty():
                need = RANKS[only_rank(mask)] if mask else "nothing"
                raise InvalidAction("LR-3", Refusal.NUMBER_LOCK, {"rank": need})
        chosen = choose(b, self.reversed_order)
        if len(cards) == len(self.hands[seat]) and self._finish_refused(nat, jk):
            raise InvalidAction("TM-5", Refusal.LAST_PLAY_SPECIAL)
        return play_info(cards, nat, jk, declared, chosen, False)

    # -- play and its effects (C-13) ----------------------------------------------------------
    def _do_play(self, seat: int, action: PlayAction) -> None:
        """C-13: the play's effects in order, then the follow-up steps (:meth:`_continue`).

        Asks :meth:`_is_revolution` only of plays of 4+ cards (TM-4, JDF-7, LR-2: no smaller
        play is one) and :meth:`_special_last_play` only when the play empties the hand or
        gives or discards cards (its one use: the finish, TM-5, JDF-10)."""
        p = self._generated(action) if self._trusting else self._evaluate(seat, action)
        self._before_play(seat)
        rev_before = self.revolution
        reversed_before = rev_before != self.jback  # reversed_order (C-9)
        cards = action.cards  # p.cards, or equal to them (a shared PlayInfo of a single)
        hand = self.hands[seat]
        for c in cards:
            hand.remove(c)
        rec = PlayRecord(seat, cards, [], p.declared)
        self.field.append(rec)
        if not self.count:
            self.count = len(cards)
        if self.logged:
            self._event({"type": "play", **rec.view(None), "form": p.kind})
        # (1) revolution
        if len(cards) >= 4 and self._is_revolution(p):
            self._toggle_revolution()
        # (2) J-back (LR-1)
        if self._lr1_eleven_back and p.ranks >> RJ & 1:
            self._toggle_jback()
        # (3) suit lock (C-8, JDF-8: a play with a joker cannot start one here) and number lock
        nat = p.nat
        self._suit_lock((nat[0] & 3,) if len(nat) == 1 else signature(nat), not p.jokers)
        if self._lr3_number_lock and not p.is_return:
            if p.kind in ("single", "group"):
                if not self.nlock and self.last_rank is not None:
                    want = self.last_rank - 1 if reversed_before else self.last_rank + 1
                    if p.rank == want:
                        self.nlock = True
                        if self.logged:
                            self._event({"type": "number_lock"})
                self.last_rank = p.rank
            else:
                self.last_rank = None
        # (4) direction (TM-4)
        if self._reverses_direction(p):
            self.direction = -self.direction
            if self.logged:
                self._event({"type": "direction", "direction": self.direction})
        self.ref = p.reading
        self.last_player = seat
        give = p.count(R7) if self._lr5_seven_pass else 0
        discard = p.count(RT) if self._lr6_ten_discard else 0
        cut = self._is_eight_cut(p)
        skip = p.count(R5) if self._lr4_five_skip else 0
        if give or discard:
            special = self._special_last_play(p, rev_before)
            self.follow = FollowUp(seat, give, discard, cut, p.is_return, skip, special)
            self._continue()
        elif hand and not (cut or p.is_return or skip):  # no finish, no clear, no skip (C-7)
            self._next_turn(seat)
        else:
            self._end_play(seat, cut, p.is_return, skip, not hand and self._special_last_play(p, rev_before))

    def _continue(self) -> None:
        """Run the remaining C-13 steps (5)-(7) of the play in ``self.follow``."""
        f = self.follow
        assert f is not None
        seat = f.seat
        hand = self.hands[seat]
        if f.give and hand and self.still_in[seat]:
            to = self._next_still_in(seat)
            if to is not None:  # LR-5: no give when no other seat is still in
                self._ask(seat, "give", max=f.give, to=to)
                return
            f.give = 0
        if f.discard and hand and self.still_in[seat]:
            self._ask(seat, "discard", max=f.discard)
            return
        self.follow = None
        self._end_play(seat, f.cut, f.is_return, f.skip, f.special)

    def _end_play(self, seat: int, cut: bool, is_return: bool, skip: int, special: bool) -> None:
        """C-13 steps (6)-(7) of a play of ``seat`` whose gives and discards are done: the
        finish, then the clear by an 8-cut or the spade-3 return, the five-skip or the next
        turn."""
        if not self.hands[seat] and self.still_in[seat]:
            unit = self.unit_count
            self._finish(seat, special)
            if self.over or self.unit_over or self.unit_count != unit:
                return  # the deal/game ended (a new one may have started)
        if cut or is_return:
            if self.logged:
                self._event({"type": "eight_cut" if cut else "spade_3_return", "seat": seat})
            self._clear(seat)
        elif skip:
            self._five_skip(seat, skip)
        else:
            self._next_turn(seat)

    def _next_turn(self, seat: int) -> None:
        """Ask the next seat to play after ``seat`` in this trick, or clear the trick (C-7).

        The turn goes in the current direction over seats still in that have not passed
        (C-7). Reaching the seat that made the last play while it is still in means every
        other seat has passed or lost its turn to a five-skip: the trick clears. When that
        seat is no longer still in, a seat passed over by a five-skip has not passed (LR-4,
        C-7): the turn goes on to it, and the trick clears only when every seat still in has
        passed.
        """
        n = self.seats
        step = self.direction
        last = self.last_player
        still_in = self.still_in
        passed = self.passed
        s = seat
        for _ in range(n):
            s = (s + step) % n
            if still_in[s]:
                if s == last:
                    break
                if not passed[s]:
                    self._decision = FOLLOW[s]  # _ask_play
                    return
        self._clear(last)

    def _five_skip(self, seat: int, k: int) -> None:
        """LR-4: the turn passes over the next ``k`` seats still in that have not passed."""
        eligible = []
        s = seat
        for _ in range(self.seats - 1):
            s = self._step(s)
            if self.still_in[s] and not self.passed[s]:
                eligible.append(s)
        if k >= len(eligible):
            if self.logged:
                self._event({"type": "five_skip", "seats": eligible})
            self._clear(seat)
        else:
            if self.logged:
                self._event({"type": "five_skip", "seats": eligible[:k]})
            self._ask(eligible[k], "play")

    def _follow_up_cards(self, seat: int, cards: list[int], most: int, kind: str, rule: str) -> list[int]:
        """Validate the cards of a ``give`` (LR-5) or ``discard`` (LR-6): 0..``most`` held cards."""
        hand = self.hands[seat]
        if len(cards) > most:
            raise InvalidAction(rule, Refusal.GIVE_AT_MOST if kind == "give" else Refusal.DISCARD_AT_MOST, {"n": most})
        if not holds_all(hand, cards):
            raise InvalidAction("C-12", Refusal.NOT_HELD, {"seat": seat, "cards": cards_text(cards)})
        if cards and len(cards) == len(hand):
            assert self.follow is not None
            self._check_empty_by_follow_up(self.follow)
        return cards

    def _do_give(self, seat: int, action: GiveAction) -> None:
        """LR-5 give: 0..k cards to the next seat still in, seen by the two seats (C-11)."""
        f = self.follow
        d = self._decision
        assert f is not None and d is not None
        cards = self._follow_up_cards(seat, action.cards, f.give, "give", "LR-5")
        to = d.info["to"]
        remove_cards(self.hands[seat], cards)
        self.hands[to].extend(cards)
        self._event(
            {"type": "give", "seat": seat, "to": to, "cards": format_cards(cards)},
            (seat, to),
            {"type": "give", "seat": seat, "to": to, "count": len(cards)},
        )
        f.give = 0
        self._continue()

    def _do_discard(self, seat: int, action: DiscardAction) -> None:
        """LR-6 discard: 0..k cards, shown to every seat (C-11)."""
        f = self.follow
        assert f is not None
        cards = self._follow_up_cards(seat, action.cards, f.discard, "discard", "LR-6")
        remove_cards(self.hands[seat], cards)
        self.discards.extend(cards)
        if self.logged:
            self._event({"type": "discard", "seat": seat, "cards": format_cards(cards)})
        f.discard = 0
        self._continue()

    def _do_pass(self, seat: int, action: PassAction) -> None:
        """C-6, C-7: a pass stays until the trick clears; a leader may not pass (C-6) unless
        :meth:`_leader_pass` takes it (TM-6)."""
        if not self.field:
            if self._leader_pass(seat):
                return
            raise InvalidAction("C-6", Refusal.LEADER_PASS)
        self.passed[seat] = True
        if self.logged:
            self._event({"type": "pass", "seat": seat})
        self._next_turn(seat)

    HANDLERS: ClassVar[Mapping[str, str]] = {
        "play": "_do_play",
        "pass": "_do_pass",
        "give": "_do_give",
        "discard": "_do_discard",
    }

    # -- legal actions ------------------------------------------------------------------------
    def legal_actions(self, seat: int) -> Iterator[Action]:
        """Every legal action of ``seat`` now (all of them can be listed: no face-down cards).

        Plays carry ``jokers`` when they hold jokers standing in (C-4). Gives and discards
        are listed from the empty one up (:meth:`card_choices`).
        """
        d = self.decision()
        if d is None or d.seat != seat:
            return
        if d.kind == "play":
            yield from self._play_answers(seat)
        elif d.kind in ("give", "discard"):
            for cards in self.card_choices(seat):
                yield {"type": d.kind, "cards": format_cards(cards)}
        else:
            yield from self._other_legal(d)

    def card_choices(self, seat: int) -> list[list[int]]:
        """The cards (codes) a give or discard decision of ``seat`` accepts, as
        :meth:`legal_actions` lists them: by size from the empty choice up (JDF-4: the size
        asked), each distinct choice once, in the order of the sorted hand's combinations; an
        empty list when ``seat`` has no give or discard decision (LR-5, LR-6, JDF-4)."""
        d = self.decision()
        if d is None or d.seat != seat or d.kind not in ("give", "discard"):
            return []
        hand = sorted(self.hands[seat])
        sizes: Sequence[int] = [d.info["count"]] if "count" in d.info else range(0, d.info["max"] + 1)
        out = []
        for k in sizes:
            if k < len(hand) and hand.count(JOKER) < 2:  # distinct cards: distinct choices
                out.extend([list(combo) for combo in combinations(hand, k)])
                continue
            seen = set()
            for combo in combinations(hand, k):
                if combo in seen:
                    continue
                seen.add(combo)
                if k and k == len(hand):
                    try:
                        self.check(seat, {"type": d.kind, "cards": format_cards(combo)})
                    except InvalidAction:
                        continue
                out.append(list(combo))
        return out


__all__ = ["Climbing", "PlayInfo", "FollowUp"]
