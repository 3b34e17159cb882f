"""Rule points clarified in RULES.md that the shared scenarios do not express (state that a
scenario ``setup`` cannot hold: retired seats, whole games)."""

from __future__ import annotations

import engine


def _tm(hands: dict[str, list[str]], leader: int = 0, options: dict | None = None,
        state: dict | None = None) -> engine.Game:
    setup: dict = {"hands": hands, "leader": leader}
    if state:
        setup["state"] = state
    return engine.from_setup("trump_millionaire", options or {}, setup)


def test_seven_pass_asks_no_give_when_no_other_seat_is_still_in_lr5():
    g = _tm({"0": ["7S", "4H", "5D"], "1": ["3C", "4C"], "2": ["3D", "4D"], "3": ["3H", "6D"]},
            options={"seven_pass": True})
    for s in (1, 2, 3):
        g.forfeit(s, "timeout")  # FAULT-2: retired, no longer still in
    g.apply(0, {"type": "play", "cards": ["7S"]})
    d = g.decision()
    assert d is not None and d.kind == "play" and d.seat == 0  # no give to itself
    assert sorted(engine.format_cards(g.hands[0])) == ["4H", "5D"]
    assert g.field_size() == 0  # every other seat is out: the trick cleared (C-7)
