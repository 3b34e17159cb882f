"""Machines that fail under bots that dial out, each for real: a gateway process frozen
(SIGSTOP, not killed) while its bot thinks, the database a gateway reads freezing under it,
and Redis restarted empty in the middle of a decision. A bot must never pay for the arena's
machines: no fault, no connection closed for a protocol breach it did not commit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from arena import relay
from arena.accounts import create_account
from arena.db.migrate import upgrade
from arena.db.models import Bot
from arena.db.session import make_engine, make_sessionmaker
from arena.runner.connected import ConnectedPlayer
from arena.runner.players import Outcome
from arena.security import new_secret
from arena.status import BotStatus
from bots_sdk import wire
from tests.helpers import wait_until

pytestmark = pytest.mark.services


@dataclass
class Site:
    """A SQLite database with one bot that connects, and the environment of a gateway on it."""

    env: dict[str, str]
    bot_id: int
    secret: str
    sessions: Any


@pytest.fixture
def site(tmp_path: Path, redis_url: str) -> Site:
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    env = {**os.environ, "ARENA_DATABASE_URL": db, "ARENA_BROKER_URL": redis_url, "ARENA_DATA_DIR": str(tmp_path)}
    os.environ["ARENA_DATA_DIR"] = str(tmp_path)  # the same encryption key as the gateways
    try:
        upgrade(db)
        sessions = make_sessionmaker(make_engine(db))
        secret = new_secret()
        with sessions() as s:
            owner, _ = create_account(s, "outages")
            bot = Bot(
                owner_id=owner.id,
                name="nat",
                url="",
                transport="connect",
                rulesets=["million_doubt"],
                secret=secret,
                status=BotStatus.READY,
            )
            s.add(bot)
            s.commit()
            bot_id = bot.id
    finally:
        del os.environ["ARENA_DATA_DIR"]
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(relay.PREFIX + "*"):
        client.delete(key)
    return Site(env, bot_id, secret, sessions)


@pytest.fixture
def gateways() -> Iterator[list[subprocess.Popen[str]]]:
    """Gateway processes a test starts (:func:`start_gateway`); continued and stopped at teardown."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.terminate()
            proc.wait(15)


def start_gateway(env: dict[str, str], started: list[subprocess.Popen[str]]) -> tuple[subprocess.Popen[str], str, str]:
    """A real ``arena gateway --port 0``: the process, its id and its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "gateway", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    started.append(proc)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "gateway <id> listening on ws://127.0.0.1:PORT/v1/bots"
    assert " listening on " in line, line
    return proc, line.split()[1], line.rsplit(" ", 1)[1].strip()


class HeldBot:
    """A bot on one connection that records every frame and answers only when told to
    (:meth:`answer_all`: every request frame received so far, each copy, as the SDK would)."""

    def __init__(self, url: str, bot_id: int, secret: str):
        self.ws: ClientConnection = connect(url, max_size=wire.MAX_FRAME_BYTES)
        challenge = json.loads(self.ws.recv(timeout=10))
        self.ws.send(wire.auth_frame(bot_id, secret, challenge["nonce"]))
        assert json.loads(self.ws.recv(timeout=10))["type"] == "welcome"
        self.frames: list[dict] = []
        self.closed: list[int | None] = []
        self._answered = 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for raw in self.ws:
                self.frames.append(json.loads(raw))
        except ConnectionClosed as exc:
            self.closed.append(exc.rcvd.code if exc.rcvd is not None else None)

    def answer_all(self) -> None:
        for f in self.frames[self._answered :]:
            if f["type"] != "notice":
                self.ws.send(wire.answer_frame(f["id"], {"type": "pass", "match": f["body"]["match_id"]}))
        self._answered = len(self.frames)


def decide_in_thread(broker: str, bot_id: int, match_id: str, timeout_s: float) -> list[Outcome]:
    out: list[Outcome] = []
    player = ConnectedPlayer(bot_id, redis.Redis.from_url(broker), "nat", reconnect_s=timeout_s)
    body = json.dumps({"match_id": match_id}).encode()
    threading.Thread(target=lambda: out.append(player.decide(body, timeout_s)), daemon=True).start()
    return out


def test_a_frozen_gateways_request_is_not_sent_twice_on_one_connection(
    site: Site, redis_url: str, gateways: list[subprocess.Popen[str]]
) -> None:
    """The gateway holding a bot's request freezes (SIGSTOP) past its alive key: the worker
    queues the request again (for another gateway) and, seeing it nowhere, once more; the
    frozen gateway's waiting BLPOP takes the copies. Thawed, it must not send the bot the
    request it already holds a second time: the bot, answering each frame it gets as the
    SDK does, would send a second answer, and the gateway would close the connection for an
    answer to an unknown id (1008), faulting every other request on it."""
    proc, _, url = start_gateway(site.env, gateways)
    bot = HeldBot(url, site.bot_id, site.secret)
    outcome = decide_in_thread(redis_url, site.bot_id, "m-frozen", 60.0)
    wait_until(lambda: bot.frames, "the request delivered")
    rid = bot.frames[0]["id"]
    client = redis.Redis.from_url(redis_url)
    proc.send_signal(signal.SIGSTOP)
    # the worker saw the gateway dead and queued the request again (the frozen BLPOP took that
    # copy), then saw it nowhere and queued it once more: that copy waits in the list
    wait_until(lambda: client.llen(relay.request_key(site.bot_id)) >= 1, "the request queued again")
    proc.send_signal(signal.SIGCONT)
    wait_until(
        lambda: client.llen(relay.request_key(site.bot_id)) == 0 and client.exists(relay.held_key(rid)),
        "the thawed gateway took the copies and holds the request",
    )
    bot.answer_all()
    wait_until(lambda: outcome, "the decision answered")
    assert outcome[0].fault is None and outcome[0].action == {"type": "pass", "match": "m-frozen"}, outcome
    assert [f["id"] for f in bot.frames] == [rid], bot.frames
    # the connection is still open and serves the next decision
    after = decide_in_thread(redis_url, site.bot_id, "m-after", 60.0)
    wait_until(lambda: len(bot.frames) == 2, "the next request delivered")
    bot.answer_all()
    wait_until(lambda: after, "the next decision answered")
    assert after[0].fault is None and after[0].action == {"type": "pass", "match": "m-after"}, after
    assert bot.closed == []
