"""Reliability: Redis restarted (empty, as it runs without persistence) in the middle of a
tournament. No finished result is lost or changed; the worker reconnects; the reaper
(``arena beat``) re-sends the queued matches the broker forgot, with no resume call, and the
tournament finishes with every result stored once.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable

import pytest
import redis
from sqlalchemy import select

from arena.db.models import MatchResult
from arena.runner.replay import replay
from bots_sdk.samples import SAMPLE_BOTS
from tests import children
from tests.worker.conftest import Arena, SwitchBot

TIME_RULES_S = {"initial": 2.0, "increment": 0.0, "cap": 2.0}


class PortTaken(Exception):
    """Another process serves the port a test's redis-server was to listen on."""


def _start_redis(port: int) -> subprocess.Popen:
    """A redis-server of this test on ``port`` (no persistence), once it answers. The server
    that answers must be this one (``INFO``'s process id): on a loaded machine other runs pick
    free ports too, and a ping answered by another run's Redis made a "restart" lose nothing.

    Raises:
        PortTaken: the port is served by another process (this one could not bind it).
    """
    exe = shutil.which("redis-server")
    if exe is None:  # infra/test.sh installs it; a bare pytest run may not have it
        pytest.fail("redis-server is not installed (run the tests through infra/test.sh)")
    proc = children.spawn(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + 10
    try:
        while True:
            try:
                if client.ping():
                    if int(client.info("server")["process_id"]) == proc.pid:
                        return proc
                    raise PortTaken(port)
            except redis.ConnectionError:
                pass
            if proc.poll() is not None:  # could not bind: taken by a process not answering Redis
                raise PortTaken(port)
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
    except BaseException:
        children.stop(proc)
        raise
    finally:
        client.close()


def start_redis_on_a_free_port(free_port: Callable[[], int]) -> tuple[int, subprocess.Popen]:
    """``(port, process)`` of a redis-server of this test on a free port (another one tried
    when a port is taken meanwhile, at most 5)."""
    for _ in range(4):
        port = free_port()
        try:
            return port, _start_redis(port)
        except PortTaken:
            continue
    port = free_port()
    return port, _start_redis(port)


LEASE_ENV = {"ARENA_LEASE_S": "3", "ARENA_REAPER_INTERVAL_S": "1", "ARENA_LOST_AFTER_S": "3"}


def test_redis_restart_loses_no_result_and_the_reaper_finishes(
    pg_database, tmp_path, free_port, bots, celery_worker_factory, beat_factory
):
    port, server = start_redis_on_a_free_port(free_port)
    broker = f"redis://127.0.0.1:{port}/0"
    arena = Arena(pg_database, broker, tmp_path=tmp_path)
    try:
        for _i in range(4):
            bots.append(SwitchBot(SAMPLE_BOTS["greedy"](), mode="slow", sleep_s=0.01))
        ids = [arena.register(b, ["million_doubt"], f"r{i}") for i, b in enumerate(bots)]
        tid = arena.create("million_doubt", ids, games_per_pairing=2, time_rules=TIME_RULES_S)
        worker = celery_worker_factory(concurrency=1, broker_url=broker, database_url=arena.database_url, env=LEASE_ENV)
        beat = beat_factory(database_url=arena.database_url, broker_url=broker, env=LEASE_ENV)
        arena.start(tid)
        deadline = time.monotonic() + 90
        while arena.counts(tid)["results"] < 2:
            assert time.monotonic() < deadline, worker.log()[-3000:]
            time.sleep(0.05)
        # Redis dies and comes back empty: the queued tasks are gone.
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        with arena.sessions() as s:
            before = {
                r.match_id: list(r.scores)
                for r in s.scalars(
                    select(MatchResult).join(MatchResult.match).where(MatchResult.match.has(tournament_id=tid))
                )
            }
        assert len(before) >= 2
        server = _start_redis(port)
        # the worker reconnects by itself; the reaper re-sends what the broker forgot
        t = arena.wait_finished(tid, timeout_s=120, workers=[worker, beat])
        assert t["status"] == "finished" and t["progress"] == {"finished": 6, "total": 6, "queued": 6}
        assert arena.counts(tid) == {"matches": 6, "results": 6, "logs": 6}
        stored = arena.stored(tid)
        for m, res, log in stored:
            assert replay(log)["scores"] == [round(x) for x in res.scores]
            if m.id in before:  # finished before the restart: unchanged
                assert list(res.scores) == before[m.id]
        # the queued matches came back through the reaper's broker check
        assert re.search(r"reaper: \d+ expired lease\(s\) \[[\d, ]*\], [1-9]\d* lost message", beat.log())
    finally:
        arena.close()
        if server.poll() is None:
            server.terminate()
            server.wait(10)


def test_resume_refuses_what_it_cannot_do(arena, bots):
    for _ in range(2):
        bots.append(SwitchBot(SAMPLE_BOTS["greedy"]()))
    ids = [arena.register(b, ["million_doubt"], f"q{i}") for i, b in enumerate(bots)]
    tid = arena.create("million_doubt", ids, games_per_pairing=2)
    r = arena.client.post(f"/api/v1/tournaments/{tid}/resume", headers=arena.org)
    assert r.status_code == 409 and "is created, not running" in r.json["message"]
    r = arena.client.post(f"/api/v1/tournaments/{tid}/resume?include_running=maybe", headers=arena.org)
    assert r.status_code == 422 and "include_running" in str(r.json)
    r = arena.client.post(f"/api/v1/tournaments/{tid}/resume", headers=arena.owner)
    assert r.status_code == 403
    r = arena.client.post("/api/v1/tournaments/999999/resume", headers=arena.org)
    assert r.status_code == 404
