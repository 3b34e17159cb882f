"""Million Doubt (``million_doubt``): RULES MD-1 to MD-17 on the common engine.

Two seats, 7 cards each (MD-1). A play may put cards face down (MD-2); it is accepted when
some identity of its face-down cards makes it legal (MD-3). The opponent then answers
``doubt`` or ``through`` (MD-6); a doubt reveals the field (MD-8) and the penalty executor
gives 0 to all field cards to the other player (MD-7). A hand of 11+ cards bursts (MD-10).

Face-down plays cannot be listed: with ``k`` cards in hand there are up to ``3**k`` ways to
split a hand into played-face-up, played-face-down and kept, and any card may be played face
down whatever it is. :meth:`MillionDoubt.legal_actions` therefore lists the face-up plays, pass,
doubt/through and penalties; any face-down play is checked by :meth:`Game.check` /
:meth:`Game.is_legal`, and :meth:`MillionDoubt.face_down_rule` states in words what is allowed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import combinations
from typing import Any, ClassVar, Final

from engine.actions import DoubtAction, PassAction, PenaltyAction, PlayAction, ThroughAction
from engine.cards import JOKER, R8, RANKS, RJ, format_cards, full_deck
from engine.decisions import Action, Decision, InvalidAction
from engine.draws import below, sample
from engine.field import PlayRecord, cards_text, holds_all
from engine.forms import (
    JOKER_PAIR,
    LONE_JOKER,
    SINGLE_READINGS,
    Readings,
    beating,
    choose,
    generated_reading,
    readings,
    satisfies_lock,
    signature,
    split,
)
from engine.game import Game
from engine.options import MillionDoubtOptions
from engine.plays import Play
from engine.refusals import Refusal
from engine.results import Result, seat_keys
from engine.state import mypyc_attr

#: The doubt decisions (MD-6) of each seat (shared: their ``info`` is read-only).
_DOUBT: Final[tuple[Decision, ...]] = (Decision(0, "doubt", {}), Decision(1, "doubt", {}))


class _Eval:
    """A play judged acceptable (MD-3): its cards, face-down cards, declared joker ranks,
    face-up naturals and jokers, and the readings that beat the reference (MD-5 blanks)."""

    __slots__ = ("cards", "face_down", "declared", "fu_nat", "fu_jokers", "accepted", "chosen")

    def __init__(
        self,
        cards: list[int],
        face_down: list[int],
        declared: list[int] | None,
        fu_nat: list[int],
        fu_jokers: int,
        accepted: Readings,
        chosen: bool = False,
    ):
        self.cards = cards
        self.face_down = face_down
        self.declared = declared
        self.fu_nat = fu_nat
        self.fu_jokers = fu_jokers
        self.accepted = accepted
        self.chosen = chosen  # ``accepted`` is one reading, as C-4 would choose it


def _undealt(dealt: list[int]) -> list[int]:
    """The cards of the deck (:func:`engine.cards.full_deck`, in its order) not in ``dealt``."""
    held = 0
    jokers = 0
    for c in dealt:
        if c == JOKER:
            jokers += 1
        else:
            held |= 1 << c
    out = [c for c in range(JOKER) if not held >> c & 1]
    out.extend([JOKER] * (2 - jokers))
    return out


def _bind_declared(r: Readings, declared: Sequence[int], nat: Sequence[int], n: int) -> Readings:
    """Keep the readings of ``r`` in which jokers stand for the ``declared`` ranks (C-4),
    the other jokers (face-down ones, MD-7) standing in freely."""
    dm = 0
    for rank in declared:
        dm |= 1 << rank
    group = r.group & dm if dm & (dm - 1) == 0 else 0
    stairs = 0
    nat_ranks = 0
    for c in nat:
        nat_ranks |= 1 << (c >> 2)
    if dm.bit_count() == len(declared) and not dm & nat_ranks:
        span = (1 << n) - 1
        for lo in range(13):
            if r.stairs >> lo & 1 and dm & ~(span << lo) == 0:
                stairs |= 1 << lo
    return Readings(0, group, stairs, False, False)


def honest_play(
    cards: Sequence[int],
    declared: Sequence[int] | None,
    ref: Readings | None,
    lock: Sequence[int],
    reversed_order: bool,
) -> bool:
    """MD-7: is a play honest? Its real ``cards`` (codes), jokers standing in as needed (the
    face-up ones at their ``declared`` ranks, C-4), form a legal form that beats the reference
    ``ref`` (readings, MD-5) under the suit ``lock`` (a lock suit matched only by a natural
    card of that suit or a joker, C-8) in the order then in force."""
    nat, j = split(cards)
    r = readings(nat, j, 0, None)
    if declared:
        r = _bind_declared(r, declared, nat, len(cards))
    if r.empty() or not satisfies_lock(lock, nat, j):
        return False
    if ref is not None and (ref.joker or ref.joker_pair):
        return False
    return not beating(r, ref, reversed_order).empty()


@mypyc_attr(allow_interpreted_subclasses=True)
class MillionDoubt(Game):
    """State of one Million Doubt game (MD-1..MD-17). See :mod:`engine.game` for the API."""

    ruleset = "million_doubt"
    LISTS_EVERY_PLAY = False
    COUNT_RULE = "MD-4"
    FACE_DOWN_PLAYS = True
    #: MD-1: cards dealt to each seat.
    HAND_SIZE = 7
    #: MD-10: a hand of this many cards bursts.
    BURST = 11

    options: MillionDoubtOptions

    def __init__(self, options: MillionDoubtOptions, seed: int | None, setup: dict[str, Any] | None, log: bool = True):
        super().__init__(options, seed, setup, log)
        self.pending: tuple[PlayRecord, _Eval] | None = None  # a play awaiting doubt/through
        self.penalty_ctx: tuple[int, int, bool, int] | None = None  # (executor, receiver, honest, player)
        self.winner: int | None = None
        self.burst: int | None = None
        self.forfeited: int | None = None
        self.scores: dict[str, int] | None = None
        if setup is None:
            deck = full_deck()
            n = self.HAND_SIZE
            dealt = sample(self.rng, deck, 2 * n)  # MD-1: 7 each, the other 40 out of the game
            self.hands = [dealt[:n], dealt[n:]]
            self.outside = _undealt(dealt)
            leader = below(self.rng, 2)
        else:
            self.outside = self._setup_hands(setup)  # with the state flags (revolution, direction)
            leader = setup["leader"]
        self.unit_count = 1
        self._hand_events()
        if self.logged:
            self._event({"type": "start", "leader": leader})
        self._set_leader(leader)

    def _copy_to(self, new: Game, log: bool) -> None:
        super()._copy_to(new, log)
        assert isinstance(new, MillionDoubt)
        pending = self.pending
        if pending is not None and self.field and pending[0] is self.field[-1]:
            pending = (new.field[-1], pending[1])  # the play awaiting an answer is the copy's
        new.pending = pending
        new.penalty_ctx = self.penalty_ctx
        new.winner = self.winner
        new.burst = self.burst
        new.forfeited = self.forfeited
        new.scores = self.scores  # replaced, never changed in place

    # -- validation -------------------------------------------------------------------------
    def _evaluate(self, seat: int, play: PlayAction) -> _Eval:
        """Check a parsed play against MD-2..MD-5 and C-8 without changing anything."""
        cards, face_down = play.cards, play.face_down
        if face_down:
            fu = list(cards)
            for c in face_down:
                fu.remove(c)
        else:
            fu = cards
        fu_nat, fu_j = split(fu)
        return self._judge(cards, face_down, play.jokers, fu_nat, fu_j)

    def _judge(
        self, cards: list[int], face_down: list[int], declared: list[int] | None, fu_nat: list[int], fu_j: int
    ) -> _Eval:
        """MD-3..MD-5, C-8 on parsed cards held by the seat; raises InvalidAction."""
        wild = len(face_down)
        r = self._read_play(cards, fu_nat, fu_j, wild, declared)
        self._check_lock(fu_nat, fu_j + wild)
        ref = self.ref
        if ref is not None and (ref.joker or ref.joker_pair):
            raise InvalidAction("MD-5", Refusal.JOKER_UNBEATABLE)
        b = beating(r, ref, self.reversed_order)
        if b.empty():
            raise InvalidAction(
                "MD-3",
                Refusal.NO_READING_BEATS,
                lambda: {"cards": cards_text(cards), "ref": ref.describe() if ref else ""},
            )
        return _Eval(cards, face_down, declared, fu_nat, fu_j, b)

    def accepts_face_down(self, up: Sequence[int], wild: int) -> bool:
        """MD-2, MD-3: whether a play of the face-up cards ``up`` (no joker declared) and
        ``wild`` face-down cards (at least one; their identity does not matter: they are wild)
        would be accepted now, the cards held aside (not checked). What
        :meth:`_judge` decides, without building the play: a seat composing a face-down play
        asks it card by card."""
        n = len(up) + wild
        if wild < 1 or (self.count and n != self.count):
            return False
        ref = self.ref
        if ref is not None and (ref.joker or ref.joker_pair):
            return False
        nat, jk = split(up)
        r = readings(nat, jk, wild, None)
        if r.empty() or (self.lock and not satisfies_lock(self.lock, nat, jk + wild)):
            return False
        return not beating(r, ref, self.reversed_order).empty()

    @staticmethod
    def face_down_rule() -> str:
        """What a face-down play must satisfy (MD-2, MD-3), in words, for bots."""
        return (
            "Any cards of your hand may be played, any of them face down ('face_down', a "
            "sub-multiset of 'cards'). The play is accepted when some identity of the "
            "face-down cards (any card, joker included) makes it a legal form (C-3) with the "
            "trick's card count (MD-4) that beats the reference (MD-5) under the suit lock "
            "(C-8, face-down cards are wild) and the current order (C-9)."
        )

    # -- actions --------------------------------------------------------------------------
    def _do_play(self, seat: int, action: PlayAction) -> None:
        """MD-2..MD-6: a face-up play takes effect at once; a face-down one awaits an answer."""
        ev: _Eval | None = None
        if self._trusting and not action.face_down:  # Game.push: a generated face-up play
            cards = action.cards  # its one reading, already chosen (C-4)
            declared = action.jokers
            if len(cards) == 1 and cards[0] != JOKER:  # a natural single: the common case
                nat, jk, reading = cards, 0, SINGLE_READINGS[cards[0] >> 2]
            else:
                nat, jk = split(cards)
                reading = generated_reading(nat, jk, declared)
            face_down: list[int] = []
        else:
            ev = self._evaluate(seat, action)
            cards, face_down, declared = ev.cards, ev.face_down, ev.declared
            nat, jk, reading = ev.fu_nat, ev.fu_jokers, ev.accepted
        hand = self.hands[seat]
        for c in cards:
            hand.remove(c)
        rec = PlayRecord(seat, cards, face_down, declared)
        self.field.append(rec)
        if not self.count:
            self.count = len(cards)
        if self.logged:
            full = {"type": "play", "seat": seat, "cards": format_cards(cards)}
            if declared:
                full["jokers"] = [RANKS[r] for r in declared]
            if face_down:
                full["face_down"] = format_cards(face_down)
                self._event(full, (seat,), {"type": "play", **rec.view(1 - seat)})
            else:
                self._event(full)
        if face_down:
            assert ev is not None
            self.pending = (rec, ev)
            self._decision = _DOUBT[1 - seat]
        else:
            cut = self._accept(rec, nat, jk, reading, ev is None or ev.chosen)
            self._after_accept(seat, cut)

    def _accept(self, rec: PlayRecord, nat: list[int], jokers: int, accepted: Readings, chosen: bool) -> bool:
        """Take the effects of the accepted play ``rec`` (MD-14), its face-up naturals ``nat``
        and ``jokers``, the readings that beat the reference ``accepted`` (one reading, as C-4
        chooses it, when ``chosen``); returns True for an 8-cut (MD-13).

        The new reference (MD-5): the play's readings when it has a face-up natural card
        (all of them when it also has face-down cards: the blanks), a face-up lone joker or
        joker pair (MD-15: nothing beats it), else the reference stays."""
        n = len(rec.cards)
        face_down = rec.face_down
        if nat:
            self.ref = accepted if face_down or chosen else choose(accepted, self.revolution != self.jback)
        elif not face_down and (n == 1 or (n == 2 and jokers == 2)):
            self.ref = LONE_JOKER if n == 1 else JOKER_PAIR
        if n >= 4:  # MD-11
            self._toggle_revolution()
        ranks = 0
        for c in nat:
            ranks |= 1 << (c >> 2)
        if ranks >> RJ & 1:  # MD-12
            self._toggle_jback()
        self._suit_lock((nat[0] & 3,) if len(nat) == 1 else signature(nat) if nat else ())  # C-8
        self.last_player = rec.seat
        return ranks >> R8 & 1 == 1

    def _after_accept(self, seat: int, cut: bool) -> None:
        if not self.hands[seat]:
            self._win(seat, "finish")
        elif cut:
            if self.logged:
                self._event({"type": "eight_cut", "seat": seat})
            self._clear(seat)
        else:
            self._ask_play(1 - seat)

    def _do_pass(self, seat: int, action: PassAction) -> None:
        """MD-9: a pass clears the trick at once; the last player leads."""
        if not self.field:
            raise InvalidAction("C-6", Refusal.LEADER_PASS)
        if self.logged:
            self._event({"type": "pass", "seat": seat})
        self._clear(self.last_player)

    def _do_through(self, seat: int, action: ThroughAction) -> None:
        """MD-6, MD-14: the play is accepted; the answering seat plays next."""
        assert self.pending is not None
        rec, ev = self.pending
        self.pending = None
        if self.logged:
            self._event({"type": "through", "seat": seat})
        cut = self._accept(rec, ev.fu_nat, ev.fu_jokers, ev.accepted, ev.chosen)
        self._after_accept(rec.seat, cut)

    def _honest(self, rec: PlayRecord) -> bool:
        """MD-7: the real cards beat the reference under the lock and order then in force."""
        return honest_play(rec.cards, rec.declared, self.ref, self.lock, self.reversed_order)

    def _do_doubt(self, seat: int, action: DoubtAction) -> None:
        """MD-7, MD-8: reveal the field, judge the play, ask the executor for the penalty."""
        assert self.pending is not None
        rec, ev = self.pending
        self.pending = None
        honest = self._honest(rec)  # context: the state before the play's effects
        for p in self.field:
            p.revealed = True
        if self.logged:
            self._event({"type": "doubt", "seat": seat})
            self._event({"type": "reveal", "field": [p.view(None) for p in self.field], "honest": honest})
        player = rec.seat
        executor = player if honest else seat
        if honest and len(rec.cards) >= 4:  # MD-14: only the revolution matters
            self._toggle_revolution()
        self.penalty_ctx = (executor, 1 - executor, honest, player)
        must_give = (not honest) and not self.hands[player]  # MD-16
        self._ask(executor, "penalty", min=1 if must_give else 0, field_size=self.field_size())

    def _do_penalty(self, seat: int, action: PenaltyAction) -> None:
        """MD-7, MD-16, MD-10: the executor gives field cards; the rest is discarded."""
        cards = action.cards
        pool = [c for p in self.field for c in p.cards]
        if not holds_all(pool, cards):
            raise InvalidAction("MD-7", Refusal.PENALTY_NOT_FIELD, {"cards": cards_text(cards)})
        assert self.penalty_ctx is not None and self._decision is not None
        executor, receiver, honest, player = self.penalty_ctx
        if not cards and self._decision.info.get("min"):
            raise InvalidAction("MD-16", Refusal.PENALTY_EMPTY)
        self.penalty_ctx = None
        self.hands[receiver].extend(cards)
        for c in cards:
            pool.remove(c)
        self.discards.extend(pool)
        if self.logged:
            self._event({"type": "penalty", "seat": seat, "to": receiver, "cards": format_cards(cards)})
            self._event({"type": "clear"})
        self._reset_trick_flags()
        if len(self.hands[receiver]) >= self.BURST:  # MD-10
            self._win(executor, "burst", burst=receiver)
        elif honest and not self.hands[player]:  # MD-16
            self._win(player, "finish")
        else:
            self._set_leader(executor)

    HANDLERS: ClassVar[Mapping[str, str]] = {
        "play": "_do_play",
        "pass": "_do_pass",
        "doubt": "_do_doubt",
        "through": "_do_through",
        "penalty": "_do_penalty",
    }

    # -- results --------------------------------------------------------------------------
    def _end(self, winner: int, how: str, pts: int, burst: int | None) -> None:
        """The game ends: ``winner`` gains ``pts``, the loser loses as many (MD-17)."""
        loser = 1 - winner
        self.winner, self.burst = winner, burst
        self.scores = {str(winner): pts, str(loser): -pts}
        self.over = True
        self.unit_over = True
        self._decision = None
        self._end_event(
            {"type": "game_end", "winner": winner, "how": how, "burst": burst, "scores": dict(self.scores)}
        )  # the hands left: log only (C-11, MD-8)

    def _win(self, winner: int, how: str, burst: int | None = None) -> None:
        left = len(self.hands[1 - winner])
        if burst is not None or left >= self.BURST:  # MD-17
            self._end(winner, how, self.options.burst_score, 1 - winner)
        else:
            self._end(winner, how, left, None)

    def _forfeit(self, seat: int, reason: str) -> bool:
        """FAULT-2: the faulting seat loses the game with the burst score."""
        self.forfeited = seat
        self._event({"type": "forfeit", "seat": seat, "reason": reason})
        self._end(1 - seat, "forfeit", self.options.burst_score, None)
        return True

    def result(self) -> Result | None:
        """``{"winner", "scores": {"seat": n}, "burst": seat|None, "forfeit": seat|None,
        "ranks": {"seat": 1|2}}`` (MD-17, FAULT-2) once over, else None."""
        if not self.over or self.winner is None or self.scores is None:
            return None
        return {
            "winner": self.winner,
            "scores": dict(self.scores),
            "burst": self.burst,
            "forfeit": self.forfeited,
            "ranks": seat_keys({self.winner: 1, 1 - self.winner: 2}),
        }

    def unit_result(self) -> Result | None:
        """Result of the game (the unit the scenario ``over`` refers to): :meth:`result`."""
        return self.result()

    # -- legal actions --------------------------------------------------------------------
    def legal_plays(self, seat: int) -> tuple[list[Play], bool]:
        """MD-5: nothing beats a face-up lone joker or joker pair (only a pass); else the
        face-up plays, and a pass when the field is not empty (MD-9)."""
        if self.ref is not None and (self.ref.joker or self.ref.joker_pair):
            return [], True
        return self.face_up_plays(seat), bool(self.field)

    def legal_actions(self, seat: int) -> Iterator[Action]:
        """Legal actions of ``seat`` now: face-up plays, pass, doubt/through, penalties.

        Face-down plays are not listed (see the module docstring); check them with
        :meth:`Game.check`. Penalties are listed smallest first (2**field_size of them).
        """
        d = self.decision()
        if d is None or d.seat != seat:
            return
        if d.kind == "play":
            yield from self._play_answers(seat)
        elif d.kind == "doubt":
            yield {"type": "doubt"}
            yield {"type": "through"}
        elif d.kind == "penalty":
            pool = sorted(c for p in self.field for c in p.cards)
            seen = set()
            for k in range(d.info.get("min", 0), len(pool) + 1):
                for combo in combinations(pool, k):
                    if combo in seen:
                        continue
                    seen.add(combo)
                    yield {"type": "penalty", "cards": format_cards(combo)}

    def _obs_extra(self, seat: int) -> dict[str, Any]:
        extra: dict[str, Any] = {"pending_doubt": self.pending is not None}
        if self.over:
            extra["result"] = self.result()
        return extra


__all__ = ["MillionDoubt", "honest_play"]
