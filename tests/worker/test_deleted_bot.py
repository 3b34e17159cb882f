"""A bot deleted while its match plays (issue 29, part A point 5): the attacker's report was
1.6 MB of requests reaching a bot after its ``DELETE``, while the README says its URL is never
called again.

A real Celery worker plays a Million Doubt match of a tournament between a victim bot and an
HTTP bot, over real Redis and PostgreSQL. The victim is reached either over HTTP (an SDK server
on 127.0.0.1) or through a connection it opened to a real gateway (the SDK's client). It holds
one decision (the request in flight); the owner deletes it through the API meanwhile; then it
answers. Once the ``DELETE`` has answered, nothing more reaches the victim (no request, no end
notice): its seat forfeits every later decision (reason ``withdrawn``, FAULT-3), the match
finishes, and it is stored once and replays."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from arena.runner.match import WITHDRAWN
from arena.runner.replay import replay
from arena.runner.semaphore import BotSemaphore
from arena.usecases.bots import credentials
from arena.withdrawals import WithdrawalCheck, flag_key, flag_withdrawn
from bots_sdk import connect
from bots_sdk.samples import SAMPLE_BOTS
from tests.gateway.test_gateway import RunningGateway
from tests.helpers import mark_bot_checked
from tests.worker.conftest import SwitchBot

#: The victim's decision (counted from the match's first) that it holds while it is deleted.
HOLD_AT = 12
#: Seconds the test waits for an observable state before failing (a hung worker, never a timing goal).
GUARD_S = 120


class GatedBot(SAMPLE_BOTS["greedy"]):
    """The greedy sample bot that counts every decision and notice that reaches it, and once
    armed holds its ``hold_at``-th decision until ``release`` is set (``holding`` set meanwhile)."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.decisions = self.notices = 0
        self.hold_at: int | None = None
        self.holding, self.release = threading.Event(), threading.Event()

    def arm(self, hold_at: int) -> None:
        with self.lock:
            self.decisions = self.notices = 0
            self.hold_at = hold_at

    def counts(self) -> tuple[int, int]:
        with self.lock:
            return self.decisions, self.notices

    def decide(self, request: Any) -> dict:
        with self.lock:
            self.decisions += 1
            hold = self.decisions == self.hold_at
        if hold:
            self.holding.set()
            assert self.release.wait(GUARD_S)
        return super().decide(request)

    def notice(self, message: Any) -> None:
        with self.lock:
            self.notices += 1
        super().notice(message)


@pytest.fixture
def gateway(arena, redis_url) -> Iterator[RunningGateway]:
    """A real gateway (this process, its own thread) authenticating bots from the arena's database."""

    def creds(bot_id: int):
        with arena.sessions() as s:
            return credentials(s, bot_id)

    g = RunningGateway(redis_url, creds)
    yield g
    g.close()


def _victim(arena, bots, transport: str, request) -> tuple[int, GatedBot, Any]:
    """Register the victim; returns its id, its bot and what serves it (to count raw posts)."""
    bot = GatedBot()
    if transport == "http":
        server = SwitchBot(bot)
        bots.append(server)
        return arena.register(server, ["million_doubt"], "victim"), bot, server
    r = arena.client.post(
        "/api/v1/bots",
        json={"name": "victim", "transport": "connect", "rulesets": ["million_doubt"]},
        headers=arena.owner,
    )
    assert r.status_code == 201, r.json
    mark_bot_checked(arena.sessions, r.json["id"])
    gw = request.getfixturevalue("gateway")
    conn = connect(bot, gw.url, bot_id=r.json["id"], secret=r.json["secret"], pool=1, background=True)
    request.addfinalizer(conn.stop)
    assert conn.wait_authenticated(timeout=GUARD_S)
    return r.json["id"], bot, conn


def _wait(condition, what: str, workers) -> None:
    deadline = time.monotonic() + GUARD_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not seen in {GUARD_S} s\n" + "\n".join(w.log()[-3000:] for w in workers))
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "connect"])
def test_a_deleted_bots_running_match_calls_it_no_more(arena, bots, celery_worker_factory, transport, request):
    opponent = SwitchBot(SAMPLE_BOTS["greedy"]())
    bots.append(opponent)
    opponent_id = arena.register(opponent, ["million_doubt"], "opponent")
    victim_id, victim, served = _victim(arena, bots, transport, request)
    victim.arm(HOLD_AT)
    posts_before = served.posts if transport == "http" else None
    tid = arena.create(
        "million_doubt",
        [opponent_id, victim_id],
        games_per_pairing=8,
        time_rules={"initial": 60.0, "increment": 10.0, "cap": 60.0},  # the hold costs no time-out
    )
    worker = celery_worker_factory(database_url=arena.database_url)
    arena.start(tid)
    assert victim.holding.wait(GUARD_S), worker.log()[-3000:]

    r = arena.client.delete(f"/api/v1/bots/{victim_id}", headers=arena.owner)
    assert r.status_code == 204, r.json
    at_ack = victim.counts()
    posts_at_ack = served.posts if transport == "http" else None
    victim.release.set()  # the request in flight is answered

    t = arena.wait_finished(tid, workers=[worker])
    assert t["status"] == "finished"
    assert victim.counts() == at_ack == (HOLD_AT, 1)  # after the DELETE: no request, no end notice
    if transport == "http":
        assert served.posts == posts_at_ack == posts_before + HOLD_AT + 1  # nothing reached its URL
    assert arena.counts(tid) == {"matches": 1, "results": 1, "logs": 1}  # stored once
    [(m, res, log)] = arena.stored(tid)
    assert m.status == "finished" and m.attempts == 1
    replay(log)
    player = [s.seat for s in m.seats if s.bot_id == victim_id][0]
    assert log["players"][player]["kind"] == transport
    exchanges = [ex for g in log["games"] for ex in g["exchanges"] if ex["player"] == player]
    assert len(exchanges) == HOLD_AT and all(ex["fault"] is None for ex in exchanges)  # the held one answered
    withdrawn_games = [
        g["index"]
        for g in log["games"]
        if any(a.get("forfeit") == WITHDRAWN and g["seats"][a["seat"]] == player for a in g["engine_log"]["actions"])
    ]
    played = [g["index"] for g in log["games"] if any(ex["player"] == player for ex in g["exchanges"])]
    # its seat forfeits from its first decision after the deletion to the last game (FAULT-3)
    assert len(log["games"]) == 8 and withdrawn_games == list(range(withdrawn_games[0], 8))
    assert withdrawn_games[0] in (played[-1], played[-1] + 1)  # (+1: the held answer ended its game)
    assert res.faults[player] == 0  # a withdrawal, not a fault of an answer


@pytest.mark.services
def test_a_flag_the_database_does_not_back_withdraws_nobody(redis_url, free_port):
    """The check itself on real Redis: a flag left by a database since reset (its bot ids came
    back) is ignored while it holds that token, a later deletion's new token is believed, a
    confirmation that fails believes the flag, and Redis away answers False (plays on)."""
    client = redis.Redis.from_url(redis_url)
    client.delete(flag_key(41), flag_key(42))
    deleted: set[int] = set()
    asked: list[int] = []

    def confirm(bot_id: int) -> bool:
        asked.append(bot_id)
        return bot_id in deleted

    check = WithdrawalCheck(client, {0: 41, 1: 42}, confirm)
    assert not check(0) and not check(1) and not check(2)  # no flag; player 2: a house bot
    flag_withdrawn(client, 41)  # a stale flag: bot 41 of this database is alive
    assert not check(0) and not check(0) and asked == [41]  # confirmed once per token
    deleted.add(41)
    flag_withdrawn(client, 41)  # now really deleted: a new token
    assert check(0) and check(0) and asked == [41, 41]
    failing = WithdrawalCheck(client, {1: 42}, lambda bot_id: 1 / 0)
    flag_withdrawn(client, 42)
    assert failing(1)  # the database away: the flag (set after a commit) is believed
    away = WithdrawalCheck(redis.Redis(port=free_port(), socket_connect_timeout=1), {0: 41})
    assert not away(0)
    client.delete(flag_key(41), flag_key(42))
    client.close()


class CountingConnection(redis.Connection):
    """A Redis connection that counts what it sends (a pipeline's commands are one send)."""

    sent = 0

    def send_packed_command(self, command, check_health=True):  # type: ignore[no-untyped-def]
        CountingConnection.sent += 1
        return super().send_packed_command(command, check_health)


@pytest.mark.services
def test_the_flag_is_read_with_the_requests_slot_in_one_call(redis_url):
    """The check made with each request's slot (``WithdrawalCheck.gate``, read by
    ``BotSemaphore.acquire(watch=...)``): the flag comes back from the cap's own script call,
    no round trip of its own; once it is found the gate bars the request and the check answers
    without reading; a slot handed over after a wait reads the flag when it is handed."""
    client = redis.Redis(connection_pool=redis.ConnectionPool.from_url(redis_url, connection_class=CountingConnection))
    client.delete(flag_key(46), flag_key(47))
    check = WithdrawalCheck(client, {0: 46, 1: 47}, confirm=lambda bot_id: True)
    gate, other = check.gate(0), check.gate(1)
    assert gate is not None and other is not None and check.gate(2) is None  # 2: a house bot's player
    assert gate.key == flag_key(46)
    sem = BotSemaphore(client, f"gate-test-{uuid.uuid4().hex}", 1, max_wait_s=GUARD_S)
    sem.release(sem.acquire(5.0, watch=gate.key)[0])  # the scripts loaded (a first call is three)

    before = CountingConnection.sent
    token, waited = sem.acquire(5.0, watch=gate.key)
    assert CountingConnection.sent - before == 1  # one round trip: the slot and the flag
    assert token is not None and waited == 0.0 and sem.watched is None
    assert not gate(sem.watched)
    before = CountingConnection.sent
    assert not check(0) and CountingConnection.sent == before  # gated: the check reads nothing

    flag_withdrawn(client, 46)  # deleted now: the next request's slot finds the flag
    token = sem.acquire(5.0, release=(sem.key, token), watch=gate.key)[0]
    assert token is not None and sem.watched is not None and gate(sem.watched)
    before = CountingConnection.sent
    assert check(0) and CountingConnection.sent == before  # kept: no read
    sem.release(token)

    # a request that waited for its slot: the flag is read once the slot is handed over
    holder = sem.acquire(5.0)[0]
    got: list[tuple[str | None, bytes | None]] = []
    waiter = threading.Thread(target=lambda: got.append((sem.acquire(5.0, watch=other.key)[0], sem.watched)))
    waiter.start()
    deadline = time.monotonic() + GUARD_S
    while sem.waiting() < 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    flag_withdrawn(client, 47)
    sem.release(holder)
    waiter.join(GUARD_S)
    [(handed, value)] = got
    assert handed is not None and value == client.get(flag_key(47)) and other(value)
    sem.release(handed)
    client.delete(flag_key(46), flag_key(47))
    client.close()
