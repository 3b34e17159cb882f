"""Fixed-shape arrays of the environment: the seat's observation vector and the candidate
rows (docs/env.md, "Observation" and "Actions").

Cards are 54-bit rows: bit ``code`` for a natural card (``rank * 4 + suit``, C-1: ``3S`` is
0, ``2C`` is 51), bits 52 and 53 for the first and the second joker. Seats are relative:
index 0 is the observing seat, index ``k`` the seat ``(seat + k) % seats``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np

from bots_sdk.env.candidates import KINDS, PHASES, Candidate, Turn
from bots_sdk.md import face_down_count
from engine.cards import JOKER, RANKS, parse_card
from engine.game import DECISIONS

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
    return max(s.stop for s in layout(seats).values())


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
        card_bits(v[lay["selected"]], turn.up + turn.down + turn.picked)
        card_bits(v[lay["selected_face_down"]], turn.down)
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


__all__ = ["CARD_BITS", "CANDIDATE_COLUMNS", "CANDIDATE_WIDTH", "FLAGS", "layout", "size", "observation_vector"]
