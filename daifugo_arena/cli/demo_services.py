"""What ``arena demo --connect`` adds to the demo: a Redis (a throwaway ``redis-server`` the demo
starts and stops, or one the user names) and a gateway (:class:`daifugo_arena.gateway.server.Gateway`) run in
the demo's process, on a thread of its own with its own asyncio loop."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable

import click
import redis

from arena.usecases.bots import Credentials
from bots_sdk import wire
from daifugo_arena.gateway.config import GatewayConfig
from daifugo_arena.gateway.server import Gateway

#: What the demo says when ``--connect`` finds no Redis.
NO_REDIS = (
    "--connect needs Redis (bots that dial out are relayed through it) and no redis-server was found on the "
    "PATH: install it (Debian or Ubuntu: apt-get install redis-server; macOS: brew install redis), or give "
    "--redis-url redis://HOST:PORT/0 of a Redis already running"
)
#: Most pings while a throwaway redis-server starts (0.05 s apart).
REDIS_START_PINGS = 200


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DemoRedis:
    """A Redis for the demo: ``url`` given (used as it is, never stopped), or a throwaway
    ``redis-server`` on a free port of 127.0.0.1 with nothing persisted, stopped by
    :meth:`close`.

    Raises:
        click.ClickException: no ``redis-server`` on the PATH (:data:`NO_REDIS`), it did not
            start, or ``url`` does not answer.
    """

    def __init__(self, url: str | None = None, *, binary: str | None = None):
        self.proc: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        if url is None:
            server = binary or shutil.which("redis-server")
            if server is None:
                raise click.ClickException(NO_REDIS)
            port = _free_port()
            self._dir = tempfile.TemporaryDirectory(prefix="arena-demo-redis-")
            self.proc = subprocess.Popen(
                [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                cwd=self._dir.name,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            url = f"redis://127.0.0.1:{port}/0"
        self.url = url
        client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        try:
            for _ in range(REDIS_START_PINGS if self.proc is not None else 1):
                if self.proc is not None and self.proc.poll() is not None:
                    raise click.ClickException(f"redis-server exited with status {self.proc.returncode} at start")
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    if self.proc is not None:
                        time.sleep(0.05)
            raise click.ClickException(f"Redis at {url} does not answer")
        except BaseException:
            self.close()
            raise
        finally:
            client.close()

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


class DemoGateway:
    """An ``arena gateway`` in this process: :class:`daifugo_arena.gateway.server.Gateway` on 127.0.0.1 (a
    free port), its asyncio loop on a thread of its own; ``url`` is what bots dial.

    Raises:
        click.ClickException: it did not start listening.
    """

    def __init__(self, broker_url: str, credentials: Callable[[int], Credentials | None]):
        self.gw = Gateway(broker_url, credentials, GatewayConfig(host="127.0.0.1", port=0))
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="demo-gateway", daemon=True)
        self._thread.start()
        self._ready.wait(60)
        if self.error is not None or not self._ready.is_set():
            self.close()
            raise click.ClickException(f"the gateway did not start: {self.error!r}")
        self.url = f"ws://127.0.0.1:{self.gw.port}{wire.PATH}"

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await self.gw.run(self._stop, lambda _port: self._ready.set())

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported by the constructor, or lost with the demo's end
            self.error = exc
            self._ready.set()

    def close(self) -> None:
        """Close every connection (1001) and stop the loop."""
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)
