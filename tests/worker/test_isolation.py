"""One contestant cannot slow or spoil anyone else's matches (issue 24), through real
workers, Redis, PostgreSQL and HTTP bots on 127.0.0.1.

- A bot that holds its answers (legal: within its bank) gets at most
  ``ARENA_BOT_MAX_MATCHES`` matches claimed at once (arena.runner.claims): the other
  deliveries are sent again later, so the worker's other threads play a bystander
  tournament to its end while that bot still holds its answers.
- Bot checks run in a worker process of their own (``arena worker --checks``): a flood of
  checks whose bots hold their answers leaves the matches' threads free.
- A check has a total time limit, and an account a cap on its check time per hour.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis
from sqlalchemy import select

from api import create_app
from arena.conformance import run_check
from arena.db.models import BotCheck
from arena.inprocess import InProcessDispatcher
from arena.lifecycle import begin_check
from arena.runner.claims import Claim, EndpointClaims, Refused, defer_countdown_s
from arena.runner.semaphore import KEY_PREFIX, endpoint_key
from bots_sdk.samples import SAMPLE_BOTS
from tests import children
from tests.worker.conftest import FINISH_TIMEOUT_S, Arena, SwitchBot

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.services


def _wait(cond, what: str, timeout_s: float = FINISH_TIMEOUT_S, logs=()):
    deadline = time.monotonic() + timeout_s
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"not seen in {timeout_s} s: {what}\n" + "\n".join(str(x)[-3000:] for x in logs))
        time.sleep(0.05)


def test_a_bot_that_holds_its_answers_holds_no_more_than_its_claims(arena, bots, celery_worker_factory, redis_url):
    """Tournament A seats a bot that holds every decision (within its 60 s bank) in 3 of its
    6 matches; the worker has 3 threads, each endpoint serves 1 request at a time and holds
    at most 2 matches claimed (``ARENA_BOT_MAX_CONCURRENCY=1``, ``ARENA_BOT_MAX_MATCHES=2``):
    that bot gets 2 matches claimed, never 3, and its third is sent again later. While it
    holds its first answer, tournament B (honest bots only, started after A) is played to
    its end on the thread left; then the bot answers and A finishes. Every match is stored
    once and played once; B's bots have no fault."""
    slow = SwitchBot(SAMPLE_BOTS["greedy"]())
    honest = [SwitchBot(SAMPLE_BOTS["greedy"]()) for _ in range(3)]
    bots.extend([slow, *honest])
    slow_id = arena.register(slow, ["million_doubt"], "holder")
    ids = [arena.register(b, ["million_doubt"], f"h{i}") for i, b in enumerate(honest)]
    slow.mode = "gate"
    slow.decisions = slow.max_in_flight = 0
    long_bank = {"initial": 60.0, "increment": 1.0, "cap": 60.0}
    a = arena.create("million_doubt", [slow_id, *ids], games_per_pairing=2, time_rules=long_bank)
    b = arena.create("million_doubt", ids, games_per_pairing=2)
    worker = celery_worker_factory(
        concurrency=3,
        pool="threads",
        database_url=arena.database_url,
        env={"ARENA_BOT_MAX_CONCURRENCY": "1", "ARENA_BOT_MAX_MATCHES": "2"},
    )
    claims = EndpointClaims(redis.Redis.from_url(redis_url), hard=2, limit=1, lease_s=30)
    arena.start(a)
    _wait(
        lambda: slow.in_flight >= 1 and claims.claimed(slow.url) == 2,
        "the holding bot asked its first decision, its second match waiting",
        logs=[worker.log()],
    )
    arena.start(b)
    done = arena.wait_finished(b, workers=[worker])
    assert not slow.gate.is_set() and slow.in_flight == 1  # it still holds its first answer
    assert claims.claimed(slow.url) == 2  # its third match was never claimed
    assert done["status"] == "finished"
    stored_b = arena.stored(b)
    assert len(stored_b) == 3
    assert all(res.faults == [0, 0] and m.attempts == 1 for m, res, _log in stored_b)
    assert "deferred: bot endpoint" in worker.log()  # A's third, sent again
    slow.gate.set()
    assert arena.wait_finished(a, workers=[worker])["status"] == "finished"
    stored_a = arena.stored(a)
    assert len(stored_a) == 6 and arena.counts(a) == {"matches": 6, "results": 6, "logs": 6}
    assert all(m.attempts == 1 for m, _res, _log in stored_a)
    assert claims.claimed(slow.url) == 0  # every claim given back


def _launcher(broker: str, db: str, log: Path, *args: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "ARENA_BROKER_URL": broker,
        "ARENA_DATABASE_URL": db,
        "ARENA_ALLOW_PRIVATE_BOT_URLS": "1",
        "ARENA_CELERY_EAGER": "0",
        "PYTHONPATH": str(REPO),
    }
    with open(log, "wb") as fh:
        return children.spawn(
            [
                sys.executable,
                "-m",
                "daifugo_arena.cli",
                "worker",
                "--pars",
                "0",
                *args,
                "--hostname",
                f"iso{uuid.uuid4().hex[:6]}@127.0.0.1",
            ],
            cwd=REPO,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_flood_of_slow_checks_leaves_the_matches_their_threads(pg_database, redis_url, bots, tmp_path):
    """``arena worker --processes 1 -c 2 --checks 2``: three accounts start six checks of
    bots that hold every decision (each check then lasts its bank, about 15 s); two run at a
    time (the check process's capacity). Meanwhile a tournament is played to its end on the
    match process, while two checks still run. No more than two checks ever ran at once.
    The broker is a Redis database of its own (no other test's checks)."""
    broker = redis_url.rsplit("/", 1)[0] + "/9"
    redis.Redis.from_url(broker).flushdb()
    arena = Arena(pg_database, broker, tmp_path=tmp_path)
    proc = None
    try:
        honest = [SwitchBot(SAMPLE_BOTS["greedy"]()) for _ in range(2)]
        holders = [SwitchBot(SAMPLE_BOTS["greedy"](), mode="gate") for _ in range(6)]
        bots.extend([*honest, *holders])
        ids = [arena.register(b, ["million_doubt"], f"h{i}") for i, b in enumerate(honest)]
        checks = []
        for i, h in enumerate(holders):
            if i % 2 == 0:
                tok = arena.client.post("/api/v1/accounts", json={"name": f"flood{i}-{uuid.uuid4().hex[:4]}"})
                owner = {"Authorization": f"Bearer {tok.json['token']}"}
            r = arena.client.post(
                "/api/v1/bots", json={"name": f"slow{i}", "url": h.url, "rulesets": ["million_doubt"]}, headers=owner
            )
            assert r.status_code == 201, r.json
            h.set_secret(r.json["secret"])
            c = arena.client.post(f"/api/v1/bots/{r.json['id']}/check", headers=owner)
            assert c.status_code == 202, c.json
            checks.append(c.json["id"])
        log = tmp_path / "launcher.log"
        proc = _launcher(broker, pg_database, log, "--processes", "1", "-c", "2", "--checks", "2")

        def rows() -> list[BotCheck]:
            with arena.sessions() as s:
                got = [s.get(BotCheck, c) for c in checks]
                s.expunge_all()
                return got

        def statuses() -> list[str]:
            return [c.status for c in rows()]

        _wait(
            lambda: statuses().count("running") == 2 and sum(h.in_flight for h in holders) >= 2,
            "two checks running, their bots holding decisions",
            logs=[log.read_text()],
        )
        tid = arena.create("million_doubt", ids, games_per_pairing=2)
        arena.start(tid)
        t = arena.wait_finished(tid)
        assert t["status"] == "finished"
        assert statuses().count("running") == 2  # the check process is still full
        ((m, res, _log),) = arena.stored(tid)
        assert res.faults == [0, 0] and m.attempts == 1
        for h in holders:
            h.gate.set()
        _wait(lambda: not {"queued", "running"} & set(statuses()), "every check ended", logs=[log.read_text()])
        ended = rows()
        assert {c.status for c in ended} <= {"passed", "failed"}  # the bot's verdict, never an error
        # never more than the check process's two at once (from their stored times)
        events = sorted(
            [(c.started_at, 1) for c in ended] + [(c.finished_at, -1) for c in ended], key=lambda e: (e[0], e[1])
        )
        running = most = 0
        for _when, step in events:
            running += step
            most = max(most, running)
        assert most == 2
    finally:
        if proc is not None:
            _stop(proc)
        arena.close()


def test_a_check_stops_at_its_time_limit(arena, bots):
    """A bot that thinks 0.4 s per decision, checked with a 2 s limit: the check fails, its
    error names the limit, and it stopped soon after it (within one decision's bank)."""
    thinker = SwitchBot(SAMPLE_BOTS["greedy"](), mode="slow", sleep_s=0.4)
    bots.append(thinker)
    r = arena.client.post(
        "/api/v1/bots", json={"name": "thinker", "url": thinker.url, "rulesets": ["million_doubt"]}, headers=arena.owner
    )
    thinker.set_secret(r.json["secret"])
    with arena.sessions() as s:  # queued as the API does, sent to no broker
        check_id = begin_check(s, r.json["id"]).id
    settings = dataclasses.replace(arena.settings, check_time_limit_s=2)
    run_check(check_id, settings)
    with arena.sessions() as s:
        check = s.get(BotCheck, check_id)
        assert check.status == "failed"
        game = check.result["conformance"][0]
        assert "time limit of 2 s" in game["error"]
        used = (check.finished_at - check.started_at).total_seconds()
        assert 2 <= used < 2 + 10 + 5  # the limit, plus at most one decision's 10 s bank


def test_an_account_that_used_its_check_time_waits(arena, bots):
    """With ``check_seconds_per_hour`` of 1, a second check of the account after a first one
    that ran over a second is refused 429 with a ``Retry-After`` within the hour."""

    b = SwitchBot(SAMPLE_BOTS["greedy"](), mode="slow", sleep_s=0.1)
    bots.append(b)
    eager = dataclasses.replace(arena.settings, celery_eager=True, check_seconds_per_hour=1)
    app = create_app(eager, engine=arena.engine, dispatcher=InProcessDispatcher(eager))
    client = app.test_client()
    r = client.post(
        "/api/v1/bots", json={"name": "c1", "url": b.url, "rulesets": ["million_doubt"]}, headers=arena.owner
    )
    b.set_secret(r.json["secret"])
    first = client.post(f"/api/v1/bots/{r.json['id']}/check", headers=arena.owner)
    assert first.status_code == 202 and first.json["status"] == "passed"
    with arena.sessions() as s:
        ran = s.scalars(select(BotCheck).where(BotCheck.id == first.json["id"])).one()
        assert (ran.finished_at - ran.started_at).total_seconds() >= 1
    again = client.post(f"/api/v1/bots/{r.json['id']}/check", headers=arena.owner)
    assert again.status_code == 429, again.json
    assert "in the last hour" in again.json["message"]
    assert 1 <= int(again.headers["Retry-After"]) <= 3600


def test_claims_are_given_back_and_renewed(redis_url):
    """The claim script with real Redis: all or nothing over a match's endpoints, the soft cap
    (4 x the cap) once twice the cap of requests wait, the hard cap, and release."""
    client = redis.Redis.from_url(redis_url)
    tag = uuid.uuid4().hex[:6]
    u1, u2 = f"http://{tag}-a.example:1/", f"http://{tag}-b.example:1/"
    claims = EndpointClaims(client, hard=6, limit=1, lease_s=30)
    first = claims.take(1, [u1, u2])
    assert isinstance(first, Claim) and len(first.keys) == 2
    more = [claims.take(m, [u1]) for m in (2, 3, 4)]
    assert all(isinstance(c, Claim) for c in more)
    assert claims.claimed(u1) == 4 and claims.claimed(u2) == 1
    queue = KEY_PREFIX + endpoint_key(u1) + ":q"
    client.zadd(queue, {"waiter-1": 1})  # one request waiting: not saturated yet
    fifth = claims.take(5, [u1])
    assert isinstance(fifth, Claim)
    client.zadd(queue, {"waiter-2": 2})  # two waiting (2 x the cap): saturated, at the soft cap
    refused = claims.take(6, [u2, u1])
    assert isinstance(refused, Refused) and refused.endpoint == 1 and refused.waiting == 2
    assert claims.claimed(u2) == 1  # nothing taken on u2 either
    client.delete(queue)
    sixth = claims.take(6, [u1])
    assert isinstance(sixth, Claim) and claims.claimed(u1) == 6
    hard = claims.take(7, [u1])
    assert isinstance(hard, Refused) and hard.waiting == -1
    claims.release(more[0])
    assert claims.claimed(u1) == 5
    assert claims.renew(first) and claims.claimed(u2) == 1
    for c in (first, *more[1:], fifth, sixth):
        claims.release(c)
    assert claims.claimed(u1) == claims.claimed(u2) == 0


def test_a_busy_endpoints_deferred_matches_come_back_at_a_bounded_rate(redis_url):
    """Each refusal counts the match in the endpoint's deferred set (once per match); a
    claim taken removes it; the countdown grows with that count (the attacker review: 208
    deferred matches cost 52 deliveries/s, half a core)."""
    client = redis.Redis.from_url(redis_url)
    url = f"http://{uuid.uuid4().hex[:6]}.example:1/"
    claims = EndpointClaims(client, hard=1, limit=1, lease_s=30)
    first = claims.take(1, [url])
    assert isinstance(first, Claim)
    counts = [claims.take(m, [url]).deferred for m in (2, 3, 4, 3)]  # type: ignore[union-attr]
    assert counts == [1, 2, 3, 3]
    claims.release(first)
    assert isinstance(claims.take(3, [url]), Claim)
    assert isinstance(claims.take(5, [url]), Refused) and claims.take(6, [url]).deferred == 4  # type: ignore[union-attr]
    assert all(0.125 <= defer_countdown_s(0) <= 0.375 for _ in range(50))
    assert all(1.0 <= defer_countdown_s(3) <= 3.0 for _ in range(50))
    assert all(10.0 <= defer_countdown_s(0, 200) <= 30.0 for _ in range(50))  # 200 / 10 a second
    assert all(defer_countdown_s(9, 10**6) <= 90.0 for _ in range(50))  # capped at 60 s +- 50 %
