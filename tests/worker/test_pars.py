"""Pars on real workers (docs/ranking.md): each stored match sends ``arena.compute_par`` to the
low-priority queue ``arena.par``; a par worker fills ``games[i].par`` and the log's pars once,
the log still verifies; a par task killed half-way is sent again by the reaper (``arena
beat``) and stored once, and two deliveries computing at once store once."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
from sqlalchemy import func, select

from arena import par
from arena.db.models import Match, MatchLog, MatchResult, Rating
from arena.runner.replay import replay
from arena.usecases.pars import fill_pars
from bots_sdk.samples import SAMPLE_BOTS
from tests.worker.conftest import SwitchBot

#: Seconds a test waits for the pars before it fails (a guard against a hung task only).
PARS_TIMEOUT_S = 180.0
#: Short reaper periods (the defaults are 10 s and 60 s).
REAPER_ENV = {"ARENA_REAPER_INTERVAL_S": "1", "ARENA_LOST_AFTER_S": "3"}


def _statuses(arena, tid: int) -> dict[int, str | None]:
    with arena.sessions() as s:
        rows = s.execute(
            select(MatchResult.match_id, MatchResult.par_status)
            .join(Match, Match.id == MatchResult.match_id)
            .where(Match.tournament_id == tid)
        ).all()
    return {mid: st for mid, st in rows}


def _wait_pars(arena, tid: int, workers) -> None:
    deadline = time.monotonic() + PARS_TIMEOUT_S
    while set(_statuses(arena, tid).values()) != {"done"}:
        if time.monotonic() > deadline:
            logs = "\n".join(w.log()[-3000:] for w in workers)
            pytest.fail(f"pars still pending after {PARS_TIMEOUT_S} s: {_statuses(arena, tid)}\n{logs}")
        time.sleep(0.2)


def _check_pars(arena, tid: int, rollouts: int) -> None:
    """Every stored game has the pars recomputed from its log, per player; the log records
    them and verifies."""
    for _m, res, log in arena.stored(tid):
        assert res.par_status == "done"
        weight = par.weight_of(log["ruleset"])
        assert log["par"] == {"baseline": par.BASELINE, "rollouts": rollouts, "weight": weight}
        pars = par.match_pars(log, rollouts)
        assert [g["par"] for g in log["games"]] == pars
        assert [g["par"] for g in res.games] == [par.player_pars(gm, p) for gm, p in zip(log["games"], pars)]
        assert [sorted(g) for g in res.games] == [["par", "places", "scores"]] * len(res.games)
        replay(log)  # the engine, the requests and the pars


def _tournament(arena, bots, ruleset: str, **kw) -> int:
    kinds = ["greedy", "heuristic", "random", "heuristic"]
    for i, k in enumerate(kinds):
        bots.append(SwitchBot(SAMPLE_BOTS[k](seed=i)))
    ids = [arena.register(b, [ruleset], f"p-{k}-{i}") for i, (b, k) in enumerate(zip(bots, kinds))]
    return arena.create(ruleset, ids, **kw)


def test_the_par_worker_fills_the_pars_after_each_match(arena, bots, celery_worker_factory):
    tid = _tournament(arena, bots, "million_doubt", games_per_pairing=2)
    env = {"ARENA_PAR_ROLLOUTS": "3"}
    matches = celery_worker_factory(concurrency=2, database_url=arena.database_url, env=env)
    pars = celery_worker_factory(concurrency=1, database_url=arena.database_url, env=env, queues=("arena.par",))
    arena.start(tid)
    arena.wait_finished(tid, workers=[matches, pars])
    _wait_pars(arena, tid, [matches, pars])
    assert arena.counts(tid) == {"matches": 6, "results": 6, "logs": 6}
    _check_pars(arena, tid, 3)
    assert "Task arena.compute_par[" in pars.log() and "Task arena.compute_par[" not in matches.log()
    with arena.sessions() as s:  # rebuilt once the last par was stored: every bot is rated
        assert s.scalar(select(func.count()).select_from(Rating).where(Rating.ruleset == "million_doubt")) == 4


def test_a_par_task_killed_half_way_is_sent_again_and_stored_once(arena, bots, celery_worker_factory, beat_factory):
    tid = _tournament(arena, bots, "trump_millionaire", games_per_pairing=1, options={"target_score": 20})
    matches = celery_worker_factory(concurrency=2, database_url=arena.database_url, env={"ARENA_PAR_ROLLOUTS": "2"})
    arena.start(tid)
    arena.wait_finished(tid, workers=[matches])
    assert set(_statuses(arena, tid).values()) == {"pending"}  # nobody consumes arena.par yet
    # a par worker that takes long (1024 rollouts a deal and rotation): killed while it computes
    slow = celery_worker_factory(
        concurrency=1, database_url=arena.database_url, env={"ARENA_PAR_ROLLOUTS": "1024"}, queues=("arena.par",)
    )
    deadline = time.monotonic() + 60
    while "Task arena.compute_par[" not in slow.log():  # received: it computes now
        assert time.monotonic() < deadline, slow.log()[-3000:]
        time.sleep(0.05)
    slow.kill()
    assert set(_statuses(arena, tid).values()) == {"pending"}
    # the reaper finds the pars still pending and their tasks gone from the broker's queue
    beat = beat_factory(database_url=arena.database_url, env=REAPER_ENV)
    again = celery_worker_factory(
        concurrency=1, database_url=arena.database_url, env={"ARENA_PAR_ROLLOUTS": "2"}, queues=("arena.par",)
    )
    _wait_pars(arena, tid, [again, beat])
    _check_pars(arena, tid, 2)
    assert "par task(s) sent again" in beat.log()
    # a late delivery (the killed worker's message, back after its visibility timeout) changes nothing
    with arena.sessions() as s:
        before = dict(s.execute(select(MatchLog.match_id, MatchLog.data)).all())
    for mid in before:
        assert fill_pars(mid, arena.settings).startswith("nothing to do")
    with arena.sessions() as s:
        assert dict(s.execute(select(MatchLog.match_id, MatchLog.data)).all()) == before


def test_two_deliveries_at_once_store_the_pars_once(arena, bots, celery_worker_factory):
    tid = _tournament(arena, bots, "jdf", games_per_pairing=1, options={"sets": 1, "games_per_set": 2})
    matches = celery_worker_factory(concurrency=2, database_url=arena.database_url, env={"ARENA_PAR_ROLLOUTS": "2"})
    arena.start(tid)
    arena.wait_finished(tid, workers=[matches])
    settings = dataclasses.replace(arena.settings, par_rollouts=2)
    lines: dict[int, list[str]] = {}
    for mid in _statuses(arena, tid):
        start = threading.Barrier(2)
        out: list[str] = []

        def deliver(mid=mid, start=start, out=out):
            start.wait()
            out.append(fill_pars(mid, settings))

        threads = [threading.Thread(target=deliver) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        lines[mid] = sorted(line.split()[0] for line in out)
    for mid, words in lines.items():  # one stores; the other finds them stored (or does nothing)
        assert words[1] == "stored" and words[0] in ("duplicate", "nothing"), (mid, words)
    _check_pars(arena, tid, 2)


def test_pars_off_or_impossible_leave_the_result_skipped(arena, bots, celery_worker_factory):
    """``ARENA_PAR_ROLLOUTS=0`` on the par worker, or a log the pars cannot be computed from:
    the result is ``skipped`` (never left ``pending`` for the reaper to send again forever)."""
    tid = _tournament(arena, bots, "million_doubt", games_per_pairing=2)
    matches = celery_worker_factory(concurrency=2, database_url=arena.database_url, env={"ARENA_PAR_ROLLOUTS": "2"})
    arena.start(tid)
    arena.wait_finished(tid, workers=[matches])
    first, second, *_ = sorted(_statuses(arena, tid))
    off = dataclasses.replace(arena.settings, par_rollouts=0)
    assert fill_pars(first, off) == f"skipped pars of match {first}: ARENA_PAR_ROLLOUTS is 0"
    with arena.sessions() as s:
        s.execute(MatchLog.__table__.update().where(MatchLog.match_id == second).values(data=b"not a log"))
        s.commit()
    on = dataclasses.replace(arena.settings, par_rollouts=2)
    assert fill_pars(second, on) == f"skipped pars of match {second}: internal error"
    statuses = _statuses(arena, tid)
    assert statuses[first] == statuses[second] == "skipped"
    assert fill_pars(first, on).startswith("nothing to do")
    with arena.sessions() as s:
        assert all("par" not in g for g in s.get(MatchResult, first).games)
