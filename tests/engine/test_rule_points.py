"""Rule points clarified in docs/rules.md that the scenarios do not express (state that a
scenario ``setup`` cannot hold: retired seats, whole games)."""

from __future__ import annotations

import engine


def _tm(
    hands: dict[str, list[str]], leader: int = 0, options: dict | None = None, state: dict | None = None
) -> engine.Game:
    setup: dict = {"hands": hands, "leader": leader}
    if state:
        setup["state"] = state
    return engine.from_setup("trump_millionaire", options or {}, setup)


def test_seven_pass_asks_no_give_when_no_other_seat_is_still_in_lr5():
    g = _tm(
        {"0": ["7S", "4H", "5D"], "1": ["3C", "4C"], "2": ["3D", "4D"], "3": ["3H", "6D"]}, options={"seven_pass": True}
    )
    for s in (1, 2, 3):
        g.forfeit(s, "timeout")  # FAULT-2: retired, no longer still in
    g.apply(0, {"type": "play", "cards": ["7S"]})
    d = g.decision()
    assert d is not None and d.kind == "play" and d.seat == 0  # no give to itself
    assert sorted(engine.format_cards(g.hands[0])) == ["4H", "5D"]
    assert g.field_size() == 0  # every other seat is out: the trick cleared (C-7)


def test_retired_millionaire_declines_and_takes_the_lowest_rate_tm3():
    hands = {"0": ["4S", "5S"], "1": ["3C", "4C"], "2": ["3D", "4D"], "3": ["3H", "6D"]}
    for at in ("exchange", "rate"):
        g = _tm(hands, options={"rate_choices": [2, 3]}, state={"millionaire": 0})
        if at == "rate":
            g.apply(0, {"type": "exchange", "accept": False})
        d = g.decision()
        assert d is not None and (d.seat, d.kind) == (0, at)
        g.forfeit(0, "timeout")
        assert g.rate == 2  # the lowest of rate_choices
        d = g.decision()
        # the retired Millionaire passes as leader (TM-6): the next seat leads
        assert d is not None and (d.seat, d.kind) == (1, "play") and d.info.get("lead")
        public = [e for e in g.history(1) if e["type"] in ("exchange", "rate")]
        assert public[-1] == {"type": "rate", "seat": 0, "rate": 2}
        assert any(e == {"type": "exchange", "seat": 0, "accept": False} for e in public)


def test_retired_leader_counts_among_four_stuck_leaders_tm6():
    g = _tm({"0": ["4S", "5S"], "1": ["8S"], "2": ["2H"], "3": ["JK"]}, state={"rate": 1})
    g.forfeit(0, "timeout")  # the leader retires: it passes as leader (1 of 4)
    for s in (1, 2, 3):
        d = g.decision()
        assert d is not None and (d.seat, d.kind) == (s, "play") and d.info.get("stuck")
        g.apply(s, {"type": "pass"})
    assert g.over and g.unit_result() == {
        "deal": 0,
        "void": True,
        "winner": None,
        "scores": {"0": 0, "1": 0, "2": 0, "3": 0},
        "rate": 1,
    }


def test_tm_retired_seats_rank_below_the_others_and_share_equal_totals_fault2():
    g = _tm({"0": ["4S"], "1": ["3C", "4C", "6C"], "2": ["3D", "4D"], "3": ["3H", "5H"]}, state={"rate": 1})
    g.forfeit(2, "timeout")
    g.forfeit(3, "invalid_action")
    g.apply(0, {"type": "play", "cards": ["4S"]})  # finishes: the deal ends (TM-7)
    r = g.result()
    assert r is not None
    # retired seats score -rate x their hand like the others (FAULT-2)
    assert r["scores"] == {"0": 7, "1": -3, "2": -2, "3": -2}
    # seat 1 (-3) is above the retired seats (-2 each), which share the third place
    assert r["ranks"] == {"0": 1, "1": 2, "2": 3, "3": 3}
    assert r["retired"] == [2, 3]


def test_jdf_retired_seats_are_out_at_once_unseen_and_placed_later_above_earlier_fault2():
    g = engine.from_setup(
        "jdf", {}, {"hands": {"0": ["4S", "5S"], "1": ["3C", "KC"], "2": ["3D", "QD"], "3": ["3H", "JH"]}, "leader": 0}
    )
    g.forfeit(1, "timeout")
    assert g.hands[1] == [] and not g.still_in[1]
    seen = [e for e in g.history(0) if e.get("seat") == 1]
    assert seen == [{"type": "forfeit", "seat": 1, "reason": "timeout"}]  # its cards stay unseen
    g.forfeit(2, "timeout")
    g.forfeit(3, "timeout")  # at most one seat is still in: the game ends (JDF-12)
    r = g.result()
    assert r is not None and g.over
    assert r["ranks"] == {"0": 1, "3": 2, "2": 3, "1": 4}
    assert r["scores"] == {"0": 3, "1": 0, "2": 1, "3": 2}
