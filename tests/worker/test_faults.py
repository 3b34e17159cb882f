"""Broken bots in a tournament played by a real worker: a bot that sleeps past its bank, one
that answers garbage, one that is down. Every fault is recorded with its kind and its
consequence (FAULT-1..3, TIME-3); the healthy bots' match is played exactly as without them;
no task hangs. Also: cancel stops the remaining matches."""

from __future__ import annotations

from arena.fairness import attempt_seed
from arena.queue import PING_TASK, QUEUE
from arena.runner.match import run_match
from arena.runner.replay import replay
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules
from tests.worker.conftest import SwitchBot

BURST = 11  # MD-17 burst score (default option)
GAMES = 4  # with max_faults 3: three faulted games, then the fourth forfeited (FAULT-3)
#: Seconds the sleeper takes to answer once broken: far past its 1 s bank, so a fault cut
#: before it is cut by the bank (no bound on how fast this machine is).
SLEEPER_S = 20.0


def test_sleeping_garbage_and_down_bots(arena, bots, celery_worker_factory):
    good1, good2 = SwitchBot(SAMPLE_BOTS["greedy"]()), SwitchBot(SAMPLE_BOTS["greedy"]())
    sleeper = SwitchBot(SAMPLE_BOTS["greedy"](), sleep_s=SLEEPER_S)
    garbage = SwitchBot(SAMPLE_BOTS["greedy"]())
    down = SwitchBot(SAMPLE_BOTS["greedy"]())
    bots.extend([good1, good2, sleeper, garbage, down])
    names = ["good1", "good2", "sleeper", "garbage", "down"]
    ids = dict(zip(names, (arena.register(b, ["million_doubt"], n) for b, n in zip(bots, names))))
    # They all passed their check; now three of them break.
    sleeper.mode, garbage.mode = "sleep", "garbage"
    down.down()
    kind_of = {ids["sleeper"]: "timeout", ids["garbage"]: "invalid_json", ids["down"]: "connection_error"}
    tid = arena.create("million_doubt", list(ids.values()), games_per_pairing=GAMES, max_faults=3)
    worker = celery_worker_factory(concurrency=2, database_url=arena.database_url)
    arena.start(tid)
    t = arena.wait_finished(tid, workers=[worker])  # no hung task
    assert t["status"] == "finished" and t["progress"] == {"finished": 10, "total": 10, "queued": 10}
    stored = arena.stored(tid)
    assert len(stored) == 10
    for m, res, log in stored:
        seat_bots = [s.bot_id for s in m.seats]
        assert replay(log)["scores"] == [round(x) for x in res.scores]
        faulty = [b in kind_of for b in seat_bots]
        if not any(faulty):  # good1 vs good2: no fault, and the same match as in-process
            assert res.faults == [0, 0] and log["faults"] == []
            alone = run_match(
                [SAMPLE_BOTS["greedy"](), SAMPLE_BOTS["greedy"]()],
                "million_doubt",
                seed=attempt_seed(m.seed, m.attempts),
                games=GAMES,
                time_rules=TimeRules.from_seconds(1.0, 0.1, 1.0),
                match_id=log["match_id"],
                notices=False,
            )
            assert [g["engine_log"]["actions"] for g in log["games"]] == [
                g["engine_log"]["actions"] for g in alone["games"]
            ]
            assert log["result"]["scores"] == alone["result"]["scores"]
            continue
        for f in log["faults"]:  # every fault: the right kind, what was received, its time
            b = seat_bots[f["player"]]
            assert f["kind"] == kind_of[b], f
            if f["kind"] == "timeout":
                assert 1000 <= f["elapsed_ms"] < SLEEPER_S * 1000  # cut off by the bank, not by the sleep
            if f["kind"] == "invalid_json":
                assert f["received"].startswith("<<not json!!>>")
            if f["kind"] == "connection_error":
                assert f["elapsed_ms"] < 1000
        for _gi, gm in enumerate(log["games"]):
            assert len(gm["faults"]) <= 1  # the first fault ends the MD game (FAULT-2)
            loser_seat = next(s for s, r in gm["result"]["ranks"].items() if r == 2)
            loser = gm["seats"][int(loser_seat)]
            assert seat_bots[loser] in kind_of  # a faulty bot lost every game it was in
            assert gm["result"]["scores"][loser_seat] == -BURST  # with the burst score (MD-17)
            forfeits = [a for a in gm["engine_log"]["actions"] if a.get("forfeit")]
            assert len(forfeits) == 1 and forfeits[0]["seat"] == int(loser_seat)
            if gm["faults"]:
                assert forfeits[0]["forfeit"] == gm["faults"][0]["kind"]
            else:  # FAULT-3: barred after 3 faults, forfeited without a request
                assert forfeits[0]["forfeit"] == "max_faults" and res.faults[loser] == 3
                assert all(ex["player"] != loser for ex in gm["exchanges"])
        for seat, b in enumerate(seat_bots):
            if b in kind_of and not faulty[1 - seat]:  # faulty vs good: 3 faults, 4 games lost
                assert res.faults[seat] == 3 and res.faults[1 - seat] == 0
                assert res.scores[seat] == -BURST * GAMES and res.places == ([2, 1] if seat == 0 else [1, 2])
        assert sum(res.faults) == len(log["faults"])
    rows = {r["bot_id"]: r for r in arena.get(f"/tournaments/{tid}/standings")["rows"]}
    assert rows[ids["good1"]]["faults"] == rows[ids["good2"]]["faults"] == 0
    for name in ("sleeper", "garbage", "down"):
        assert rows[ids[name]]["faults"] >= 6  # 3 in each match against a good bot
        assert rows[ids[name]]["rank"] > max(rows[ids["good1"]]["rank"], rows[ids["good2"]]["rank"])
    assert worker.alive()


def test_cancel_stops_the_remaining_matches(arena, bots, celery_worker_factory):
    bots.extend(SwitchBot(SAMPLE_BOTS["greedy"]()) for _ in range(3))
    ids = [arena.register(b, ["million_doubt"], f"c{i}") for i, b in enumerate(bots)]
    tid = arena.create("million_doubt", ids, games_per_pairing=2)
    checked = [b.decisions for b in bots]  # requests of the conformance games
    arena.start(tid)  # enqueued in Redis, no worker yet
    r = arena.client.post(f"/api/v1/tournaments/{tid}/cancel", headers=arena.org)
    assert r.status_code == 200 and r.json["status"] == "cancelled"
    worker = celery_worker_factory(concurrency=1, database_url=arena.database_url)
    # The worker consumes the 3 match tasks first (one process, FIFO queue) and skips them.
    probe = worker.app.send_task(PING_TASK, queue=QUEUE)  # behind the match tasks
    assert probe.get(timeout=60) == "pong"
    assert arena.counts(tid) == {"matches": 3, "results": 0, "logs": 0}
    assert {m["status"] for m in arena.get(f"/tournaments/{tid}/matches")["items"]} == {"cancelled"}
    assert [b.decisions for b in bots] == checked  # no bot was asked anything
