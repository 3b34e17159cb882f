"""Helpers shared by several test folders (import as ``tests.helpers``).

- :func:`create_pg_database` / :func:`migrated_pg_database`: a new database on the test
  PostgreSQL server, empty or at the newest migration (``CREATE DATABASE ... TEMPLATE`` of a
  template migrated once per process).
- :func:`migrated_sqlite_url`: a SQLite file at the newest migration (a copy of a file
  migrated once per process).
- :func:`mark_bot_checked`: store a finished check of a registered bot (``ready`` or
  ``failed``) through the models, without playing the check's games.
- :func:`examples`: a Hypothesis ``max_examples`` scaled by the loaded profile.
- :func:`wait_until`: poll an observable state until it holds (never a sleep that orders
  events; the timeout only guards against a hang); :func:`paced`: a costly condition asked
  less often.
- :class:`FreezableProxy`: a TCP proxy that can freeze its connections (a server that stops
  answering, a path gone silent), or forward from another address (a network namespace).
- :func:`run_bench`: a script of ``bench/`` run to its end in its short form; its lines.
"""

from __future__ import annotations

import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import settings
from sqlalchemy import create_engine, text

from api import create_app
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.models import Bot, BotCheck, utcnow
from arena.db.session import make_engine, normalize_url
from arena.inprocess import InProcessDispatcher
from tests import children

#: ``max_examples`` of the ``ci`` profile (tests/conftest.py): counts written for it run as is.
CI_MAX_EXAMPLES = 100

_lock = threading.Lock()
_pg_templates: dict[str, str] = {}
_sqlite_template: list[Path] = []


def run_bench(script: str, *args: str, timeout_s: float = 900) -> tuple[list[str], str]:
    """Run ``bench/<script>`` with ``args`` (this Python, from the repository's root; stopped
    with its process group if the test fails or times out): its stdout lines, printed for the
    test's log, and its stderr. Fails the test, with the end of stderr, if it exits non-zero."""
    root = Path(__file__).resolve().parent.parent
    done = children.run(
        [sys.executable, str(root / "bench" / script), *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    print(*lines, sep="\n")
    return lines, done.stderr


def examples(ci_count: int) -> int:
    """``ci_count`` under the ``ci`` Hypothesis profile; under ``quick`` (max_examples 5) a
    twentieth of it, under ``lane`` (25) a quarter, at least 1."""
    return max(1, ci_count * settings.default.max_examples // CI_MAX_EXAMPLES)


#: Seconds :func:`wait_until` waits by default before it fails: a guard against a hang only.
WAIT_TIMEOUT_S = 60.0


def wait_until(condition: Callable[[], Any], what: str, timeout_s: float = WAIT_TIMEOUT_S) -> Any:
    """Poll ``condition()`` every 10 ms until it is truthy; return its value. After
    ``timeout_s`` seconds raise ``AssertionError`` naming ``what`` (the state waited for)."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"still not {what} after {timeout_s} s")
        time.sleep(0.01)
    return value


def paced(condition: Callable[[], Any], every_s: float = 0.1) -> Callable[[], Any]:
    """``condition`` for :func:`wait_until`, asked at most every ``every_s`` seconds: for a
    condition that costs the system under test (a request to a server it shares a machine or
    an interpreter with), never to order events."""

    def asked() -> Any:
        value = condition()
        if not value:
            time.sleep(every_s)
        return value

    return asked


def _admin_execute(pg_url: str, sql: str) -> None:
    admin = create_engine(normalize_url(pg_url), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(sql))
    finally:
        admin.dispose()


def _database_url(pg_url: str, name: str) -> str:
    return normalize_url(pg_url).rsplit("/", 1)[0] + "/" + name


def create_pg_database(pg_url: str, prefix: str = "t", template: str | None = None) -> str:
    """CREATE a new database on the test PostgreSQL server (empty, or a copy of the database
    ``template``); returns its URL.

    Each test gets its own database, so tests never see each other's rows.
    """
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    _admin_execute(pg_url, f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    return _database_url(pg_url, name)


def pg_template(pg_url: str) -> str:
    """Name of this process's migrated template database on ``pg_url``'s server (made on first
    use: one Alembic run per process and server)."""
    with _lock:
        name = _pg_templates.get(pg_url)
        if name is None:
            url = create_pg_database(pg_url, "tmpl")
            upgrade(url)  # disposes its engine: no connection left, so it can be a template
            name = _pg_templates[pg_url] = url.rsplit("/", 1)[1]
        return name


def migrated_pg_database(pg_url: str, prefix: str = "t") -> str:
    """A new database at the newest migration (a copy of :func:`pg_template`); its URL."""
    return create_pg_database(pg_url, prefix, template=pg_template(pg_url))


def migrate_pg_database_in_place(url: str, pg_url: str) -> None:
    """Make the empty database at ``url`` a copy of the migrated template (drop, then
    ``CREATE DATABASE ... TEMPLATE``): the URL stays the same."""
    name = url.rsplit("/", 1)[1]
    template = pg_template(pg_url)
    _admin_execute(pg_url, f'DROP DATABASE "{name}"')
    _admin_execute(pg_url, f'CREATE DATABASE "{name}" TEMPLATE "{template}"')


def migrated_sqlite_url(path: Path) -> str:
    """Copy this process's migrated SQLite file to ``path``; returns ``sqlite:///<path>``."""
    with _lock:
        if not _sqlite_template:
            folder = Path(tempfile.mkdtemp(prefix="arena-sqlite-template-"))
            template = folder / "arena.db"
            upgrade(f"sqlite:///{template}")
            _sqlite_template.append(template)
    shutil.copyfile(_sqlite_template[0], path)
    return f"sqlite:///{path}"


#: ``last_check`` of a bot marked passed by :func:`mark_bot_checked` (the shape of
#: ``arena.conformance.check_bot``'s outcome, without the games' figures).
PASSED_CHECK: dict[str, Any] = {"ok": True, "health": {"ok": True}, "conformance": {}}


def mark_bot_checked(sessionmaker: Any, bot_id: int, result: dict[str, Any] | None = None) -> str:
    """Store a finished check of bot ``bot_id`` (its current URL and rule sets) with ``result``
    (default :data:`PASSED_CHECK`): a ``passed`` or ``failed`` ``bot_checks`` row, and the bot
    ``ready`` or ``failed`` with it as ``last_check``; commit. Returns the bot's status."""
    result = PASSED_CHECK if result is None else result
    passed = bool(result.get("ok"))
    now = utcnow()
    with sessionmaker() as s:
        bot = s.get(Bot, bot_id)
        assert bot is not None, bot_id
        s.add(
            BotCheck(
                bot_id=bot.id,
                account_id=bot.owner_id,
                status="passed" if passed else "failed",
                url=bot.url,
                rulesets=list(bot.rulesets),
                previous_status=bot.status,
                attempts=1,
                result=result,
                created_at=now,
                started_at=now,
                finished_at=now,
                updated_at=now,
            )
        )
        bot.status = "ready" if passed else "failed"
        bot.last_check, bot.last_check_at = result, now
        s.commit()
        return bot.status


def eager_app(data_dir: Path, **more: Any) -> tuple[Any, Any]:
    """``(Flask app, engine)`` of an arena on a fresh migrated SQLite database in ``data_dir``
    whose tasks run within the request (eager, in-process dispatcher; no broker reachable;
    private bot URLs allowed); ``more``: other :class:`arena.config.Settings` fields."""
    url = migrated_sqlite_url(data_dir / "arena.db")
    engine = make_engine(url)
    settings = Settings(
        data_dir=data_dir,
        database_url=url,
        broker_url="redis://127.0.0.1:1/0",
        allow_private_bot_urls=True,
        celery_eager=True,
        **more,
    )
    return create_app(settings, engine=engine, dispatcher=InProcessDispatcher(settings)), engine


class FreezableProxy:
    """A TCP proxy on ``host`` (127.0.0.1 by default, any free port) in front of ``upstream``
    (host, port) that can freeze: a frozen connection forwards nothing either way (a database
    server that stops answering, a network path gone silent: no close, no reset), holding what
    arrives; :attr:`held` counts the bytes its client sent meanwhile. Never frozen, it is a
    plain forwarder (how a network namespace reaches a server listening on 127.0.0.1 only)."""

    def __init__(self, upstream: tuple[str, int], host: str = "127.0.0.1"):
        self.upstream = upstream
        self.held = 0
        self._thawed: list[threading.Event] = []  # one per connection: set while it flows
        self._new_frozen = False
        self.listener = socket.create_server((host, 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def freeze(self, *, new_ones: bool = True) -> None:
        """Freeze every connection open now, and (``new_ones``) every one opened from now on."""
        self._new_frozen = new_ones
        for thawed in self._thawed:
            thawed.clear()

    def thaw(self) -> None:
        self._new_frozen = False
        for thawed in self._thawed:
            thawed.set()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self.sockets += [client, server]
            thawed = threading.Event()
            if not self._new_frozen:
                thawed.set()
            self._thawed.append(thawed)
            threading.Thread(target=self._pump, args=(client, server, thawed, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, thawed, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, thawed: threading.Event, from_client: bool) -> None:
        try:
            while data := src.recv(65536):
                if not thawed.is_set() and from_client:
                    self.held += len(data)
                thawed.wait()
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.thaw()
        self.listener.close()
        for sock in self.sockets:
            sock.close()
