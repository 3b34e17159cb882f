"""bots_sdk.connect (and the Node starter) against a test peer playing the gateway's side of
bots_sdk.wire on 127.0.0.1: real WebSocket connections, requests of real games.

The peer (``Peer``) is a ``websockets.asyncio.server`` on its own thread: it sends the
challenge, checks the auth frame with ``wire.auth_valid`` (a wrong one: close 4401), welcomes,
then sends the frames a test asks for and queues what the bot answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import queue
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from websockets.asyncio.server import ServerConnection, serve

import engine
from bots_sdk import protocol, wire
from bots_sdk.bot import Bot
from bots_sdk.connect import ConnectError, connect
from bots_sdk.samples import RandomBot
from daifugo_arena.cli import main
from engine.timebank import TimeRules
from tests import children
from tests.helpers import wait_until
from tests.starter_builds import command, skip_unless

REPO = Path(__file__).resolve().parents[2]
SECRET = "a" * 64
BOT_ID = 7
#: A safety net for waits on observable state (a wait normally ends far sooner).
WAIT_S = 30.0


class Peer:
    """The gateway's side of the wire protocol, on a thread of its own (see the module docstring).

    Attributes: url; welcomed (connections welcomed so far); refused (auth frames refused);
    answers (queue of parsed answer frames, any connection).
    """

    def __init__(self, secret: str = SECRET, bot_id: int = BOT_ID):
        self.secret, self.bot_id = secret, bot_id
        self.answers: queue.Queue[dict] = queue.Queue()
        self.welcomed = 0
        self.refused = 0
        self.auths: list[dict] = []
        self._conns: list[ServerConnection] = []
        self._cond = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self._ready.wait(WAIT_S)
        self.url = f"ws://127.0.0.1:{self.port}{wire.PATH}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def main():
            self._server = await serve(self._handler, "127.0.0.1", 0, max_size=wire.MAX_FRAME_BYTES)
            self.port = self._server.sockets[0].getsockname()[1]
            self._ready.set()
            await self._server.serve_forever()

        try:
            self._loop.run_until_complete(main())
        except asyncio.CancelledError:
            pass

    async def _handler(self, ws: ServerConnection) -> None:
        assert ws.request is not None and ws.request.path == wire.PATH
        nonce = secrets.token_hex(16)
        await ws.send(wire.challenge_frame(nonce))
        auth = json.loads(await ws.recv())
        with self._cond:
            self.auths.append(auth)
        if (
            auth.get("type") != "auth"
            or auth.get("bot_id") != self.bot_id
            or not wire.auth_valid(auth, [self.secret], nonce)
        ):
            with self._cond:
                self.refused += 1
                self._cond.notify_all()
            await ws.close(wire.CLOSE_AUTH_FAILED, "wrong signature")
            return
        # counted before the welcome goes out: a bot that saw its welcome finds it here
        with self._cond:
            self._conns.append(ws)
            self.welcomed += 1
            self._cond.notify_all()
        try:
            await ws.send(
                json.dumps(
                    {
                        "type": "welcome",
                        "bot_id": self.bot_id,
                        "name": "test-bot",
                        "connection": secrets.token_hex(4),
                        "max_frame_bytes": wire.MAX_FRAME_BYTES,
                    }
                )
            )
            async for text in ws:
                self.answers.put(json.loads(text))
        finally:
            with self._cond:
                if ws in self._conns:
                    self._conns.remove(ws)
                self._cond.notify_all()

    # -- for the tests (any thread) ----------------------------------------------------------------
    def wait(self, predicate) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), WAIT_S)

    @property
    def open_connections(self) -> int:
        with self._cond:
            return len(self._conns)

    def send(self, kind: str, rid: str, body: Any, connection: int = -1) -> None:
        """Send a request/notice/health frame on an open connection (default: the last welcomed)."""
        with self._cond:
            ws = self._conns[connection]
        text = wire.frame(kind, rid, protocol.dumps(body))
        asyncio.run_coroutine_threadsafe(ws.send(text), self._loop).result(WAIT_S)

    def drop(self) -> None:
        """Close every open connection abruptly (no closing handshake), as a crashed gateway."""
        with self._cond:
            conns = list(self._conns)
        for ws in conns:
            self._loop.call_soon_threadsafe(ws.transport.abort)

    def answer(self) -> dict:
        return self.answers.get(timeout=WAIT_S)

    def close(self) -> None:
        async def shut():
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(WAIT_S)
        self._thread.join(WAIT_S)


@pytest.fixture
def peer():
    p = Peer()
    yield p
    p.close()


def _request(ruleset: str = "million_doubt", seed: int = 11, match_id: str = "m1") -> tuple[engine.Game, dict]:
    g = engine.new_game(ruleset, {}, seed)
    d = g.decision()
    assert d is not None
    return g, protocol.build_request(g, d.seat, match_id=match_id, game=0, time_rules=TimeRules(), remaining_ms=60_000)


def _listening_inodes() -> set[str]:
    """Socket inodes of this process that are listening TCP sockets (/proc/net/tcp{,6}, state 0A)."""
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":
                listening.add(fields[9])
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[8:-1])
    return listening & mine


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp")
def test_authenticates_answers_a_real_request_and_binds_no_port(peer):
    before = _listening_inodes()
    assert before, "the peer's own listening socket is seen"
    with connect(RandomBot(seed=1), peer.url, bot_id=BOT_ID, secret=SECRET, background=True) as conn:
        assert conn.wait_authenticated(timeout=WAIT_S)
        assert conn.welcome is not None and conn.welcome["name"] == "test-bot"
        assert peer.auths[0]["signature"].startswith("sha256=") and SECRET not in json.dumps(peer.auths[0])
        assert _listening_inodes() == before  # the bot opened no listening socket
        g, req = _request()
        peer.send("request", "r1", req)
        ans = peer.answer()
        assert ans["id"] == "r1" and set(ans) == {"id", "body"}
        assert protocol.schema_errors("action-response", ans["body"]) == []
        g.apply(req["seat"], ans["body"])  # legal in the real game


def test_secret_from_the_environment_and_base_url(peer, monkeypatch):
    monkeypatch.setenv("ARENA_BOT_SECRET", SECRET)
    base = peer.url.removesuffix(wire.PATH)
    with connect(RandomBot(seed=1), base, bot_id=BOT_ID, background=True) as conn:
        assert conn.url == peer.url
        assert conn.wait_authenticated(timeout=WAIT_S)


def test_no_secret_is_refused_before_connecting(monkeypatch):
    monkeypatch.delenv("ARENA_BOT_SECRET", raising=False)
    with pytest.raises(ValueError, match="ARENA_BOT_SECRET"):
        connect(RandomBot(), "ws://127.0.0.1:9/", bot_id=BOT_ID, background=True)
    with pytest.raises(ValueError, match="ws://"):
        connect(RandomBot(), "http://127.0.0.1:9/", bot_id=BOT_ID, secret=SECRET, background=True)


def test_wrong_secret_is_closed_4401_and_the_client_stops(peer):
    conn = connect(RandomBot(), peer.url, bot_id=BOT_ID, secret="b" * 64, background=True, backoff_initial_s=0.01)
    with pytest.raises(ConnectError) as info:
        conn.join(timeout=WAIT_S)
    assert info.value.code == wire.CLOSE_AUTH_FAILED == 4401
    assert "authentication failed" in str(info.value) and "4401" in str(info.value)
    assert not conn.running and peer.refused == 1  # it did not try again
    assert not conn.wait_authenticated(timeout=0)


def test_wrong_secret_in_the_foreground_raises(peer):
    with pytest.raises(ConnectError, match="4401"):
        connect(RandomBot(), peer.url, bot_id=BOT_ID + 1, secret=SECRET)


class Gated(Bot):
    """Answers match ``slow`` only once ``gate`` is set; every other match at once."""

    name = "gated"

    def __init__(self):
        super().__init__()
        self.gate = threading.Event()
        self.started = threading.Event()
        self.notices: queue.Queue[dict] = queue.Queue()

    def decide(self, request):
        if request["match_id"] == "slow":
            self.started.set()
            assert self.gate.wait(WAIT_S)
        return super().decide(request)

    def notice(self, message):
        self.notices.put(dict(message))


def test_requests_in_flight_are_answered_out_of_order_health_and_notices(peer):
    bot = Gated()
    with connect(bot, peer.url, bot_id=BOT_ID, secret=SECRET, background=True) as conn:
        assert conn.wait_authenticated(timeout=WAIT_S)
        g_slow, slow = _request(match_id="slow")
        g_fast, fast = _request("jdf", seed=5, match_id="fast")
        peer.send("request", "slow-1", slow)
        assert bot.started.wait(WAIT_S)  # the slow decision is running
        peer.send("request", "fast-1", fast)
        first = peer.answer()
        assert first["id"] == "fast-1"  # answered while the slow one still runs
        g_fast.apply(fast["seat"], first["body"])

        peer.send("health", "h-1", {})
        health = peer.answer()
        assert health == {"id": "h-1", "body": {"name": "gated", "protocol": 1, "protocols": [1]}}

        notice = protocol.match_start_notice(
            match_id="fast", ruleset="jdf", options={}, time_rules=TimeRules(), players=["a", "b"], you=1, games=1
        )
        peer.send("notice", "n-1", notice)
        assert bot.notices.get(timeout=WAIT_S) == notice

        bot.gate.set()
        second = peer.answer()
        assert second["id"] == "slow-1"
        g_slow.apply(slow["seat"], second["body"])
        assert peer.answers.empty()  # the notice got no answer


def test_a_bot_that_raises_answers_an_error_at_once(peer):
    class Broken(RandomBot):
        def play(self, req):
            raise RuntimeError("boom")

    with connect(Broken(), peer.url, bot_id=BOT_ID, secret=SECRET, background=True) as conn:
        assert conn.wait_authenticated(timeout=WAIT_S)
        peer.send("request", "r1", _request()[1])
        assert peer.answer() == {"id": "r1", "body": {"error": "RuntimeError: boom"}}
        peer.send("request", "r2", {"protocol": 2, "type": "decision"})
        assert peer.answer() == {"id": "r2", "body": {"error": 'body must be a JSON object with "protocol": 1'}}


def test_reconnects_after_the_peer_drops_the_connection(peer):
    with connect(RandomBot(seed=2), peer.url, bot_id=BOT_ID, secret=SECRET, background=True, pool=2) as conn:
        assert conn.wait_authenticated(timeout=WAIT_S)
        assert peer.wait(lambda p: p.welcomed == 2 and p.open_connections == 2)
        peer.drop()
        assert conn.wait_welcomes(4, timeout=WAIT_S)  # both came back
        assert peer.wait(lambda p: p.open_connections == 2)
        assert conn.wait_authenticated(timeout=WAIT_S)
        g, req = _request("trump_millionaire", seed=3)
        peer.send("request", "after", req)
        ans = peer.answer()
        assert ans["id"] == "after"
        g.apply(req["seat"], ans["body"])
    assert peer.wait(lambda p: p.open_connections == 0)  # stop() closed them


def test_a_connection_that_served_is_dialled_again_at_once_then_backs_off(peer, monkeypatch, caplog):
    """Before, the backoff grew with every failed attempt and was never reset after a drop
    (``welcomed`` was lost when the session raised): a bot that had run a while waited 17-30 s
    before its first retry, past the arena's 15 s wait. Now a drop of a connection that served
    is followed by a reconnection at once; a failed attempt backs off from the start."""
    monkeypatch.setattr(sys.modules["bots_sdk.connect"], "SERVED_S", 0.0)
    caplog.set_level(logging.INFO, logger="bots_sdk.connect")
    # a backoff of a minute: a reconnection that waited for it would never come within WAIT_S
    with connect(
        RandomBot(seed=2), peer.url, bot_id=BOT_ID, secret=SECRET, background=True, backoff_initial_s=60
    ) as conn:
        assert conn.wait_authenticated(timeout=WAIT_S)
        for n in (2, 3):  # again and again: never a growing backoff after a connection served
            peer.drop()
            assert conn.wait_welcomes(n, timeout=WAIT_S)
        waits = [r.getMessage() for r in caplog.records if "reconnecting in" in r.getMessage()]
        assert waits and all(w.endswith("reconnecting in 0.0 s") for w in waits), waits


def test_several_gateways_each_connection_starts_at_its_own_and_reconnects_to_the_next(peer):
    other = Peer()
    try:
        urls = [peer.url, other.url]
        with connect(RandomBot(seed=4), urls, bot_id=BOT_ID, secret=SECRET, background=True, pool=2) as conn:
            assert conn.urls == urls and conn.url == peer.url
            assert conn.wait_authenticated(timeout=WAIT_S)
            assert peer.wait(lambda p: p.open_connections == 1) and other.wait(lambda p: p.open_connections == 1)
            other.close()  # a gateway dies: its connection comes back through the other
            assert peer.wait(lambda p: p.welcomed == 2 and p.open_connections == 2)
            assert conn.wait_authenticated(timeout=WAIT_S)
            peer.send("request", "after", _request()[1])
            assert peer.answer()["id"] == "after"
    finally:
        if other._thread.is_alive():
            other.close()


def test_a_gateway_that_refuses_connections_is_skipped_for_the_next(peer, free_port):
    dead = f"ws://127.0.0.1:{free_port()}{wire.PATH}"  # nothing listens there
    with connect(RandomBot(), [dead, peer.url], bot_id=BOT_ID, secret=SECRET, background=True) as conn:
        assert conn.wait_authenticated(timeout=WAIT_S)
        assert peer.welcomed == 1


# -- the Node starter -----------------------------------------------------------------------------


@skip_unless("node")
@pytest.mark.parametrize("ruleset", ["million_doubt", "jdf", "trump_millionaire"])
def test_node_starter_authenticates_and_answers_legally(peer, ruleset):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "ARENA_BOT_SECRET": SECRET,
        "ARENA_BOT_ID": str(BOT_ID),
        "ARENA_GATEWAY_URL": peer.url,
    }
    proc = children.spawn(command("node"), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert peer.wait(lambda p: p.welcomed == 1 or proc.poll() is not None), "the starter never authenticated"
        assert peer.welcomed == 1, proc.communicate(timeout=WAIT_S)[0]
        welcomed_at = time.monotonic()
        peer.send("health", "h", {})
        health = peer.answer()
        assert health["id"] == "h" and protocol.schema_errors("health", health["body"]) == []
        g = engine.new_game(ruleset, {}, 21)
        for n in range(30):  # decisions of a real game, every one answered legally
            d = g.decision()
            if d is None:
                break
            req = protocol.build_request(
                g, d.seat, match_id="node", game=0, time_rules=TimeRules(), remaining_ms=60_000
            )
            peer.send("request", f"r{n}", req)
            ans = peer.answer()
            assert ans["id"] == f"r{n}"
            assert protocol.schema_errors("action-response", ans["body"]) == []
            g.apply(d.seat, ans["body"])
        # a dropped connection that served (over a second, SERVED_MS): the starter comes back at once
        wait_until(lambda: time.monotonic() - welcomed_at > 1.2, "the connection serving over a second")
        peer.drop()
        assert peer.wait(lambda p: p.welcomed == 2 and p.open_connections == 1)
        proc.terminate()
        out = proc.communicate(timeout=WAIT_S)[0]
        assert "reconnecting in 0.0 s" in out, out
    finally:
        proc.terminate()
        proc.wait(WAIT_S)


# -- the CLI and the docs ---------------------------------------------------------------------------
def test_cli_refuses_without_a_secret_and_reports_a_fatal_close(peer, monkeypatch):
    runner = CliRunner()
    monkeypatch.delenv("ARENA_BOT_SECRET", raising=False)
    monkeypatch.setenv("ARENA_GATEWAY_URL", peer.url)
    refused = runner.invoke(main, ["bots", "connect", "--bot-id", str(BOT_ID), "random"])
    assert refused.exit_code == 2 and "ARENA_BOT_SECRET" in refused.output
    assert peer.auths == []  # it never connected
    monkeypatch.setenv("ARENA_BOT_SECRET", "   ")
    assert runner.invoke(main, ["bots", "connect", "--bot-id", str(BOT_ID), "random"]).exit_code == 2

    monkeypatch.setenv("ARENA_BOT_SECRET", "c" * 64)  # the gateway URL from ARENA_GATEWAY_URL
    wrong = runner.invoke(main, ["bots", "connect", "--bot-id", str(BOT_ID), "random"])
    assert wrong.exit_code == 1
    assert "4401" in wrong.output and "authentication failed" in wrong.output
    assert peer.refused == 1

    bad_url = runner.invoke(main, ["bots", "connect", "--bot-id", "1", "--gateway", "http://x/", "random"])
    assert bad_url.exit_code == 2 and "--gateway" in bad_url.output
    # several gateways: repeated, or separated by spaces in ARENA_GATEWAY_URL; each one checked
    monkeypatch.setenv("ARENA_GATEWAY_URL", f"{peer.url} http://y/")
    bad_second = runner.invoke(main, ["bots", "connect", "--bot-id", "1", "random"])
    assert bad_second.exit_code == 2 and "'http://y/' is not a ws://" in bad_second.output
    monkeypatch.setenv("ARENA_GATEWAY_URL", f"{peer.url} {peer.url.removesuffix(wire.PATH)}")
    both = runner.invoke(main, ["bots", "connect", "--bot-id", str(BOT_ID), "random"])
    assert both.exit_code == 1 and f"connecting to {peer.url} {peer.url} " in both.output
    assert peer.refused == 2


def test_the_worked_example_of_the_protocol_doc_is_right():
    text = (REPO / "docs" / "protocol.md").read_text()
    section = text[text.index("## Bots that dial out") :]
    block = section[section.index("```\nsecret") + 4 : section.index("```", section.index("```\nsecret") + 4)]
    lines = dict(line.split(None, 1) for line in block.strip().splitlines())
    challenge, auth = json.loads(lines["challenge"]), json.loads(lines["auth"])
    assert lines["message"] == f"{auth['ts']}.{challenge['nonce']}"
    assert auth["signature"] == wire.auth_signature(lines["secret"], auth["ts"], challenge["nonce"])
    assert auth == json.loads(wire.auth_frame(auth["bot_id"], lines["secret"], challenge["nonce"], now=int(auth["ts"])))
    assert wire.auth_valid(auth, [lines["secret"]], challenge["nonce"], now=int(auth["ts"]))
    assert f"**{wire.MAX_FRAME_BYTES:,} bytes**" in section
    for code in wire.CLOSE_CODES:
        assert f"| {code} |" in section


def test_stop_during_a_handshake_with_a_silent_gateway():
    """A gateway that upgrades but never sends its challenge: stop() still ends the client."""
    accepted = threading.Event()
    loop = asyncio.new_event_loop()
    ready: queue.Queue[int] = queue.Queue()

    async def silent(ws: ServerConnection) -> None:
        accepted.set()
        await ws.wait_closed()

    done = asyncio.Event()

    async def main() -> None:
        async with serve(silent, "127.0.0.1", 0) as server:
            ready.put(server.sockets[0].getsockname()[1])
            await done.wait()

    thread = threading.Thread(target=lambda: loop.run_until_complete(main()), daemon=True)
    thread.start()
    port = ready.get(timeout=WAIT_S)
    conn = connect(RandomBot(), f"ws://127.0.0.1:{port}", bot_id=BOT_ID, secret=SECRET, background=True)
    assert accepted.wait(WAIT_S)
    conn.stop()
    assert conn.join(timeout=WAIT_S) and not conn.running and conn.error is None
    loop.call_soon_threadsafe(done.set)
    thread.join(WAIT_S)
