"""JDF official rules (``jdf``): RULES JDF-1 to JDF-13 on the climbing flow.

A match is ``sets`` sets of ``games_per_set`` games (JDF-1). Each set sets 2 blind cards
aside, revealed when the set ends (JDF-2); each game deals the other 52 cards, 13 each.
Before games 2.. of a set the simultaneous exchange runs (JDF-4): the daihinmin's 2 and the
hinmin's 1 strongest cards go automatically, the daifugo (``give`` 2) then the fugo
(``give`` 1) choose from their hands before the exchange. The daihinmin leads (JDF-3).
8-cut only for 8s (JDF-6), revolution only for 4+ groups (JDF-7, LR-2 adds stairs), the
spade-3 return (JDF-9), foul finishes (JDF-10), miyako-ochi (JDF-11), ranks (JDF-12) and
points (JDF-13).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from engine.actions import GiveAction
from engine.cards import JOKER, R2, R3, R8, SPADE_3, format_cards, full_deck
from engine.climbing import Climbing, PlayInfo
from engine.decisions import InvalidAction
from engine.draws import below, shuffle
from engine.field import cards_text, holds_all, remove_cards
from engine.game import Game
from engine.options import JdfOptions
from engine.refusals import Refusal
from engine.results import GameResult, Result, seat_keys
from engine.state import mypyc_attr

DAIFUGO: Final = 1
FUGO: Final = 2
HINMIN: Final = 3
DAIHINMIN: Final = 4
#: JDF-2: cards dealt to each seat.
HAND_SIZE: Final = 13
#: JDF-2: blind cards set aside for a set.
BLIND_CARDS: Final = 2


def exchange_order_key(c: int) -> tuple[int, int]:
    """Strength for JDF-4's automatic cards: jokers strongest, then rank (normal order),
    then suit S, H, D, C (spade first). Larger key = given first."""
    if c == JOKER:
        return (99, 0)
    return (c >> 2, 3 - (c & 3))


class _Exchange:
    """The JDF-4 exchange in progress: who leads after it, the automatic cards of the lower
    seats, the choices made so far and the order of the upper seats' choices."""

    __slots__ = ("leader", "auto", "give", "order")

    def __init__(self, leader: int, auto: dict[int, tuple[list[int], int]], order: list[tuple[int, int, int]]):
        self.leader = leader
        self.auto = auto
        self.give: dict[int, tuple[list[int], int]] = {}
        self.order = order

    def copy(self) -> _Exchange:
        new = _Exchange(self.leader, dict(self.auto), self.order)  # order: never changed in place
        new.give = dict(self.give)
        return new


@mypyc_attr(allow_interpreted_subclasses=True)
class Jdf(Climbing):
    """State of a JDF match (or of one game, when built from a setup)."""

    ruleset = "jdf"

    options: JdfOptions

    def __init__(self, options: JdfOptions, seed: int | None, setup: dict[str, Any] | None, log: bool = True):
        super().__init__(options, seed, setup, log)
        self.totals = [0] * 4
        self.set_index = 0
        self.game_in_set = 1
        self.game_index = 0
        self.previous_ranks: dict[int, int] | None = None
        self.blind: list[int] = []
        self.game_results: list[GameResult] = []
        self.exchange: _Exchange | None = None
        self._reset_game_records()
        if setup is None:
            self._new_set()
        else:
            st = setup["state"]
            self.blind = self._setup_unit(setup)
            self.game_in_set = int(st.get("game_in_set", 1))
            pr = st.get("previous_ranks")
            if pr and self.game_in_set >= 2:
                self.previous_ranks = {int(s): int(r) for s, r in pr.items()}
            self.unit_start = len(self.events)
            self.unit_count += 1
            self._event(self._game_header())
            self._hand_events()
            self._start_game(setup["leader"])

    def _copy_to(self, new: Game, log: bool) -> None:
        super()._copy_to(new, log)
        assert isinstance(new, Jdf)
        new.totals = list(self.totals)
        new.set_index = self.set_index
        new.game_in_set = self.game_in_set
        new.game_index = self.game_index
        new.previous_ranks = self.previous_ranks  # replaced, never changed in place
        new.blind = self.blind  # replaced, never changed in place (outside is the same list)
        new.game_results = list(self.game_results)
        new.exchange = self.exchange.copy() if self.exchange is not None else None
        new.clean = list(self.clean)
        new.fouls = list(self.fouls)
        new.fallen = self.fallen
        new.retired_now = list(self.retired_now)

    @property
    def unit_index(self) -> int:
        """Index of the current game of the match (TIME-1: time banks are per game)."""
        return self.game_index

    def _reset_game_records(self) -> None:
        self.clean: list[int] = []
        self.fouls: list[int] = []
        self.fallen: int | None = None
        self.retired_now: list[int] = []

    # -- sets and games -----------------------------------------------------------------------
    def _new_set(self) -> None:
        """JDF-2: two random non-joker blind cards for the whole set."""
        naturals = list(range(52))
        shuffle(self.rng, naturals)
        self.blind = naturals[:BLIND_CARDS]
        self.game_in_set = 1
        self.previous_ranks = None
        self._new_game()

    def _new_game(self) -> None:
        """JDF-2: the other 52 cards shuffled, 13 each; JDF-3 leader, JDF-4 exchange."""
        deck = [c for c in full_deck() if c not in self.blind]
        shuffle(self.rng, deck)
        n = HAND_SIZE
        self._reset_game_records()
        self._start_unit([deck[i * n : (i + 1) * n] for i in range(4)], self.blind, [True] * 4, self._game_header())
        self._start_game(None if self.previous_ranks else below(self.rng, 4))

    def _game_header(self) -> dict[str, Any]:
        return {
            "type": "game",
            "set": self.set_index,
            "game_in_set": self.game_in_set,
            "game": self.game_index,
            "previous_ranks": _str_keys(self.previous_ranks),
            "totals": list(self.totals),
        }

    def _seat_of(self, rank: int) -> int:
        assert self.previous_ranks is not None
        return next(s for s, r in self.previous_ranks.items() if r == rank)

    def _start_game(self, leader: int | None) -> None:
        """JDF-3/JDF-4: the exchange (games 2.. of a set), then the first lead."""
        if self.previous_ranks:
            dhm, hm = self._seat_of(DAIHINMIN), self._seat_of(HINMIN)
            dfg, fg = self._seat_of(DAIFUGO), self._seat_of(FUGO)
            auto_low = sorted(self.hands[dhm], key=exchange_order_key, reverse=True)[:2]
            auto_hm = sorted(self.hands[hm], key=exchange_order_key, reverse=True)[:1]
            self.exchange = _Exchange(
                dhm if leader is None else leader,
                {dhm: (auto_low, dfg), hm: (auto_hm, fg)},
                [(dfg, 2, dhm), (fg, 1, hm)],
            )
            self._ask_exchange()
        else:
            assert leader is not None
            self._set_leader(leader)

    def _ask_exchange(self) -> None:
        ex = self.exchange
        assert ex is not None
        for seat, count, to in ex.order:
            if seat not in ex.give:
                if seat in self.retired_now:  # FAULT-2: out at once, never asked
                    weakest = sorted(self.hands[seat], key=exchange_order_key)[:count]
                    ex.give[seat] = (weakest, to)
                    continue
                self._ask(seat, "give", count=count, to=to, exchange=True)
                return
        # every choice made: swap at once (JDF-4)
        moves = [(s, cards, to) for s, (cards, to) in ex.auto.items()]
        moves += [(s, cards, to) for s, (cards, to) in ex.give.items()]
        for s, cards, _to in moves:
            remove_cards(self.hands[s], cards)
        for s, cards, to in moves:
            self.hands[to].extend(cards)
            self._event(
                {"type": "exchange", "seat": s, "to": to, "cards": format_cards(cards)},
                (s, to),
                {"type": "exchange", "seat": s, "to": to, "count": len(cards)},
            )
        leader = ex.leader
        self.exchange = None
        for s in self.retired_now:  # a seat that faulted during the exchange is out now
            self.discards.extend(self.hands[s])
            self.hands[s] = []
        if self.retired_now and self._check_game_end():
            return
        self._set_leader(leader)

    def _set_leader(self, seat: int) -> None:
        """C-7, JDF-5: ``seat`` leads if still in, else the first seat still in after it."""
        if not self.still_in[seat]:
            nxt = self._next_still_in(seat)
            assert nxt is not None
            seat = nxt
        self._ask_lead(seat)

    def _do_give(self, seat: int, action: GiveAction) -> None:
        """JDF-4 exchange choice of the daifugo / fugo, or else the LR-5 give."""
        if self.exchange is None:
            Climbing._do_give(self, seat, action)
            return
        d = self._decision
        assert d is not None
        cards = action.cards
        count = d.info["count"]
        if len(cards) != count:
            raise InvalidAction("JDF-4", Refusal.GIVE_EXACTLY, {"n": count, "m": len(cards)})
        if not holds_all(self.hands[seat], cards):
            raise InvalidAction("C-12", Refusal.NOT_HELD, {"seat": seat, "cards": cards_text(cards)})
        self.exchange.give[seat] = (cards, d.info["to"])
        if self.logged:
            self._event({"type": "exchange_choice", "seat": seat})
        self._ask_exchange()

    # -- presets ------------------------------------------------------------------------------
    def _is_revolution(self, p: PlayInfo) -> bool:
        """JDF-7: a group of 4+ cards; stairs of 4+ only with LR-2."""
        if len(p.cards) < 4:
            return False
        return p.kind == "group" or (p.kind == "stairs" and self.options.stairs_revolution)

    def _is_eight_cut(self, p: PlayInfo) -> bool:
        """JDF-6: a single natural 8, or a group of rank 8 (jokers standing in for 8)."""
        return (p.kind == "single" or p.kind == "group") and p.rank == R8

    def _is_return(self, cards: Sequence[int]) -> bool:
        """JDF-9: a single 3S on a lone joker."""
        return len(cards) == 1 and cards[0] == SPADE_3

    def _special_last_play(self, p: PlayInfo, revolution_before: bool) -> bool:
        """JDF-10: a 2 (3 in revolution), a joker, an 8-cut or a single 3S ends in a foul."""
        bad = R3 if revolution_before else R2
        return (
            p.jokers > 0
            or any(c >> 2 == bad for c in p.nat)
            or self._is_eight_cut(p)
            or (len(p.cards) == 1 and p.cards[0] == SPADE_3)
        )

    # -- finishes, ranks, points ---------------------------------------------------------------
    def _finish(self, seat: int, special: bool) -> None:
        self.still_in[seat] = False
        if special:
            self.fouls.append(seat)
            if self.logged:
                self._event({"type": "finish", "seat": seat, "foul": True})
        else:
            first_clean = not self.clean
            self.clean.append(seat)
            if self.logged:
                self._event({"type": "finish", "seat": seat, "foul": False})
            if first_clean and self.previous_ranks:  # JDF-11
                dfg = self._seat_of(DAIFUGO)
                if dfg != seat and self.still_in[dfg]:
                    self.still_in[dfg] = False
                    self.fallen = dfg
                    self.discards.extend(self.hands[dfg])
                    self.hands[dfg] = []
                    if self.logged:
                        self._event({"type": "miyako_ochi", "seat": dfg})
        self._check_game_end()

    def _check_game_end(self) -> bool:
        """JDF-12: the game ends as soon as at most one seat is still in."""
        if sum(self.still_in) > 1:
            return False
        ranks = self._ranks()
        pts = self.options.rank_points
        scores = [pts[ranks[s] - 1] for s in range(4)]
        last_of_set = self.game_in_set >= self.options.games_per_set
        bonus = [0] * 4
        if last_of_set and not self.single_unit:
            top = next(s for s in range(4) if ranks[s] == 1)
            bonus[top] = self.options.set_bonus
        for s in range(4):
            self.totals[s] += scores[s] + bonus[s]
        self.game_results.append(
            {
                "set": self.set_index,
                "game_in_set": self.game_in_set,
                "game": self.game_index,
                "ranks": seat_keys(ranks),
                "scores": seat_keys(scores),
                "set_bonus": seat_keys(bonus),
                "fouls": list(self.fouls),
                "fallen": self.fallen,
                "retired": list(self.retired_now),
            }
        )
        self._end_event(
            {
                "type": "game_end",
                "ranks": seat_keys(ranks),
                "scores": seat_keys(scores),
                "set_bonus": seat_keys(bonus),
                "totals": list(self.totals),
            }
        )
        self.unit_over = True
        self._decision = None
        self.follow = None
        if self.single_unit:
            self.over = True
            return True
        self.previous_ranks = ranks
        self.game_index += 1
        if last_of_set:
            self._event({"type": "set_end", "set": self.set_index, "blind": format_cards(self.blind)})
            self.set_index += 1
            if self.set_index >= self.options.sets:
                self.over = True
                self._event({"type": "match_end", "totals": list(self.totals), "ranks": seat_keys(self._match_ranks())})
                return True
            self._new_set()
        else:
            self.game_in_set += 1
            self._new_game()
        return True

    def _ranks(self) -> dict[int, int]:
        """JDF-12 places of the game that ends: seat -> 1..4."""
        order = list(self.clean)
        order += [s for s in range(4) if self.still_in[s]]
        if self.fallen is not None:
            order.append(self.fallen)
        order += list(reversed(self.fouls))
        order += list(reversed(self.retired_now))
        return {s: i + 1 for i, s in enumerate(order)}

    def _match_ranks(self) -> list[int]:
        """JDF-13: places by match totals, equal totals share the place."""
        return [1 + sum(1 for o in range(4) if self.totals[o] > self.totals[s]) for s in range(4)]

    def _forfeit(self, seat: int, reason: str) -> bool:
        """FAULT-2: the seat retires from this game: out at once, hand discarded unseen."""
        if seat in self.retired_now or (not self.still_in[seat] and self.exchange is None):
            return False
        self._event({"type": "forfeit", "seat": seat, "reason": reason})
        self.retired_now.append(seat)
        self.still_in[seat] = False
        d = self._decision
        if self.exchange is not None:
            if d is not None and d.seat == seat and d.kind == "give":
                self._ask_exchange()  # gives its weakest cards and asks the next seat
            return True
        self.discards.extend(self.hands[seat])
        self.hands[seat] = []
        if not self._check_game_end():
            self._forfeit_tail(seat, d)
        return True

    def result(self) -> Result | None:
        """When over: ``{"totals", "scores" (= totals), "ranks" (match places, ties share),
        "winner" (place 1, lowest seat on a tie), "games": [GameResult]}``; for a single game
        from a setup ``scores`` and ``ranks`` are the game's (JDF-12, JDF-13)."""
        if not self.over:
            return None
        totals = seat_keys(self.totals)
        if self.single_unit:
            g = self.game_results[-1]
            return {
                "totals": totals,
                "scores": dict(g["scores"]),
                "ranks": dict(g["ranks"]),
                "winner": next(int(s) for s, r in g["ranks"].items() if r == 1),
                "games": [_copy_game(x) for x in self.game_results],
            }
        ranks = self._match_ranks()
        return {
            "totals": totals,
            "scores": dict(totals),
            "ranks": seat_keys(ranks),
            "winner": min(s for s in range(4) if ranks[s] == 1),
            "games": [_copy_game(x) for x in self.game_results],
        }

    def unit_result(self) -> GameResult | None:
        """The last game's result: ``{"ranks", "scores" (set bonus excluded), ...}``."""
        return _copy_game(self.game_results[-1]) if self.game_results else None

    def _obs_extra(self, seat: int) -> dict[str, Any]:
        extra: dict[str, Any] = {
            "set": self.set_index,
            "game_in_set": self.game_in_set,
            "game": self.game_index,
            "previous_ranks": _str_keys(self.previous_ranks),
            "totals": list(self.totals),
            "finished": list(self.clean),
            "fouled": list(self.fouls),
            "fallen": self.fallen,
            "retired": list(self.retired_now),
            "blind_count": len(self.blind),
        }
        if self.exchange is not None and seat in self.exchange.give:
            extra["exchange_given"] = format_cards(self.exchange.give[seat][0])
        if self.over:
            extra["result"] = self.result()
        return extra


def _str_keys(d: dict[int, int] | None) -> dict[str, int] | None:
    return None if d is None else seat_keys(d)


def _copy_game(g: GameResult) -> GameResult:
    return {
        "set": g["set"],
        "game_in_set": g["game_in_set"],
        "game": g["game"],
        "ranks": dict(g["ranks"]),
        "scores": dict(g["scores"]),
        "set_bonus": dict(g["set_bonus"]),
        "fouls": list(g["fouls"]),
        "fallen": g["fallen"],
        "retired": list(g["retired"]),
    }


__all__ = ["Jdf", "exchange_order_key"]
