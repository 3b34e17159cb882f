"""What a bot sends besides its body is bounded too (attacker review of issue 24).

The body cap (64 KiB) counted only the body. A bot could send, within its bank and with no
other fault, what the worker parses under the interpreter lock without limit: ``100
Continue`` answers back to back (4.1 s of CPU in a 5 s bank), chunks with 16 KB extensions,
or a valid answer padded to 64 KiB in one-byte chunks (1.3 s of CPU per decision, no fault at
all: a bystander tournament on the same worker process took 18 s instead of 3.7 s). Now a
decision reads at most :data:`MAX_BODY_PIECES` pieces and the body cap plus
:data:`WIRE_SLACK_BYTES` bytes on the wire; past either it is the fault ``body_too_large``,
at once. Honest answers (one write, or a few chunks) are untouched.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from arena.runner.players import MAX_BODY_BYTES, MAX_BODY_PIECES, WIRE_SLACK_BYTES, HttpPlayer
from bots_sdk.samples import SAMPLE_BOTS
from tests.worker.conftest import SwitchBot

PASS = b'{"type":"pass"}'
#: Generous bound of the CPU one decision may cost the worker (the attacks: 1.3-8 s).
CPU_BOUND_S = 0.5


def _read_request(conn: socket.socket) -> bool:
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return False
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    while len(rest) < length:
        data = conn.recv(65536)
        if not data:
            return False
        rest += data
    return True


class RawBot:
    """A bot on 127.0.0.1 answering every request with ``answer(conn)`` on a raw socket."""

    def __init__(self, answer: Callable[[socket.socket], None]):
        self.answer = answer
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while _read_request(conn):
                self.answer(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.sock.close()


def _flood(piece: bytes, head: bytes = b"") -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        conn.sendall(head)
        burst = piece * max(1, 65536 // len(piece))
        deadline = time.monotonic() + 30  # the player's bank ends long before
        while time.monotonic() < deadline:
            conn.sendall(burst)

    return answer


def _chunked(pieces: list[bytes]) -> Callable[[socket.socket], None]:
    frames = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"

    def answer(conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + frames
        )

    return answer


def _plain(body: bytes, extra_headers: bytes = b"") -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + extra_headers
            + b"Content-Length: %d\r\n\r\n" % len(body)
            + body
        )

    return answer


PADDED = PASS + b" " * (MAX_BODY_BYTES - 100 - len(PASS))  # a valid answer under the cap
ATTACKS = {
    "100 Continue back to back": _flood(b"HTTP/1.1 100 Continue\r\n\r\n"),
    "103 answers with 8 KB headers": _flood(b"HTTP/1.1 103 Early Hints\r\nLink: <" + b"a" * 8000 + b">\r\n\r\n"),
    "1-byte chunks with 16 KB extensions": _flood(
        b"1;" + b"x" * 16000 + b"\r\n \r\n", head=b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    ),
    "a valid answer in one-byte chunks": _chunked([PADDED[i : i + 1] for i in range(len(PADDED))]),
    "a valid answer after 120 KB of headers": _plain(PASS, b"X-Pad: y\r\n" * 12000),
}
HONEST = {
    "one write": _plain(PASS),
    "a 64 KiB body": _plain(PASS + b" " * (MAX_BODY_BYTES - len(PASS))),
    "a body in 64 chunks": _chunked([PADDED[i : i + 1024] for i in range(0, 64 * 1024 - 100, 1024)]),
    "1000 tiny chunks": _chunked([PASS] + [b" "] * (MAX_BODY_PIECES - 24)),
    "a few KB of headers": _plain(PASS, b"X-Pad: " + b"y" * 2000 + b"\r\n"),
}


@pytest.fixture
def raw_bots() -> Iterator[list[RawBot]]:
    servers: list[RawBot] = []
    yield servers
    for s in servers:
        s.close()


@pytest.mark.parametrize("name", list(ATTACKS))
def test_framing_floods_are_a_fault_at_once(name, raw_bots):
    bot = RawBot(ATTACKS[name])
    raw_bots.append(bot)
    player = HttpPlayer(bot.url, allow_private=True)
    try:
        cpu = time.thread_time()
        out = player.decide(b'{"type":"decision"}', 10.0)
        cpu = time.thread_time() - cpu
    finally:
        player.close()
    assert out.fault == "body_too_large", (out.fault, out.detail)
    assert ("pieces" in out.detail) or (f"over {MAX_BODY_BYTES + WIRE_SLACK_BYTES} bytes on the wire" in out.detail)
    assert out.elapsed_ms < 10_000  # not the bank's timeout: cut as soon as the budget was spent
    assert cpu < CPU_BOUND_S, cpu


@pytest.mark.parametrize("name", list(HONEST))
def test_honest_answers_pass_and_the_connection_is_reused(name, raw_bots):
    bot = RawBot(HONEST[name])
    raw_bots.append(bot)
    player = HttpPlayer(bot.url, allow_private=True)
    try:
        outs = [player.decide(b'{"type":"decision"}', 10.0) for _ in range(3)]
        connections = player.transport.backend.connections
    finally:
        player.close()
    assert [(o.fault, o.action) for o in outs] == [(None, {"type": "pass"})] * 3
    assert connections == 1  # the meter restarts per request: keep-alive answers never add up


class DribbleBot(SwitchBot):
    """A SwitchBot whose decision answers, once ``dribble`` is set, are its real (valid)
    answers padded with spaces to 60 KB and sent in one-byte chunks."""

    dribble = False
    dribbled = 0

    def wsgi(self, environ, start_response):
        if not self.dribble or environ["REQUEST_METHOD"] != "POST":
            return super().wsgi(environ, start_response)
        got: dict = {}

        def keep(status, headers, exc_info=None):
            got["status"] = status
            got["headers"] = [(k, v) for k, v in headers if k.lower() != "content-length"]

        body = b"".join(super().wsgi(environ, keep))
        start_response(got["status"], got["headers"])
        if not body.startswith(b'{"type"'):
            return [body]  # a notice's answer
        self.dribbled += 1
        padded = body + b" " * (60_000 - len(body))
        return (padded[i : i + 1] for i in range(len(padded)))  # waitress: one chunk per item


def test_a_dribbling_bot_faults_and_a_bystander_plays_clean(arena, bots, celery_worker_factory):
    """A real worker process plays the dribbler's tournament and a bystander's at once: the
    dribbler's answers are ``body_too_large`` faults (three, then FAULT-3), the bystanders
    get no fault and every match is played once."""
    bystanders = [SwitchBot(SAMPLE_BOTS["greedy"](), mode="slow", sleep_s=0.02) for _ in range(3)]
    partner = SwitchBot(SAMPLE_BOTS["greedy"]())
    dribbler = DribbleBot(SAMPLE_BOTS["greedy"]())
    bots.extend([*bystanders, partner, dribbler])
    by_ids = [arena.register(b, ["million_doubt"], f"bystander{i}") for i, b in enumerate(bystanders)]
    partner_id = arena.register(partner, ["million_doubt"], "partner")
    dribbler_id = arena.register(dribbler, ["million_doubt"], "dribbler")  # passed its check honestly
    dribbler.dribble = True
    long_bank = {"initial": 60.0, "increment": 10.0, "cap": 60.0}
    attack_t = arena.create(
        "million_doubt", [dribbler_id, partner_id], games_per_pairing=4, max_faults=3, time_rules=long_bank
    )
    bystander_t = arena.create("million_doubt", by_ids, games_per_pairing=4, max_faults=3)
    worker = celery_worker_factory(concurrency=4, pool="threads", database_url=arena.database_url)
    arena.start(attack_t)
    arena.start(bystander_t)
    assert arena.wait_finished(attack_t, workers=[worker])["status"] == "finished"
    assert arena.wait_finished(bystander_t, workers=[worker])["status"] == "finished"
    [(m, res, log)] = arena.stored(attack_t)
    seat = next(i for i, s in enumerate(m.seats) if s.bot_id == dribbler_id)
    assert [(f["player"], f["kind"]) for f in log["faults"]] == [(seat, "body_too_large")] * 3
    assert all("pieces" in f["detail"] for f in log["faults"]), log["faults"]
    assert res.faults[seat] == 3 and res.faults[1 - seat] == 0
    assert dribbler.dribbled == 3  # FAULT-3: no request after the third
    stored = arena.stored(bystander_t)
    assert len(stored) == 3
    assert all(lg["faults"] == [] and r.faults == [0, 0] and mm.attempts == 1 for mm, r, lg in stored)
    assert worker.alive() and "Traceback" not in worker.log()
