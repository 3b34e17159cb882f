"""Killing a gateway mid-decision: two real ``arena gateway`` processes on one Redis and one
database; the bot's connection to the first is killed with it, the bot reconnects to the
second, and the request the dead gateway held is answered there (arena.runner.connected).
Then the same in a whole tournament on the real stack (``dial_stack``): it finishes by itself,
every result stored once, no fault."""

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
from tests import children
from tests.gateway.conftest import DialStack, assert_binds_no_port
from tests.helpers import mark_bot_checked, wait_until

pytestmark = pytest.mark.services


def start_gateway(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = children.spawn(
        [sys.executable, "-m", "daifugo_arena.cli", "gateway", "--port", "0"],
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


# -- a gateway killed mid-tournament ------------------------------------------------------------------
#: A 10 s bank: a request held by a gateway that dies waits for the worker to see it dead (its
#: alive key, 3 s) and for the bot's reconnection to the other gateway (under a second).
KILL_TIME_RULES = {"initial": 10.0, "increment": 1.0, "cap": 10.0}


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="reads the sockets of a process in /proc (Linux)")
def test_a_gateway_killed_mid_tournament_the_tournament_finishes_with_every_result_once(dial_stack, tmp_path) -> None:
    """Two bots that dial out (``arena bots connect`` processes) and two HTTP bots play a round
    robin; bot A's only connection is to gateway 1 (its URLs: gateway 1, then 2), bot B has one
    connection to each. Bot A's first decision is held (tests/gateway/stallbot.py) and gateway 1
    is SIGKILLed while it holds it: both bots reconnect to gateway 2, the worker queues the held
    request again, and the tournament finishes by itself: every match once, no fault."""
    stack: DialStack = dial_stack(gateways=2)
    gw1, gw2 = stack.gateways
    marker = tmp_path / "stalled.json"
    players: dict[str, int] = {}
    bots: dict[str, Any] = {}
    for name, spec, urls, pool in (
        ("a", "tests.gateway.stallbot:StallOnce", [gw1.url, gw2.url], 1),
        ("b", "random", [gw2.url, gw1.url], 2),
    ):
        owner = stack.account(name)
        bot = stack.register(owner, f"dials-out-{name}", "million_doubt")
        env = {"ARENA_TEST_STALL_FILE": str(marker)}
        bots[name] = stack.connect_bot(bot["id"], bot["secret"], urls, pool=pool, spec=spec, env=env)
        stack.connections(owner, bot["id"], pool)
        players[name] = bot["id"]
    for i, sample in enumerate(("greedy", "heuristic")):
        players[sample] = stack.http_bot(stack.account(sample), sample, i, "million_doubt")
    for bot_id in players.values():  # the check is test_gateway_e2e's: here the bots are ready
        assert mark_bot_checked(stack.sessions, bot_id) == "ready"
    assert (gw1.health()["connections"], gw2.health()["connections"]) == (2, 1)  # A, B's second | B's first

    tid = stack.tournament("million_doubt", list(players.values()), KILL_TIME_RULES, games_per_pairing=2)
    stalled = wait_until(lambda: marker.exists() and json.loads(marker.read_text()), "bot A holding a request", 120)
    assert gw1.kill() == -signal.SIGKILL  # while bot A thinks on a request gateway 1 relayed

    final = stack.wait_finished(tid)
    assert final["status"] == "finished", final
    assert final["progress"]["finished"] == final["progress"]["total"] == 6
    matches = stack.matches(tid)
    stored = stack.stored(tid)
    assert len(matches) == stored["matches"] == stored["logs"] == 6
    assert stored["result_match_ids"] == sorted(m["id"] for m in matches)  # exactly one result per match
    assert stored["attempts"] == [1] * 6  # none played again
    logs = {m["id"]: stack.log(m["id"]) for m in matches}
    assert {i: log["faults"] for i, log in logs.items()} == {i: [] for i in logs}  # no fault recorded at all
    assert all(m["status"] == "finished" and set(m["result"]["faults"]) == {0} for m in matches)
    standings = stack.standings(tid)
    assert set(standings) == set(players.values()) and all(r["faults"] == 0 for r in standings.values())

    # the held decision (bot A's first in that match) was answered after the kill, over its new connection
    held = next(m for m in matches if f"arena-{m['id']}" == stalled["match_id"])
    seat = next(s["seat"] for s in held["seats"] if s["bot_id"] == players["a"])
    game = logs[held["id"]]["games"][stalled["game"]]
    first = min((x for x in game["exchanges"] if x["player"] == seat), key=lambda x: x["n"])
    assert first["unit"] == stalled["unit"] and first["fault"] is None and first["response"] is not None, first
    # both bots are back, on gateway 2 only
    assert (gw2.health()["connections"], gw2.health()["bots"]) == (3, 2)
    for name, connections in (("a", 1), ("b", 2)):
        assert bots[name].alive(), bots[name].log()
        assert_binds_no_port(bots[name].pid, {gw2.port}, connections)
    assert stack.worker.alive(), stack.worker.log()
