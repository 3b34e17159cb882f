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

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, Final

from engine.actions import ExchangeAction, RateAction
from engine.cards import JOKER, R2, R3, R8, R9, format_cards, full_deck
from engine.climbing import Climbing, FollowUp, PlayInfo
from engine.decisions import Action, Decision, InvalidAction
from engine.draws import below, shuffle
from engine.game import Game
from engine.options import TrumpMillionaireOptions
from engine.refusals import Refusal
from engine.results import DealResult, Result, seat_keys
from engine.state import mypyc_attr

#: TM-2: cards dealt to each seat (the other 14 are set aside).
HAND_SIZE: Final = 10
#: TM-6: after this many leaders in a row pass, the deal is void.
STUCK_LEADERS_VOID: Final = 4


def forbidden_finish(nat: Sequence[int], jokers: int, revolution_before: bool) -> bool:
    """TM-5: whether a play of natural cards ``nat`` and ``jokers`` jokers may not empty a
    hand: it holds a joker, a natural 8 or a natural 2 (a natural 3 while the revolution flag
    was on before the play; the J-back flag never counts)."""
    if jokers:
        return True
    bad = R3 if revolution_before else R2
    return any(c >> 2 == R8 or c >> 2 == bad for c in nat)


@mypyc_attr(allow_interpreted_subclasses=True)
class TrumpMillionaire(Climbing):
    """State of a Trump Millionaire game (or of one deal, when built from a setup)."""

    ruleset = "trump_millionaire"

    options: TrumpMillionaireOptions

    def __init__(
        self, options: TrumpMillionaireOptions, seed: int | None, setup: dict[str, Any] | None, log: bool = True
    ):
        super().__init__(options, seed, setup, log)
        self.totals = [0] * 4
        self.deal_index = 0
        self.deal_results: list[DealResult] = []
        self.retired: list[int] = []  # in order of retirement (FAULT-2)
        self.millionaire: int | None = None
        self.rate = 1
        self.stuck_run = 0
        self.set_aside: list[int] = []
        if setup is None:
            self._new_deal()
        else:
            st = setup["state"]
            self.set_aside = self._setup_unit(setup)
            self.millionaire = st.get("millionaire")
            self.rate = st.get("rate", 1)
            self.unit_start = len(self.events)
            self.unit_count += 1
            self._event(self._deal_header())
            self._hand_events()
            if self.millionaire is not None and "rate" not in st:
                self._ask(self.millionaire, "exchange")
            else:
                self._set_leader(setup["leader"])

    def _copy_to(self, new: Game, log: bool) -> None:
        super()._copy_to(new, log)
        assert isinstance(new, TrumpMillionaire)
        new.totals = list(self.totals)
        new.deal_index = self.deal_index
        new.deal_results = list(self.deal_results)
        new.retired = list(self.retired)
        new.millionaire = self.millionaire
        new.rate = self.rate
        new.stuck_run = self.stuck_run
        new.set_aside = self.set_aside  # replaced, never changed in place (outside is the same list)

    @property
    def unit_index(self) -> int:
        """Index of the current deal (TIME-1: time banks are per deal)."""
        return self.deal_index

    # -- deals --------------------------------------------------------------------------------
    def _deal_header(self) -> dict[str, Any]:
        return {"type": "deal", "deal": self.deal_index, "millionaire": self.millionaire, "totals": list(self.totals)}

    def _new_deal(self) -> None:
        """TM-2: shuffle, 10 each, 14 set aside; TM-3 decisions or a random first leader."""
        deck = full_deck()
        shuffle(self.rng, deck)
        n = HAND_SIZE
        self.set_aside = deck[4 * n :]
        self.stuck_run = 0
        self.rate = 1
        self._start_unit(
            [deck[i * n : (i + 1) * n] for i in range(4)],
            self.set_aside,
            [s not in self.retired for s in range(4)],
            self._deal_header(),
        )
        if self.millionaire is None:
            self._set_leader(below(self.rng, 4))
        elif self.millionaire in self.retired:
            self._retired_millionaire(self.millionaire, exchange_event=False)
        else:
            self._ask(self.millionaire, "exchange")

    def _retired_millionaire(self, seat: int, exchange_event: bool) -> None:
        """TM-3, FAULT-2: a retired Millionaire declines the exchange, takes the lowest rate
        of ``rate_choices`` and (being retired) passes as leader (TM-6)."""
        if exchange_event:
            if self.logged:
                self._event({"type": "exchange", "seat": seat, "accept": False})
        self.rate = min(self.options.rate_choices)
        if self.logged:
            self._event({"type": "rate", "seat": seat, "rate": self.rate})
        self._set_leader(seat)

    def _set_leader(self, seat: int) -> None:
        """TM-6: a retired leader passes at once; a leader whose only card may not finish
        is asked ``play`` with ``pass`` as its only legal action."""
        while True:
            if self.stuck_run >= STUCK_LEADERS_VOID:
                self._void_deal()
                return
            if len(self.retired) == 4:
                self._end_game()
                return
            if seat in self.retired:
                if self.logged:
                    self._event({"type": "pass", "seat": seat, "stuck": True})
                self.stuck_run += 1
                seat = self._step(seat)
                continue
            break
        hand = self.hands[seat]
        if len(hand) == 1 and self._finish_refused(*_split_one(hand[0])):
            self._ask(seat, "play", lead=True, stuck=True)
        else:
            self._ask_lead(seat)

    def _void_deal(self) -> None:
        """TM-6: four leaders in a row passed: no score; redeal with the same Millionaire."""
        if self.logged:
            self._event({"type": "void_deal"})
        self.deal_results.append(
            {"deal": self.deal_index, "void": True, "winner": None, "scores": seat_keys([0] * 4), "rate": self.rate}
        )
        if self.single_unit:
            self.unit_over = True
            self.over = True
            self._decision = None
            return
        self.deal_index += 1
        self._new_deal()

    # -- decisions before the first lead (TM-3) -----------------------------------------------
    def _parse_exchange(self, seat: int, action: Action) -> ExchangeAction:
        accept = action.get("accept")
        if not isinstance(accept, bool):
            raise InvalidAction("ACT", Refusal.ACCEPT_BOOLEAN)
        return ExchangeAction(accept)

    def _parse_rate(self, seat: int, action: Action) -> RateAction:
        rate = action.get("rate")
        if not isinstance(rate, int) or isinstance(rate, bool) or rate not in self.options.rate_choices:
            raise InvalidAction("TM-3", Refusal.RATE_CHOICE, {"rates": str(list(self.options.rate_choices))})
        return RateAction(rate)

    def _do_exchange(self, seat: int, action: ExchangeAction) -> None:
        """TM-3 (1): on accept the hand is replaced by 10 cards drawn from the set-aside ones."""
        accept = action.accept
        if accept:
            old = self.hands[seat]
            self.hands[seat] = list(self.set_aside[:HAND_SIZE])
            self.set_aside = self.set_aside[HAND_SIZE:] + old
            self.outside = self.set_aside
        self._event(
            {"type": "exchange", "seat": seat, "accept": accept, "hand": format_cards(self.hands[seat])},
            (seat,),
            {"type": "exchange", "seat": seat, "accept": accept},
        )
        self._ask(seat, "rate", choices=list(self.options.rate_choices))

    def _do_rate(self, seat: int, action: RateAction) -> None:
        """TM-3 (2): the per-card rate, one of ``rate_choices``; then the Millionaire leads."""
        self.rate = action.rate
        if self.logged:
            self._event({"type": "rate", "seat": seat, "rate": action.rate})
        self._set_leader(seat)

    def _leader_pass(self, seat: int) -> bool:
        """TM-6: a stuck leader's pass belongs to no trick (any other pass: C-6, C-7)."""
        d = self._decision
        if d is None or not d.info.get("stuck"):
            return False
        if self.logged:
            self._event({"type": "pass", "seat": seat, "stuck": True})
        self.stuck_run += 1
        self._set_leader(self._step(seat))
        return True

    HANDLERS: ClassVar[Mapping[str, str]] = {**Climbing.HANDLERS, "exchange": "_do_exchange", "rate": "_do_rate"}

    # -- presets ------------------------------------------------------------------------------
    def _is_revolution(self, p: PlayInfo) -> bool:
        return len(p.cards) >= 4  # TM-4 (and LR-2, already so)

    def _is_eight_cut(self, p: PlayInfo) -> bool:
        return p.ranks >> R8 & 1 == 1  # TM-4: a natural 8

    def _reverses_direction(self, p: PlayInfo) -> bool:
        return p.ranks >> R9 & 1 == 1  # TM-4: a natural 9, once per play

    def _special_last_play(self, p: PlayInfo, revolution_before: bool) -> bool:
        return forbidden_finish(p.nat, p.jokers, revolution_before)  # TM-5

    def _finish_refused(self, nat: Sequence[int], jokers: int) -> bool:
        return forbidden_finish(nat, jokers, self.revolution)  # TM-5

    def _before_play(self, seat: int) -> None:
        if not self.field:
            self.stuck_run = 0  # TM-6: a lead was made

    def _check_empty_by_follow_up(self, f: FollowUp) -> None:
        if f.special:
            raise InvalidAction("TM-5", Refusal.FOLLOW_UP_EMPTIES)

    # -- end of a deal (TM-7) and of the game (TM-1) -------------------------------------------
    def _finish(self, seat: int, special: bool) -> None:
        others = sum(len(self.hands[s]) for s in range(4) if s != seat)
        scores = [-self.rate * len(self.hands[s]) for s in range(4)]
        scores[seat] = self.rate * others
        for s in range(4):
            self.totals[s] += scores[s]
        self.deal_results.append(
            {"deal": self.deal_index, "void": False, "winner": seat, "scores": seat_keys(scores), "rate": self.rate}
        )
        self._end_event(
            {
                "type": "deal_end",
                "winner": seat,
                "rate": self.rate,
                "scores": seat_keys(scores),
                "totals": list(self.totals),
            }
        )
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

    def _ranks(self) -> dict[str, int]:
        """TM-1: by total score, equal totals share the place; retired seats below (FAULT-2)."""
        key = [(s not in self.retired, self.totals[s]) for s in range(4)]
        return {str(s): 1 + sum(1 for o in range(4) if key[o] > key[s]) for s in range(4)}

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
        if d.kind in ("exchange", "rate"):
            self._retired_millionaire(seat, exchange_event=d.kind == "exchange")
        else:
            self._forfeit_tail(seat, d)
        return True

    def result(self) -> Result | None:
        """When over: ``{"totals": {"seat": n}, "scores": totals, "ranks": {"seat": place},
        "winner": seat of place 1 (lowest seat on a tie), "deals": [DealResult],
        "retired": [seats]}`` (TM-1, TM-7, FAULT-2)."""
        if not self.over:
            return None
        ranks = self._ranks()
        totals = seat_keys(self.totals)
        return {
            "totals": totals,
            "scores": dict(totals),
            "ranks": ranks,
            "winner": min(s for s in range(4) if ranks[str(s)] == 1),
            "deals": [_copy_deal(d) for d in self.deal_results],
            "retired": list(self.retired),
        }

    def unit_result(self) -> DealResult | None:
        """The last deal's result: ``{"deal", "void", "winner", "scores", "rate"}``."""
        return _copy_deal(self.deal_results[-1]) if self.deal_results else None

    def _other_legal(self, d: Decision) -> Iterator[Action]:
        if d.kind == "exchange":
            yield {"type": "exchange", "accept": True}
            yield {"type": "exchange", "accept": False}
        elif d.kind == "rate":
            for r in self.options.rate_choices:
                yield {"type": "rate", "rate": r}

    def _obs_extra(self, seat: int) -> dict[str, Any]:
        extra: dict[str, Any] = {
            "deal": self.deal_index,
            "millionaire": self.millionaire,
            "rate": self.rate,
            "totals": list(self.totals),
            "set_aside_count": len(self.set_aside),
            "retired": list(self.retired),
            "target_score": self.options.target_score,
        }
        if self.over:
            extra["result"] = self.result()
        return extra


def _split_one(c: int) -> tuple[list[int], int]:
    return ([], 1) if c == JOKER else ([c], 0)


def _copy_deal(d: DealResult) -> DealResult:
    return {"deal": d["deal"], "void": d["void"], "winner": d["winner"], "scores": dict(d["scores"]), "rate": d["rate"]}


__all__ = ["TrumpMillionaire", "forbidden_finish"]
