"""The fake bot servers of the tests: real HTTP on 127.0.0.1, built on the SDK's own server.

:class:`FakeBot` is a ``bots_sdk.server.BotServer`` (waitress, the SDK's settings) whose
WSGI application is :meth:`FakeBot.wsgi`: in mode ``"ok"`` the SDK's app answers (a real
bot, signatures verified once :meth:`FakeBot.set_secret` gave it its secret); the other
modes misbehave, and ``mode`` can change at any time (a bot that passed its check, then
breaks). Subclasses override :meth:`FakeBot.wsgi` and call ``super().wsgi``.

Modes (decisions only; with ``every_post=True`` every POST, notices too):
``ok``; ``sleep`` / ``slow`` (sleep ``sleep_s``, then answer); ``gate`` (hold until ``gate``
is set); ``hang`` (never answer until closed); ``garbage`` (200 JSON type, body
``<<not json!!>>``); ``html`` (200 ``text/html`` not JSON); ``poison`` (200 with the bodies of
``poison`` in turn); ``status500``; ``huge`` (200, a 1 MiB body); ``illegal`` (200, a well-formed
illegal play); ``redirect`` (302 elsewhere); ``drip_body`` (a 100,000-byte answer, one byte
every 0.1 s).

Health (GET) paths: ``/protocols`` (protocols [1, 2], name ``multi``), ``/error`` (500),
``/redirect`` (302 to ``/``), ``/text`` (200 not JSON), ``/noname`` (no name); any other path:
the SDK's health answer.

:class:`DripHeadersServer` is the one fake below HTTP (raw sockets): it sends a response's
header bytes one every 0.1 s, which no WSGI server can do.
"""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from bots_sdk.bot import Bot
from bots_sdk.samples import SAMPLE_BOTS
from bots_sdk.server import BotServer
from bots_sdk.server import make_app as sdk_app

#: Seconds between two bytes of a dripping answer.
DRIP_GAP_S = 0.1
#: Worker threads of a fake bot's server (as many requests at once).
THREADS = 8
#: Seconds the server's loop blocks at most between two looks (so ``down()`` returns soon).
LOOP_TIMEOUT_S = 0.05

_JSON = [("Content-Type", "application/json")]
_MISBEHAVIOURS: dict[str, tuple[str, list[tuple[str, str]], bytes]] = {
    "garbage": ("200 OK", _JSON, b"<<not json!!>>\n"),
    "html": ("200 OK", [("Content-Type", "text/html")], b"<html>not json</html>"),
    "status500": ("500 Internal Server Error", _JSON, b'{"error":"boom"}'),
    "huge": ("200 OK", _JSON, b'{"type":"pass","comment":"' + b"x" * (1 << 20) + b'"}'),
    "illegal": ("200 OK", _JSON, b'{"type":"play","cards":["3S","3S","3S"]}'),
    "redirect": ("302 Found", [("Location", "http://127.0.0.1:9/")], b""),
}
_HEALTH_PATHS: dict[str, tuple[str, list[tuple[str, str]], bytes]] = {
    "/protocols": ("200 OK", _JSON, b'{"name": "multi", "protocols": [1, 2]}'),
    "/error": ("500 Internal Server Error", _JSON, b'{"error": "boom"}'),
    "/redirect": ("302 Found", [("Location", "/")], b""),
    "/text": ("200 OK", [("Content-Type", "text/plain")], b"hello"),
    "/noname": ("200 OK", _JSON, b'{"protocol": 1}'),
}


def _answer(start_response, status: str, headers: list[tuple[str, str]], body: bytes) -> list[bytes]:
    start_response(status, [*headers, ("Content-Length", str(len(body)))])
    return [body]


class FakeBot(BotServer):
    """A bot on 127.0.0.1 served by the SDK's server, whose behaviour can change (see the module).

    ``bot`` defaults to the greedy sample bot. ``url`` is ``http://127.0.0.1:PORT/`` and
    ``origin`` the same without the last slash. Counters: ``requests`` (every request),
    ``posts`` (every POST), ``decisions``, ``max_in_flight`` (most decisions served at once);
    ``hits`` lists the GET paths, ``hosts`` every request's Host header. ``down()`` (or
    ``close()``) stops it: connections are then refused. ``port``: 0 for any free one, or the
    port of a bot that was stopped (the same bot back at its address).
    """

    def __init__(
        self,
        bot: Bot | None = None,
        mode: str = "ok",
        sleep_s: float = 0.0,
        *,
        every_post: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(bot or SAMPLE_BOTS["greedy"](), host, port, None, THREADS)
        self.mode, self.sleep_s, self.every_post = mode, sleep_s, every_post
        self.secret: str | None = None
        self.inner = sdk_app(self.bot)
        self.origin = self.url.rstrip("/")
        self.requests = self.posts = self.decisions = 0
        self.in_flight = self.max_in_flight = 0
        self.hits: list[str] = []
        self.hosts: list[str] = []
        self.gate = threading.Event()
        self.poison: list[bytes] = []
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._server.application = self.wsgi  # the SDK's server, this app
        # its loop notices close() within this many seconds (waitress's default: 1 s a server)
        self._server.adj.asyncore_loop_timeout = LOOP_TIMEOUT_S
        self.start()

    def set_secret(self, secret: str) -> None:
        """Verify signatures with ``secret`` from now on (the one the arena gave at registration)."""
        self.secret = secret
        self.inner = sdk_app(self.bot, secret)

    def wsgi(self, environ: dict[str, Any], start_response) -> Iterable[bytes]:
        """The WSGI application: count, then answer as the mode says."""
        with self._lock:
            self.requests += 1
            self.hosts.append(environ.get("HTTP_HOST", ""))
        if environ["REQUEST_METHOD"] != "POST":
            return self._health(environ, start_response)
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        is_decision = b'"decision"' in body
        with self._lock:
            self.posts += 1
            self.decisions += is_decision
            self.in_flight += is_decision
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            nth = self.decisions
        try:
            if is_decision or self.every_post:
                return self._misbehave(environ, start_response, nth)
            return self.inner(environ, start_response)
        finally:
            with self._lock:
                self.in_flight -= is_decision

    def _health(self, environ: dict[str, Any], start_response) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        with self._lock:
            self.hits.append(path)
        if path in _HEALTH_PATHS:
            return _answer(start_response, *_HEALTH_PATHS[path])
        return self.inner(environ, start_response)

    def _misbehave(self, environ: dict[str, Any], start_response, nth: int) -> Iterable[bytes]:
        mode = self.mode
        if mode in _MISBEHAVIOURS:
            return _answer(start_response, *_MISBEHAVIOURS[mode])
        if mode == "poison":
            return _answer(start_response, "200 OK", _JSON, self.poison[(nth - 1) % len(self.poison)])
        if mode == "drip_body":
            start_response("200 OK", [("Content-Length", "100000")])
            return self._drip(b'{"type":"pass"' + b" " * 99_986)
        if mode == "gate":
            self.gate.wait(60)
        elif mode == "hang":
            self._closed.wait()
            return _answer(start_response, "503 Service Unavailable", _JSON, b"{}")
        elif mode in ("sleep", "slow"):
            time.sleep(self.sleep_s)
        return self.inner(environ, start_response)

    def _drip(self, payload: bytes) -> Iterator[bytes]:
        for i in range(len(payload)):  # waitress sends one chunk per item
            if self._closed.wait(DRIP_GAP_S if i else 0):
                return
            yield payload[i : i + 1]

    def down(self) -> None:
        """Stop serving (idempotent): held and dripping requests end, new connections are refused."""
        if self._closed.is_set():
            return
        self._closed.set()
        self.gate.set()
        super().close()

    close = down


class DripHeadersServer:
    """A raw-socket server whose every response sends its status line and headers one byte
    every :data:`DRIP_GAP_S` seconds, forever (GET answers a health body at once).
    ``requests`` counts the requests read; ``close()`` stops it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/bot"
        self.requests = 0
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                while (head := _read_request(conn)) and not self._closed.is_set():
                    self.requests += 1
                    if head.startswith(b"GET"):
                        body = json.dumps({"name": "drip", "protocol": 1, "protocols": [1]}).encode()
                        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                        continue
                    payload = b"HTTP/1.1 200 OK\r\nX-Slow: "
                    i = 0
                    while not self._closed.wait(DRIP_GAP_S if i else 0):
                        conn.sendall(payload[i % len(payload) : i % len(payload) + 1])
                        i += 1
                    return
            except OSError:
                return

    def close(self) -> None:
        self._closed.set()
        self.sock.close()


def _read_request(conn: socket.socket) -> bytes:
    """Read one HTTP request (head and body); return its head (b"" when the peer closed)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length and (chunk := conn.recv(65536)):
        body += chunk
    return head
