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

from engine.cards import JOKER, R8, SPADE_3, format_cards, full_deck
from engine.climbing import Climbing, PlayInfo
from engine.game import InvalidAction, _remove_all, _take, cards_text

DAIFUGO, FUGO, HINMIN, DAIHINMIN = 1, 2, 3, 4


def exchange_order_key(c: int) -> tuple[int, int]:
    """Strength for JDF-4's automatic cards: jokers strongest, then rank (normal order),
    then suit S, H, D, C (spade first). Larger key = given first."""
    if c == JOKER:
        return (99, 0)
    return (c >> 2, 3 - (c & 3))


class Jdf(Climbing):
    """State of a JDF match (or of one game, when built from a setup)."""

    ruleset = "jdf"
    SPADE_3_RETURN = True

    def __init__(self, options, seed, setup):
        super().__init__(options, seed, setup)
        self.totals = [0] * 4
        self.set_index = 0
        self.game_in_set = 1
        self.game_index = 0
        self.previous_ranks: dict[int, int] | None = None
        self.blind: list[int] = []
        self.game_results: list[dict] = []
        self.exchange: dict | None = None
        self._reset_game_records()
        if setup is None:
            self._new_set()
        else:
            st = setup["state"]
            self.blind = list(setup["set_aside"])
            self.discards.extend(self._setup_hands(setup, self.blind))  # not in this game
            self.outside = self.blind
            self.game_in_set = int(st.get("game_in_set", 1))
            pr = st.get("previous_ranks")
            if pr and self.game_in_set >= 2:
                self.previous_ranks = {int(s): int(r) for s, r in pr.items()}
            self.revolution = bool(st.get("revolution", False))
            self.direction = -1 if st.get("direction", 1) == -1 else 1
            self._game_events()
            self._start_game(setup["leader"])

    def _reset_game_records(self) -> None:
        self.clean: list[int] = []
        self.fouls: list[int] = []
        self.fallen: int | None = None
        self.retired_now: list[int] = []

    # -- sets and games -----------------------------------------------------------------------
    def _new_set(self) -> None:
        """JDF-2: two random non-joker blind cards for the whole set."""
        naturals = list(range(52))
        self.rng.shuffle(naturals)
        self.blind = naturals[:2]
        self.game_in_set = 1
        self.previous_ranks = None
        self._new_game()

    def _new_game(self) -> None:
        deck = [c for c in full_deck() if c not in self.blind]
        self.rng.shuffle(deck)
        self.hands = [deck[i * 13:(i + 1) * 13] for i in range(4)]
        self.outside = self.blind
        self.discards = []
        self._reset_trick_flags(full=True)
        self.still_in = [True] * 4
        self.unit_over = False
        self.follow = None
        self._reset_game_records()
        self._game_events()
        leader = None if self.previous_ranks else self.rng.randrange(4)
        self._start_game(leader)

    def _game_events(self) -> None:
        self.unit_start = len(self.events)
        self._event({"type": "game", "set": self.set_index, "game_in_set": self.game_in_set,
                     "game": self.game_index, "previous_ranks": _str_keys(self.previous_ranks),
                     "totals": list(self.totals)})
        for s in range(4):
            self._event({"type": "hand", "seat": s, "cards": format_cards(self.hands[s])}, (s,))

    def _seat_of(self, rank: int) -> int:
        return next(s for s, r in self.previous_ranks.items() if r == rank)

    def _start_game(self, leader: int | None) -> None:
        """JDF-3/JDF-4: the exchange (games 2.. of a set), then the first lead."""
        if self.previous_ranks:
            dhm, hm = self._seat_of(DAIHINMIN), self._seat_of(HINMIN)
            dfg, fg = self._seat_of(DAIFUGO), self._seat_of(FUGO)
            auto_low = sorted(self.hands[dhm], key=exchange_order_key, reverse=True)[:2]
            auto_hm = sorted(self.hands[hm], key=exchange_order_key, reverse=True)[:1]
            self.exchange = {"leader": dhm if leader is None else leader,
                             "auto": {dhm: (auto_low, dfg), hm: (auto_hm, fg)},
                             "give": {}, "order": [(dfg, 2, dhm), (fg, 1, hm)]}
            self._ask_exchange()
        else:
            self._set_leader(leader)

    def _ask_exchange(self) -> None:
        ex = self.exchange
        for seat, count, to in ex["order"]:
            if seat not in ex["give"]:
                if seat in self.retired_now:  # FAULT-2: out at once, never asked
                    weakest = sorted(self.hands[seat], key=exchange_order_key)[:count]
                    ex["give"][seat] = (weakest, to)
                    continue
                self._ask(seat, "give", count=count, to=to, exchange=True)
                return
        # every choice made: swap at once (JDF-4)
        moves = [(s, cards, to) for s, (cards, to) in ex["auto"].items()]
        moves += [(s, cards, to) for s, (cards, to) in ex["give"].items()]
        for s, cards, to in moves:
            _take(self.hands[s], cards)
        for s, cards, to in moves:
            self.hands[to].extend(cards)
            self._event({"type": "exchange", "seat": s, "to": to, "cards": format_cards(cards)},
                        (s, to), {"type": "exchange", "seat": s, "to": to, "count": len(cards)})
        leader = ex["leader"]
        self.exchange = None
        for s in self.retired_now:  # a seat that faulted during the exchange is out now
            self.discards.extend(self.hands[s])
            self.hands[s] = []
        if self.retired_now and self._check_game_end():
            return
        if not self.still_in[leader]:
            leader = self._next_still_in(leader)
        self._set_leader(leader)

    def _do_give(self, seat: int, action: dict) -> None:
        if self.exchange is None:
            super()._do_give(seat, action)
            return
        cards = self._cards_field(action)
        count = self._decision.info["count"]
        if len(cards) != count:
            raise InvalidAction("JDF-4", f"give exactly {count} card(s), not {len(cards)}")
        if not _remove_all(self.hands[seat], cards):
            raise InvalidAction("C-12", f"seat {seat} does not hold {cards_text(cards)}")
        self.exchange["give"][seat] = (cards, self._decision.info["to"])
        self._event({"type": "exchange_choice", "seat": seat})
        self._ask_exchange()

    # -- presets ------------------------------------------------------------------------------
    def _is_revolution(self, p: PlayInfo) -> bool:
        if len(p.cards) < 4:
            return False
        return p.kind == "group" or (p.kind == "stairs" and self.options.stairs_revolution)

    def _is_eight_cut(self, p: PlayInfo) -> bool:
        """JDF-6: a single natural 8, or a group of rank 8 (jokers standing in for 8)."""
        return (p.kind == "single" and p.rank == R8) or (p.kind == "group" and p.rank == R8)

    def _special_last_play(self, p: PlayInfo, revolution_before: bool) -> bool:
        """JDF-10: a 2 (3 in revolution), a joker, an 8-cut or a single 3S ends in a foul."""
        return (self._holds_two(p, revolution_before) or self._is_eight_cut(p)
                or (len(p.cards) == 1 and p.cards[0] == SPADE_3))

    # -- finishes, ranks, points ---------------------------------------------------------------
    def _finish(self, seat: int, special: bool) -> None:
        self.still_in[seat] = False
        if special:
            self.fouls.append(seat)
            self._event({"type": "finish", "seat": seat, "foul": True})
        else:
            first_clean = not self.clean
            self.clean.append(seat)
            self._event({"type": "finish", "seat": seat, "foul": False})
            if first_clean and self.previous_ranks:  # JDF-11
                dfg = self._seat_of(DAIFUGO)
                if dfg != seat and self.still_in[dfg]:
                    self.still_in[dfg] = False
                    self.fallen = dfg
                    self.discards.extend(self.hands[dfg])
                    self.hands[dfg] = []
                    self._event({"type": "miyako_ochi", "seat": dfg})
        self._check_game_end()

    def _check_game_end(self) -> bool:
        """JDF-12: the game ends as soon as at most one seat is still in."""
        if sum(self.still_in) > 1:
            return False
        ranks = self._ranks()
        pts = self.options.rank_points
        scores = {s: pts[ranks[s] - 1] for s in range(4)}
        last_of_set = self.game_in_set >= self.options.games_per_set
        bonus = {s: 0 for s in range(4)}
        if last_of_set and not self.single_unit:
            top = next(s for s in range(4) if ranks[s] == 1)
            bonus[top] = self.options.set_bonus
        for s in range(4):
            self.totals[s] += scores[s] + bonus[s]
        res = {"set": self.set_index, "game_in_set": self.game_in_set, "game": self.game_index,
               "ranks": ranks, "scores": scores, "set_bonus": bonus,
               "fouls": list(self.fouls), "fallen": self.fallen, "retired": list(self.retired_now)}
        self.game_results.append(res)
        public = {"type": "game_end", "ranks": _str_keys(ranks), "scores": _str_keys(scores),
                  "set_bonus": _str_keys(bonus), "totals": list(self.totals)}
        # the hands left are for the post-game log only (C-11: with the cards played they
        # would tell the set's blind cards, JDF-2)
        self._event({**public, "hands": {str(s): format_cards(self.hands[s]) for s in range(4)}},
                    (), public)
        self.unit_over = True
        self._decision = None
        self.follow = None
        if self.single_unit:
            self.over = True
            return True
        self.previous_ranks = ranks
        self.game_index += 1
        if last_of_set:
            self._event({"type": "set_end", "set": self.set_index,
                         "blind": format_cards(self.blind)})
            self.set_index += 1
            if self.set_index >= self.options.sets:
                self.over = True
                self._event({"type": "match_end", "totals": list(self.totals),
                             "ranks": _str_keys(self._match_ranks())})
                return True
            self._new_set()
        else:
            self.game_in_set += 1
            self._new_game()
        return True

    def _ranks(self) -> dict[int, int]:
        order = list(self.clean)
        order += [s for s in range(4) if self.still_in[s]]
        if self.fallen is not None:
            order.append(self.fallen)
        order += list(reversed(self.fouls))
        order += list(reversed(self.retired_now))
        return {s: i + 1 for i, s in enumerate(order)}

    def _match_ranks(self) -> dict[int, int]:
        return {s: 1 + sum(1 for o in range(4) if self.totals[o] > self.totals[s]) for s in range(4)}

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
        if self._check_game_end():
            return True
        if d is None or d.seat != seat:
            return True
        if d.kind in ("give", "discard"):
            self.follow["give"] = self.follow["discard"] = 0
            self._continue()
        elif not self.field:
            self._set_leader(self._next_still_in(seat))
        else:
            self._next_turn(seat)
        return True

    def result(self) -> dict | None:
        """When over: ``{"totals", "scores" (= totals), "ranks" (match places, ties share),
        "winner" (place 1, lowest seat on a tie), "games": [per-game results]}``."""
        if not self.over:
            return None
        if self.single_unit:
            g = self.game_results[-1]
            return {"totals": dict(enumerate(self.totals)), "scores": dict(g["scores"]),
                    "ranks": dict(g["ranks"]), "winner": next(s for s, r in g["ranks"].items() if r == 1),
                    "games": [dict(x) for x in self.game_results]}
        ranks = self._match_ranks()
        totals = dict(enumerate(self.totals))
        return {"totals": totals, "scores": totals, "ranks": ranks,
                "winner": min(s for s in range(4) if ranks[s] == 1),
                "games": [dict(x) for x in self.game_results]}

    def unit_result(self) -> dict | None:
        """The last game's result: ``{"ranks", "scores" (set bonus excluded), ...}``."""
        return dict(self.game_results[-1]) if self.game_results else None

    def _obs_extra(self, seat: int) -> dict:
        extra = {"set": self.set_index, "game_in_set": self.game_in_set, "game": self.game_index,
                 "previous_ranks": _str_keys(self.previous_ranks), "totals": list(self.totals),
                 "finished": list(self.clean), "fouled": list(self.fouls),
                 "fallen": self.fallen, "retired": list(self.retired_now),
                 "blind_count": len(self.blind)}
        if self.exchange is not None and seat in self.exchange["give"]:
            extra["exchange_given"] = format_cards(self.exchange["give"][seat][0])
        if self.over:
            extra["result"] = self.result()
        return extra


def _str_keys(d):
    return None if d is None else {str(k): v for k, v in d.items()}


__all__ = ["Jdf", "exchange_order_key"]
