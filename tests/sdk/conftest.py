"""Fixtures of the bots_sdk tests: real HTTP bot servers on 127.0.0.1.

- ``bot_server`` -> ``Callable[[Bot, str | None], BotServer]``: starts ``bots_sdk.start``
  (waitress) on a free port; closed at teardown.
- ``bad_bot`` -> ``Callable[[str], str]``: starts a misbehaving HTTP server (real sockets, no
  framework) and returns its URL. Behaviours: ``sleep`` (reads the request, never answers),
  ``garbage`` (200 with a non-JSON body), ``status500``, ``huge`` (200 with a 1 MiB body),
  ``drip_headers`` / ``drip_body`` (one byte every 0.1 s, forever), ``illegal`` (200 with a
  well-formed but illegal action), ``redirect`` (302 to another URL). Stopped at teardown.
- ``refused_url``: an http URL on a port where nothing listens.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

import bots_sdk
from bots_sdk.bot import Bot


@pytest.fixture
def bot_server() -> Iterator[Callable]:
    servers = []

    def start(bot: Bot, secret: str | None = None):
        srv = bots_sdk.start(bot, "127.0.0.1", 0, secret=secret)
        servers.append(srv)
        return srv

    yield start
    for s in servers:
        s.close()


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head


class _BadServer:
    def __init__(self, behaviour: str):
        self.behaviour = behaviour
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/bot"
        self.stop = threading.Event()
        self.requests = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _send(self, conn, status: str, body: bytes, ctype: bytes = b"application/json") -> None:
        conn.sendall(
            b"HTTP/1.1 "
            + status.encode()
            + b"\r\nContent-Type: "
            + ctype
            + b"\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )

    def _handle(self, conn: socket.socket) -> None:
        try:
            while not self.stop.is_set():
                head = _read_request(conn)
                if not head:
                    return
                self.requests += 1
                b = self.behaviour
                if head.startswith(b"GET"):
                    self._send(conn, "200 OK", b'{"name":"bad","protocol":1,"protocols":[1]}')
                    continue
                if b"match_start" in head or b"match_end" in head:
                    pass
                if b == "sleep":
                    self.stop.wait(30)
                    return
                if b == "garbage":
                    self._send(conn, "200 OK", b"<html>not json</html>", b"text/html")
                elif b == "status500":
                    self._send(conn, "500 Internal Server Error", b'{"error":"boom"}')
                elif b == "huge":
                    self._send(conn, "200 OK", b'{"type":"pass","comment":"' + b"x" * (1 << 20) + b'"}')
                elif b == "illegal":
                    self._send(conn, "200 OK", b'{"type":"play","cards":["3S","3S","3S"]}')
                elif b == "redirect":
                    conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:9/\r\nContent-Length: 0\r\n\r\n")
                elif b in ("drip_headers", "drip_body"):
                    prefix = b"" if b == "drip_headers" else b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
                    conn.sendall(prefix)
                    payload = (
                        b"HTTP/1.1 200 OK\r\nX-Slow: " if b == "drip_headers" else b'{"type":"pass"' + b" " * 99000
                    )
                    for i in range(10**6):
                        if self.stop.is_set():
                            return
                        conn.sendall(payload[i % len(payload) : i % len(payload) + 1])
                        time.sleep(0.1)
                    return
        except OSError:
            return
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def bad_bot() -> Iterator[Callable[[str], _BadServer]]:
    servers: list[_BadServer] = []

    def start(behaviour: str) -> _BadServer:
        s = _BadServer(behaviour)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


@pytest.fixture
def refused_url(free_port) -> str:
    return f"http://127.0.0.1:{free_port()}/"
