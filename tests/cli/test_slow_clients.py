"""Slow clients facing the real servers directly (issue 24 point 5), through real processes:
``arena api`` (gunicorn, :class:`daifugo_arena.cli.servers.RequestReadingWorker`) and ``arena demo
--serve`` (waitress, :class:`daifugo_arena.cli.servers.WsgiServer`).

- 40 connections that drip a request (20 a head, 20 a body) one byte a second hold no server
  thread: ``/healthz`` answers a fresh client while every one of them is open, and the server
  closes each at its deadline (REQUEST_HEAD_TIMEOUT_S for a head, REQUEST_BODY_TIMEOUT_S for a
  body). ``arena api`` runs one worker process of 16 threads, so 40 connections are more than
  its threads whichever process the kernel gives them to (before the fix no probe was answered
  in 30 s and no connection was closed).
- Requests as clients really send them still work on ``arena api``: in pieces, pipelined, with
  ``Expect: 100-continue``, JSON bodies; too long a head is 431, too large a body 413, a
  chunked body 411, and a head gunicorn refuses keeps gunicorn's 400.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from daifugo_arena.cli.servers import MAX_HEAD_BYTES, REQUEST_BODY_TIMEOUT_S, REQUEST_HEAD_TIMEOUT_S
from tests import children

REPO = Path(__file__).resolve().parents[2]
ARENA = [sys.executable, "-m", "daifugo_arena.cli"]
#: Seconds a started server gets to answer, and a dripping connection to be closed after its
#: deadline (guards against a hang, not timing goals).
READY_S = 90.0
#: The start of a request whose head never ends, and of one whose body never ends.
DRIP_HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Drip: "
DRIP_BODY = (
    b"POST /api/v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b'Content-Length: 4000\r\n\r\n{"name": "'
)


def _env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    return {**base, "PYTHONPATH": str(REPO), **extra}


def _healthy(port: int) -> bool:
    """One ``/healthz`` from a fresh client (its own connection), 3 s to answer."""
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=3, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> int:
    proc.send_signal(sig)
    try:
        return proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait()


@contextmanager
def _arena_api(tmp_path: Path, port: int):
    """A real ``arena api --workers 1`` on SQLite, answering ``/healthz``."""
    log = tmp_path / "api.log"
    with open(log, "wb") as out:
        proc = children.spawn(
            [*ARENA, "api", "--port", str(port), "--workers", "1"],
            cwd=REPO,
            env=_env(ARENA_DATABASE_URL=f"sqlite:///{tmp_path / 'arena.db'}"),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + READY_S
        while not _healthy(port):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield log
    finally:
        assert _stop(proc) == 0, log.read_text()


class Drips:
    """``count`` connections that each send ``start`` and then one byte a second, noting when
    the server closes each one (its end of file or reset, seen within a second)."""

    def __init__(self, port: int, count: int, start: bytes):
        self.socks = []
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(start)
            self.socks.append(s)
        self.opened = time.monotonic()
        self.held: dict[int, float] = {}  # connection -> seconds from opened to closed by the server
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drip, daemon=True)
        self._thread.start()

    def _drip(self) -> None:
        while not self._stop.wait(1.0):
            for i, s in enumerate(self.socks):
                if i in self.held:
                    continue
                try:
                    readable, _, _ = select.select([s], [], [], 0)
                    if readable and not s.recv(65536):
                        raise ConnectionResetError("closed by the server")
                    s.send(b"a")
                except OSError:
                    self.held[i] = time.monotonic() - self.opened

    def all_closed(self) -> bool:
        return len(self.held) == len(self.socks)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for s in self.socks:
            s.close()


def _drips_hold_no_thread(port: int) -> None:
    """The scenario of the module docstring on the server at ``port``."""
    heads, bodies = Drips(port, 20, DRIP_HEAD), Drips(port, 20, DRIP_BODY)
    try:
        deadline = time.monotonic() + READY_S
        while not _healthy(port):
            assert not heads.held and not bodies.held, "no /healthz answer while the drips were open"
            assert time.monotonic() < deadline
        assert not heads.held and not bodies.held  # answered while all 40 were open (and dripping)
        while not (heads.all_closed() and bodies.all_closed()):
            assert time.monotonic() < deadline + REQUEST_BODY_TIMEOUT_S, (heads.held, bodies.held)
            time.sleep(0.5)
        # closed at their deadlines (the server's sweep runs every second), not before
        assert min(heads.held.values()) >= REQUEST_HEAD_TIMEOUT_S - 1, heads.held
        assert min(bodies.held.values()) >= REQUEST_BODY_TIMEOUT_S - 1, bodies.held
        assert _healthy(port)
    finally:
        heads.close()
        bodies.close()


@pytest.mark.slow
def test_dripping_clients_hold_no_thread_of_arena_api(tmp_path, free_port):
    port = free_port()
    with _arena_api(tmp_path, port) as log:
        _drips_hold_no_thread(port)
    assert "no whole request in time" in log.read_text()


@pytest.mark.slow
def test_dripping_clients_hold_no_thread_of_the_demo_server(tmp_path, free_port):
    port = free_port()
    proc = children.spawn(
        [
            *ARENA,
            "demo",
            "--games-per-pairing",
            "2",
            "--out",
            str(tmp_path / "demo"),
            "--serve",
            "--port",
            str(port),
            "--seed",
            "3",
        ],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if line.startswith("API: "):  # the tournament is over; serving until Ctrl-C
                break
        else:
            raise AssertionError(f"demo exited {proc.wait()}:\n{''.join(lines)}")
        _drips_hold_no_thread(port)
    finally:
        assert _stop(proc, signal.SIGINT) == 0, "".join(lines)


def _exchange(port: int, *pieces: bytes, gap_s: float = 0.0) -> bytes:
    """Send ``pieces`` on one connection (``gap_s`` apart, as a slow client does) and read
    what the server sends until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        for i, piece in enumerate(pieces):
            if i and gap_s:
                time.sleep(gap_s)
            s.sendall(piece)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
        return answer


def _status_lines(answer: bytes) -> list[bytes]:
    """The status lines of the answers in ``answer`` (a body here never holds one)."""
    return re.findall(rb"HTTP/1\.1 \d{3} [^\r\n]*", answer)


@pytest.mark.slow
def test_arena_api_serves_requests_as_clients_send_them(tmp_path, free_port):
    port = free_port()
    host = b"Host: 127.0.0.1\r\n"
    with _arena_api(tmp_path, port):
        # a head in three pieces
        answer = _exchange(port, b"GET /hea", b"lthz HTTP/1.1\r\n" + host, b"Connection: close\r\n\r\n", gap_s=0.3)
        assert _status_lines(answer) == [b"HTTP/1.1 200 OK"], answer
        # two requests pipelined in one write, then a third on the same connection
        get = b"GET /healthz HTTP/1.1\r\n" + host + b"\r\n"
        answer = _exchange(port, get + get, b"GET /healthz HTTP/1.1\r\n" + host + b"Connection: close\r\n\r\n")
        assert _status_lines(answer) == [b"HTTP/1.1 200 OK"] * 3, answer
        # a JSON body, through an ordinary client
        r = httpx.post(
            f"http://127.0.0.1:{port}/api/v1/accounts", json={"name": "slowpoke"}, trust_env=False, timeout=30
        )
        assert r.status_code == 201 and r.json()["name"] == "slowpoke" and r.json()["token"], r.text
        # Expect: 100-continue (curl's way with a body over 1 KiB): 100 first, then the body
        body = json.dumps({"name": "patient"}).encode() + b" " * 2000
        head = (
            b"POST /api/v1/accounts HTTP/1.1\r\n" + host + b"Content-Type: application/json\r\n"
            b"Expect: 100-continue\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(head)
            assert s.recv(65536).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
            s.sendall(body)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
        assert _status_lines(answer)[-1] == b"HTTP/1.1 201 CREATED", answer
        assert json.loads(answer.rsplit(b"\r\n\r\n", 1)[1])["name"] == "patient"
        # refused by the worker itself, then closed
        answer = _exchange(port, b"GET /healthz HTTP/1.1\r\n" + host + b"X-Big: " + b"a" * MAX_HEAD_BYTES + b"\r\n\r\n")
        assert _status_lines(answer) == [b"HTTP/1.1 431 Request Header Fields Too Large"], answer[:200]
        answer = _exchange(port, b"POST /api/v1/accounts HTTP/1.1\r\n" + host + b"Content-Length: 2000000\r\n\r\n{")
        assert _status_lines(answer) == [b"HTTP/1.1 413 Payload Too Large"], answer
        answer = _exchange(
            port,
            b"POST /api/v1/accounts HTTP/1.1\r\n" + host + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        )
        assert _status_lines(answer) == [b"HTTP/1.1 411 Length Required"], answer
        # a head gunicorn refuses: its own answer, as before
        answer = _exchange(port, b"GET /healthz HTTP/1.1\r\nBad Header\r\n\r\n")
        assert _status_lines(answer) == [b"HTTP/1.1 400 Bad Request"], answer
