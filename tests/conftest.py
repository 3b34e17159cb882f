"""Shared pytest fixtures: real PostgreSQL, real Redis, real Celery worker processes.

Fixtures (all available everywhere under tests/):

- ``free_port`` -> ``Callable[[], int]``: returns a TCP port free on 127.0.0.1 at call time.
- ``pg_url`` (session) -> ``str``: SQLAlchemy URL ``postgresql+psycopg://postgres@127.0.0.1:P/arena``.
  Taken from ``ARENA_TEST_DATABASE_URL`` (set by ``infra/test.sh``); when unset, a throwaway
  server is started with ``infra/postgres.sh`` for this session and stopped at the end.
- ``redis_url`` (session) -> ``str``: ``redis://127.0.0.1:P/0``, from ``ARENA_TEST_BROKER_URL``
  or started with ``infra/redis.sh`` in the same way.
- ``celery_worker_factory`` (function) -> ``Callable[..., WorkerHandle]``: starts a REAL
  ``celery -A worker.celery_app worker`` process and returns once it has answered a ``ping``
  task; every worker it started is stopped at teardown. See :class:`WorkerHandle`.

Marks: ``services`` (added to every test using a service fixture, below), ``browser``
(Chromium; added to every test using the ``chromium``, ``browser`` or ``page`` fixture),
``slow`` (set by hand on a test taking more than about 3 s: fuzzers, long property tests,
real servers). ``bash infra/test.sh --fast`` leaves out all three.

Hypothesis: profile ``ci`` (today's counts, the default), ``quick`` (the ``--fast`` lane) or
``lane`` (the other build's lane), chosen by ``ARENA_HYPOTHESIS_PROFILE``; a test with its own
count writes ``max_examples=tests.helpers.examples(n)`` (n in ``ci``, a twentieth of it in
``quick``, a quarter in ``lane``).

Under pytest-xdist (``-n N``) each worker process gets its own Redis server (the n-th of
``ARENA_TEST_BROKER_URLS``, from ``infra/test.sh``), its own databases (uuid names, one
PostgreSQL server) and its own Celery worker names and private queues: workers never share
a queue, a key or a pub/sub channel.

Processes a test starts (servers, workers, bots, CLI commands that keep running): through the
``spawn`` fixture or :func:`tests.children.spawn` (a process group of its own, stopped at
teardown, on a failure, Ctrl-C or SIGTERM, and with the test process: ``tests/children.py``);
never a bare ``subprocess.Popen`` that a failing assertion would leave running. Wait for what
a process does on an observable state (``tests.helpers.wait_until``), never on a sleep.

Where to put your own fixtures: a ``conftest.py`` in your tests/ subfolder (visible in that
folder), or a module in ``tests/plugins/`` (every ``tests/plugins/*.py`` not starting with
``_`` is registered as a pytest plugin, so its fixtures and hooks are visible everywhere).
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from hypothesis import settings

from arena import relay, tables
from tests import children

# Ctrl-C reaches the processes the tests start even when the suite was started with SIGINT
# ignored (a background job of a script, `bash infra/test.sh &`): an ignored signal stays
# ignored in a child, a handled one is reset to its default, and a test pressing Ctrl-C waits.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Test bots live on 127.0.0.1: the bot connections' SSRF policy (arena.bot_transport)
# must allow loopback where a test does not choose, as infra/test.sh exports it.
os.environ.setdefault("ARENA_ALLOW_PRIVATE_BOT_URLS", "1")

REPO = Path(__file__).resolve().parent.parent
INFRA = REPO / "infra"
PLUGINS_DIR = Path(__file__).resolve().parent / "plugins"

#: Seconds a worker gets to answer its first ping (cold start is about 0.5-2 s here).
WORKER_READY_TIMEOUT_S = 60.0
#: Seconds a worker gets to exit after SIGTERM before it is SIGKILLed at teardown.
WORKER_STOP_TIMEOUT_S = 15.0
#: Seconds a worker left running at a test's teardown gets for its warm shutdown before it is
#: SIGKILLed: none. The test is over, so neither a match still in flight (a bot gone, a bank
#: running down) nor Celery's own shutdown (about 2 s idle) is waited for; the next test's
#: queues and kombu's unacked records are emptied before it starts (``_no_stale_tasks``). A
#: test of the warm shutdown itself calls ``terminate``/``stop``.
TEARDOWN_GRACE_S = 0.0


# --------------------------------------------------------------------------- hypothesis

#: Environment variable naming the Hypothesis profile (``ci`` when unset).
HYPOTHESIS_PROFILE_VAR = "ARENA_HYPOTHESIS_PROFILE"
settings.register_profile("ci", max_examples=100)
settings.register_profile("quick", max_examples=5)
settings.register_profile("lane", max_examples=25)  # the other build's lane (test_other_build)
settings.load_profile(os.environ.get(HYPOTHESIS_PROFILE_VAR, "ci"))


# --------------------------------------------------------------------------- plugins


def pytest_configure(config: pytest.Config) -> None:
    """Register every ``tests/plugins/*.py`` (not ``_*``) as a global pytest plugin."""
    if not PLUGINS_DIR.is_dir():
        return
    for path in sorted(PLUGINS_DIR.glob("*.py")):
        if path.name.startswith("_"):
            continue
        name = f"arena_test_plugins.{path.stem}"
        if config.pluginmanager.has_plugin(name):
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        config.pluginmanager.register(module, name)


#: Fixtures that start (or need) a real PostgreSQL, Redis or Celery worker: a test using one,
#: directly or through another fixture, gets the ``services`` marker (the fast lane
#: ``-m "not services"`` leaves it out).
SERVICE_FIXTURES = frozenset({"pg_url", "redis_url", "celery_worker_factory"})
#: Fixtures that drive Chromium: a test using one gets the ``browser`` marker.
BROWSER_FIXTURES = frozenset({"chromium", "browser", "page"})


def needs_services(item: pytest.Item) -> bool:
    """True if ``item`` uses a service fixture, or a ``database_url`` parametrized to PostgreSQL."""
    names = set(getattr(item, "fixturenames", ()))
    if names & SERVICE_FIXTURES:
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("database_url") == "postgresql"


#: Set to ``1`` by ``infra/test.sh --fast``: a test module whose module-level ``pytestmark``
#: names one of ``LEFT_OUT_BY_FAST`` is not even imported (all its tests are left out).
FAST_LANE_VAR = "ARENA_TEST_FAST"
LEFT_OUT_BY_FAST = frozenset({"services", "browser", "slow"})


def _module_marks(path: Path) -> set[str]:
    """Names ``pytest.mark.<name>`` written in the module-level ``pytestmark`` of ``path``."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return set()
    marks: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):
            marks |= {a.attr for a in ast.walk(node.value) if isinstance(a, ast.Attribute)}
    return marks


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """In the fast lane, skip importing a test module marked as a whole services, browser or slow."""
    if os.environ.get(FAST_LANE_VAR) != "1" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    return True if _module_marks(collection_path) & LEFT_OUT_BY_FAST else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that needs PostgreSQL, Redis or a worker ``services``, and every test
    that drives Chromium ``browser``."""
    for item in items:
        if needs_services(item):
            item.add_marker(pytest.mark.services)
        if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)


# --------------------------------------------------------------------------- ports


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _pick_free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def free_port() -> Callable[[], int]:
    """Return a function giving a TCP port that is free on 127.0.0.1 when called."""
    return _pick_free_port


# --------------------------------------------------------------------------- services


def _service(script: str, port_var: str, default_port: int, url_var: str) -> Iterator[str]:
    """Yield a service URL: ``$url_var`` if set, else start ``infra/<script>`` for the session."""
    url = os.environ.get(url_var)
    if url:
        yield url
        return
    env = dict(os.environ)
    if port_var not in env:
        # Another test run on this machine may hold the default port: then use a free one.
        env[port_var] = str(default_port if _port_is_free(default_port) else _pick_free_port())
    cmd = ["bash", str(INFRA / script)]
    already = subprocess.run([*cmd, "status"], env=env, capture_output=True, text=True)
    started = subprocess.run([*cmd, "start"], env=env, capture_output=True, text=True)
    if started.returncode != 0:
        pytest.fail(f"{script} start failed:\n{started.stderr}", pytrace=False)
    try:
        yield started.stdout.strip().splitlines()[-1]
    finally:
        if already.returncode != 0:  # only stop what this session started
            subprocess.run([*cmd, "stop"], env=env, capture_output=True, text=True)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """SQLAlchemy URL of a real, empty-at-start PostgreSQL 15 database ``arena``.

    Shape: ``postgresql+psycopg://postgres@127.0.0.1:PORT/arena`` (psycopg 3 driver).
    Source: ``ARENA_TEST_DATABASE_URL``, else ``infra/postgres.sh`` on ``ARENA_PG_PORT``
    (default 54329, or a free port when that one is taken).
    """
    yield from _service("postgres.sh", "ARENA_PG_PORT", 54329, "ARENA_TEST_DATABASE_URL")


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a real Redis (Celery broker and result backend): ``redis://127.0.0.1:PORT/0``.

    Source: ``ARENA_TEST_BROKER_URL``, else ``infra/redis.sh`` on ``ARENA_REDIS_PORT``
    (default 63799, or a free port when that one is taken).
    """
    own = _xdist_broker_url()
    if own is not None:
        yield own
        return
    yield from _service("redis.sh", "ARENA_REDIS_PORT", 63799, "ARENA_TEST_BROKER_URL")


def _xdist_broker_url() -> str | None:
    """Under pytest-xdist worker ``gw<n>``: the n-th URL of ``ARENA_TEST_BROKER_URLS`` (one Redis
    per worker, started by ``infra/test.sh``; pub/sub channels span Redis databases, so workers
    get servers, not database numbers); None otherwise."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    urls = os.environ.get("ARENA_TEST_BROKER_URLS", "").split()
    if not worker.startswith("gw") or not urls:
        return None
    return urls[int(worker[2:]) % len(urls)]


#: The task queues of the arena (and kombu's per-priority lists and unacked records) that a test's
#: workers consume; see :func:`_no_stale_tasks`.
_TASK_QUEUES = ("arena", "arena.priority", "arena.checks", "arena.webhooks")
_KOMBU_KEYS = ("unacked", "unacked_index")


@pytest.fixture(autouse=True)
def _no_stale_tasks(request: pytest.FixtureRequest) -> None:
    """Empty the task queues of the test's Redis before a test that uses it.

    Tests of one xdist worker share its Redis but each gets a fresh database, whose ids start
    at 1 again: a task an earlier test left unconsumed (``arena.check_bot(1)``, say) would be
    taken by this test's worker and claim this test's row 1 (a second ``attempts``). The frames
    of an earlier table (``arena:table:*``, kept an hour, keyed by match id) go too: else the
    page of this test's match 1 would start from the last view of another test's match 1. So
    do the gateways' keys (``arena:gw:*``: connection leases, requests and stories keyed by bot
    id; no gateway outlives its test): else this test's bot 1 could show an earlier test's bot 1
    connected."""
    if "redis_url" not in request.fixturenames:
        return
    client = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    try:
        keys = [q + suffix for q in _TASK_QUEUES for suffix in ("", "\x06\x163", "\x06\x166", "\x06\x169")]
        for prefix in (tables.PREFIX, relay.PREFIX):
            keys += list(client.scan_iter(match=prefix + "*", count=1000))
        client.delete(*keys, *_KOMBU_KEYS)
    finally:
        client.close()


# --------------------------------------------------------------------------- celery worker

_worker_counter = itertools.count(1)


@dataclass
class WorkerHandle:
    """A running ``celery worker`` process started by ``celery_worker_factory``.

    Attributes:
        proc: the ``subprocess.Popen`` of the worker's main process (its own process group,
            so its prefork pool children can be killed with it).
        name: the worker's node name (``-n``), e.g. ``arena-test-1-ab12cd@127.0.0.1``.
        queues: queues it consumes, first queue first; the first one is private to this worker
            (read before the match queues: a ping is answered even while matches wait).
        app: a client Celery app on the same broker, for sending tasks
            (``handle.app.send_task(PING_TASK, queue=QUEUE).get(timeout=30)``, arena.queue).
        log_path: file holding the worker's stdout and stderr.
    """

    proc: subprocess.Popen
    name: str
    queues: tuple[str, ...]
    app: object
    log_path: Path
    _closed: bool = field(default=False, repr=False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def private_queue(self) -> str:
        """A queue only this worker consumes (send here to reach exactly this worker)."""
        return self.queues[0]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        """The worker's output so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def terminate(self, timeout: float | None = WORKER_STOP_TIMEOUT_S) -> int | None:
        """Send SIGTERM (Celery warm shutdown: finish running tasks, then exit).

        Waits up to ``timeout`` seconds (None: do not wait). Returns the exit code, or None
        if still running.
        """
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        if timeout is None:
            return self.proc.poll()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> int:
        """SIGKILL the worker and its pool children at once (a crash: nothing is acked)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return self.proc.wait()

    def stop(self, grace_s: float = WORKER_STOP_TIMEOUT_S) -> None:
        """Terminate gracefully (up to ``grace_s`` seconds), SIGKILL whatever is left;
        idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.terminate(grace_s) is None:
            self.kill()
        else:  # reap any pool child still in the group
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.app.close()  # type: ignore[attr-defined]
        except Exception:
            pass


def _client_app(broker_url: str):
    from arena.config import Settings
    from worker.celery_app import make_app

    env = {**os.environ, "ARENA_BROKER_URL": broker_url, "ARENA_CELERY_EAGER": "0"}
    return make_app(Settings.from_env(env))


@pytest.fixture
def celery_worker_factory(
    request: pytest.FixtureRequest, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., WorkerHandle]]:
    """Start real Celery worker processes; all are stopped at teardown.

    ``start(*, concurrency=1, pool="prefork", queues=("arena.priority", "arena.webhooks", "arena.checks",
    "arena"), broker_url=None, database_url=None, env=None, extra_args=()) -> WorkerHandle``

    - ``broker_url`` defaults to the ``redis_url`` fixture.
    - ``database_url`` defaults to the ``pg_url`` fixture (started on first use);
      pass a string to use another database.
    - ``env`` adds or overrides environment variables of the worker
      (it already gets ARENA_BROKER_URL, ARENA_DATABASE_URL, ARENA_ALLOW_PRIVATE_BOT_URLS=1,
      ARENA_CELERY_EAGER=0).
    - ``prefix``: a command the worker runs under (``("ip", "netns", "exec", NAME)``: in a
      network namespace of its own).
    Returns once the worker has answered a ``ping`` task on its private queue (waits at
    most ``WORKER_READY_TIMEOUT_S`` seconds, else the test fails with the worker's log).
    """
    handles: list[WorkerHandle] = []
    logs = tmp_path_factory.mktemp("celery-workers")

    def start(
        *,
        concurrency: int = 1,
        pool: str = "prefork",
        queues: tuple[str, ...] = ("arena.priority", "arena.webhooks", "arena.checks", "arena"),
        broker_url: str | None = None,
        database_url: str | None = None,
        env: dict[str, str] | None = None,
        extra_args: tuple[str, ...] = (),
        prefix: tuple[str, ...] = (),
    ) -> WorkerHandle:
        from arena.queue import PING_TASK  # celery: loaded by the tests that start a worker only

        broker = broker_url or redis_url
        db = database_url or request.getfixturevalue("pg_url")
        tag = f"{next(_worker_counter)}-{uuid.uuid4().hex[:6]}"
        name = f"arena-test-{tag}@127.0.0.1"
        private = f"arena.test.{tag}"
        all_queues = (private, *queues)
        log_path = logs / f"worker-{tag}.log"
        wenv = {
            **os.environ,
            "ARENA_BROKER_URL": broker,
            "ARENA_DATABASE_URL": db,
            "ARENA_ALLOW_PRIVATE_BOT_URLS": "1",
            "ARENA_CELERY_EAGER": "0",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            **(env or {}),
        }
        cmd = [
            *prefix,
            sys.executable,
            "-m",
            "celery",
            "-A",
            "worker.celery_app",
            "worker",
            "--without-mingle",
            "--without-gossip",
            "--without-heartbeat",
            "--pool",
            pool,
            "--concurrency",
            str(concurrency),
            "--queues",
            ",".join(all_queues),
            "--hostname",
            name,
            "--loglevel",
            "INFO",
            *extra_args,
        ]
        with open(log_path, "wb") as log:
            proc = children.spawn(
                cmd, cwd=REPO, env=wenv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        handle = WorkerHandle(proc, name, all_queues, _client_app(broker), log_path)
        handles.append(handle)

        result = handle.app.send_task(PING_TASK, queue=private)  # type: ignore[attr-defined]
        deadline = time.monotonic() + WORKER_READY_TIMEOUT_S
        while not result.ready():
            if not handle.alive():
                pytest.fail(
                    f"celery worker exited with {proc.returncode} before answering ping:\n{handle.log()}",
                    pytrace=False,
                )
            if time.monotonic() > deadline:
                handle.stop()
                pytest.fail(
                    f"celery worker did not answer ping in {WORKER_READY_TIMEOUT_S} s:\n{handle.log()}",
                    pytrace=False,
                )
            time.sleep(0.05)
        answer = result.get(timeout=5)
        if answer != "pong":
            pytest.fail(f"celery worker answered ping with {answer!r}", pytrace=False)
        return handle

    yield start

    for handle in reversed(handles):
        handle.stop(TEARDOWN_GRACE_S)


# --------------------------------------------------------------------------- celery beat


@dataclass
class BeatHandle:
    """A running ``arena beat`` process (the reaper) started by ``beat_factory``."""

    proc: subprocess.Popen
    log_path: Path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WORKER_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def beat_factory(
    request: pytest.FixtureRequest, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., BeatHandle]]:
    """Start real ``arena beat`` processes (Celery beat running the reaper); stopped at teardown.

    ``start(*, database_url, broker_url=None, env=None) -> BeatHandle``: ``env`` adds
    variables (e.g. ``ARENA_LEASE_S``, ``ARENA_REAPER_INTERVAL_S``, ``ARENA_LOST_AFTER_S``).
    Returns once the process logged its start (at most ``WORKER_READY_TIMEOUT_S`` seconds).
    """
    handles: list[BeatHandle] = []
    folder = tmp_path_factory.mktemp("celery-beat")

    def start(*, database_url: str, broker_url: str | None = None, env: dict[str, str] | None = None) -> BeatHandle:
        tag = uuid.uuid4().hex[:6]
        log_path = folder / f"beat-{tag}.log"
        benv = {
            **os.environ,
            "ARENA_BROKER_URL": broker_url or redis_url,
            "ARENA_DATABASE_URL": database_url,
            "ARENA_CELERY_EAGER": "0",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            **(env or {}),
        }
        cmd = [sys.executable, "-m", "daifugo_arena.cli", "beat", "--schedule", str(folder / f"schedule-{tag}")]
        with open(log_path, "wb") as log:
            proc = children.spawn(
                cmd, cwd=REPO, env=benv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        handle = BeatHandle(proc, log_path)
        handles.append(handle)
        deadline = time.monotonic() + WORKER_READY_TIMEOUT_S
        while "beat: Starting" not in handle.log():
            if not handle.alive() or time.monotonic() > deadline:
                handle.stop()
                pytest.fail(f"arena beat did not start:\n{handle.log()}", pytrace=False)
            time.sleep(0.05)
        return handle

    yield start

    for handle in reversed(handles):
        handle.stop()
