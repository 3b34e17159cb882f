"""Reliability: PostgreSQL stops while a real worker's matches are being played, for longer
than the worker retries the store (issue 24, point 4). Every played match is stored once,
from its first play (``attempts == 1``), never failed nor played again with new deals, and
the tournament finishes with complete standings:

- ``reaper``: the worker gives up after ``ARENA_STORE_RETRY_S`` (5 s, longer than the 3 s
  lease, so the leases have expired when the database comes back); the results wait in the
  Redis spool and the reaper (``arena beat``) stores them;
- ``worker``: the default retry window, and an outage longer than the old 31.5 s one (the
  worker has tried more than the old 7 times); the worker stores the results itself, with
  no beat running.

The outage is a real one: this test's own PostgreSQL server is stopped (a fast shutdown:
connections cut, new ones refused) and started again on its data (``infra/postgres.sh halt``
then ``start``).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from sqlalchemy import select

from arena import spool
from arena.db.migrate import upgrade
from arena.db.models import Match
from arena.runner.replay import replay
from bots_sdk.samples import SAMPLE_BOTS
from tests.worker.conftest import Arena, SwitchBot

pytestmark = pytest.mark.services
REPO = Path(__file__).resolve().parents[2]
#: A bank long enough that the bots held at the gate while the outage begins never time out.
TIME_RULES_S = {"initial": 30.0, "increment": 0.0, "cap": 30.0}
#: Guard of every wait on observable state (never a timed assertion).
GUARD_S = 180.0
THREADS = 4
#: The old store window: 7 attempts over 31.5 s; the worker case outlasts it.
OLD_ATTEMPTS = 7


class OwnPostgres:
    """A PostgreSQL server of this test only (``infra/postgres.sh`` on a free port)."""

    def __init__(self, port: int):
        self.env = {**os.environ, "ARENA_PG_PORT": str(port)}
        self.url = self._run("start").strip().splitlines()[-1]

    def _run(self, what: str) -> str:
        done = subprocess.run(
            ["bash", str(REPO / "infra" / "postgres.sh"), what],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def halt(self) -> None:
        self._run("halt")

    def start(self) -> None:
        self._run("start")

    def stop(self) -> None:
        self._run("stop")


@pytest.fixture
def own_postgres(free_port) -> Iterator[OwnPostgres]:
    pg = OwnPostgres(free_port())
    try:
        upgrade(pg.url)
        yield pg
    finally:
        pg.stop()


def _wait(what: str, ready, *logs) -> None:
    deadline = time.monotonic() + GUARD_S
    while not ready():
        if time.monotonic() > deadline:
            pytest.fail(f"not {what} after {GUARD_S} s:\n" + "\n".join(h.log()[-4000:] for h in logs))
        time.sleep(0.05)


def _ids_in(pattern: str, text: str) -> set[int]:
    """Match ids of every ``[1, 2]`` list captured by ``pattern``'s group in ``text``."""
    return {int(x) for group in re.findall(pattern, text) for x in re.findall(r"\d+", group)}


@pytest.mark.parametrize("stored_by", ["reaper", "worker"])
def test_a_database_outage_loses_no_played_match(
    own_postgres, redis_url, tmp_path, bots, celery_worker_factory, beat_factory, stored_by
):
    arena = Arena(own_postgres.url, redis_url, tmp_path=tmp_path)
    client = redis.Redis.from_url(redis_url)
    try:
        for _ in range(4):
            bots.append(SwitchBot(SAMPLE_BOTS["greedy"]()))
        ids = [arena.register(b, ["million_doubt"], f"o{i}") for i, b in enumerate(bots)]
        for b in bots:  # from now on every decision waits for the gate
            b.mode = "gate"
        tid = arena.create("million_doubt", ids, games_per_pairing=2, time_rules=TIME_RULES_S)
        env = {"ARENA_LEASE_S": "3", "ARENA_REAPER_INTERVAL_S": "1", "ARENA_LOST_AFTER_S": "3"}
        logs: list = []
        if stored_by == "reaper":
            env["ARENA_STORE_RETRY_S"] = "5"
            logs.append(beat_factory(database_url=arena.database_url, env=env))
        worker = celery_worker_factory(pool="threads", concurrency=THREADS, database_url=arena.database_url, env=env)
        logs.insert(0, worker)
        arena.start(tid)

        def playing() -> list[int]:
            with arena.sessions() as s:
                return list(s.scalars(select(Match.id).where(Match.tournament_id == tid, Match.status == "running")))

        # every worker thread holds a match, each held at its first decision
        _wait(
            "4 matches at their first decision",
            lambda: len(playing()) == THREADS and sum(b.in_flight for b in bots) == THREADS,
            *logs,
        )
        played = playing()
        own_postgres.halt()
        for b in bots:
            b.gate.set()
        # the matches play out; their stores fail; the results go to the spool
        _wait("spooled", lambda: all(client.exists(spool.key(m)) for m in played), *logs)
        if stored_by == "reaper":  # the worker gives up and leaves them to the reaper
            _wait("given up", lambda: all(f"spooled match {m} (attempt 1)" in worker.log() for m in played), *logs)
        else:  # the worker keeps trying, longer than it used to
            _wait(
                "retried more than 7 times",
                lambda: all(
                    f"match {m}: storing the result failed (OperationalError), attempt {OLD_ATTEMPTS + 1},"
                    in worker.log()
                    for m in played
                ),
                *logs,
            )
        own_postgres.start()

        t = arena.wait_finished(tid, timeout_s=GUARD_S, workers=logs)
        assert t["status"] == "finished" and t["progress"] == {"finished": 6, "total": 6, "queued": 6}
        assert arena.counts(tid) == {"matches": 6, "results": 6, "logs": 6}
        for m, res, log in arena.stored(tid):
            assert m.status == "finished" and m.failure is None
            assert m.attempts == 1 and res.timings["attempt"] == 1 and log["fairness"]["attempt"] == 1
            assert replay(log)["scores"] == [round(x) for x in res.scores]
        assert not any(client.exists(spool.key(m)) for m in played)
        rows = arena.get(f"/tournaments/{tid}/standings")["rows"]
        assert sorted(r["bot_id"] for r in rows) == sorted(ids)
        assert all(r["matches"] == 3 and r["games"] == 6 for r in rows), rows
        if stored_by == "reaper":
            beat = logs[1].log()
            assert _ids_in(r"spooled result\(s\) stored \[([\d, ]+)\]", beat) == set(played)
            assert not _ids_in(r"expired lease\(s\) \[([\d, ]+)\]", beat) & set(played)
        else:
            text = worker.log()
            assert all(f"stored match {m} (attempt 1)" in text for m in played)
            assert "spooled match" not in text
    finally:
        arena.close()
