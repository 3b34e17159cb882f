"""The Redis semaphore, the visibility-timeout formula, eager mode over SQLite, the
conformance game through the API (a bot must pass it to enter a tournament), ``arena worker``."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import redis
from click.testing import CliRunner

from arena.config import Settings
from arena.limits import (
    default_visibility_timeout,
    longest_match_seconds,
    visibility_timeout,
    visibility_timeout_for,
)
from arena.queue import RUN_MATCH_TASK
from arena.runner.replay import replay
from arena.runner.semaphore import BotSemaphore
from bots_sdk.bot import Bot
from bots_sdk.samples import SAMPLE_BOTS
from daifugo_arena.cli import main
from engine.timebank import TimeRules
from tests.worker.conftest import Arena, SwitchBot
from worker.celery_app import app


def test_semaphore_caps_holders_and_leases_expire(redis_url):
    client = redis.Redis.from_url(redis_url)
    name = uuid.uuid4().hex
    sem = BotSemaphore(client, name, limit=2, max_wait_s=30)
    inside, peak, lock = [0], [0], threading.Lock()

    def work():
        token, _ = sem.acquire(lease_s=10)
        assert token is not None
        with lock:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
        time.sleep(0.05)
        with lock:
            inside[0] -= 1
        sem.release(token)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 2 and sem.holders() == 0
    # A holder that never releases (a dead worker) frees its slot when its lease ends.
    a, b = sem.try_acquire(0.3), sem.try_acquire(0.3)
    assert a and b and sem.try_acquire(0.3) is None
    time.sleep(0.4)
    assert sem.try_acquire(0.3) is not None
    # The next acquire of a match gives back its previous slot, even of another bot, and
    # even when it finds no free slot itself (so two matches never wait on each other).
    other = BotSemaphore(client, name + "-other", limit=1)
    held = other.try_acquire(10)
    assert sem.try_acquire(10) is not None and sem.try_acquire(10, release=(other.key, held)) is None
    assert other.holders() == 0


@pytest.mark.slow
def test_semaphore_without_redis_lets_the_request_go(free_port, caplog):
    """Redis refusing connections: the request goes at once, without a slot, on the Redis
    error's path (not after waiting out ``max_wait_s`` in a queue that cannot answer)."""
    sem = BotSemaphore(redis.Redis(port=free_port(), socket_connect_timeout=1), "x", limit=1)
    with caplog.at_level("WARNING", logger="arena.semaphore"):
        token, waited = sem.acquire(lease_s=1)
    assert token is None and waited < sem.max_wait_s
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["bot semaphore arena:bot-sem:x unavailable"]


def test_visibility_timeout_formula():
    md = longest_match_seconds("million_doubt", TimeRules.from_seconds(1, 0, 1), 2)
    # 2 games x (min(2 seats x 1 s, 80 x 1 s) + 80 x 0.02 s) + 2 seats x 4 s
    assert md == pytest.approx(2 * (2 + 1.6) + 8)
    assert visibility_timeout_for(md) == 24
    assert longest_match_seconds("jdf", TimeRules()) == pytest.approx(12 * (4 * 60 + 250 * 10 + 5) + 16)
    assert default_visibility_timeout() == visibility_timeout_for(
        longest_match_seconds("trump_millionaire", TimeRules())
    )
    assert app.conf.broker_transport_options["visibility_timeout"] == visibility_timeout(Settings.from_env())
    assert visibility_timeout(Settings.from_env({"ARENA_VISIBILITY_TIMEOUT_S": "77"})) == 77
    app.loader.import_default_modules()  # what `celery -A worker.celery_app worker` does
    assert RUN_MATCH_TASK in app.tasks


class IllegalBot(Bot):
    name = "illegal"

    def decide(self, message):
        return {"type": "play", "cards": ["JK", "JK", "JK"]}


@pytest.mark.slow
def test_eager_mode_over_sqlite_and_the_conformance_gate(tmp_path, bots):
    from arena.db.migrate import upgrade

    url = f"sqlite:///{tmp_path / 'arena.db'}"
    upgrade(url)
    arena = Arena(url, "redis://127.0.0.1:1/0", eager=True, tmp_path=tmp_path)
    try:
        bots.extend(
            [SwitchBot(SAMPLE_BOTS["greedy"]()), SwitchBot(SAMPLE_BOTS["random"](seed=3)), SwitchBot(IllegalBot())]
        )
        ids = [arena.register(b, ["million_doubt", "jdf"], f"e{i}") for i, b in enumerate(bots[:2])]
        # A bot that passes the health check but plays illegally fails its conformance game.
        r = arena.client.post(
            "/api/v1/bots", json={"name": "bad", "url": bots[2].url, "rulesets": ["million_doubt"]}, headers=arena.owner
        )
        bots[2].set_secret(r.json["secret"])
        check = arena.check(r.json["id"])
        checked = arena.get(f"/bots/{r.json['id']}")
        assert check["status"] == "failed" and checked["status"] == "failed" and checked["last_check"]["health"]["ok"]
        conf = checked["last_check"]["conformance"][0]
        assert conf["ok"] is False and conf["faults"][0]["kind"] == "invalid_action"
        r = arena.client.post(
            "/api/v1/tournaments",
            headers=arena.org,
            json={"ruleset": "million_doubt", "participants": ids + [r.json["id"]]},
        )
        assert r.status_code == 422 and "has not passed its check" in r.json["message"]
        # Eager mode: starting plays every match in-process (here 2 players + 2 house bots, JDF).
        tid = arena.create(
            "jdf", ids, fill_with_house_bots=True, games_per_pairing=1, options={"sets": 1, "games_per_set": 2}
        )
        started = arena.start(tid)
        assert started["status"] == "finished" and started["progress"]["finished"] == started["progress"]["total"] == 4
        stored = arena.stored(tid)
        for _m, res, log in stored:
            assert replay(log)["scores"] == [round(x) for x in res.scores]
            kinds = [p["kind"] for p in log["players"]]
            assert kinds.count("local") == 2 and kinds.count("http") == 2  # house bots in-process
            assert res.timings["semaphore_bypassed"] == [0, 0, 0, 0]  # no broker, no cap
        rows = arena.get(f"/tournaments/{tid}/standings")["rows"]
        assert {r["house_bot"] for r in rows if r["house_bot"]} == {"house-1", "house-2"}
    finally:
        arena.close()


def test_arena_worker_command_is_registered():
    result = CliRunner().invoke(main, ["worker", "--help"])
    assert result.exit_code == 0 and "--concurrency" in result.output and "--queues" in result.output
    bad = CliRunner().invoke(main, ["worker", "--queues", " , "])
    assert bad.exit_code != 0 and "queue" in bad.output


def test_semaphore_serves_waiters_first_come_first_served(redis_url):
    """Waiters get a freed slot in the order they asked (RULES-free: the arena's own
    fairness between matches), each woken by the release, not by polling; a waiter
    whose worker died (it never retries) leaves the queue and blocks no one for long."""
    from arena.runner import semaphore as semaphore_mod

    client = redis.Redis.from_url(redis_url)
    sem = BotSemaphore(client, uuid.uuid4().hex, limit=1, max_wait_s=60)
    holder = sem.try_acquire(60)
    assert holder is not None and sem.try_acquire(60) is None  # full, and a try leaves no trace
    assert sem.waiting() == 0
    order: list[int] = []
    lock = threading.Lock()

    def wait_turn(i: int) -> None:
        token, _ = sem.acquire(60)
        assert token is not None
        with lock:
            order.append(i)
        sem.release(token)

    threads = []
    for i in range(6):
        t = threading.Thread(target=wait_turn, args=(i,))
        t.start()
        threads.append(t)
        deadline = time.monotonic() + 30
        while sem.waiting() < i + 1 and time.monotonic() < deadline:  # queued before the next asks
            time.sleep(0.005)
    assert sem.waiting() == 6
    # a newcomer's single try does not jump the queue even when a slot is free
    before = _evalsha_calls(client)
    extended = semaphore_mod.EXTENDER.extended
    sem.release(holder)
    for t in threads:
        t.join(60)
    assert order == [0, 1, 2, 3, 4, 5]
    assert sem.holders() == 0 and sem.waiting() == 0
    assert semaphore_mod.EXTENDER.drain(30)
    # 6 releases, each handing the slot over to the next waiter, which needs no script call
    # of its own to take it: its full lease is set by the extender thread, off its path (here
    # each waiter gave its slot back at once, so the lengthening found nothing to lengthen;
    # plus at most a few periodic retries on a slow machine, never a polling loop)
    assert semaphore_mod.EXTENDER.extended == extended
    assert 12 <= _evalsha_calls(client) - before <= 12 + 6
    # a dead waiter: queued through the script, then silent. Not seen lately when the slot
    # frees, it is only woken (nobody takes the slot for it) and leaves after the stale time
    holder = sem.try_acquire(60)
    assert sem._call("dead-waiter", 60, None, wait=True) is False and sem.waiting() == 1
    time.sleep(semaphore_mod.FRESH_WAITER_S + 0.2)
    sem.release(holder)
    assert sem.try_acquire(60) is None  # the dead ticket is still first in line
    time.sleep(semaphore_mod.WAITER_STALE_S - semaphore_mod.FRESH_WAITER_S + 0.5)
    token = sem.try_acquire(60)
    assert token is not None and sem.waiting() == 0
    sem.release(token)


def test_a_handed_over_slot_gets_its_full_lease_and_a_dead_waiters_ends_soon(redis_url, monkeypatch):
    """A release hands the freed slot to the next waiter with a short first lease, which the
    process's extender makes the request's full lease off the request's path; a waiter that
    died just before (seen lately, so handed the slot) keeps it only for the short lease."""
    from arena.runner import semaphore as semaphore_mod

    monkeypatch.setattr(semaphore_mod, "HANDOVER_LEASE_S", 1.0)
    client = redis.Redis.from_url(redis_url)
    sem = BotSemaphore(client, uuid.uuid4().hex, limit=1, max_wait_s=60)

    def lease_left(ticket: str) -> float:
        now = client.time()
        score = client.zscore(sem.key, ticket)
        return -1.0 if score is None else score - (now[0] + now[1] / 1e6)

    # a live waiter: handed the slot, then given the full lease of 60 s
    holder = sem.try_acquire(60)
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(sem.acquire(60)))
    waiter.start()
    deadline = time.monotonic() + 30
    while sem.waiting() < 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    extended = semaphore_mod.EXTENDER.extended
    sem.release(holder)
    waiter.join(30)
    token, _ = got[0]
    assert token is not None and client.zscore(sem.key, token) is not None
    deadline = time.monotonic() + 30
    while semaphore_mod.EXTENDER.extended == extended and time.monotonic() < deadline:
        time.sleep(0.01)
    assert 55 < lease_left(token) <= 60
    sem.release(token)
    # a slot given back before its lengthening (a quick answer): nothing to lengthen, no alarm;
    # one whose first lease ran out first (a process stalled past HANDOVER_LEASE_S): counted
    # and logged, not brought back to life
    lost = semaphore_mod.EXTENDER.lost
    semaphore_mod.EXTENDER.extend(client, sem.key, "given-back-ticket", 60)
    assert semaphore_mod.EXTENDER.drain(30) and semaphore_mod.EXTENDER.lost == lost
    monkeypatch.setattr(semaphore_mod, "HANDOVER_LEASE_S", -1.0)  # as if the extender ran late
    semaphore_mod.EXTENDER.extend(client, sem.key, "ended-ticket", 60)
    assert semaphore_mod.EXTENDER.drain(30)
    assert semaphore_mod.EXTENDER.lost == lost + 1 and client.zscore(sem.key, "ended-ticket") is None
    monkeypatch.setattr(semaphore_mod, "HANDOVER_LEASE_S", 1.0)
    # a waiter that died right after queuing: handed the slot, which frees after the short lease
    holder = sem.try_acquire(60)
    assert sem._call("dead-waiter", 60, None, wait=True) is False
    sem.release(holder)
    assert 0 < lease_left("dead-waiter") <= 1.0 and sem.waiting() == 0
    assert sem.try_acquire(60) is None
    time.sleep(1.2)
    token = sem.try_acquire(60)
    assert token is not None
    sem.release(token)


def test_semaphore_serves_the_lower_priority_first_and_ages_waiters(redis_url, monkeypatch):
    """Queue order (issue 15): a lower priority (a notice: NOTICE_PRIORITY) is served first,
    whatever the arrival order, equal ones first come first served; a request that has
    waited AGING_S moves to the front rank, so no request starves behind later ones."""
    from arena.runner import semaphore as semaphore_mod

    client = redis.Redis.from_url(redis_url)
    sem = BotSemaphore(client, uuid.uuid4().hex, limit=1, max_wait_s=60)
    holder = sem.try_acquire(60)
    order: list[int] = []
    lock = threading.Lock()

    def wait_turn(priority: int) -> None:
        token, _ = sem.acquire(60, priority=priority)
        with lock:
            order.append(priority)
        sem.release(token)

    def queue(priorities, aging_s=None):
        threads = []
        for p in priorities:
            t = threading.Thread(target=wait_turn, args=(p,))
            t.start()
            threads.append(t)
            deadline = time.monotonic() + 30
            while sem.waiting() < len(threads) and time.monotonic() < deadline:
                time.sleep(0.005)
        return threads

    threads = queue([50, 7, 30, 7, 0])
    sem.release(holder)
    for t in threads:
        t.join(60)
    assert order == [0, 7, 7, 30, 50]
    # aging: a request of priority 900 waits; after AGING_S it ranks
    # with priority 0, ahead of a later priority-1 request
    monkeypatch.setattr(semaphore_mod, "AGING_S", 0.3)
    order.clear()
    holder = sem.try_acquire(60)
    threads = queue([900])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # wait until the old request has been re-ranked
        scores = dict(client.zrange(sem.key + ":q", 0, -1, withscores=True))
        if len(scores) == 1 and min(scores.values()) < 1048576:
            break
        time.sleep(0.05)
    # then a request of priority 1 (on a loaded machine it may age too before the slot is
    # free: equal ranks then, and the earlier arrival first)
    threads += queue([1])
    sem.release(holder)
    for t in threads:
        t.join(60)
    assert order == [900, 1]


def _evalsha_calls(client: redis.Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))
