"""Fixtures of the bots_sdk tests: real HTTP bot servers on 127.0.0.1.

- ``bot_server`` -> ``Callable[[Bot, str | None], BotServer]``: starts ``bots_sdk.start``
  (waitress) on a free port; closed at teardown.
- ``bad_bot`` -> ``Callable[[str], FakeBot | DripHeadersServer]``: starts a misbehaving bot
  (tests.fakes: the SDK's server; ``drip_headers`` raw sockets) whose every POST misbehaves;
  ``.url``, ``.requests``. Behaviours: ``sleep`` (reads the request, never answers),
  ``garbage`` (200 with a non-JSON body), ``status500``, ``huge`` (200 with a 1 MiB body),
  ``drip_headers`` / ``drip_body`` (one byte every 0.1 s), ``illegal`` (200 with a
  well-formed but illegal action), ``redirect`` (302 to another URL). Stopped at teardown.
- ``refused_url``: an http URL on a port where nothing listens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import bots_sdk
from bots_sdk.bot import Bot
from tests.fakes import DripHeadersServer, FakeBot


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


#: How a ``bad_bot`` behaviour is played by the shared fakes (tests.fakes): every POST,
#: notices too, misbehaves.
_MODES = {"sleep": "hang", "garbage": "html", "drip_body": "drip_body"}
#: A timing-out bad bot has not answered this many seconds after a request (``sleep``: never;
#: the drips: a byte every 0.1 s for thousands of seconds): a fault before is the bank's.
BAD_BOT_ANSWERS_AFTER_S = 30.0


@pytest.fixture
def bad_bot() -> Iterator[Callable[[str], FakeBot | DripHeadersServer]]:
    servers: list[FakeBot | DripHeadersServer] = []

    def start(behaviour: str) -> FakeBot | DripHeadersServer:
        if behaviour == "drip_headers":
            s: FakeBot | DripHeadersServer = DripHeadersServer()
        else:
            s = FakeBot(mode=_MODES.get(behaviour, behaviour), every_post=True)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


@pytest.fixture
def refused_url(free_port) -> str:
    return f"http://127.0.0.1:{free_port()}/"
