"""Replay frames: the state after each action of an engine log, for replay viewers.

:func:`frames` re-runs a :meth:`Game.log` through the engine and returns one frame before the
first action and one after every action (or forfeit). A frame is the *full* view of the
table, the kind of post-game record MD-8 allows: every hand, face-down cards marked as such
(``"face_down"``: the list of face-down cards; ``"revealed"`` once a doubt turned them up).

Frame shape (JSON-ready)::

    {"index": 3, "seat": 1, "action": {...} | None, "forfeit": "timeout" | None,
     "unit": 0, "hands": [["3S", ...], ...], "hand_sizes": [..],
     "field": [{"seat", "cards", "face_down"?, "revealed"?, "jokers"?}],
     "revolution": bool, "jback": bool, "suit_lock": ["S"], "number_lock": bool,
     "direction": 1, "to_act": seat | None, "decision": kind | None,
     "still_in": [bool], "over": bool, "events": [events since the previous frame]}

Raises :class:`engine.InvalidAction` if the log does not replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.cards import format_cards, sort_key
from engine.game import Game


def _frame(g: Game, index: int, entry: Mapping[str, Any] | None, events: list[dict[str, Any]]) -> dict[str, Any]:
    d = g.decision()
    return {
        "index": index,
        "seat": entry.get("seat") if entry else None,
        "action": entry.get("action") if entry else None,
        "forfeit": entry.get("forfeit") if entry else None,
        "unit": g.unit_index,
        "hands": [format_cards(sorted(h, key=sort_key)) for h in g.hands],
        "hand_sizes": [len(h) for h in g.hands],
        "field": [p.view(None) for p in g.field],
        "revolution": g.revolution,
        "jback": g.jback,
        "suit_lock": sorted("SHDC"[s] for s in g.lock),
        "number_lock": g.nlock,
        "direction": g.direction,
        "to_act": d.seat if d else None,
        "decision": d.kind if d else None,
        "still_in": list(g.still_in),
        "over": g.over,
        "events": events,
    }


def frames(log: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One frame before the first action and one after each action of ``log`` (see above)."""
    import engine

    if log.get("setup") is not None:
        g = engine.from_setup(log["ruleset"], log.get("options"), log["setup"])
    else:
        g = engine.new_game(log["ruleset"], log.get("options"), log.get("seed") or 0)
    seen = len(g.events)
    out = [_frame(g, 0, None, g.history(None, 0))]
    for i, entry in enumerate(log.get("actions", []), start=1):
        if "forfeit" in entry:
            g.forfeit(entry["seat"], entry["forfeit"])
        else:
            g.apply(entry["seat"], entry["action"])
        new = g.history(None, seen)
        seen = len(g.events)
        out.append(_frame(g, i, entry, new))
    return out
