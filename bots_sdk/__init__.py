"""bots_sdk: write a Daifugo Arena bot in Python and serve it over HTTP (protocol v1).

* :class:`Bot` (:mod:`bots_sdk.bot`): subclass it, override ``play``/``doubt``/... ;
* :func:`serve` / :func:`start` (:mod:`bots_sdk.server`): run it as an HTTP server;
* :func:`connect` (:mod:`bots_sdk.connect`): or have it dial out to an arena gateway over
  WebSocket (no listening socket; :mod:`bots_sdk.wire` has the frames);
* :mod:`bots_sdk.protocol`: messages, JSON Schemas and HMAC signatures of protocol v1;
* :mod:`bots_sdk.samples`: ``random``, ``greedy`` and ``heuristic`` sample bots
  (:data:`bots_sdk.samples.SAMPLE_BOTS`).

Depends on the rules ``engine``, waitress and websockets only (jsonschema when validating).
"""

from bots_sdk.bot import DOUBT, PASS, THROUGH, Bot, Request
from bots_sdk.connect import ConnectError, Connection, connect
from bots_sdk.protocol import PROTOCOL_VERSION
from bots_sdk.server import BotServer
from bots_sdk.server import serve as _serve
from bots_sdk.server import start as _start


def serve(bot: Bot, host: str = "127.0.0.1", port: int = 8000, secret: str | None = None, threads: int = 8) -> None:
    """Serve ``bot`` in the foreground (see :func:`bots_sdk.server.serve`)."""

    _serve(bot, host, port, secret, threads)


def start(bot: Bot, host: str = "127.0.0.1", port: int = 0, secret: str | None = None, threads: int = 8) -> BotServer:
    """Serve ``bot`` on a background thread (see :func:`bots_sdk.server.start`)."""

    return _start(bot, host, port, secret, threads)


__all__ = [
    "Bot",
    "Request",
    "PASS",
    "DOUBT",
    "THROUGH",
    "PROTOCOL_VERSION",
    "serve",
    "start",
    "connect",
    "Connection",
    "ConnectError",
]
