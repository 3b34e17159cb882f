"""Fixed-shape arrays of the environment: the seat's observation vector and the candidate
rows (docs/env.md, "Observation" and "Actions").

Cards are 54-bit rows: bit ``code`` for a natural card (``rank * 4 + suit``, C-1: ``3S`` is
0, ``2C`` is 51), bits 52 and 53 for the first and the second joker. Seats are relative:
index 0 is the observing seat, index ``k`` the seat ``(seat + k) % seats``.

Two encoders give the same arrays: :class:`Observer` and :func:`fill_candidates`, what the
environment runs, read the engine state directly (what the seat may see, C-11) and keep the
cards seen played up to date from the new events only; :func:`observation_vector` and
:func:`candidate_rows` read ``Game.observation(seat)``, the protocol's view, and the wire
candidates: the reference the tests compare the fast ones with at every step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np

from bots_sdk.env.candidates import KIND_INDEX, KINDS, PHASES, Cand, Candidate, Turn
from bots_sdk.env.rulesets import env_ruleset
from bots_sdk.md import face_down_count
from engine.cards import CARD_CODES, CARD_NAMES, JOKER, RANKS, parse_card
from engine.game import DECISIONS, Game, PlayRecord

#: Width of a card row.
CARD_BITS = 54
#: Columns of a candidate row: cards, face-down cards, declared joker ranks, kind, value.
CANDIDATE_COLUMNS: dict[str, slice] = {
    "cards": slice(0, 54),
    "face_down": slice(54, 108),
    "jokers": slice(108, 121),
    "kind": slice(121, 121 + len(KINDS)),
    "value": slice(121 + len(KINDS), 122 + len(KINDS)),
}
CANDIDATE_WIDTH = 122 + len(KINDS)
#: The flags of the ``flags`` field, in order.
FLAGS = ("revolution", "jback", "number_lock", "direction_reversed", "pending_doubt")


@cache
def layout(seats: int) -> dict[str, slice]:
    """Name -> slice of the observation vector for a table of ``seats`` seats (do not mutate)."""
    sizes = [
        ("hand", CARD_BITS),
        ("hand_sizes", seats),
        ("still_in", seats),
        ("passed", seats),
        ("to_act", seats),
        ("decision", len(DECISIONS)),
        ("lead", 1),
        ("stuck", 1),
        ("choice_min", 1),
        ("choice_max", 1),
        ("choice_to", seats),
        ("phase", len(PHASES)),
        ("page", 1),
        ("selected", CARD_BITS),
        ("selected_face_down", CARD_BITS),
        ("top", CARD_BITS),
        ("top_face_down", 1),
        ("top_seat", seats),
        ("field", CARD_BITS),
        ("field_face_down", 1),
        ("field_size", 1),
        ("trick_count", 1),
        ("flags", len(FLAGS)),
        ("suit_lock", 4),
        ("played", CARD_BITS),
        ("totals", seats),
        ("unit", 1),
        ("rate", 1),
        ("millionaire", seats),
        ("previous_ranks", seats),
        ("hidden_count", 1),
    ]
    out: dict[str, slice] = {}
    at = 0
    for name, n in sizes:
        out[name] = slice(at, at + n)
        at += n
    return out


@cache
def size(seats: int) -> int:
    """Length of the observation vector."""
    stop: int = max(s.stop for s in layout(seats).values())
    return stop


def card_bits(row: np.ndarray, cards: Iterable[str]) -> None:
    """Set the 54-bit row ``row`` from wire cards (a multiset: two jokers set bits 52, 53)."""
    jokers = 0
    for c in cards:
        code = parse_card(c)
        if code == JOKER:
            row[52 + min(jokers, 1)] = 1
            jokers += 1
        else:
            row[code] = 1


def _played(obs: Mapping[str, Any]) -> list[str]:
    """Cards this seat saw played, revealed or discarded in the current deal/game (each card
    with the largest count it had in one event: a joker twice at most)."""
    seen: set[str] = set()
    jokers = 0
    for ev in obs.get("history", ()):
        t = ev.get("type")
        if t == "play" or t == "discard":
            shown = ev.get("cards", ())
        elif t == "reveal":
            shown = [c for p in ev.get("field", ()) for c in p.get("cards", ())]
        else:
            continue
        seen.update(shown)
        if "JK" in shown:
            jokers = max(jokers, shown.count("JK"))
    seen.discard("JK")
    return list(seen) + ["JK"] * jokers


def observation_vector(obs: Mapping[str, Any], turn: Turn | None) -> np.ndarray:
    """The observation vector of ``obs`` (``Game.observation(seat)``, C-11) and the seat's
    turn in progress (None when it is not asked): float32, length :func:`size`."""
    me, seats = int(obs["seat"]), int(obs["seats"])
    lay = layout(seats)
    v = np.zeros(size(seats), dtype=np.float32)

    def rel(seat: int) -> int:
        return (seat - me) % seats

    def seat_row(name: str, values: Sequence[Any]) -> None:
        base = lay[name].start
        for s, x in enumerate(values):
            v[base + rel(s)] = float(x)

    def one_hot(name: str, seat: int | None) -> None:
        if seat is not None:
            v[lay[name].start + rel(int(seat))] = 1.0

    card_bits(v[lay["hand"]], obs["hand"])
    seat_row("hand_sizes", obs["hand_sizes"])
    seat_row("still_in", obs["still_in"])
    seat_row("passed", [s in obs["passed"] for s in range(seats)])
    one_hot("to_act", obs["to_act"])
    if turn is not None:
        v[lay["decision"].start + DECISIONS.index(turn.kind)] = 1.0
        v[lay["lead"].start] = float(bool(turn.info.get("lead")))
        v[lay["stuck"].start] = float(bool(turn.info.get("stuck")))
        v[lay["choice_min"].start] = turn.min
        v[lay["choice_max"].start] = turn.max
        one_hot("choice_to", turn.to)
        v[lay["phase"].start + PHASES.index(turn.phase)] = 1.0
        v[lay["page"].start] = turn.page
        card_bits(v[lay["selected"]], [CARD_NAMES[c] for c in turn.up + turn.down + turn.picked])
        card_bits(v[lay["selected_face_down"]], [CARD_NAMES[c] for c in turn.down])
    field = obs["field"]
    if field:
        top = field[-1]
        card_bits(v[lay["top"]], top.get("cards", []))
        v[lay["top_face_down"].start] = face_down_count(top)
        one_hot("top_seat", top["seat"])
        card_bits(v[lay["field"]], [c for p in field for c in p.get("cards", [])])
        v[lay["field_face_down"].start] = sum(face_down_count(p) for p in field)
    v[lay["field_size"].start] = obs["field_size"]
    v[lay["trick_count"].start] = obs["trick_count"] or 0
    flags = (obs["revolution"], obs["jback"], obs["number_lock"], obs["direction"] == -1, obs.get("pending_doubt"))
    v[lay["flags"]] = [float(bool(f)) for f in flags]
    for s in obs["suit_lock"]:
        v[lay["suit_lock"].start + "SHDC".index(s)] = 1.0
    card_bits(v[lay["played"]], _played(obs))
    if "totals" in obs:
        seat_row("totals", obs["totals"])
    v[lay["unit"].start] = obs.get("deal", obs.get("game", 0)) or 0
    v[lay["rate"].start] = obs.get("rate", 0) or 0
    one_hot("millionaire", obs.get("millionaire"))
    ranks = obs.get("previous_ranks") or {}
    seat_row("previous_ranks", [ranks.get(str(s), 0) for s in range(seats)])
    v[lay["hidden_count"].start] = obs.get("set_aside_count", obs.get("blind_count", 0)) or 0
    return v


def candidate_rows(cands: Sequence[Candidate], rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``(action_mask int8 [rows], actions float32 [rows, CANDIDATE_WIDTH])`` of the candidates."""
    mask = np.zeros(rows, dtype=np.int8)
    table = np.zeros((rows, CANDIDATE_WIDTH), dtype=np.float32)
    mask[: len(cands)] = 1
    cols = CANDIDATE_COLUMNS
    for i, c in enumerate(cands):
        row = table[i]
        if c.cards:
            card_bits(row[cols["cards"]], c.cards)
        if c.face_down:
            card_bits(row[cols["face_down"]], c.face_down)
        for r in c.jokers:
            row[cols["jokers"].start + RANKS.index(r)] += 1.0
        row[cols["kind"].start + KINDS.index(c.kind)] = 1.0
        row[cols["value"].start] = c.value
    return mask, table


# -- the fast encoders (what the environment runs) -------------------------------------------------
_DECISION_INDEX = {k: i for i, k in enumerate(DECISIONS)}
_PHASE_INDEX = {k: i for i, k in enumerate(PHASES)}
_SUIT_COLUMN = {s: i for i, s in enumerate("SHDC")}
_CARDS_AT = CANDIDATE_COLUMNS["cards"].start
_FACE_DOWN_AT = CANDIDATE_COLUMNS["face_down"].start
_JOKERS_AT = CANDIDATE_COLUMNS["jokers"].start
_KIND_AT = CANDIDATE_COLUMNS["kind"].start
_VALUE_AT = CANDIDATE_COLUMNS["value"].start


def _set_cards(m: Any, at: int, codes: Iterable[int]) -> None:
    """Set the 54-bit row at ``at`` of ``m`` from card codes (the first joker bit 52, the
    others bit 53: as :func:`card_bits`)."""
    jokers = 0
    for c in codes:
        if c == JOKER:
            m[at + 52 + (1 if jokers else 0)] = 1.0
            jokers += 1
        else:
            m[at + c] = 1.0


def _visible(p: PlayRecord, seat: int) -> list[int]:
    """The cards of the field play ``p`` that ``seat`` sees (C-11, MD-8: another seat's
    face-down cards only once revealed), as ``PlayRecord.view``."""
    if p.face_down and not p.revealed and seat != p.seat:
        return p.face_up()
    return p.cards


class Observer:
    """The observation vectors of one table, read from the engine state (C-11): what
    :func:`observation_vector` reads from ``Game.observation(seat)``, without building the
    observation. The cards each seat saw played, revealed or discarded in the current
    deal/game (``played``) are kept up to date from the events added since the last call."""

    def __init__(self, seats: int):
        self.seats = seats
        self.size = size(seats)
        self.at = {name: sl.start for name, sl in layout(seats).items()}
        self._game: Game | None = None
        self._unit = -1
        self._seen = 0
        self._played = [0] * seats  # per seat: a bit mask of the natural cards seen
        self._jokers = [0] * seats  # per seat: most jokers seen in one event

    def _sync(self, g: Game) -> None:
        """Take the events since the last call into ``played`` (a new deal/game starts over)."""
        if g is not self._game or g.unit_count != self._unit:
            self._game, self._unit, self._seen = g, g.unit_count, g.unit_start
            self._played = [0] * self.seats
            self._jokers = [0] * self.seats
        events = g.events
        for k in range(self._seen, len(events)):
            ev, visible, public = events[k]
            t = ev["type"]
            if t != "play" and t != "discard" and t != "reveal":
                continue
            for s in range(self.seats):
                seen = ev if visible is None or s in visible else public
                if seen is None:
                    continue
                if t == "reveal":
                    shown = [c for p in seen["field"] for c in p["cards"]]
                else:
                    shown = seen.get("cards", ())
                jokers = 0
                mask = self._played[s]
                for c in shown:
                    if c == "JK":
                        jokers += 1
                    else:
                        mask |= 1 << CARD_CODES[c]
                self._played[s] = mask
                if jokers > self._jokers[s]:
                    self._jokers[s] = jokers
        self._seen = len(events)

    def vector(self, g: Game, seat: int, turn: Turn | None) -> np.ndarray:
        """The observation vector of ``seat`` (float32, length :func:`size`); ``turn`` is the
        seat's turn in progress, None when it is not asked."""
        self._sync(g)
        v = np.zeros(self.size, dtype=np.float32)
        m: Any = v.data  # a memoryview: item by item, cheaper than numpy's fancy indexing for a few
        at = self.at
        n = self.seats

        def rel(s: int) -> int:
            return (s - seat) % n

        _set_cards(m, at["hand"], g.hands[seat])
        base = at["hand_sizes"]
        for s, h in enumerate(g.hands):
            m[base + rel(s)] = len(h)
        for s in range(n):
            if g.still_in[s]:
                m[at["still_in"] + rel(s)] = 1.0
            if g.passed[s]:
                m[at["passed"] + rel(s)] = 1.0
        d = g.decision()
        if d is not None:
            m[at["to_act"] + rel(d.seat)] = 1.0
        if turn is not None:
            self._turn_parts(m, turn, rel)
        field = g.field
        if field:
            top = field[-1]
            _set_cards(m, at["top"], _visible(top, seat))
            m[at["top_face_down"]] = len(top.face_down)
            m[at["top_seat"] + rel(top.seat)] = 1.0
            _set_cards(m, at["field"], [c for p in field for c in _visible(p, seat)])
            m[at["field_face_down"]] = sum(len(p.face_down) for p in field)
            m[at["field_size"]] = sum(len(p.cards) for p in field)
        m[at["trick_count"]] = g.count
        flags = at["flags"]
        for i, flag in enumerate((g.revolution, g.jback, g.nlock, g.direction == -1)):
            if flag:
                m[flags + i] = 1.0
        for s in g.lock:
            m[at["suit_lock"] + s] = 1.0
        played = self._played[seat]
        while played:
            low = played & -played
            m[at["played"] + low.bit_length() - 1] = 1.0
            played ^= low
        if self._jokers[seat]:
            m[at["played"] + 52] = 1.0
            if self._jokers[seat] > 1:
                m[at["played"] + 53] = 1.0
        self._rule_set_parts(m, g, seat, rel)
        return v

    def _turn_parts(self, m: Any, turn: Turn, rel: Any) -> None:
        """The parts of the seat's own decision in progress."""
        at = self.at
        m[at["decision"] + _DECISION_INDEX[turn.kind]] = 1.0
        if turn.info.get("lead"):
            m[at["lead"]] = 1.0
        if turn.info.get("stuck"):
            m[at["stuck"]] = 1.0
        m[at["choice_min"]] = turn.min
        m[at["choice_max"]] = turn.max
        if turn.to is not None:
            m[at["choice_to"] + rel(turn.to)] = 1.0
        m[at["phase"] + _PHASE_INDEX[turn.phase]] = 1.0
        m[at["page"]] = turn.page
        _set_cards(m, at["selected"], turn.up + turn.down + turn.picked)
        _set_cards(m, at["selected_face_down"], turn.down)

    def _rule_set_parts(self, m: Any, g: Game, seat: int, rel: Any) -> None:
        env_ruleset(g.ruleset).parts(m, self.at, g, rel)


def fill_candidates(cands: Sequence[Cand], rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``(action_mask int8 [rows], actions float32 [rows, CANDIDATE_WIDTH])`` of the
    environment's candidates: :func:`candidate_rows` of their wire form, from the codes."""
    mask = np.zeros(rows, dtype=np.int8)
    mask[: len(cands)] = 1
    table = np.zeros((rows, CANDIDATE_WIDTH), dtype=np.float32)
    m: Any = table.reshape(-1).data
    for i, c in enumerate(cands):
        row = i * CANDIDATE_WIDTH
        if c.cards:
            _set_cards(m, row + _CARDS_AT, c.cards)
        if c.face_down:
            _set_cards(m, row + _FACE_DOWN_AT, c.face_down)
        for r in c.jokers:
            m[row + _JOKERS_AT + r] += 1.0
        m[row + _KIND_AT + KIND_INDEX[c.kind]] = 1.0
        if c.value:
            m[row + _VALUE_AT] = c.value
    return mask, table


__all__ = [
    "CARD_BITS",
    "CANDIDATE_COLUMNS",
    "CANDIDATE_WIDTH",
    "FLAGS",
    "layout",
    "size",
    "observation_vector",
    "candidate_rows",
    "Observer",
    "fill_candidates",
]
