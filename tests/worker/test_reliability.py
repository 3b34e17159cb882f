"""Reliability: a worker SIGKILLed in the middle of a match; its lease expires, the reaper
(``arena beat``, a real process) sends the match again ahead of the queue, a new worker
finishes the tournament with no resume call, and every match's result is stored exactly
once. The broker visibility timeout stays at its default (days): only the lease brings the
match back. Idempotent re-delivery."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from sqlalchemy import func, select

from arena.db.models import Match, MatchResult
from arena.delivery import play_and_store
from arena.runner.replay import replay
from bots_sdk.samples import SAMPLE_BOTS
from tests.worker.conftest import SwitchBot

TIME_RULES_S = {"initial": 1.0, "increment": 0.0, "cap": 1.0}


#: Short lease and reaper interval so the test does not wait the defaults (30 s, 10 s).
LEASE_ENV = {"ARENA_LEASE_S": "3", "ARENA_REAPER_INTERVAL_S": "1", "ARENA_LOST_AFTER_S": "3"}


def test_sigkill_mid_match_then_a_new_worker_finishes(arena, bots, celery_worker_factory, beat_factory):
    # Bots that think 20 ms per decision, so a match lasts about a second.
    for _i in range(4):
        bots.append(SwitchBot(SAMPLE_BOTS["greedy"](), mode="slow", sleep_s=0.02))
    ids = [arena.register(b, ["million_doubt"], f"k{i}") for i, b in enumerate(bots)]
    tid = arena.create("million_doubt", ids, games_per_pairing=2, time_rules=TIME_RULES_S)
    # The default visibility timeout (days): the killed worker's match comes back by its lease.
    env = dict(LEASE_ENV)
    beat = beat_factory(database_url=arena.database_url, env=env)
    first = celery_worker_factory(concurrency=1, database_url=arena.database_url, env=env)
    arena.start(tid)
    deadline = time.monotonic() + 60
    while True:  # wait until a match is being played (a few decisions in), then kill
        with arena.sessions() as s:
            running = s.scalars(select(Match).where(Match.tournament_id == tid, Match.status == "running")).first()
        if running is not None and sum(b.decisions for b in bots) > 40:
            break
        assert time.monotonic() < deadline, first.log()[-3000:]
        time.sleep(0.02)
    first.kill()
    with arena.sessions() as s:
        killed = s.get(Match, running.id)
        had_result = s.get(MatchResult, running.id) is not None
    assert killed.status == "running" and not had_result
    assert not first.alive()

    second = celery_worker_factory(concurrency=1, database_url=arena.database_url, env=env)
    t = arena.wait_finished(tid, timeout_s=120, workers=[second, beat])
    assert t["status"] == "finished" and t["progress"] == {"finished": 6, "total": 6, "queued": 6}
    assert arena.counts(tid) == {"matches": 6, "results": 6, "logs": 6}
    stored = arena.stored(tid)
    for m, res, log in stored:
        assert replay(log)["scores"] == [round(x) for x in res.scores]
        assert m.attempts == (2 if m.id == running.id else 1)
        assert res.timings["attempt"] == m.attempts
        assert m.lease_owner is None and m.lease_expires_at is None
    assert f"expired lease(s) [{running.id}]" in beat.log()
    # Delivered once more (a duplicate message): nothing is played or stored again.
    before = sum(b.decisions for b in bots)
    assert play_and_store(running.id, arena.settings).startswith("skipped:")
    assert sum(b.decisions for b in bots) == before
    with arena.sessions() as s:
        assert s.scalar(select(func.count()).select_from(MatchResult).where(MatchResult.match_id == running.id)) == 1


def _pool_children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def test_sigkilled_pool_child_match_comes_back_ahead_of_the_queue(arena, bots, celery_worker_factory, beat_factory):
    """The main worker process survives; Celery rejects the lost task back to the broker, its
    new delivery finds the live lease and skips; after the lease expires the reaper sends the
    match to arena.priority, played before the matches still queued."""
    # bots slow enough (50 ms a decision, ~3 s a match) that matches are still queued when
    # the reaper sends the killed one back, whatever the machine's speed
    for _i in range(4):
        bots.append(SwitchBot(SAMPLE_BOTS["greedy"](), mode="slow", sleep_s=0.05))
    ids = [arena.register(b, ["million_doubt"], f"c{i}") for i, b in enumerate(bots)]
    tid = arena.create(
        "million_doubt", ids, games_per_pairing=2, time_rules={"initial": 10.0, "increment": 0.0, "cap": 10.0}
    )
    beat = beat_factory(database_url=arena.database_url, env=LEASE_ENV)
    worker = celery_worker_factory(concurrency=1, database_url=arena.database_url, env=LEASE_ENV)
    arena.start(tid)
    deadline = time.monotonic() + 60
    while True:
        with arena.sessions() as s:
            running = s.scalars(select(Match).where(Match.tournament_id == tid, Match.status == "running")).first()
        if running is not None and sum(b.decisions for b in bots) > 40:
            break
        assert time.monotonic() < deadline, worker.log()[-3000:]
        time.sleep(0.02)
    [child] = _pool_children(worker.pid)
    os.kill(child, signal.SIGKILL)
    t = arena.wait_finished(tid, timeout_s=120, workers=[worker, beat])
    assert worker.alive()
    assert t["status"] == "finished" and arena.counts(tid) == {"matches": 6, "results": 6, "logs": 6}
    stored = {m.id: (m, res) for m, res, _log in arena.stored(tid)}
    killed, res = stored[running.id]
    assert killed.attempts == 2 and res.timings["attempt"] == 2
    assert all(m.attempts == 1 for mid, (m, _r) in stored.items() if mid != running.id)
    assert f"expired lease(s) [{running.id}]" in beat.log()
    # ahead of the queue: matches queued behind it were still waiting when the reaped match
    # was claimed again (its started_at is its second claim), and were played after it
    later = [m for m, _r in stored.values() if m.index > killed.index]
    assert later and any(m.started_at > killed.started_at for m in later)
