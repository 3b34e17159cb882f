"""A bot that closes its idle keep-alive connections (HTTP/1.1 allows it; Node's server does
after 5 s) pays nothing for it: no fault, only the real time of the request
(``arena.runner.players.HttpPlayer._send``, docs/protocol.md "Transport").

The bots are raw HTTP/1.1 servers on 127.0.0.1 so that each test decides exactly when a
connection closes: after an idle time (Node's ``keepAliveTimeout``), or just as a request
arrives on a reused connection (the race an idle timeout can lose). The attacker closes
every connection it is sent a request on: it is sent each request twice at most, and faulted.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from arena.runner.match import run_match
from arena.runner.players import HttpPlayer, LocalPlayer
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules
from tests.helpers import wait_until

DECISION = json.dumps({"type": "decision", "decision": "play"}).encode()


class ClosingBot:
    """An HTTP/1.1 keep-alive server answering ``{"type": "pass"}`` (or what ``answer`` makes of
    the request body), closing connections as told:

    - ``idle_s``: a connection idle that long is closed (Node's keepAliveTimeout);
    - ``drop_reused``: a request that arrives on a connection that already carried one is
      read, then its connection closed without an answer after ``hold_s`` seconds (a
      contestant holding the request before it closes);
    - ``drop_all``: every request's connection is closed that way;
    - ``close_after_answer``: each connection is closed right after its first answer, which
      does not say so (no ``Connection: close``): an idle timeout of zero.
    """

    def __init__(
        self, *, idle_s=None, drop_reused=False, drop_all=False, hold_s=0.0, answer=None, close_after_answer=False
    ):
        self.idle_s, self.drop_reused, self.drop_all, self.hold_s = idle_s, drop_reused, drop_all, hold_s
        self.close_after_answer = close_after_answer
        self.answer = answer or (lambda body: {"type": "pass"})
        self.connections = 0
        self.requests = 0
        self.idle_closed = 0
        self.lock = threading.Lock()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.sock.close()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _read_request(self, conn, buf):
        while b"\r\n\r\n" not in buf:
            data = conn.recv(65536)
            if not data:
                return None, b""
            buf += data
        head, buf = buf.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(buf) < length:
            data = conn.recv(65536)
            if not data:
                return None, b""
            buf += data
        return buf[:length], buf[length:]

    def _serve(self, conn):
        served = 0
        buf = b""
        with conn:
            while True:
                conn.settimeout(self.idle_s)
                try:
                    body, buf = self._read_request(conn, buf)
                except TimeoutError:  # idle too long: closed, as Node's server does
                    with self.lock:
                        self.idle_closed += 1
                    return
                if body is None:
                    return
                with self.lock:
                    self.requests += 1
                if self.drop_all or (self.drop_reused and served):
                    time.sleep(self.hold_s)  # the bot holds the request, then closes unanswered
                    return
                served += 1
                out = json.dumps(self.answer(body)).encode()
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(out) + out
                )
                if self.close_after_answer:
                    with self.lock:
                        self.idle_closed += 1
                    return


@pytest.fixture
def bots():
    made: list[ClosingBot] = []

    def make(**kw) -> ClosingBot:
        b = ClosingBot(**kw)
        made.append(b)
        return b

    yield make
    for b in made:
        b.close()


def test_a_connection_the_bot_closed_while_idle_costs_no_fault(bots):
    bot = bots(idle_s=0.05)
    player = HttpPlayer(bot.url, allow_private=True)
    try:
        first = player.decide(DECISION, 5.0)
        wait_until(lambda: bot.idle_closed == 1, "closed by the bot while idle")
        second = player.decide(DECISION, 5.0)
    finally:
        player.close()
    assert (first.fault, second.fault) == (None, None)
    assert second.action == {"type": "pass"}
    assert bot.connections == 2 and bot.requests == 2


def test_a_request_on_a_connection_the_bot_closes_as_it_arrives_is_sent_again_once(bots):
    bot = bots(drop_reused=True, hold_s=0.3)
    player = HttpPlayer(bot.url, allow_private=True)
    try:
        outcomes = [player.decide(DECISION, 5.0) for _ in range(3)]
    finally:
        player.close()
    assert [o.fault for o in outcomes] == [None, None, None]
    assert all(o.action == {"type": "pass"} for o in outcomes)
    assert player.resent == 2  # requests 2 and 3 went out on a reused connection the bot closed
    assert bot.connections == 3 and bot.requests == 5
    # the real time is charged, from the first send: the 0.3 s the bot held the request included
    assert all(o.elapsed_ms >= 300 for o in outcomes[1:])


def test_a_bot_that_closes_every_connection_gets_each_request_twice_at_most_and_a_fault(bots):
    bot = bots(drop_all=True)
    player = HttpPlayer(bot.url, allow_private=True)
    try:
        first = player.decide(DECISION, 5.0)  # on a new connection: no second try
        assert first.fault == "connection_error" and bot.requests == 1 and player.resent == 0
    finally:
        player.close()
    assert bot.connections == 1


def test_a_match_against_a_bot_closing_idle_connections_has_no_fault(bots):
    """A Million Doubt match of a sample bot served by a server that closes each connection
    once it has answered on it (an idle timeout of zero: the arena's next request finds the
    connection closed, or races the close): no fault."""
    greedy = SAMPLE_BOTS["greedy"](seed=3)

    def answer(body):
        from bots_sdk.bot import Request

        msg = json.loads(body)
        return greedy.decide(Request(msg)) if msg.get("type") == "decision" else {}

    bot = bots(close_after_answer=True, answer=answer)
    player = HttpPlayer(bot.url, allow_private=True)
    log = run_match(
        [player, LocalPlayer(SAMPLE_BOTS["random"](seed=4))],
        "million_doubt",
        {},
        seed=9,
        games=2,
        time_rules=TimeRules(60000, 10000, 60000),
        max_faults=1,
    )
    player.close()
    assert log["faults"] == []
    decisions = sum(1 for g in log["games"] for ex in g["exchanges"] if ex["player"] == 0)
    assert decisions > 10
    assert bot.connections >= decisions  # a new connection for every request
    wait_until(lambda: bot.idle_closed == bot.connections, "every connection closed by the bot")
