"""Million Doubt (``million_doubt``): RULES MD-1 to MD-17 on the common engine.

Two seats, 7 cards each (MD-1). A play may put cards face down (MD-2); it is accepted when
some identity of its face-down cards makes it legal (MD-3). The opponent then answers
``doubt`` or ``through`` (MD-6); a doubt reveals the field (MD-8) and the penalty executor
gives 0 to all field cards to the other player (MD-7). A hand of 11+ cards bursts (MD-10).

Face-down plays cannot be listed: with ``k`` cards in hand there are up to ``3**k`` ways to
split a hand into played-face-up, played-face-down and kept, and any card may be played face
down whatever it is. :meth:`MillionDoubt.legal_actions` therefore lists the face-up plays, pass,
doubt/through and penalties; any face-down play is checked by :meth:`Game.check` /
:meth:`MillionDoubt.validate_play`, and :meth:`MillionDoubt.face_down_rule` states in words
what is allowed.
"""

from __future__ import annotations

from itertools import combinations
from typing import Iterator

from engine.cards import R8, RJ, format_cards, full_deck
from engine.forms import Readings, beating, choose, readings, satisfies_lock, signature, split
from engine.game import Game, InvalidAction, PlayRecord, _remove_all, _take, cards_text


class _Eval:
    __slots__ = ("cards", "face_down", "declared", "fu_nat", "fu_jokers", "accepted")

    def __init__(self, cards, face_down, declared, fu_nat, fu_jokers, accepted):
        self.cards = cards
        self.face_down = face_down
        self.declared = declared
        self.fu_nat = fu_nat
        self.fu_jokers = fu_jokers
        self.accepted = accepted


def _bind_declared(r: Readings, declared, nat, n: int) -> Readings:
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


def honest_play(cards, declared, ref: Readings | None, lock, reversed_order: bool) -> bool:
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


class MillionDoubt(Game):
    """State of one Million Doubt game (MD-1..MD-17). See :mod:`engine.game` for the API."""

    ruleset = "million_doubt"
    HAND_SIZE = 7
    BURST = 11

    def __init__(self, options, seed, setup):
        super().__init__(options, seed, setup)
        self.pending: tuple | None = None  # (record, eval) of a play awaiting doubt/through
        self.penalty_ctx: tuple | None = None  # (executor, receiver, honest, player)
        self.winner: int | None = None
        self.burst: int | None = None
        self.forfeited: int | None = None
        self.scores: dict[int, int] | None = None
        if setup is None:
            deck = full_deck()
            n = self.HAND_SIZE
            dealt = self.rng.sample(deck, 2 * n)  # MD-1: 7 each, the other 40 out of the game
            self.hands = [dealt[:n], dealt[n:]]
            for c in dealt:
                deck.remove(c)
            self.outside = deck
            leader = self.rng.randrange(2)
        else:
            self.outside = self._setup_hands(setup)
            leader = setup["leader"]
            st = setup["state"]
            self.revolution = bool(st.get("revolution", False))
            self.direction = -1 if st.get("direction", 1) == -1 else 1
        for s in range(2):
            self._event({"type": "hand", "seat": s, "cards": format_cards(self.hands[s])}, (s,))
        self._event({"type": "start", "leader": leader})
        self._set_leader(leader)

    # -- validation -------------------------------------------------------------------------
    def _evaluate(self, seat: int, action: dict) -> _Eval:
        """Parse and check a play against MD-2..MD-5 and C-8 without changing anything."""
        cards = self._cards_field(action)
        if action.get("face_down"):
            face_down = self._cards_field(action, "face_down")
            if not _remove_all(cards, face_down):
                raise InvalidAction("MD-2", "'face_down' must be a sub-multiset of 'cards'")
            fu = list(cards)
            for c in face_down:
                fu.remove(c)
        else:
            if "face_down" in action and action["face_down"] is not None:
                self._cards_field(action, "face_down")  # [] is fine; a non-list is not
            face_down = []
            fu = cards
        self._hand_check(seat, cards)
        fu_nat, fu_j = split(fu)
        declared = self._declared(action, fu_j) if "jokers" in action else None
        return self._judge(cards, face_down, declared, fu_nat, fu_j)

    def _judge(self, cards, face_down, declared, fu_nat, fu_j) -> _Eval:
        """MD-3..MD-5, C-8 on parsed cards held by the seat; raises InvalidAction."""
        wild = len(face_down)
        n = len(cards)
        if self.count and n != self.count:
            raise InvalidAction("MD-4", f"the trick is of {self.count} card(s); this play has {n}")
        r = readings(fu_nat, fu_j, wild, declared)
        if r.empty():
            rule = "C-4" if declared else "C-3"
            raise InvalidAction(rule, lambda: f"{cards_text(cards)} is not a legal form" + (
                " with the declared joker ranks" if declared else ""))
        if self.lock and not satisfies_lock(self.lock, fu_nat, fu_j + wild):
            locked = "".join("SHDC"[s] for s in self.lock)
            raise InvalidAction("C-8", f"the suit lock {locked} is not matched")
        ref = self.ref
        if ref is not None and (ref.joker or ref.joker_pair):
            raise InvalidAction("MD-5", "nothing beats a face-up lone joker or joker pair: pass")
        b = beating(r, ref, self.reversed_order)
        if b.empty():
            raise InvalidAction("MD-3", lambda: f"no reading of {cards_text(cards)} beats the reference ({ref.describe()})")
        return _Eval(cards, face_down, declared, fu_nat, fu_j, b)

    def validate_play(self, seat: int, action: dict) -> None:
        """Raise :class:`InvalidAction` if ``action`` (a play, face-down cards allowed) is refused."""
        self._check_common(seat, action)
        if action.get("type") == "play":
            self._evaluate(seat, action)

    @staticmethod
    def face_down_rule() -> str:
        """What a face-down play must satisfy (MD-2, MD-3), in words, for bots."""
        return ("Any cards of your hand may be played, any of them face down ('face_down', a "
                "sub-multiset of 'cards'). The play is accepted when some identity of the "
                "face-down cards (any card, joker included) makes it a legal form (C-3) with the "
                "trick's card count (MD-4) that beats the reference (MD-5) under the suit lock "
                "(C-8, face-down cards are wild) and the current order (C-9).")

    # -- actions --------------------------------------------------------------------------
    def _do_play(self, seat: int, action: dict) -> None:
        ev = self._evaluate(seat, action)
        _take(self.hands[seat], ev.cards)
        rec = PlayRecord(seat, ev.cards, ev.face_down, ev.declared)
        self.field.append(rec)
        if not self.count:
            self.count = len(ev.cards)
        full = {"type": "play", "seat": seat, "cards": list(action["cards"])}
        if ev.declared:
            full["jokers"] = list(action["jokers"])
        if ev.face_down:
            full["face_down"] = list(action["face_down"])
            public = {"type": "play", **rec.view(1 - seat)}
            self._event(full, (seat,), public)
            self.pending = (rec, ev)
            self._ask(1 - seat, "doubt")
        else:
            self._event(full)
            cut = self._accept(rec, ev)
            self._after_accept(seat, cut)

    def _accept(self, rec: PlayRecord, ev: _Eval) -> bool:
        """Take an accepted play's effects (MD-14); returns True for an 8-cut (MD-13)."""
        n = len(rec.cards)
        if ev.fu_nat:
            self.ref = ev.accepted if ev.face_down else choose(ev.accepted, self.reversed_order)
        elif not ev.face_down and (n == 1 or (n == 2 and ev.fu_jokers == 2)):
            self.ref = Readings(joker=(n == 1), joker_pair=(n == 2))
        if n >= 4:  # MD-11
            self.revolution = not self.revolution
            self._event({"type": "revolution", "on": self.revolution})
        ranks = {c >> 2 for c in ev.fu_nat}
        if RJ in ranks:  # MD-12
            self.jback = not self.jback
            self._event({"type": "jback", "on": self.jback})
        sig = signature(ev.fu_nat) if ev.fu_nat else ()
        if not self.lock and sig and sig == self.prev_sig:  # C-8
            self.lock = sig
            self._event({"type": "lock", "suits": ["SHDC"[s] for s in sig]})
        self.prev_sig = sig
        self.last_player = rec.seat
        return R8 in ranks

    def _after_accept(self, seat: int, cut: bool) -> None:
        if not self.hands[seat]:
            self._win(seat, "finish")
        elif cut:
            self._event({"type": "eight_cut", "seat": seat})
            self._clear(seat)
        else:
            self._ask(1 - seat, "play")

    def _do_pass(self, seat: int, action: dict) -> None:
        if not self.field:
            raise InvalidAction("C-6", "the leader may not pass")
        self._event({"type": "pass", "seat": seat})
        self._clear(self.last_player)  # MD-9: the last player leads

    def _do_through(self, seat: int, action: dict) -> None:
        rec, ev = self.pending
        self.pending = None
        self._event({"type": "through", "seat": seat})
        cut = self._accept(rec, ev)
        self._after_accept(rec.seat, cut)  # the answering seat plays next (MD-6)

    def _honest(self, rec: PlayRecord) -> bool:
        """MD-7: the real cards beat the reference under the lock and order then in force."""
        return honest_play(rec.cards, rec.declared, self.ref, self.lock, self.reversed_order)

    def _do_doubt(self, seat: int, action: dict) -> None:
        rec, ev = self.pending
        self.pending = None
        self._event({"type": "doubt", "seat": seat})
        honest = self._honest(rec)  # context: the state before the play's effects
        for p in self.field:
            p.revealed = True
        self._event({"type": "reveal", "field": [p.view(None) for p in self.field],
                     "honest": honest})
        player = rec.seat
        executor = player if honest else seat
        if honest and len(rec.cards) >= 4:  # MD-14: only the revolution matters
            self.revolution = not self.revolution
            self._event({"type": "revolution", "on": self.revolution})
        self.penalty_ctx = (executor, 1 - executor, honest, player)
        must_give = (not honest) and not self.hands[player]  # MD-16
        if must_give:
            self._ask(executor, "penalty", min=1, field_size=self.field_size())
        else:
            self._ask(executor, "penalty", min=0, field_size=self.field_size())

    def _do_penalty(self, seat: int, action: dict) -> None:
        cards = self._cards_field(action)
        pool = [c for p in self.field for c in p.cards]
        if not _remove_all(pool, cards):
            raise InvalidAction("MD-7", f"the penalty must be cards of the field; {cards_text(cards)} is not")
        executor, receiver, honest, player = self.penalty_ctx
        if not cards and self._decision.info.get("min"):
            raise InvalidAction("MD-16", "after a caught lie on the last card the penalty must hold at least one card")
        self.penalty_ctx = None
        self.hands[receiver].extend(cards)
        for c in cards:
            pool.remove(c)
        self.discards.extend(pool)
        self._event({"type": "penalty", "seat": seat, "to": receiver, "cards": format_cards(cards)})
        self._event({"type": "clear"})
        self._reset_trick_flags()
        if len(self.hands[receiver]) >= self.BURST:  # MD-10
            self._win(executor, "burst", burst=receiver)
        elif honest and not self.hands[player]:  # MD-16
            self._win(player, "finish")
        else:
            self._set_leader(executor)

    # -- results --------------------------------------------------------------------------
    def _win(self, winner: int, how: str, burst: int | None = None) -> None:
        loser = 1 - winner
        left = len(self.hands[loser])
        if burst is not None or left >= self.BURST:  # MD-17
            pts = self.options.burst_score
            burst = loser
        else:
            pts = left
        self.winner, self.burst = winner, burst
        self.scores = {winner: pts, loser: -pts}
        self.over = True
        self.unit_over = True
        self._decision = None
        self._event({"type": "game_end", "winner": winner, "how": how, "burst": burst,
                     "scores": {str(k): v for k, v in self.scores.items()},
                     "hands": {str(s): format_cards(self.hands[s]) for s in range(2)}})

    def _forfeit(self, seat: int, reason: str) -> bool:
        """FAULT-2: the faulting seat loses the game with the burst score."""
        self.forfeited = seat
        self._event({"type": "forfeit", "seat": seat, "reason": reason})
        winner = 1 - seat
        pts = self.options.burst_score
        self.winner, self.burst = winner, None
        self.scores = {winner: pts, seat: -pts}
        self.over = True
        self.unit_over = True
        self._decision = None
        self._event({"type": "game_end", "winner": winner, "how": "forfeit", "burst": None,
                     "scores": {str(k): v for k, v in self.scores.items()},
                     "hands": {str(s): format_cards(self.hands[s]) for s in range(2)}})
        return True

    def result(self) -> dict | None:
        """``{"winner", "scores": {seat: n}, "burst": seat|None, "forfeit": seat|None}`` or None."""
        if not self.over:
            return None
        return {"winner": self.winner, "scores": dict(self.scores), "burst": self.burst,
                "forfeit": self.forfeited, "ranks": {self.winner: 1, 1 - self.winner: 2}}

    def unit_result(self) -> dict | None:
        """Result of the game (the unit the scenario ``over`` refers to)."""
        return self.result()

    # -- legal actions --------------------------------------------------------------------
    def legal_actions(self, seat: int) -> Iterator[dict]:
        """Legal actions of ``seat`` now: face-up plays, pass, doubt/through, penalties.

        Face-down plays are not listed (see the module docstring); check them with
        :meth:`validate_play`. Penalties are listed smallest first (2**field_size of them).
        """
        d = self.decision()
        if d is None or d.seat != seat:
            return
        if d.kind == "play":
            if self.ref is not None and (self.ref.joker or self.ref.joker_pair):
                yield {"type": "pass"}
                return
            for cards, declared in self.face_up_plays(seat):
                action = {"type": "play", "cards": format_cards(cards)}
                if declared:
                    action["jokers"] = ["3456789TJQKA2"[r] for r in declared]
                yield action
            if self.field:
                yield {"type": "pass"}
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

    def _obs_extra(self, seat: int) -> dict:
        extra = {"pending_doubt": self.pending is not None}
        if self.over:
            extra["result"] = self.result()
        return extra
