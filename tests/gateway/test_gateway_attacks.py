"""Hostile bots against a real gateway (issue 27 point 7), each played for real over a socket:
floods of frames (answers to a late id, pings), a reader that never reads, a flood of
connections that never authenticate from one address, junk instead of the proof, the
per-account cap, and a bot answering another account's request. Each attack gets a clear
close code and fault, and a bot of another account keeps being answered all along.

The attacker is :class:`RawBot`: websockets' sans-I/O client on a plain socket, so it reads
only when the test says (a real client library answers pings and reads in the background).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.sync.client import connect
from websockets.uri import parse_uri

from arena import relay
from arena.db.migrate import upgrade
from arena.db.session import shared_sessions
from arena.runner.players import Outcome
from arena.usecases.bots import Credentials, credentials
from bots_sdk import wire
from daifugo_arena.gateway.frames import FLOOD_BURST
from tests.gateway.test_gateway import SECRETS, Answering, RunningGateway, authenticate, close_code, echo, player
from tests.helpers import create_pg_database, wait_until

pytestmark = pytest.mark.services

#: Seconds a socket read of the attacker may block before the test fails (a hang guard only).
READ_GUARD_S = 15.0


class RawBot:
    """A WebSocket client driven by hand: sends what it is told, reads only when asked.

    Args:
        url: the gateway's ``ws://`` URL.
        source: the local address to connect from (any of 127.0.0.0/8 reaches 127.0.0.1).
        rcvbuf: a small ``SO_RCVBUF`` (bytes) for a reader that never reads.
        forwarded_for: an ``X-Forwarded-For`` header to send.
    """

    def __init__(self, url: str, *, source: str = "127.0.0.1", rcvbuf: int | None = None, forwarded_for: str = ""):
        uri = parse_uri(url)
        self.proto = ClientProtocol(uri, max_size=None)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.bind((source, 0))
        self.sock.settimeout(READ_GUARD_S)
        self.sock.connect((uri.host, uri.port))
        request = self.proto.connect()
        if forwarded_for:
            request.headers["X-Forwarded-For"] = forwarded_for
        self.proto.send_request(request)
        self._flush()
        self._events: list[Any] = []
        #: frames received (pongs included), in order
        self.frames: list[Frame] = []
        response = self._next()
        assert isinstance(response, Response) and response.status_code == 101, response

    def _flush(self) -> None:
        for data in self.proto.data_to_send():
            if data:
                self.sock.sendall(data)

    def _next(self) -> Any:
        while not self._events:
            try:
                data = self.sock.recv(1 << 16)
            except ConnectionResetError:
                data = b""
            if data:
                self.proto.receive_data(data)
            else:
                self.proto.receive_eof()
            self._events += self.proto.events_received()
            try:
                self._flush()
            except OSError:
                pass
            if not data and not self._events:
                raise EOFError("the gateway closed the connection")
        event = self._events.pop(0)
        if isinstance(event, Frame):
            self.frames.append(event)
        return event

    def recv_json(self) -> dict:
        """The next text frame, parsed (pongs are skipped); EOFError once closed."""
        while True:
            event = self._next()
            if isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                return json.loads(event.data)
            if isinstance(event, Frame) and event.opcode is Opcode.CLOSE:
                raise EOFError("closed")

    def until_closed(self) -> tuple[int | None, str]:
        """Read everything until the connection ends: the close code and reason received (None: none)."""
        try:
            while True:
                self._next()
        except EOFError:
            pass
        rcvd = self.proto.close_rcvd
        return (rcvd.code, rcvd.reason) if rcvd is not None else (None, "")

    def frame_bytes(self, text: str | None = None, *, ping: bytes | None = None) -> bytes:
        """The bytes of one masked frame (a text frame, or a ping), without sending them."""
        if ping is not None:
            self.proto.send_ping(ping)
        else:
            assert text is not None
            self.proto.send_text(text.encode("utf-8"))
        return b"".join(self.proto.data_to_send())

    def send(self, data: bytes) -> bool:
        """Send raw bytes; False when the gateway cut the connection first."""
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def authenticate(self, bot_id: int, secret: str | None = None) -> dict:
        challenge = self.recv_json()
        assert challenge["type"] == "challenge"
        self.send(self.frame_bytes(wire.auth_frame(bot_id, secret or SECRETS[bot_id], challenge["nonce"])))
        welcome = self.recv_json()
        assert welcome["type"] == "welcome" and welcome["bot_id"] == bot_id, welcome
        return welcome

    def close(self) -> None:
        self.sock.close()


class Bystander:
    """Bot 8 (another account) on a connection of its own, asked decisions by a thread until
    :meth:`finish`: what an attack must cost nothing."""

    def __init__(self, url: str, broker: str, source: str = "127.0.0.1"):
        self.ws, _ = authenticate(url, 8, source_address=(source, 0))
        Answering(self.ws, echo)
        self.player = player(broker, 8)
        self.outcomes: list[tuple[int, Outcome]] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        wait_until(lambda: self.outcomes, "answered a first decision of the bystander")

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            self.outcomes.append((i, self.player.decide(json.dumps({"match_id": f"by-{i}"}).encode(), 10.0)))
            i += 1

    def finish(self) -> None:
        """Stop asking; every decision asked during the attack, and one after, was answered."""
        self._stop.set()
        self.thread.join(30)
        after = self.player.decide(b'{"match_id": "after"}', 10.0)
        assert after.fault is None and after.action == {"echo": "request", "match": "after"}, after
        for i, out in self.outcomes:
            assert out.fault is None and out.action == {"echo": "request", "match": f"by-{i}"}, (i, out)
        self.ws.close()


def decide_in_thread(broker: str, bot_id: int, body: bytes, timeout_s: float = 30.0) -> Callable[[], Outcome]:
    """Start a decision of ``bot_id`` in a thread; returns a function joining it for its outcome."""
    result: list[Outcome] = []
    t = threading.Thread(target=lambda: result.append(player(broker, bot_id).decide(body, timeout_s)), daemon=True)
    t.start()

    def outcome() -> Outcome:
        t.join(timeout_s + 15)
        assert result, "the decision never returned"
        return result[0]

    return outcome


@pytest.fixture
def start_gateway(broker: str) -> Iterator[Callable[..., RunningGateway]]:
    """``start(**Gateway options) -> RunningGateway`` (in a thread of this process); all closed at teardown."""
    running: list[RunningGateway] = []

    def start(**kw: Any) -> RunningGateway:
        running.append(RunningGateway(broker, **kw))
        return running[-1]

    yield start
    for g in running:
        g.close()


def test_a_flood_of_answers_to_a_late_id_is_cut_with_1008(start_gateway, broker: str) -> None:
    """Before: an answer to a late id (or a notice) was ignored every time, so a connection
    could send such frames forever (122,814 in 3 s, never closed). Now one is ignored, the
    second is "a second answer"."""
    gw = start_gateway()
    by = Bystander(gw.url, broker)
    attacker = RawBot(gw.url)
    attacker.authenticate(7)
    player(broker, 7).notify(b'{"notice": "game over"}')
    notice = attacker.recv_json()
    assert notice["type"] == "notice"
    outcome = decide_in_thread(broker, 7, b'{"match_id": "held"}')
    assert attacker.recv_json()["type"] == "request"  # held: never answered
    flood = attacker.frame_bytes(wire.answer_frame(notice["id"], {"ack": True})) * 1000
    attacker.send(flood)
    code, reason = attacker.until_closed()
    assert (code, reason) == (wire.CLOSE_PROTOCOL, "answer to an unknown request id")
    out = outcome()
    assert out.fault == "invalid_json" and "unknown request id" in out.detail, out
    by.finish()


def test_a_flood_of_pings_is_cut_with_1008_and_its_request_faults(start_gateway, broker: str) -> None:
    """Before: every ping was answered, read or not: 480,000 pings that the attacker never
    read left 51 MB of pongs in the gateway's memory in 5 s, and no limit was near."""
    gw = start_gateway()
    by = Bystander(gw.url, broker)
    attacker = RawBot(gw.url)
    attacker.authenticate(7)
    outcome = decide_in_thread(broker, 7, b'{"match_id": "held"}')
    assert attacker.recv_json()["type"] == "request"
    pings = 10_000
    attacker.send(attacker.frame_bytes(ping=b"p" * 120) * pings)  # never reads meanwhile
    code, reason = attacker.until_closed()
    assert code == wire.CLOSE_PROTOCOL and "flood" in reason, (code, reason)
    pongs = sum(f.opcode is Opcode.PONG for f in attacker.frames)
    assert FLOOD_BURST <= pongs < pings  # the burst, and what came in the same read, then nothing
    out = outcome()
    assert out.fault == "connection_error" and "flood of frames" in out.detail, out
    by.finish()


def test_pings_within_the_burst_are_answered(start_gateway) -> None:
    gw = start_gateway()
    with connect(gw.url) as ws:
        challenge = json.loads(ws.recv(timeout=5))
        ws.send(wire.auth_frame(7, SECRETS[7], challenge["nonce"]))
        assert json.loads(ws.recv(timeout=5))["type"] == "welcome"
        for _ in range(FLOOD_BURST - 1):  # a client's keep-alive pings (one each 20 s) never come near
            assert ws.ping().wait(5)
        assert ws.protocol.state.name == "OPEN"


def test_a_reader_that_never_reads_is_dropped_and_its_request_faults(start_gateway, broker: str) -> None:
    gw = start_gateway(send_timeout_s=1.0)
    by = Bystander(gw.url, broker)
    attacker = RawBot(gw.url, rcvbuf=4096)
    attacker.authenticate(7)
    outcome = decide_in_thread(broker, 7, b'{"match_id": "held"}')  # first: written at once, then in flight
    wait_until(lambda: any(c.pending for c in gw.gw.bots.get(7, [])), "the request held by the attacker's connection")
    notices = player(broker, 7)
    # more than the gateway's kernel send buffer can take (it grows up to tcp_wmem's maximum)
    wmem_max = int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    for i in range(wmem_max // 60_000 + 40):  # that the attacker never reads
        notices.notify(json.dumps({"n": i, "pad": "x" * 60_000}).encode())
    out = outcome()
    assert out.fault == "timeout" and "slow reader" in out.detail, out
    client = redis.Redis.from_url(broker)
    wait_until(lambda: relay.presence(client, [7])[7] == relay.OFFLINE, "the slow reader's presence gone")
    by.finish()
    attacker.close()


def test_connections_that_never_authenticate_are_capped_per_address(start_gateway, broker: str) -> None:
    """Before: the only cap was process-wide (``max_unauthenticated``), so one address holding
    all its places (each for the 5 s the proof may take, again and again) locked every bot
    out with 1013."""
    gw = start_gateway(max_unauthenticated=100, max_unauthenticated_per_address=4, auth_timeout_s=60.0)
    waiting = [RawBot(gw.url) for _ in range(4)]
    for w in waiting:
        assert w.recv_json()["type"] == "challenge"  # and never answered
    fifth = RawBot(gw.url)
    assert fifth.until_closed() == (1013, "too many connections waiting to authenticate from this address")
    # a bot from another address is let in and served meanwhile
    by = Bystander(gw.url, broker, source="127.0.0.2")
    by.finish()
    # a place of the attacker's address is free again once one of its connections is gone
    waiting.pop().close()
    wait_until(lambda: gw.gw.admission.waiting.get("127.0.0.1") == 3, "one place free for 127.0.0.1")
    again = RawBot(gw.url)
    assert again.recv_json()["type"] == "challenge"
    for w in [*waiting, again]:
        w.close()


@pytest.mark.parametrize("proxy_hops", [0, 1])
def test_the_per_address_cap_reads_x_forwarded_for_only_behind_trusted_proxies(start_gateway, proxy_hops: int) -> None:
    gw = start_gateway(max_unauthenticated_per_address=2, auth_timeout_s=60.0, proxy_hops=proxy_hops)
    held = [RawBot(gw.url, forwarded_for=f"198.51.100.9, 203.0.113.{i}") for i in (7, 7)]
    for w in held:
        assert w.recv_json()["type"] == "challenge"
    same = RawBot(gw.url, forwarded_for="203.0.113.7")
    other = RawBot(gw.url, forwarded_for="203.0.113.8")
    assert same.until_closed()[0] == 1013
    if proxy_hops:  # behind one proxy: 203.0.113.8 is another client
        assert other.recv_json()["type"] == "challenge"
    else:  # no proxy trusted: the header is the attacker's own words, the peer address counts
        assert other.until_closed()[0] == 1013
    for w in [*held, same, other]:
        w.close()


@pytest.mark.parametrize(
    ("proof", "code"),
    [
        (b"not json at all", wire.CLOSE_AUTH_FAILED),
        (b'{"type": "auth", "bot_id": 7}', wire.CLOSE_AUTH_FAILED),
        (b'{"type": "auth", "bot_id": "7", "ts": "1", "signature": "sha256=00"}', wire.CLOSE_AUTH_FAILED),
        (b"[" * 100_000, wire.CLOSE_TOO_BIG),
    ],
)
def test_junk_instead_of_the_proof_is_refused(start_gateway, proof: bytes, code: int) -> None:
    gw = start_gateway()
    attacker = RawBot(gw.url)
    assert attacker.recv_json()["type"] == "challenge"
    attacker.send(attacker.frame_bytes(proof.decode()))
    assert attacker.until_closed()[0] == code


def test_the_per_account_cap_counts_every_bot_of_the_account(start_gateway, broker: str) -> None:
    gw = start_gateway(max_per_bot=3, max_per_account=4)
    seven = [authenticate(gw.url, 7)[0] for _ in range(3)]
    ten = [authenticate(gw.url, 10)[0]]  # account 1's other bot: its fourth connection
    refused = connect(gw.url, legacy=True)
    refused.send(wire.auth_frame(10, SECRETS[10], json.loads(refused.recv(timeout=5))["nonce"]))
    assert close_code(refused) == wire.CLOSE_TOO_MANY
    assert refused.close_reason == "this account's bots already have 4 connections"
    eight = [authenticate(gw.url, 8)[0] for _ in range(3)]  # account 2: a cap of its own
    assert all(ws.protocol.state.name == "OPEN" for ws in eight)
    client = redis.Redis.from_url(broker)
    seven.pop().close()
    wait_until(lambda: relay.presence(client, [7])[7].connections == 2, "bot 7's closed connection released")
    ten.append(authenticate(gw.url, 10)[0])  # the account's place is free again
    assert {b: p.connections for b, p in relay.presence(client, [7, 10, 8]).items()} == {7: 2, 10: 2, 8: 3}
    for ws in seven + ten + eight:
        ws.close()


def test_an_answer_to_another_accounts_request_reaches_nobody(start_gateway, broker: str) -> None:
    """Even an attacker who learnt the id of another bot's request cannot answer it: the id was
    never sent on its connection (1008), and the owner's own answer is the one delivered."""
    gw = start_gateway()
    owner, _ = authenticate(gw.url, 7)
    got: list[dict] = []
    release = threading.Event()

    def hold(f: dict) -> str:
        got.append(f)
        release.wait(20)
        return wire.answer_frame(f["id"], {"type": "pass", "by": "owner"})

    Answering(owner, hold)
    attacker = RawBot(gw.url)
    attacker.authenticate(8)
    outcome = decide_in_thread(broker, 7, b'{"match_id": "owned"}')
    rid = wait_until(lambda: got and got[0]["id"], "the owner holding its request")
    attacker.send(attacker.frame_bytes(wire.answer_frame(rid, {"type": "pass", "by": "attacker"})))
    assert attacker.until_closed() == (wire.CLOSE_PROTOCOL, "answer to an unknown request id")
    release.set()
    out = outcome()
    assert out.fault is None and out.action == {"type": "pass", "by": "owner"}, out
    assert not [f for f in attacker.frames if f.opcode is Opcode.TEXT and b'"request"' in f.data]
    owner.close()


def test_a_connection_whose_secret_was_rotated_away_is_closed(start_gateway, broker: str) -> None:
    """A thief who learnt bot 7's secret connects as the bot. The owner rotates the secret
    twice (the leaked one is past the grace of the first rotation): the thief's connection,
    open all along, is closed with 4401 and gets no more of the bot's requests; the owner's
    connection, proved with the new secret, keeps them."""
    leaked, second, third = SECRETS[7], "secret-of-seven-2", "secret-of-seven-3"
    valid = {7: [leaked]}

    def creds(bot_id: int) -> Credentials | None:
        return Credentials(7, 1, "b#7", "connect", list(valid[7])) if bot_id == 7 else None

    gw = start_gateway(creds=creds, renew_s=0.05, credentials_ttl_s=0.0)
    thief = RawBot(gw.url)
    thief.authenticate(7)
    valid[7] = [second, leaked]  # rotated: the leaked secret is valid during the grace
    owner, _ = authenticate(gw.url, 7, second)
    Answering(owner, lambda f: wire.answer_frame(f["id"], {"type": "pass", "by": "owner"}))
    assert gw.gw.connections == 2
    valid[7] = [third, second]  # rotated again: the leaked secret is dead
    assert thief.until_closed() == (wire.CLOSE_AUTH_FAILED, "the secret this connection proved is no longer valid")
    out = decide_in_thread(broker, 7, b'{"match_id": "after"}')()
    assert out.fault is None and out.action == {"type": "pass", "by": "owner"}, out
    assert not [f for f in thief.frames if f.opcode is Opcode.TEXT and b'"request"' in f.data]
    assert owner.protocol.state.name == "OPEN"
    owner.close()


#: Answers that are JSON to a lenient reader, not to the strict one (arena.safejson): each is
#: the fault invalid_json over HTTP, for that decision only.
POISON = {
    "NaN": ('{"id":"%s","body":{"type":"pass","rate":NaN}}', "answer is not strict JSON: NaN is not JSON (RFC 8259)"),
    "an integer of 21 digits": (
        '{"id":"%s","body":{"type":"pass","rate":123456789012345678901}}',
        "answer is not strict JSON: an integer has more than 16 digits",
    ),
    "a duplicate key": ('{"id":"%s","body":{"type":"pass","type":"play"}}', "duplicate key"),
    "nesting 40 deep": ('{"id":"%s","body":{"x":' + "[" * 40 + "]" * 40 + "}}", "nests deeper than 32"),
    "a lone surrogate": ('{"id":"%s","body":{"x":"\\ud800"}}', "lone surrogate"),
    "1e400": ('{"id":"%s","body":{"x":1e400}}', "answer is not strict JSON"),
}


@pytest.mark.parametrize("poison", sorted(POISON))
def test_a_poisoned_answer_faults_its_decision_only_as_over_http(start_gateway, broker: str, poison: str) -> None:
    """A bot answers one of two requests in flight on its connection (two matches) with an
    answer that is JSON only to a lenient reader. Over HTTP that is the fault invalid_json for
    that decision and nothing else; through the gateway too: the other match's decision on the
    same connection is answered, and the connection stays open."""
    template, reason = POISON[poison]
    gw = start_gateway()
    bot = RawBot(gw.url)
    bot.authenticate(7)
    first = decide_in_thread(broker, 7, b'{"match_id": "poisoned"}')
    second = decide_in_thread(broker, 7, b'{"match_id": "other-match"}')
    frames = {(f := bot.recv_json())["body"]["match_id"]: f["id"] for _ in range(2)}
    bot.send(bot.frame_bytes(template % frames["poisoned"]))
    bad = first()
    assert bad.fault == "invalid_json" and reason in bad.detail, bad
    assert bad.received.startswith('{"id":"' + frames["poisoned"]), bad
    bot.send(bot.frame_bytes(wire.answer_frame(frames["other-match"], {"type": "pass"})))
    good = second()
    assert good.fault is None and good.action == {"type": "pass"}, good
    again = decide_in_thread(broker, 7, b'{"match_id": "next"}')
    bot.send(bot.frame_bytes(wire.answer_frame(bot.recv_json()["id"], {"type": "pass"})))
    assert again().action == {"type": "pass"}
    bot.close()


@pytest.mark.parametrize("bot_id", [2**31, 2**53])
def test_a_bot_id_no_bot_can_have_is_refused_without_asking_the_database(
    start_gateway, pg_url: str, bot_id: int
) -> None:
    """An auth frame naming a bot id over PostgreSQL's integer (the ids' column; longer ones
    are not read as JSON at all): asking the database for it fails (integer out of range), and
    the gateway said 1011, "the arena cannot check credentials now", and logged a warning,
    for each such frame. It is an unknown bot: 4401."""
    db = create_pg_database(pg_url, "ids")
    upgrade(db)

    def read(bid: int) -> Credentials | None:
        with shared_sessions(db)() as session:
            return credentials(session, bid)

    gw = start_gateway(creds=read)
    attacker = RawBot(gw.url)
    nonce = attacker.recv_json()["nonce"]
    attacker.send(attacker.frame_bytes(wire.auth_frame(bot_id, "guess", nonce)))
    assert attacker.until_closed() == (wire.CLOSE_AUTH_FAILED, "authentication failed (unknown bot or wrong signature)")
