"""The HTTP servers of the command line, safe to face clients directly: each reads a request
whole (head, then body) in its event loop before a thread serves it, within
:data:`REQUEST_HEAD_TIMEOUT_S` and :data:`REQUEST_BODY_TIMEOUT_S`, so a slow or dripping
client (slowloris) holds a connection for seconds and never a thread.

- :class:`RequestReadingWorker`: gunicorn's gthread worker with that read (``arena api``).
- :class:`WsgiServer`: waitress on a daemon thread with the same deadlines (``arena demo``,
  tests).

Why and how: docs/operations.md, "Slow clients".
"""

from __future__ import annotations

import heapq
import itertools
import selectors
import threading
import time
from functools import partial
from typing import Any

from gunicorn import util
from gunicorn.http import RequestParser
from gunicorn.http.body import LengthReader
from gunicorn.workers.gthread import ThreadWorker
from waitress import wasyncore
from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer
from waitress.task import ThreadedTaskDispatcher

from api.app import MAX_BODY_BYTES

#: Seconds a client has to send a request head (request line and headers), from the moment
#: the server waits for it (a new connection, or the first byte on a kept-alive one).
REQUEST_HEAD_TIMEOUT_S = 10.0
#: Seconds a client has to send a request body once its head is in (at most MAX_BODY_BYTES).
REQUEST_BODY_TIMEOUT_S = 20.0
#: Largest request head read, bytes; a longer head is answered 431 (nginx allows 4 x 8 KiB).
MAX_HEAD_BYTES = 64 * 1024
#: Bytes taken from a socket per read while a request is being read.
RECV_BYTES = 64 * 1024


class _RequestRead:
    """The bytes of one request received so far, and what they still lack.

    ``feed(data)`` answers ``"more"`` (wait for bytes), ``"whole"`` (serve it: the head is
    complete and so is the body, or the head is one gunicorn refuses by itself), or a refusal
    ``(status, reason, message)``. The head ends at the first CRLF CRLF (gunicorn's own parser
    accepts no other line end); gunicorn's parser then reads that head, so the body's framing
    is the one gunicorn will serve.
    """

    def __init__(self, cfg: Any, client: Any, deadline: float):
        self.cfg, self.client = cfg, client
        self.buffer = bytearray()
        self.deadline = deadline
        self.head_end: int | None = None  # offset after the head's CRLF CRLF
        self.body_length = 0
        self.wants_continue = False  # Expect: 100-continue and no body yet: answer 100

    def feed(self, data: bytes) -> str | tuple[int, str, str]:
        self.buffer += data
        if self.head_end is None:
            end = self.buffer.find(b"\r\n\r\n", max(0, len(self.buffer) - len(data) - 3))
            if end < 0:
                if len(self.buffer) > MAX_HEAD_BYTES:
                    return 431, "Request Header Fields Too Large", f"request head over {MAX_HEAD_BYTES} bytes"
                return "more"
            self.head_end = end + 4
            verdict = self._read_head(bytes(self.buffer[: self.head_end]))
            if verdict != "more":
                return verdict
        if len(self.buffer) - self.head_end >= self.body_length:
            self.wants_continue = False
            return "whole"
        return "more"

    def _read_head(self, head: bytes) -> str | tuple[int, str, str]:
        try:
            request = next(RequestParser(self.cfg, [head], self.client))
        except Exception:  # an invalid head: gunicorn answers it from these bytes alone
            return "whole"
        reader = request.body.reader
        if not isinstance(reader, LengthReader):  # chunked: its length is unknown up front
            return 411, "Length Required", "send the request body with a Content-Length"
        if reader.length > MAX_BODY_BYTES:
            return 413, "Payload Too Large", f"request body over {MAX_BODY_BYTES} bytes"
        self.body_length = reader.length
        self.wants_continue = request.version >= (1, 1) and any(
            name == "EXPECT" and value.lower() == "100-continue" for name, value in request.headers
        )
        return "more"


class RequestReadingWorker(ThreadWorker):
    """gunicorn's gthread worker that reads each request whole in its event loop first.

    gthread hands a connection to a thread as soon as its first bytes arrive, and the thread
    reads the request blocking: a client sending a byte now and then holds the thread for as
    long as it likes. Here the event loop reads every request (new connection, kept-alive
    connection, bytes pipelined behind the last answer) into a buffer: the head within
    :data:`REQUEST_HEAD_TIMEOUT_S`, then a body of Content-Length at most ``MAX_BODY_BYTES``
    within :data:`REQUEST_BODY_TIMEOUT_S` (``Expect: 100-continue`` is answered 100 here).
    Only a whole request goes to a thread, served from the buffer by gunicorn as before.
    Past a deadline the connection is closed; a head over :data:`MAX_HEAD_BYTES` is answered
    431, a body over ``MAX_BODY_BYTES`` 413 and a chunked body 411 (RFC 9112: a server may
    require Content-Length), each then closed. Plain HTTP/1.x only (no TLS, HTTP/2 or
    uWSGI: the proxy in front, if any, speaks those).
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._reading: dict[Any, _RequestRead] = {}  # connection -> its request read so far
        self._deadlines: list[tuple[float, int, _RequestRead, Any]] = []  # a heap
        self._order = itertools.count()

    @classmethod
    def check_config(cls, cfg: Any, log: Any) -> None:
        super().check_config(cfg, log)
        if cfg.is_ssl or "h2" in cfg.http_protocols or cfg.protocol != "http":
            raise RuntimeError(f"{cls.__name__} serves plain HTTP/1.x only")

    def enqueue_req(self, conn: Any) -> None:
        """Start reading ``conn``'s next request (gunicorn calls this where it would give
        the connection to a thread)."""
        # bytes the client pipelined behind its last request, read ahead by gunicorn
        ahead = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        read = _RequestRead(self.cfg, conn.client, time.monotonic() + REQUEST_HEAD_TIMEOUT_S)
        self._reading[conn] = read
        self._watch(read, conn)
        conn.sock.setblocking(False)
        if ahead:
            self._feed(conn, read, ahead)
        if conn in self._reading:
            self._receive(conn)  # a kept-alive socket is readable already
        if conn in self._reading:
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, conn))

    def _on_readable(self, conn: Any, _sock: Any) -> None:
        self._receive(conn)

    def _receive(self, conn: Any) -> None:
        try:
            data = conn.sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if data:
            self._feed(conn, self._reading[conn], data)
        else:  # the client left before its request was whole
            self._drop(conn)

    def _feed(self, conn: Any, read: _RequestRead, data: bytes) -> None:
        had_head = read.head_end is not None
        verdict = read.feed(data)
        if verdict == "whole":
            self._stop_reading(conn)
            conn.init()  # plain HTTP/1.x: makes the parser, reads nothing
            conn.parser.unreader.unread(bytes(read.buffer))
            super().enqueue_req(conn)
        elif isinstance(verdict, tuple):
            status, reason, message = verdict
            self.log.warning("Invalid request from ip=%s: %s %s (%s)", conn.client[0], status, reason, message)
            try:
                util.write_error(conn.sock, status, reason, message)
            except OSError:
                pass
            self._drop(conn)
        else:
            if not had_head and read.head_end is not None:  # the head is in: the body's deadline
                read.deadline = time.monotonic() + REQUEST_BODY_TIMEOUT_S
                self._watch(read, conn)
            if read.wants_continue:
                read.wants_continue = False
                try:
                    conn.sock.send(b"HTTP/1.1 100 Continue\r\n\r\n")
                except OSError:
                    pass

    def _watch(self, read: _RequestRead, conn: Any) -> None:
        heapq.heappush(self._deadlines, (read.deadline, next(self._order), read, conn))

    def _stop_reading(self, conn: Any) -> None:
        del self._reading[conn]
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError):  # not registered yet
            pass

    def _drop(self, conn: Any) -> None:
        """Close ``conn`` while its request is being read."""
        self._stop_reading(conn)
        self.nr_conns -= 1
        conn.close()

    def murder_pending(self) -> None:
        """gunicorn's sweep of waiting connections (every turn of the loop), plus this one:
        close the connections whose request is not whole by its deadline."""
        super().murder_pending()
        now = time.monotonic()
        while self._deadlines and self._deadlines[0][0] <= now:
            deadline, _, read, conn = heapq.heappop(self._deadlines)
            if self._reading.get(conn) is read and read.deadline == deadline:
                self.log.info("Closed the connection of ip=%s: no whole request in time", conn.client[0])
                self._drop(conn)


class _DeadlineChannel(HTTPChannel):
    """A waitress channel that knows by when the request it is receiving must be whole."""

    deadline: float | None = None
    _timed: Any = None  # the request (waitress's parser) the deadline is for
    _timed_body = False  # whether the deadline is the body's

    def received(self, data: bytes) -> bool:
        result = super().received(data)
        request = self.request  # the request not yet whole, if any
        if request is None:
            self.deadline, self._timed = None, None
        elif request is not self._timed:  # a request began in these bytes
            self._timed, self._timed_body = request, False
            self.deadline = time.monotonic() + REQUEST_HEAD_TIMEOUT_S
        if request is not None and request.headers_finished and not self._timed_body:
            self._timed_body = True
            self.deadline = time.monotonic() + REQUEST_BODY_TIMEOUT_S
        return result


class _DeadlineServer(TcpWSGIServer):
    """waitress's TCP server closing the channels whose request is late (every second)."""

    channel_class = _DeadlineChannel

    def maintenance(self, now: float) -> None:
        super().maintenance(now)
        late = time.monotonic()
        for channel in self.active_channels.values():
            if channel.request is not None and channel.deadline is not None and channel.deadline <= late:
                channel.will_close = True


class WsgiServer:
    """A WSGI app served by waitress on a daemon thread (``url``, ``port``; ``close()``).

    waitress reads every request whole in its event loop before a thread serves it; here the
    head must also be in within :data:`REQUEST_HEAD_TIMEOUT_S` of its first byte and the body
    within :data:`REQUEST_BODY_TIMEOUT_S` after it, and an idle connection is closed after
    :data:`REQUEST_HEAD_TIMEOUT_S` (waitress alone waits 120 s for a silent client and never
    closes one that sends a byte now and then, each keeping one of the 100 connections
    waitress accepts at once).
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, threads: int = 8):
        adj = Adjustments(
            host=host,
            port=port,
            threads=threads,
            ident="arena",
            expose_tracebacks=False,
            clear_untrusted_proxy_headers=True,
            channel_timeout=int(REQUEST_HEAD_TIMEOUT_S),
            cleanup_interval=1,
        )
        dispatcher = ThreadedTaskDispatcher()
        dispatcher.set_thread_count(threads)
        self._server = _DeadlineServer(app, {}, dispatcher=dispatcher, adj=adj, sockinfo=adj.listen[0])
        self.port = self._server.effective_port
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self._run, name="arena-api", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._server.run()
        except (OSError, ValueError):  # closed
            pass

    def close(self) -> None:
        """Stop serving and close every connection (keep-alive ones too: close() alone closes
        the listening socket only, and the loop would serve the others until they idle out)."""
        self._server.task_dispatcher.shutdown()
        wasyncore.close_all(self._server._map)
        self._thread.join(timeout=5)
