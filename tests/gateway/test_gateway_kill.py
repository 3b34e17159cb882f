"""Killing a gateway mid-decision: two real ``arena gateway`` processes on one Redis and one
database; the bot's connection to the first is killed with it, the bot reconnects to the
second, and the request the dead gateway held is answered there (arena.runner.connected)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import redis
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from arena import relay
from arena.accounts import create_account
from arena.db.migrate import upgrade
from arena.db.models import Bot
from arena.db.session import make_engine, make_sessionmaker
from arena.runner.connected import ConnectedPlayer
from arena.security import new_secret
from arena.status import BotStatus
from bots_sdk import wire

pytestmark = pytest.mark.services


def start_gateway(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "gateway", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "gateway <id> listening on ws://127.0.0.1:PORT/v1/bots"
    assert " listening on " in line, line
    return proc, line.rsplit(" ", 1)[1].strip()


def test_a_killed_gateways_request_is_answered_through_another(tmp_path: Path, redis_url: str) -> None:
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    env = {**os.environ, "ARENA_DATABASE_URL": db, "ARENA_BROKER_URL": redis_url, "ARENA_DATA_DIR": str(tmp_path)}
    os.environ["ARENA_DATA_DIR"] = str(tmp_path)  # the same encryption key as the gateways
    try:
        upgrade(db)
        sessions = make_sessionmaker(make_engine(db))
        secret = new_secret()
        with sessions() as s:
            owner, _ = create_account(s, "dials-out")
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
    client.delete(relay.request_key(bot_id))
    first, url1 = start_gateway(env)
    second, url2 = start_gateway(env)
    try:
        held = threading.Event()
        answered: list[str] = []

        def bot_side() -> None:
            for url in (url1, url2):  # the bot's reconnection goes to the other gateway
                with connect(url) as ws:
                    challenge = json.loads(ws.recv(timeout=10))
                    ws.send(wire.auth_frame(bot_id, secret, challenge["nonce"]))
                    assert json.loads(ws.recv(timeout=10))["type"] == "welcome"
                    try:
                        for raw in ws:
                            f = json.loads(raw)
                            if url == url1:
                                held.set()  # takes the request and thinks... until its gateway dies
                                continue
                            answered.append(f["body"]["match_id"])
                            ws.send(wire.answer_frame(f["id"], {"type": "pass"}))
                            return
                    except ConnectionClosed:
                        continue

        t = threading.Thread(target=bot_side, daemon=True)
        t.start()
        result: list[Any] = []
        p = ConnectedPlayer(bot_id, redis.Redis.from_url(redis_url), "nat", reconnect_s=15)
        d = threading.Thread(target=lambda: result.append(p.decide(b'{"match_id": "m-kill"}', 30.0)))
        d.start()
        assert held.wait(20)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        d.join(40)
        t.join(10)
        assert result and result[0].fault is None, result
        assert result[0].action == {"type": "pass"}
        assert answered == ["m-kill"]
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.terminate()
                proc.wait(10)
