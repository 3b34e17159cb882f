"""Determinization for the ``search`` bot: plausible engine states built from a decision request.

A request shows what its seat may see (RULES C-11): its hand, every hand size, the field, the
flags and the public history of the current deal/game. :func:`sample_world` deals the cards
the seat cannot see at random to the other seats (and to the set-aside / undealt / blind
pile), keeping what the seat does know (cards played, discarded, revealed, given to a seat or
received from it, the exchange), then rebuilds the current trick by replaying its plays on a
state of one deal/game built with :func:`engine.from_setup`. The world is one the seat cannot
tell from the real one; it never holds information the request does not give.

:func:`sample_world` raises :class:`Unsupported` for a request it cannot rebuild (see
docs/search-bot.md); the bot then answers as ``heuristic``.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from typing import Any

import engine
from engine.cards import JOKER, format_cards, full_deck, parse_cards
from engine.game import Game
from engine.jdf import BLIND_CARDS

#: Events that open a deal/game or belong to the time before its first lead.
_OPENING = {"deal", "game", "hand", "exchange", "exchange_choice", "rate", "clear", "void_deal"}


class Unsupported(Exception):
    """The request cannot be turned into an engine state (the message says why)."""


def _codes(cards: Any) -> list[int]:
    return parse_cards(cards) if isinstance(cards, list) else []


class Knowledge:
    """What the seat knows about where the cards are, from its request.

    Attributes:
        gone: cards out of every hand (played, discarded; field cards included).
        known: per seat, cards known to be in that seat's hand (given to it, penalty cards).
    """

    def __init__(self, obs: Mapping[str, Any]):
        me = obs["seat"]
        self.me = me
        self.gone: Counter[int] = Counter()
        self.known: dict[int, Counter[int]] = {s: Counter() for s in range(obs["seats"]) if s != me}
        for ev in obs.get("history", []):
            self._event(ev)

    def _take_known(self, seat: int, cards: list[int]) -> None:
        if seat in self.known:
            self.known[seat] -= Counter(cards)

    def _event(self, ev: Mapping[str, Any]) -> None:  # noqa: C901 - one branch per event type
        t = ev.get("type")
        me = self.me
        if t == "play":
            cards = _codes(ev.get("cards"))  # others' unrevealed face-down cards are not listed
            self.gone += Counter(cards)
            self._take_known(ev["seat"], cards)
        elif t == "reveal":
            for p in ev.get("field", []):
                if p.get("seat") != me:
                    shown = Counter(_codes(p.get("cards")))
                    self.gone |= shown
                    self._take_known(p["seat"], list(shown.elements()))
        elif t == "penalty":
            cards = _codes(ev.get("cards"))
            self.gone -= Counter(cards)
            if ev.get("to") != me and ev.get("to") in self.known:
                self.known[ev["to"]] += Counter(cards)
        elif t == "discard":
            cards = _codes(ev.get("cards"))
            self.gone += Counter(cards)
            self._take_known(ev["seat"], cards)
        elif t in ("give", "exchange") and "count" in ev and ev["seat"] in self.known:
            self.known[ev["seat"]] = Counter()  # a hidden give may have held any known card
        elif t in ("give", "exchange") and "cards" in ev and "to" in ev:
            cards = _codes(ev.get("cards"))
            if ev["seat"] == me:
                if ev["to"] in self.known:
                    self.known[ev["to"]] += Counter(cards)
            else:
                self._take_known(ev["seat"], cards)
        elif t == "exchange" and ev.get("accept") and "to" not in ev:
            if ev["seat"] in self.known:  # TM-3: its hand now comes from the set-aside pile
                self.known[ev["seat"]] = Counter()


def _tm_old_hand(obs: Mapping[str, Any]) -> list[int]:
    """TM-3: the hand this seat was dealt, when it accepted the exchange (now set aside)."""
    me = obs["seat"]
    dealt: list[int] = []
    for ev in obs.get("history", []):
        if ev.get("type") == "hand" and ev.get("seat") == me:
            dealt = _codes(ev.get("cards"))
        if ev.get("type") == "exchange" and ev.get("seat") == me and ev.get("accept") and "to" not in ev:
            return dealt
    return []


#: ``(observation, what _known found)`` of the last request: one decision's worlds share it
#: (one reference, read and replaced whole: safe with the server's threads).
_last: list[Any] = [None]


def _known(obs: Mapping[str, Any]) -> tuple[Knowledge, list[int], list[int], Counter[int]]:
    """The seat's knowledge, hand, set-aside old hand (TM-3) and unseen pool, once per request."""
    entry = _last[0]
    if entry is not None and entry[0] is obs:
        found: tuple[Knowledge, list[int], list[int], Counter[int]] = entry[1]
        return found
    k = Knowledge(obs)
    hand = parse_cards(obs["hand"])
    old = _tm_old_hand(obs) if obs["ruleset"] == "trump_millionaire" else []
    pool = Counter(full_deck()) - Counter(hand) - k.gone - Counter(old)
    for known in k.known.values():
        pool -= known
    found = (k, hand, old, pool)
    _last[0] = (obs, found)
    return found


def deal_hidden(obs: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    """Sample the hidden cards: ``{"hands": {seat: codes}, "aside": codes, "field": {i: codes}}``
    (``field``: identities of another seat's unrevealed face-down cards, by field index).

    Raises:
        Unsupported: the counts do not add up.
    """
    ruleset = obs["ruleset"]
    me = obs["seat"]
    k, hand, old, pool = _known(obs)
    need = {s: n for s, n in enumerate(obs["hand_sizes"]) if s != me}
    hidden_field: list[tuple[int, int]] = []
    for i, p in enumerate(obs.get("field", [])):
        fd = p.get("face_down")
        if isinstance(fd, int) and not p.get("revealed"):
            hidden_field.append((i, fd))
    hands: dict[int, list[int]] = {}
    for s, n in need.items():
        held = list(k.known[s].elements())[:n]
        hands[s] = held
        need[s] = n - len(held)
    total = sum(need.values()) + sum(n for _, n in hidden_field)
    cards = list(pool.elements())
    if total > len(cards):
        raise Unsupported(f"{total} hidden cards to place but {len(cards)} unseen")
    rng.shuffle(cards)
    if ruleset == "jdf":  # JDF-2: the blind cards are never jokers, so unseen jokers are held
        cards.sort(key=lambda c: c != JOKER)
        if cards.count(JOKER) > total:
            raise Unsupported("more unseen jokers than hidden places")
        head, tail = cards[:total], cards[total:]
        rng.shuffle(head)
        cards = head + tail
    pos = 0
    field: dict[int, list[int]] = {}
    for i, n in hidden_field:
        field[i] = cards[pos : pos + n]
        pos += n
    for s in sorted(need):
        hands[s] = hands[s] + cards[pos : pos + need[s]]
        pos += need[s]
    hands[me] = hand
    return {"hands": hands, "aside": cards[pos:] + old, "field": field}


# -- rebuilding the state ---------------------------------------------------------------------
def _segment_start(history: list[Mapping[str, Any]]) -> int:
    """Index of the first event of the current trick (after the last clear / the opening)."""
    start = 0
    for i, ev in enumerate(history):
        if ev.get("type") in _OPENING:
            start = i + 1
    return start


def _segment(history: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The events of the current trick."""
    return list(history[_segment_start(history) :])


def _play_action(ev: Mapping[str, Any], cards: list[int], face_down: list[int]) -> dict[str, Any]:
    a: dict[str, Any] = {"type": "play", "cards": format_cards(cards)}
    if face_down:
        a["face_down"] = format_cards(face_down)
    if ev.get("jokers"):
        a["jokers"] = list(ev["jokers"])
    return a


def sample_world(req: Any, rng: random.Random) -> Game:
    """An engine state (one deal/game, :func:`engine.from_setup`) consistent with ``req``
    (a :class:`bots_sdk.bot.Request`) whose pending decision is the request's.

    Raises:
        Unsupported: the request cannot be rebuilt (the message says why).
    """
    kind = req.kind
    if req.ruleset == "trump_millionaire" and kind in ("exchange", "rate"):
        return _tm_opening(req, rng)
    if req.ruleset == "jdf" and kind == "give" and req.info.get("exchange"):
        return _jdf_exchange(req, rng)
    g = _trick_world(req, rng)
    d = g.decision()
    if d is None or d.seat != req.seat or d.kind != kind:
        raise Unsupported(f"rebuilt decision {d} is not the request's {kind}")
    if Counter(g.hands[req.seat]) != Counter(parse_cards(req.hand)):
        raise Unsupported("rebuilt hand differs from the request's")
    return g


def _options(req: Any) -> Any:
    return engine.make_options(req.ruleset, req.options)


def _state_flags(req: Any, segment: list[Mapping[str, Any]]) -> dict[str, Any]:
    obs = req.observation
    revs = sum(1 for ev in segment if ev.get("type") == "revolution")
    dirs = sum(1 for ev in segment if ev.get("type") == "direction")
    rev = bool(obs.get("revolution")) != (revs % 2 == 1)
    direction = int(obs.get("direction", 1)) * (-1 if dirs % 2 else 1)
    state: dict[str, Any] = {"revolution": rev, "direction": direction}
    if req.ruleset == "trump_millionaire":
        state["millionaire"] = obs.get("millionaire")
        state["rate"] = obs.get("rate", 1)
    elif req.ruleset == "jdf":
        state["game_in_set"] = _jdf_header(obs).get("game_in_set", 1)
    return state


def _jdf_header(obs: Mapping[str, Any]) -> Mapping[str, Any]:
    for ev in obs.get("history", []):
        if ev.get("type") == "game":
            header: Mapping[str, Any] = ev
            return header
    return {}


def _trick_world(req: Any, rng: random.Random) -> Game:  # noqa: C901 - the trick's event kinds
    """Hands at the start of the current trick, then the trick's actions replayed."""
    obs = req.observation
    me = req.seat
    segment = _segment(obs.get("history", []))
    plays = [ev for ev in segment if ev.get("type") == "play"]
    # cards of the trick each seat no longer holds (played, given, discarded) or received
    out: dict[int, list[int]] = {s: [] for s in range(obs["seats"])}
    gained: dict[int, list[int]] = {s: [] for s in range(obs["seats"])}
    hidden_gives = []
    fallen: int | None = None
    for ev in segment:
        t = ev.get("type")
        if t in ("play", "discard"):
            out[ev["seat"]] += _codes(ev.get("cards"))
        elif t == "give":
            if "cards" in ev:
                out[ev["seat"]] += _codes(ev["cards"])
                gained[ev["to"]] += _codes(ev["cards"])
            else:
                hidden_gives.append(ev)
        elif t == "forfeit" or (t == "miyako_ochi" and fallen is not None):
            raise Unsupported(f"a {t} in the current trick")
        elif t == "miyako_ochi":
            fallen = ev["seat"]
    dealt = deal_hidden(obs, rng)
    hands = {s: list(h) for s, h in dealt["hands"].items()}
    if fallen is not None:  # JDF-11: its hand went out unseen; any unseen cards but the blind ones
        spare = dealt["aside"][BLIND_CARDS:]
        if not spare:
            raise Unsupported("no unseen card for the seat fallen in this trick")
        hands[fallen] += spare
        dealt["aside"] = dealt["aside"][:BLIND_CARDS]
    # the unrevealed face-down cards of the field, by field index (MD)
    field_hidden = dealt["field"]
    field_entries = obs.get("field", [])
    reveal = next((ev for ev in segment if ev.get("type") == "reveal"), None)
    fd_cards: list[list[int]] = []
    for i, p in enumerate(field_entries):
        if reveal is not None:
            rp = reveal["field"][i]
            fd_cards.append(_codes(rp.get("face_down")) if isinstance(rp.get("face_down"), list) else [])
        elif isinstance(p.get("face_down"), list):
            fd_cards.append(_codes(p["face_down"]))
        elif isinstance(p.get("face_down"), int):
            fd_cards.append(field_hidden[i])
        else:
            fd_cards.append([])
    given: dict[int, list[int]] = {}  # id of a hidden give event -> the cards drawn for it
    for ev in hidden_gives:  # LR-5 give between two other seats: cards drawn from the receiver
        to, n = ev["to"], int(ev.get("count", 0))
        if len(hands[to]) < n:
            raise Unsupported("a hidden give larger than the receiver's hand")
        moved = rng.sample(hands[to], n)
        out[ev["seat"]] += moved
        gained[to] += moved
        given[id(ev)] = moved
    # field entries are the segment's plays in order (a cleared trick is not in the segment)
    if len(plays) != len(field_entries) and reveal is None:
        raise Unsupported("the field does not match the trick's plays")
    for i, ev in enumerate(plays):
        if i < len(fd_cards) and isinstance(ev.get("face_down"), int):
            out[ev["seat"]] += fd_cards[i]
    start_hands: dict[str, list[str]] = {}
    for s in range(obs["seats"]):
        h = Counter(hands[s]) + Counter(out[s])
        h -= Counter(gained[s])
        start_hands[str(s)] = format_cards(sorted(h.elements()))
    leader = plays[0]["seat"] if plays else me
    setup = {
        "hands": start_hands,
        "leader": leader,
        "set_aside": format_cards(dealt["aside"]) if req.ruleset != "million_doubt" else [],
        "state": _state_flags(req, segment),
    }
    try:
        g = engine.from_setup(req.ruleset, _options(req), setup)
    except ValueError as e:
        raise Unsupported(f"setup refused: {e}") from None
    _patch_unit(g, req)
    play_i = 0
    for ev in segment:
        t = ev.get("type")
        d = g.decision()
        if d is None:
            raise Unsupported("the rebuilt deal ended during the replay")
        if t == "play":
            entry_fd = fd_cards[play_i] if play_i < len(fd_cards) else []
            cards = _codes(ev.get("cards"))
            if isinstance(ev.get("face_down"), int):
                cards = cards + entry_fd
            action = _play_action(ev, cards, entry_fd)
            play_i += 1
        elif t == "pass":
            if ev.get("stuck"):
                if req.ruleset == "trump_millionaire":
                    g.stuck_run += 1  # type: ignore[attr-defined]
                continue
            action = {"type": "pass"}
        elif t in ("through", "doubt"):
            action = {"type": t}
        elif t == "give":
            action = {"type": "give", "cards": ev["cards"] if "cards" in ev else format_cards(given[id(ev)])}
        elif t == "discard":
            action = {"type": "discard", "cards": list(ev.get("cards", []))}
        else:
            continue
        try:
            g.apply(d.seat, action)
        except engine.InvalidAction as e:
            raise Unsupported(f"replay refused {action}: {e}") from None
    return g


def _patch_unit(g: Any, req: Any) -> None:
    """Carry over what a one-deal setup does not hold: seats out, retirements, JDF ranks."""
    obs = req.observation
    if req.ruleset == "million_doubt":
        return
    segment = _segment(obs.get("history", []))
    finished_now = {ev["seat"] for ev in segment if ev.get("type") in ("finish", "miyako_ochi")}
    for s, still in enumerate(obs["still_in"]):
        if not still and s not in finished_now:
            g.still_in[s] = False
    if req.ruleset == "trump_millionaire":
        g.retired = list(obs.get("retired", []))
        for s in g.retired:
            g.still_in[s] = False
        g.totals = list(obs.get("totals", [0] * 4))
        return
    header = _jdf_header(obs)
    pr = header.get("previous_ranks")
    if pr:
        g.previous_ranks = {int(s): int(r) for s, r in pr.items()}
    history = obs.get("history", [])
    for ev in history[: _segment_start(history)]:
        t = ev.get("type")
        if t == "finish":
            (g.fouls if ev.get("foul") else g.clean).append(ev["seat"])
        elif t == "miyako_ochi":
            g.fallen = ev["seat"]
        elif t == "forfeit":
            g.retired_now.append(ev["seat"])


def _tm_opening(req: Any, rng: random.Random) -> Game:
    """TM-3: the Millionaire's exchange / rate, before the first lead."""
    obs = req.observation
    me = req.seat
    dealt = deal_hidden(obs, rng)
    hands = {str(s): format_cards(h) for s, h in dealt["hands"].items()}
    aside = dealt["aside"]
    if len(aside) != 14:
        raise Unsupported(f"{len(aside)} set-aside cards instead of 14")
    setup = {"hands": hands, "leader": me, "set_aside": format_cards(aside), "state": {"millionaire": me}}
    g = engine.from_setup(req.ruleset, _options(req), setup)
    _patch_unit(g, req)
    if req.kind == "rate":
        g.apply(me, {"type": "exchange", "accept": False})  # the hand shown is already the final one
    return g


def _jdf_exchange(req: Any, rng: random.Random) -> Game:
    """JDF-4: the daifugo's / fugo's choice before the exchange."""
    obs = req.observation
    header = _jdf_header(obs)
    pr = header.get("previous_ranks")
    if not pr:
        raise Unsupported("a JDF exchange without previous ranks")
    dealt = deal_hidden(obs, rng)
    if len(dealt["aside"]) != 2:
        raise Unsupported(f"{len(dealt['aside'])} blind cards instead of 2")
    setup = {
        "hands": {str(s): format_cards(h) for s, h in dealt["hands"].items()},
        "leader": 0,
        "set_aside": format_cards(dealt["aside"]),
        "state": {"game_in_set": header.get("game_in_set", 2), "previous_ranks": dict(pr)},
    }
    game = engine.from_setup(req.ruleset, _options(req), setup)
    g: Any = game  # JDF's exchange state, set by hand
    g.exchange.leader = next(int(s) for s, r in pr.items() if int(r) == 4)
    for _ in range(2):
        d = g.decision()
        if d is None or d.seat == req.seat:
            break
        weakest = sorted(g.hands[d.seat])[: d.info["count"]]
        g.apply(d.seat, {"type": "give", "cards": format_cards(weakest)})
    d = g.decision()
    if d is None or d.seat != req.seat or d.kind != "give":
        raise Unsupported("the rebuilt exchange does not ask this seat")
    return game


__all__ = ["sample_world", "deal_hidden", "Unsupported", "Knowledge"]
