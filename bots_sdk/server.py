"""Serve a :class:`~bots_sdk.bot.Bot` over HTTP (protocol v1) with waitress.

Waitress is a production WSGI server (pure Python, threaded, maintained); it disables Nagle
(``TCP_NODELAY``) on every connection by default, so keep-alive round trips stay sub-millisecond
on loopback. Routes (any path, so the bot URL may be ``http://host:port/`` or ``.../bot``):

* ``GET``: the health check, ``200 {"name", "protocol": 1, "protocols": [1]}``;
* ``POST`` a decision request: ``200`` with the bot's action;
* ``POST`` a notice (``match_start``/``match_end``): ``200 {"ok": true}``.

Errors are JSON ``{"error": message}``: ``401`` for a missing or bad signature (when the server
has a secret), ``400`` for a body that is not a JSON object of protocol 1, ``413`` for a body
over :data:`MAX_BODY_BYTES`, ``405`` for other methods, ``500`` when the bot raises (the arena
records that as a fault, FAULT-1).

Thread safety: waitress answers requests on several threads; the bot instance is shared, and
the arena sends one request at a time per seat, but one bot may play several matches at once.
Keep per-match state keyed by ``match_id``, or guard it with a lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from waitress import wasyncore

from bots_sdk import protocol
from bots_sdk.bot import Bot

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

log = logging.getLogger("bots_sdk.server")

#: Largest request body the server reads, in bytes.
MAX_BODY_BYTES = 4 * 1024 * 1024
#: Threads answering requests (waitress ``threads``).
DEFAULT_THREADS = 8
#: Most open connections (waitress ``connection_limit``; its default is 100). The arena keeps
#: one keep-alive connection per seat of each match it plays against this bot at once, from
#: every worker process: a bot in 100 matches at once would otherwise leave the next match's
#: connection unaccepted until an idle one timed out, and lose its bank waiting.
CONNECTION_LIMIT = 2000
#: Files kept free beside the connections (the listening socket, logs, the bot's own files).
FILE_RESERVE = 100
#: Seconds an idle connection stays open (waitress ``channel_timeout``): above the arena's 60 s
#: keep-alive, short enough that idle connections held by someone else free up.
IDLE_TIMEOUT_S = 120


def connections_allowed(wanted: int, reserve: int = FILE_RESERVE) -> int:
    """How many connections (one open file each) this process's limit of open files allows,
    at most ``wanted``: after raising the soft limit towards ``wanted + reserve`` (at most the
    hard limit), that soft limit minus ``reserve`` if it stays lower. A server past its limit
    would fail every ``accept()``; capped, it stops accepting (or answers "full") instead."""
    if resource is None:  # no such limit here (Windows)
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + reserve
    if soft != resource.RLIM_INFINITY and soft < need:
        raised = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - reserve))


def connection_limit() -> int:
    """How many connections this server serves at once: :data:`CONNECTION_LIMIT`, or fewer if
    the limit of open files stays lower (:func:`connections_allowed`). Past it waitress stops
    accepting until a connection closes; without it, ``accept()`` failing with "too many open
    files" would spin the server and flood its log."""
    return connections_allowed(CONNECTION_LIMIT)


#: The HTTP status line of each status :func:`handle` returns.
STATUS_LINES = {200: "200 OK", 400: "400 Bad Request", 500: "500 Internal Server Error"}


def handle(bot: Bot, message: Any) -> tuple[int, dict[str, Any]]:
    """Answer one parsed protocol v1 message, the same over HTTP and over a WebSocket
    connection (:mod:`bots_sdk.connect`): ``(status, payload)``.

    * a decision request: ``(200, the bot's action)``;
    * a notice (``match_start``/``match_end``): ``(200, {"ok": true})`` after the bot's
      :meth:`~bots_sdk.bot.Bot.notice`;
    * not a JSON object of protocol 1, or an unknown ``type``: ``(400, {"error": message})``;
    * the bot raised: ``(500, {"error": "<Exception>: <message>"})`` (at most 500 characters;
      logged with its traceback).
    """
    if not isinstance(message, dict) or message.get("protocol") != protocol.PROTOCOL_VERSION:
        return 400, {"error": 'body must be a JSON object with "protocol": 1'}
    kind = message.get("type")
    try:
        if kind == "decision":
            return 200, bot.decide(message)
        if kind in ("match_start", "match_end"):
            bot.notice(message)
            return 200, {"ok": True}
    except Exception as e:  # the bot's own error: a 500 the arena records as a fault
        log.exception("bot %s failed on a %s message", bot.name, kind)
        return 500, {"error": f"{type(e).__name__}: {e}"[:500]}
    return 400, {"error": f"unknown message type {kind!r}"}


def make_app(bot: Bot, secret: str | None = None, *, max_skew_s: float = protocol.MAX_SKEW_S) -> WSGIApplication:
    """The WSGI application serving ``bot`` (see the module docstring for routes and errors)."""

    def respond(start_response: StartResponse, status: str, payload: Any) -> Iterable[bytes]:
        body = protocol.dumps(payload)
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        if method in ("GET", "HEAD"):
            return respond(start_response, "200 OK", protocol.health(bot.name))
        if method != "POST":
            return respond(
                start_response,
                "405 Method Not Allowed",
                {"error": f"method {method} not allowed: use GET (health) or POST"},
            )
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > MAX_BODY_BYTES:
            return respond(start_response, "413 Payload Too Large", {"error": f"body over {MAX_BODY_BYTES} bytes"})
        body = environ["wsgi.input"].read(length) if length else b""
        if secret:
            headers = {k[5:].replace("_", "-"): v for k, v in environ.items() if k.startswith("HTTP_")}
            try:
                protocol.verify(secret, body, headers, max_skew_s=max_skew_s)
            except protocol.SignatureError as e:
                return respond(start_response, "401 Unauthorized", {"error": str(e)})
        try:
            message = protocol.loads(body)
        except ValueError:
            return respond(start_response, "400 Bad Request", {"error": "body is not JSON"})
        status, payload = handle(bot, message)
        return respond(start_response, STATUS_LINES[status], payload)

    return app


class BotServer:
    """A running waitress server for a bot; use :func:`start` (background) or :func:`serve`.

    Attributes:
        host, port: where it listens (``port`` is the real one when 0 was asked).
        url: ``http://host:port/``.
    """

    def __init__(self, bot: Bot, host: str, port: int, secret: str | None, threads: int):
        from waitress.server import create_server

        self.bot = bot
        #: most connections served at once (:func:`connection_limit`)
        self.connection_limit = connection_limit()
        # poll(), not select(): select() cannot watch a socket numbered 1024 or more, and
        # waitress's loop dies on one (the bot stops answering at ~1,000 connections)
        self._server = create_server(
            make_app(bot, secret),
            host=host,
            port=port,
            threads=threads,
            ident="bots_sdk",
            expose_tracebacks=False,
            channel_timeout=IDLE_TIMEOUT_S,
            clear_untrusted_proxy_headers=True,
            connection_limit=self.connection_limit,
            asyncore_use_poll=True,
        )
        self.host = host
        self.port = self._server.effective_port
        self.url = f"http://{host}:{self.port}/"
        self._thread: threading.Thread | None = None
        self._closing = False

    def run(self) -> None:
        """Serve until :meth:`close` (blocks)."""
        try:
            self._server.run()
        except (OSError, ValueError):  # the listening socket closed by close()
            if not self._closing:  # anything else stops the bot answering: say so
                log.exception("bot server on %s stopped", self.url)

    def start(self) -> BotServer:
        """Serve on a daemon thread and return at once."""
        self._thread = threading.Thread(target=self.run, name=f"bot-{self.bot.name}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and close every connection."""
        self._closing = True
        # TcpWSGIServer.close() closes the listening socket only: the loop would serve the
        # open keep-alive connections until they idle out. close_all ends them too.
        self._server.task_dispatcher.shutdown()
        if self._thread is not None and self._thread.is_alive():
            # closed from the serving loop's own thread (the trigger wakes its poll), so the loop
            # ends at once instead of at its next poll timeout (waitress: 1 s)
            try:
                self._server.trigger.pull_trigger(lambda: wasyncore.close_all(self._server._map))
            except OSError:  # the loop is ending and has closed its trigger already
                pass
            self._thread.join(timeout=5)
        if self._server._map:  # never started, or the loop did not get to it
            wasyncore.close_all(self._server._map)

    def __enter__(self) -> BotServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start(
    bot: Bot, host: str = "127.0.0.1", port: int = 0, secret: str | None = None, threads: int = DEFAULT_THREADS
) -> BotServer:
    """Start serving ``bot`` on a background thread; ``port=0`` picks a free port
    (read it from ``.port`` / ``.url``). Stop it with ``.close()``."""
    return BotServer(bot, host, port, secret, threads).start()


def serve(
    bot: Bot, host: str = "127.0.0.1", port: int = 8000, secret: str | None = None, threads: int = DEFAULT_THREADS
) -> None:
    """Serve ``bot`` in the foreground until interrupted (Ctrl-C).

    ``secret`` is the signing secret the arena gave at registration: with it, requests with
    a missing or bad signature get ``401`` (protocol.verify). Without it nothing is checked.
    """
    server = BotServer(bot, host, port, secret, threads)
    print(
        f"serving bot {bot.name!r} on {server.url} (protocol {protocol.PROTOCOL_VERSION}"
        f"{', signatures verified' if secret else '; no secret: signatures NOT verified (set ARENA_BOT_SECRET)'})",
        flush=True,
    )
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
