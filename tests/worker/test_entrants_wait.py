"""Issue 42, point 2, through real workers, Redis, PostgreSQL and HTTP bots on 127.0.0.1: a
start that waits for an offline entrant, the owners' webhooks (signed, retried with backoff,
bounded, never in a match's way).

The webhook receiver is a real HTTP server on 127.0.0.1 (the arena's URL policy allows it only
because the test settings set ARENA_ALLOW_PRIVATE_BOT_URLS, as a private address must). Every
wait is on observable state (a request received, a status in the database), never a sleep."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from sqlalchemy import select

from api import create_app
from arena import notices, webhooks
from arena.db.models import Account
from arena.roll_call import HEALTH_FAILED
from bots_sdk import protocol
from bots_sdk.samples import SAMPLE_BOTS
from tests.helpers import wait_until
from tests.worker.conftest import FINISH_TIMEOUT_S, Arena, SwitchBot

pytestmark = pytest.mark.services


class Receiver:
    """An owner's webhook endpoint: records each POST (``events``: ``(headers, body, json)``),
    answers the next status of ``answers`` (then 200); while ``hold`` is clear it holds
    every request (a receiver that hangs)."""

    def __init__(self) -> None:
        self.events: list[tuple[dict[str, str], bytes, dict]] = []
        self.arrivals: list[float] = []  # monotonic seconds of each POST's arrival
        self.answers: list[int] = []
        self.hold = threading.Event()
        self.hold.set()
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the standard library's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.arrived:
                    receiver.arrivals.append(time.monotonic())
                    receiver.events.append((dict(self.headers), body, json.loads(body)))
                    status = receiver.answers.pop(0) if receiver.answers else 200
                    receiver.arrived.notify_all()
                receiver.hold.wait(60)
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:  # the arena gave up on a held answer (its deadline) and closed
                    pass

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, cond, what: str, timeout_s: float = FINISH_TIMEOUT_S):
        """The first recorded event ``cond(event_json)`` accepts; fails after ``timeout_s`` (a hang)."""
        deadline = time.monotonic() + timeout_s
        with self.arrived:
            while True:
                for _h, _b, ev in self.events:
                    if cond(ev):
                        return ev
                left = deadline - time.monotonic()
                if left <= 0:
                    pytest.fail(f"waited in vain for {what}; got {[e['event'] for _h, _b, e in self.events]}")
                self.arrived.wait(left)

    def close(self) -> None:
        self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _hook(arena: Arena, headers: dict, url: str) -> str:
    r = arena.client.put("/api/v1/accounts/me/webhook", json={"url": url}, headers=headers)
    assert r.status_code == 200, r.json
    assert r.json["url"] == url and set(r.json["events"]) == set(webhooks.EVENTS)
    return r.json["secret"]


def _signed(secret: str, headers: dict[str, str], body: bytes) -> None:
    protocol.verify(secret, body, headers)  # raises when the signature or its timestamp is wrong


def test_a_start_waits_for_an_offline_bot_and_its_owner_hears_of_it(arena, bots, receiver, celery_worker_factory):
    """The organizer is told who is offline; waiting, the tournament stays created (polled by
    a worker) until the bot answers its health check, then starts and is played out; the
    owner's webhook hears that its bot is awaited, of its checks, and of the end with its
    bot's place, each signed with the webhook's secret."""
    for i in range(3):
        bots.append(SwitchBot(SAMPLE_BOTS["greedy"](seed=i)))
    secret = _hook(arena, arena.owner, receiver.url)
    org_secret = _hook(arena, arena.org, receiver.url)
    ids = [arena.register(b, ["million_doubt"], f"w{i}") for i, b in enumerate(bots)]
    late = bots[2]
    late_port = int(late.url.rsplit(":", 1)[1].strip("/"))
    late.down()
    tid = arena.create("million_doubt", ids, games_per_pairing=2)

    r = arena.client.post(f"/api/v1/tournaments/{tid}/start", headers=arena.org)  # if_offline=ask
    assert r.status_code == 409, r.json
    assert [(a["bot_id"], a["reason"]) for a in r.json["details"]["offline"]] == [(ids[2], HEALTH_FAILED)]
    assert arena.get(f"/tournaments/{tid}")["status"] == "created"

    celery_worker_factory(database_url=arena.database_url, concurrency=2)
    r = arena.client.post(
        f"/api/v1/tournaments/{tid}/start", query_string={"if_offline": "wait", "wait_s": 600}, headers=arena.org
    )
    assert r.status_code == 202, r.json
    assert r.json["status"] == "created" and r.json["waiting_until"]
    assert [a["bot_id"] for a in r.json["roll_call"]["offline"]] == [ids[2]]

    offline = receiver.wait_for(lambda e: e["event"] == webhooks.ENTRANT_OFFLINE, "the entrant.offline event")
    assert offline["data"]["bot"]["id"] == ids[2] and offline["data"]["tournament"]["id"] == tid
    assert offline["data"]["reason"] == HEALTH_FAILED and offline["data"]["waiting_until"]
    headers, body, _ = next(e for e in receiver.events if e[2]["event"] == webhooks.ENTRANT_OFFLINE)
    assert headers[webhooks.EVENT_HEADER] == "entrant.offline" and headers[webhooks.DELIVERY_HEADER] == offline["id"]
    _signed(secret, headers, body)

    # the worker polls: two roll calls more, the tournament still waits (observable, no sleep)
    first = arena.get(f"/tournaments/{tid}")["roll_call"]["checked_at"]
    seen = {first}
    wait_until(
        lambda: seen.add(arena.get(f"/tournaments/{tid}")["roll_call"]["checked_at"]) or len(seen) >= 3,
        "two polls of the waiting start",
        FINISH_TIMEOUT_S,
    )
    t = arena.get(f"/tournaments/{tid}")
    assert t["status"] == "created" and [a["bot_id"] for a in t["roll_call"]["offline"]] == [ids[2]]

    # the bot comes back (same address): the next poll starts the tournament, played out
    back = SwitchBot(SAMPLE_BOTS["greedy"](seed=2), port=late_port)
    bots.append(back)
    back.set_secret(late.secret or "")
    wait_until(lambda: arena.get(f"/tournaments/{tid}")["status"] != "created", "the start", FINISH_TIMEOUT_S)
    done = arena.wait_finished(tid, FINISH_TIMEOUT_S)
    assert done["status"] == "finished" and done["roll_call"]["offline"] == [] and done["waiting_until"] is None
    assert done["progress"] == {"finished": 3, "total": 3, "queued": 3}
    assert back.decisions > 0  # it played

    ended = receiver.wait_for(
        lambda e: e["event"] == webhooks.TOURNAMENT_ENDED and e["data"]["bots"], "the owner's end event"
    )
    standings = {row["bot_id"]: row for row in arena.get(f"/tournaments/{tid}/standings")["rows"]}
    assert ended["data"]["tournament"] == {**ended["data"]["tournament"], "id": tid, "status": "finished"}
    assert {b["id"]: b["rank"] for b in ended["data"]["bots"]} == {i: standings[i]["rank"] for i in ids}
    org_end = receiver.wait_for(
        lambda e: e["event"] == webhooks.TOURNAMENT_ENDED and not e["data"]["bots"], "the organizer's end event"
    )
    headers, body, _ = next(e for e in receiver.events if e[2] is org_end)
    _signed(org_secret, headers, body)
    assert sum(1 for _h, _b, e in receiver.events if e["event"] == webhooks.TOURNAMENT_ENDED) == 2  # once each

    # a check run by the worker: its owner hears the outcome
    r = arena.client.post(f"/api/v1/bots/{ids[0]}/check", headers=arena.owner)
    assert r.status_code == 202, r.json
    check = receiver.wait_for(
        lambda e: e["event"] == webhooks.CHECK_FINISHED and e["data"]["check"]["id"] == r.json["id"], "check.finished"
    )
    assert check["data"]["check"]["status"] == "passed" and check["data"]["bot"]["id"] == ids[0]
    last = arena.client.get("/api/v1/accounts/me/webhook", headers=arena.owner).json["last_delivery"]
    assert last["ok"] and last["status"] == 200


def test_a_wait_is_bounded_the_bot_forfeits_when_time_is_up(arena, bots, celery_worker_factory):
    """Nobody comes back: when ``wait_s`` is up, the worker starts the tournament without the
    offline bot, whose games it forfeits; nothing hangs."""
    for i in range(2):
        bots.append(SwitchBot(SAMPLE_BOTS["greedy"](seed=i)))
    ids = [arena.register(b, ["million_doubt"], f"x{i}") for i, b in enumerate(bots)]
    bots[1].down()
    tid = arena.create("million_doubt", ids, games_per_pairing=2)
    celery_worker_factory(database_url=arena.database_url)
    r = arena.client.post(
        f"/api/v1/tournaments/{tid}/start", query_string={"if_offline": "wait", "wait_s": 2}, headers=arena.org
    )
    assert r.status_code == 202 and r.json["status"] == "created", r.json
    done = arena.wait_finished(tid, FINISH_TIMEOUT_S) if _started(arena, tid) else None
    assert done is not None and done["status"] == "finished"
    assert [a["bot_id"] for a in done["roll_call"]["offline"]] == [ids[1]]  # who it started without
    (match,) = arena.stored(tid)
    assert match[1].faults[list(s.bot_id for s in match[0].seats).index(ids[1])] > 0  # forfeited


def _started(arena: Arena, tid: int) -> bool:
    return bool(
        wait_until(lambda: arena.get(f"/tournaments/{tid}")["status"] != "created", "the start", FINISH_TIMEOUT_S)
    )


def test_webhooks_are_retried_with_backoff_bounded_and_never_hold_a_match(arena, bots, receiver, celery_worker_factory):
    """The receiver answers 503, then hangs: the delivery is tried again
    arena.webhooks.backoff_s(1) seconds later at the earliest; an attempt that gets no answer
    ends by arena.webhooks.TIMEOUT_S and is tried again later; meanwhile a tournament is
    played to its end. The workers are laid out as ``arena worker`` lays them out: the
    webhooks and checks in a process of their own, the matches in another."""
    for i in range(2):
        bots.append(SwitchBot(SAMPLE_BOTS["greedy"](seed=i)))
    r = arena.client.post("/api/v1/accounts", json={"name": "listener"})
    assert r.status_code == 201
    listener = {"Authorization": f"Bearer {r.json['token']}"}
    _hook(arena, listener, receiver.url)
    ids = [arena.register(b, ["million_doubt"], f"r{i}") for i, b in enumerate(bots)]
    tid = arena.create("million_doubt", ids, games_per_pairing=2)
    receiver.answers = [503]
    celery_worker_factory(database_url=arena.database_url, queues=("arena.webhooks", "arena.checks"), concurrency=2)
    celery_worker_factory(database_url=arena.database_url, queues=("arena.priority", "arena"))
    r = arena.client.post("/api/v1/accounts/me/webhook/test", headers=listener)
    assert r.status_code == 202, r.json
    ping_id = r.json["id"]
    receiver.wait_for(lambda e: e["id"] == ping_id, "the first ping")
    receiver.hold.clear()  # from now on the receiver hangs
    receiver.wait_for(
        lambda e: sum(1 for _h, _b, x in receiver.events if x["id"] == ping_id) >= 2,
        "the retried ping",
        timeout_s=webhooks.backoff_s(1) + FINISH_TIMEOUT_S,
    )
    gap = receiver.arrivals[1] - receiver.arrivals[0]
    assert gap >= webhooks.backoff_s(1) - 0.5, gap  # the backoff: never sooner
    arena.start(tid)  # while the receiver hangs and the side process waits on it
    done = arena.wait_finished(tid, FINISH_TIMEOUT_S)
    assert done["status"] == "finished"

    def last() -> dict | None:
        got = arena.client.get("/api/v1/accounts/me/webhook", headers=listener).json["last_delivery"]
        return got if got and got["id"] == ping_id and got["attempt"] == 2 else None

    delivery = wait_until(last, "the hung attempt's end", FINISH_TIMEOUT_S)
    assert not delivery["ok"] and f"within {webhooks.TIMEOUT_S:g} s" in delivery["error"] and not delivery["final"]
    receiver.hold.set()


def test_a_webhook_to_a_private_address_needs_the_setting(arena, receiver):
    """The URL policy of bots holds for webhooks, when set and at every delivery."""
    strict = create_app(dataclasses.replace(arena.settings, allow_private_bot_urls=False), engine=arena.engine)
    r = strict.test_client().put("/api/v1/accounts/me/webhook", json={"url": receiver.url}, headers=arena.owner)
    assert r.status_code == 422 and "url" in r.json["errors"]["json"], r.json
    _hook(arena, arena.owner, receiver.url)  # allowed where the setting is on
    with arena.sessions() as s:
        owner_id = s.scalar(select(Account.id).where(Account.webhook_url == receiver.url))
    message = webhooks.envelope(webhooks.PING, {}, event_id="p-1")
    got = notices.deliver(arena.sessions, owner_id, message, allow_private=False, attempt=1)
    assert got is not None and not got.ok and not got.retry and "policy" in got.error
    assert receiver.events == []  # nothing reached it
    with arena.sessions() as s:
        assert s.get(Account, owner_id).webhook_last["error"] == got.error
