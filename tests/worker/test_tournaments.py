"""Round-robin tournaments run to completion by a real Celery worker process, over real Redis
and PostgreSQL, against SDK bots over HTTP: results, standings, ratings, logs, the per-bot cap."""

from __future__ import annotations

import math
from collections import defaultdict

from openskill.models import PlackettLuce
from sqlalchemy import select

from arena.db.models import Rating
from arena.fairness import attempt_seed
from arena.ranking import MatchRecord, compute_standings
from arena.runner.replay import replay
from bots_sdk.samples import SAMPLE_BOTS
from tests.worker.conftest import SwitchBot


def _records_from_logs(stored) -> list[MatchRecord]:
    """Match records rebuilt from the stored LOGS only (not from the result rows)."""
    out = []
    for m, _res, log in stored:
        seats = tuple(s.bot_id for s in m.seats)
        scores = log["result"]["scores"]
        if log["result"]["ranks"]:
            places = log["result"]["ranks"]
        else:
            places = [1 + sum(o > x for o in scores) for x in scores]
        games = []
        for gm in log["games"]:
            g_scores, g_places = [0] * len(seats), [0] * len(seats)
            for seat, player in enumerate(gm["seats"]):
                g_scores[player] = gm["result"]["scores"][str(seat)]
                g_places[player] = gm["result"]["ranks"][str(seat)]
            games.append({"scores": g_scores, "places": g_places})
        out.append(MatchRecord(m.index, seats, scores, places, log["result"]["faults"], games))
    return out


def _check_tournament(arena, tid: int, bot_ids: list[int], ruleset: str, expected_matches: int) -> list:
    t = arena.get(f"/tournaments/{tid}")
    assert t["status"] == "finished"
    assert t["progress"] == {"finished": expected_matches, "total": expected_matches, "queued": expected_matches}
    assert arena.counts(tid) == {"matches": expected_matches, "results": expected_matches, "logs": expected_matches}
    stored = arena.stored(tid)
    for m, res, log in stored:
        # every stored log replays to its recorded result, which is the stored result
        again = replay(log)
        assert again["scores"] == [round(x) for x in res.scores]
        assert again["faults"] == res.faults
        assert log["seed"] == attempt_seed(m.seed, 1) and log["ruleset"] == ruleset
        assert log["fairness"] == {
            "tournament_id": tid,
            "match_index": m.index,
            "attempt": 1,
            "commitment": t["commitment"],
        }
        assert [p["url"] for p in log["players"]] == [None] * len(m.seats)  # no bot URL in logs
        assert [p["name"].rsplit("#", 1)[1] for p in log["players"]] == [str(s.bot_id) for s in m.seats]
        assert [p["kind"] for p in log["players"]] == ["http"] * len(m.seats)
        assert m.status == "finished" and m.attempts == 1
        assert res.timings["decisions"] and sum(res.timings["decisions"]) == sum(
            len(g["exchanges"]) for g in log["games"]
        )
    records = _records_from_logs(stored)
    # standings of the API equal the standings of the logs; totals checked by hand too
    expected = [s.to_dict() for s in compute_standings(records, entrants=bot_ids)]
    api_rows = arena.get(f"/tournaments/{tid}/standings")["rows"]
    assert [r["bot_id"] for r in api_rows] == [r["bot_id"] for r in expected]
    for got, want in zip(api_rows, expected):
        for k in ("games", "wins", "matches", "faults"):
            assert got[k] == want[k]
        for k in ("total_score", "mean_score", "mu", "sigma", "ordinal"):
            assert math.isclose(got[k], want[k], rel_tol=1e-9, abs_tol=1e-9)
    totals, wins, games = defaultdict(float), defaultdict(int), defaultdict(int)
    for rec in records:
        for seat, bot in enumerate(rec.seats):
            for g in rec.games:
                totals[bot] += g["scores"][seat]
                wins[bot] += g["places"][seat] == 1
                games[bot] += 1
    for row in api_rows:
        assert row["total_score"] == totals[row["bot_id"]]
        assert row["wins"] == wins[row["bot_id"]] and row["games"] == games[row["bot_id"]]
    # ratings table: openskill Plackett-Luce, one update per game (its places: no par yet),
    # matches in schedule order, each match's drift tau spread over its games
    model = PlackettLuce()
    ratings = {b: model.rating(name=str(b)) for b in bot_ids}
    for rec in sorted(records, key=lambda r: r.index):
        for g in rec.games:
            tau = model.tau / math.sqrt(len(rec.games))
            rated = model.rate([[ratings[b]] for b in rec.seats], ranks=list(g["places"]), tau=tau)
            for b, team in zip(rec.seats, rated):
                ratings[b] = team[0]
    with arena.sessions() as s:
        rows = {r.bot_id: r for r in s.scalars(select(Rating).where(Rating.ruleset == ruleset))}
    assert set(rows) == set(bot_ids)
    for b in bot_ids:
        assert math.isclose(rows[b].mu, ratings[b].mu, rel_tol=1e-9)
        assert math.isclose(rows[b].sigma, ratings[b].sigma, rel_tol=1e-9)
    board = arena.get(f"/leaderboard?ruleset={ruleset}")
    assert {r["bot_id"] for r in board["items"]} == set(bot_ids)
    return stored


def test_million_doubt_tournament_runs_to_completion(arena, bots, celery_worker_factory):
    kinds = ["greedy", "heuristic", "random", "greedy"]
    for i, k in enumerate(kinds):
        bots.append(SwitchBot(SAMPLE_BOTS[k](seed=i)))
    ids = [arena.register(b, ["million_doubt"], f"md-{k}-{i}") for i, (b, k) in enumerate(zip(bots, kinds))]
    tid = arena.create("million_doubt", ids, games_per_pairing=4)
    worker = celery_worker_factory(concurrency=2, database_url=arena.database_url)
    arena.start(tid)
    arena.wait_finished(tid, workers=[worker])
    stored = _check_tournament(arena, tid, ids, "million_doubt", 6)
    for _m, res, log in stored:
        assert len(log["games"]) == 4  # games_per_pairing, each dealt afresh, seats swapped
        assert [g["seats"] for g in log["games"]] == [[0, 1], [1, 0], [0, 1], [1, 0]]
        assert len({g["seed"] for g in log["games"]}) == 4
        assert sum(res.scores) == 0  # Million Doubt scores are zero-sum (MD-17)
        assert res.places == (
            [1, 2] if res.scores[0] > res.scores[1] else [2, 1] if res.scores[0] < res.scores[1] else [1, 1]
        )
        assert res.faults == [0, 0]
        assert log["time_rules"] == {"initial_ms": 1000, "increment_ms": 100, "cap_ms": 1000}


def test_trump_millionaire_tournament_with_a_per_bot_cap(arena, bots, celery_worker_factory):
    """4 bots at one table, 4 seat rotations played 2 at a time: every bot is asked by two
    matches at once, and the Redis cap of 1 request per bot holds."""
    kinds = ["greedy", "heuristic", "random", "heuristic"]
    for i, k in enumerate(kinds):
        bots.append(SwitchBot(SAMPLE_BOTS[k](seed=i)))
    ids = [arena.register(b, ["trump_millionaire"], f"tm-{k}-{i}") for i, (b, k) in enumerate(zip(bots, kinds))]
    tid = arena.create("trump_millionaire", ids, games_per_pairing=1, options={"target_score": 30})
    for b in bots:  # the conformance checks are done: count tournament requests only
        b.max_in_flight = 0
    worker = celery_worker_factory(
        concurrency=2, database_url=arena.database_url, env={"ARENA_BOT_MAX_CONCURRENCY": "1"}
    )
    arena.start(tid)
    arena.wait_finished(tid, workers=[worker])
    stored = _check_tournament(arena, tid, ids, "trump_millionaire", 4)
    seatings = [tuple(s.bot_id for s in m.seats) for m, _, _ in stored]
    for seat in range(4):  # rotation: each bot sits in each seat once
        assert sorted(s[seat] for s in seatings) == sorted(ids)
    assert len({m.seed for m, _, _ in stored}) == 4  # every rotation is dealt afresh
    assert len({log["games"][0]["seed"] for _, _, log in stored}) == 4
    for _m, res, _log in stored:
        assert sorted(res.places)[0] == 1 and max(res.scores) >= 30
        assert res.timings["semaphore_bypassed"] == [0, 0, 0, 0]
    assert [b.max_in_flight for b in bots] == [1, 1, 1, 1]
    waits = sum(sum(res.timings["semaphore_wait_ms"]) for _, res, _ in stored)
    assert waits > 0  # two matches did ask one bot at once, and one of them waited
