"""Trump Millionaire (``trump_millionaire``): RULES TM-1 to TM-7 on the climbing flow.

A game is a series of deals (TM-1) to ``target_score``. Each deal: 10 cards to each of 4
seats, 14 set aside face down (TM-2). From the second deal the Millionaire (the previous
deal's finisher) decides ``exchange`` then ``rate`` and leads (TM-3). Any 4+ play is a
revolution, a natural 8 cuts, a natural 9 reverses the direction (TM-4). A finishing play
with a joker, an 8 or a 2 (a 3 in revolution) is invalid (TM-5); a leader with no legal
play passes (TM-6); four such passes in a row void the deal. The deal ends at the first
finish, zero-sum (TM-7).
"""

from __future__ import annotations

from typing import Iterator

from engine.cards import R8, format_cards, full_deck
from engine.climbing import Climbing, PlayInfo
from engine.game import InvalidAction


class TrumpMillionaire(Climbing):
    """State of a Trump Millionaire game (or of one deal, when built from a setup)."""

    ruleset = "trump_millionaire"
    FORBIDDEN_FINISH_INVALID = True
    NINE_REVERSES = True
    HAND_SIZE = 10

    def __init__(self, options, seed, setup):
        super().__init__(options, seed, setup)
        self.totals = [0] * 4
        self.deal_index = 0
        self.deal_results: list[dict] = []
        self.retired: list[int] = []  # in order of retirement (FAULT-2)
        self.millionaire: int | None = None
        self.rate = 1
        self.stuck_run = 0
        self.set_aside: list[int] = []
        if setup is None:
            self._new_deal()
        else:
            st = setup["state"]
            self.set_aside = list(setup["set_aside"])
            self.discards.extend(self._setup_hands(setup, self.set_aside))  # not in this deal
            self.outside = self.set_aside
            self.revolution = bool(st.get("revolution", False))
            self.direction = -1 if st.get("direction", 1) == -1 else 1
            self.millionaire = st.get("millionaire")
            self.rate = st.get("rate", 1)
            self._deal_events()
            if self.millionaire is not None and "rate" not in st:
                self._ask(self.millionaire, "exchange")
            else:
                self._set_leader(setup["leader"])

    # -- deals --------------------------------------------------------------------------------
    def _deal_events(self) -> None:
        self.unit_start = len(self.events)
        self._event({"type": "deal", "deal": self.deal_index, "millionaire": self.millionaire,
                     "totals": list(self.totals)})
        for s in range(4):
            self._event({"type": "hand", "seat": s, "cards": format_cards(self.hands[s])}, (s,))

    def _new_deal(self) -> None:
        """TM-2: shuffle, 10 each, 14 set aside; TM-3 decisions or a random first leader."""
        deck = full_deck()
        self.rng.shuffle(deck)
        n = self.HAND_SIZE
        self.hands = [deck[i * n:(i + 1) * n] for i in range(4)]
        self.set_aside = deck[4 * n:]
        self.outside = self.set_aside
        self.discards = []
        self._reset_trick_flags(full=True)
        self.still_in = [s not in self.retired for s in range(4)]
        self.unit_over = False
        self.stuck_run = 0
        self.rate = 1
        self.follow = None
        self._deal_events()
        if self.millionaire is None:
            self._set_leader(self.rng.randrange(4))
        elif self.millionaire in self.retired:
            self.rate = min(self.options.rate_choices)
            self._event({"type": "rate", "seat": self.millionaire, "rate": self.rate})
            self._set_leader(self.millionaire)
        else:
            self._ask(self.millionaire, "exchange")

    def _set_leader(self, seat: int) -> None:
        """TM-6: a retired leader passes at once; a leader whose only card may not finish
        is asked ``play`` with ``pass`` as its only legal action."""
        while True:
            if self.stuck_run >= 4:
                self._void_deal()
                return
            if len(self.retired) == 4:
                self._end_game()
                return
            if seat in self.retired:
                self._event({"type": "pass", "seat": seat, "stuck": True})
                self.stuck_run += 1
                seat = self._step(seat)
                continue
            break
        hand = self.hands[seat]
        stuck = len(hand) == 1 and self._forbidden_card(hand[0])
        if stuck:
            self._ask(seat, "play", lead=True, stuck=True)
        else:
            self._ask(seat, "play", lead=True)

    def _forbidden_card(self, c: int) -> bool:
        bad = 0 if self.revolution else 12
        return c == 52 or c >> 2 in (R8, bad)

    def _void_deal(self) -> None:
        self._event({"type": "void_deal"})
        self.deal_results.append({"deal": self.deal_index, "void": True, "winner": None,
                                  "scores": {s: 0 for s in range(4)}, "rate": self.rate})
        if self.single_unit:
            self.unit_over = True
            self.over = True
            self._decision = None
            return
        self.deal_index += 1
        self._new_deal()

    # -- decisions before the first lead (TM-3) -----------------------------------------------
    def _do_exchange(self, seat: int, action: dict) -> None:
        accept = action.get("accept")
        if not isinstance(accept, bool):
            raise InvalidAction("ACT", "field 'accept' must be true or false")
        if accept:
            old = self.hands[seat]
            draw = self.set_aside[:10]
            self.hands[seat] = list(draw)
            self.set_aside = self.set_aside[10:] + old
            self.outside = self.set_aside
        self._event({"type": "exchange", "seat": seat, "accept": accept,
                     "hand": format_cards(self.hands[seat])}, (seat,),
                    {"type": "exchange", "seat": seat, "accept": accept})
        self._ask(seat, "rate", choices=list(self.options.rate_choices))

    def _do_rate(self, seat: int, action: dict) -> None:
        rate = action.get("rate")
        if not isinstance(rate, int) or isinstance(rate, bool) or rate not in self.options.rate_choices:
            raise InvalidAction("TM-3", f"rate must be one of {list(self.options.rate_choices)}")
        self.rate = rate
        self._event({"type": "rate", "seat": seat, "rate": rate})
        self._set_leader(seat)

    # -- presets ------------------------------------------------------------------------------
    def _is_revolution(self, p: PlayInfo) -> bool:
        return len(p.cards) >= 4  # TM-4 (and LR-2, already so)

    def _is_eight_cut(self, p: PlayInfo) -> bool:
        return p.count(R8) > 0  # TM-4

    def _special_last_play(self, p: PlayInfo, revolution_before: bool) -> bool:
        return self._holds_two(p, revolution_before) or p.count(R8) > 0  # TM-5

    def _finish_refused(self, nat: list[int], jokers: int) -> bool:
        bad = 0 if self.revolution else 12
        return jokers > 0 or any(c >> 2 in (R8, bad) for c in nat)

    def _before_play(self, seat: int) -> None:
        if not self.field:
            self.stuck_run = 0

    def _check_empty_by_follow_up(self, f: dict) -> None:
        if f["special"]:
            raise InvalidAction(
                "TM-5", "this give/discard would empty the hand after a play with a joker, an 8 or a 2 (a 3 in revolution)")

    def _do_pass(self, seat: int, action: dict) -> None:
        d = self._decision
        if not self.field and d.info.get("stuck"):
            self._event({"type": "pass", "seat": seat, "stuck": True})  # TM-6
            self.stuck_run += 1
            self._set_leader(self._step(seat))
            return
        super()._do_pass(seat, action)

    # -- end of a deal (TM-7) and of the game (TM-1) -------------------------------------------
    def _finish(self, seat: int, special: bool) -> None:
        others = sum(len(self.hands[s]) for s in range(4) if s != seat)
        scores = {s: -self.rate * len(self.hands[s]) for s in range(4)}
        scores[seat] = self.rate * others
        for s in range(4):
            self.totals[s] += scores[s]
        self.deal_results.append({"deal": self.deal_index, "void": False, "winner": seat,
                                  "scores": scores, "rate": self.rate})
        public = {"type": "deal_end", "winner": seat, "rate": self.rate,
                  "scores": {str(s): v for s, v in scores.items()}, "totals": list(self.totals)}
        # the hands left are for the post-game log only (C-11: they would tell the set-aside
        # cards); seats see the sizes they already know
        self._event({**public, "hands": {str(s): format_cards(self.hands[s]) for s in range(4)}},
                    (), public)
        self.millionaire = seat
        self.unit_over = True
        if self.single_unit:
            self.over = True
            self._decision = None
        elif max(self.totals) >= self.options.target_score:
            self._end_game()
        else:
            self.deal_index += 1
            self._new_deal()

    def _end_game(self) -> None:
        self.over = True
        self.unit_over = True
        self._decision = None
        self._event({"type": "game_end", "totals": list(self.totals), "ranks": self._ranks()})

    def _ranks(self) -> dict[int, int]:
        """TM-1: by total score, equal totals share the place; retired seats below (FAULT-2)."""
        key = {s: (s not in self.retired, self.totals[s]) for s in range(4)}
        return {s: 1 + sum(1 for o in range(4) if key[o] > key[s]) for s in range(4)}

    def _forfeit(self, seat: int, reason: str) -> bool:
        """FAULT-2: the seat retires for the rest of the game (never asked, passes)."""
        if seat in self.retired:
            return False
        self.retired.append(seat)
        self.still_in[seat] = False
        self._event({"type": "forfeit", "seat": seat, "reason": reason})
        d = self._decision
        if d is None or d.seat != seat:
            if len(self.retired) == 4:
                self._end_game()
            return True
        if d.kind == "exchange":
            self._event({"type": "exchange", "seat": seat, "accept": False})
            self.rate = min(self.options.rate_choices)
            self._event({"type": "rate", "seat": seat, "rate": self.rate})
            self._set_leader(seat)
        elif d.kind == "rate":
            self.rate = min(self.options.rate_choices)
            self._event({"type": "rate", "seat": seat, "rate": self.rate})
            self._set_leader(seat)
        elif d.kind in ("give", "discard"):
            self.follow[d.kind] = 0
            self._continue()
        elif not self.field:
            self._set_leader(seat)
        else:
            self._next_turn(seat)
        return True

    def result(self) -> dict | None:
        """When over: ``{"totals": {seat: n}, "ranks": {seat: place}, "deals": [...],
        "retired": [seats], "winner": seat of place 1 (lowest seat on a tie), "scores": totals}``."""
        if not self.over:
            return None
        ranks = self._ranks()
        totals = {s: self.totals[s] for s in range(4)}
        return {"totals": totals, "scores": totals, "ranks": ranks,
                "winner": min(s for s in range(4) if ranks[s] == 1),
                "deals": [dict(d) for d in self.deal_results], "retired": list(self.retired)}

    def unit_result(self) -> dict | None:
        """The last deal's result: ``{"winner", "scores", "rate", "void"}``."""
        if not self.deal_results:
            return None
        return dict(self.deal_results[-1])

    def _other_legal(self, d) -> Iterator[dict]:
        if d.kind == "exchange":
            yield {"type": "exchange", "accept": True}
            yield {"type": "exchange", "accept": False}
        elif d.kind == "rate":
            for r in self.options.rate_choices:
                yield {"type": "rate", "rate": r}

    def _obs_extra(self, seat: int) -> dict:
        extra = {"deal": self.deal_index, "millionaire": self.millionaire, "rate": self.rate,
                 "totals": list(self.totals), "set_aside_count": len(self.set_aside),
                 "retired": list(self.retired), "target_score": self.options.target_score}
        if self.over:
            extra["result"] = self.result()
        return extra
