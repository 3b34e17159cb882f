"""api.ui.replay: replay data merged from engine frames and the worker's request records."""

from __future__ import annotations

import copy

import pytest

from api.ui.replay import ReplayDataError, build_replay
from arena.runner.match import run_match
from arena.runner.players import LocalPlayer
from bots_sdk.samples import SAMPLE_BOTS
from engine.frames import frames
from engine.timebank import TimeRules


class Faulty(SAMPLE_BOTS["random"]):
    """Illegal answer on every 3rd decision: 3 faults bar it (FAULT-3, max_faults forfeits)."""

    calls = 0

    def decide(self, request):
        self.calls += 1
        if self.calls % 3 == 0:
            return {"type": "pass", "cards": ["3S"], "bogus": 1}
        return super().decide(request)


@pytest.fixture(scope="module")
def faulty_log():
    players = [
        LocalPlayer(SAMPLE_BOTS["greedy"](seed=1), "greedy"),
        LocalPlayer(Faulty(seed=2), "faulty"),
        LocalPlayer(SAMPLE_BOTS["random"](seed=3), "random"),
        LocalPlayer(SAMPLE_BOTS["heuristic"](seed=4), "h"),
    ]
    return run_match(players, "jdf", {}, seed=7, time_rules=TimeRules(3000, 500, 4000), max_faults=3)


def test_frames_carry_exchanges_banks_and_faults(faulty_log):
    data = build_replay(faulty_log, ["A #1", "B #2", "C #3", "D #4"])
    assert [p["label"] for p in data["players"]] == ["A #1", "B #2", "C #3", "D #4"]
    g, rec = data["games"][0], faulty_log["games"][0]
    actions = rec["engine_log"]["actions"]
    fr = frames(rec["engine_log"])
    assert len(g["frames"]) == len(actions) + 1 == len(fr)
    used = [f["exchange"]["n"] for f in g["frames"] if f["exchange"]]
    assert used == [ex["n"] for ex in rec["exchanges"]]  # every request record once, in order
    faults = [(f["index"], f["fault"]["kind"]) for f in g["frames"] if f["fault"]]
    assert [k for _, k in faults if k != "max_faults"] == [f["kind"] for f in rec["faults"]]
    assert any(k == "max_faults" for _, k in faults)  # the barred seat forfeits its later turns
    for f, e in zip(g["frames"], fr):
        assert f["hands"] == e["hands"] and f["field"] == e["field"]
        assert all(ev["type"] != "hand" for ev in f["events"])
    # banks: after each request, the acting seat's bank is the recorded one (same deal)
    for f in g["frames"]:
        ex = f["exchange"]
        if ex and f["unit"] == rec["exchanges"][ex["n"]]["unit"]:
            assert f["banks_ms"][f["seat"]] == ex["bank_after_ms"]
    # a new JDF game resets every bank to the initial 3000 ms
    new_deal = next(i for i in range(1, len(fr)) if fr[i]["unit"] != fr[i - 1]["unit"])
    assert g["frames"][new_deal]["banks_ms"] == [3000] * 4
    assert g["frames"][0]["banks_ms"] == [3000] * 4


def test_a_log_whose_records_do_not_line_up_is_refused(faulty_log):
    broken = copy.deepcopy(faulty_log)
    broken["games"][0]["exchanges"].pop()
    with pytest.raises(ReplayDataError, match="game 0"):
        build_replay(broken)
    broken = copy.deepcopy(faulty_log)
    broken["games"][0]["exchanges"][0]["seat"] = (broken["games"][0]["exchanges"][0]["seat"] + 1) % 4
    with pytest.raises(ReplayDataError, match="step 1"):
        build_replay(broken)
    with pytest.raises(ReplayDataError, match="not a"):
        build_replay({"format": "other"})


def test_jdf_units_are_the_games_of_the_sets_with_running_totals(faulty_log):
    g = build_replay(faulty_log)["games"][0]
    units = g["units"]
    res = faulty_log["games"][0]["result"]
    assert len(units) == len(res["games"]) == 12  # 3 sets x 4 games (JDF-1)
    assert [(u["set"], u["game_in_set"]) for u in units] == [(s, k) for s in range(3) for k in range(1, 5)]
    for u, rec in zip(units, res["games"]):
        assert u["scores"] == [rec["scores"][str(i)] for i in range(4)]
        assert g["frames"][u["first_step"]]["unit"] == u["unit"]
        assert u["first_step"] <= u["end_step"]
    assert units[-1]["totals"] == [res["totals"][str(i)] for i in range(4)]


def test_trump_millionaire_units_are_deals_and_totals_add_up():
    players = [LocalPlayer(SAMPLE_BOTS["greedy"](seed=i), f"g{i}") for i in range(4)]
    log = run_match(
        players,
        "trump_millionaire",
        {"target_score": 15},
        seed=9,
        time_rules=TimeRules(60000, 10000, 60000),
        max_faults=3,
    )
    data = build_replay(log)
    units = data["games"][0]["units"]
    deals = log["games"][0]["result"]["deals"]
    assert [u["unit"] for u in units] == [d["deal"] for d in deals]
    running = [0, 0, 0, 0]
    for u, d in zip(units, deals):
        assert u["void"] == d["void"]
        if d["void"]:
            continue
        assert u["scores"] == [d["scores"][str(i)] for i in range(4)]
        running = [a + b for a, b in zip(running, u["scores"])]
        assert u["totals"] == running
    assert data["game_totals"] == [{"game": 0, "scores": log["result"]["scores"], "totals": log["result"]["scores"]}]


def test_million_doubt_game_totals_are_by_player_across_games():
    players = [LocalPlayer(SAMPLE_BOTS["greedy"](seed=1), "a"), LocalPlayer(SAMPLE_BOTS["random"](seed=2), "b")]
    log = run_match(
        players, "million_doubt", {}, seed=4, games=4, time_rules=TimeRules(60000, 10000, 60000), max_faults=3
    )
    gt = build_replay(log)["game_totals"]
    assert len(gt) == 4
    assert gt[-1]["totals"] == [float(x) for x in log["result"]["scores"]]
    for rec, row in zip(log["games"], gt):  # scores keyed by seat in the log, by player here
        for seat, player in enumerate(rec["seats"]):
            assert row["scores"][player] == rec["result"]["scores"][str(seat)]
