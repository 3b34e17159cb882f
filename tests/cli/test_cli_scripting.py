"""The command line as a newcomer scripts it (issue 18), through real processes.

- ``arena tournament create`` prints the bare id on stdout (summary on stderr), or JSON;
  ``arena accounts create`` the bare token.
- ``arena tournament start --wait`` against a real broker with no worker says, on stderr,
  that no worker has taken a match and to start ``arena worker``.
- Two ``arena worker`` processes on one host answer a Celery ping under different names.
- ``arena worker --processes 2`` starts two nodes, starts a new one when one is killed,
  restarts both on SIGHUP, stops both on SIGTERM (exit 0), also when the SIGTERM comes while a
  process is being started, and its processes stop when the launcher itself is killed.
- Two ``arena api`` servers keep their own gunicorn control sockets; none by default.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from arena.accounts import create_account
from arena.config import Settings
from arena.db.models import Bot
from arena.db.session import make_engine, make_sessionmaker
from arena.security import new_secret
from daifugo_arena.cli.servers import WsgiServer
from daifugo_arena.cli.service import ApiServer
from tests.children import spawn as spawn_child
from tests.helpers import migrated_sqlite_url

REPO = Path(__file__).resolve().parents[2]
ARENA = [sys.executable, "-m", "daifugo_arena.cli"]
#: Seconds a started server or worker gets to answer (readiness waits, not assertions).
READY_S = 60.0


def _env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    return {**base, "PYTHONPATH": str(REPO), **extra}


def run(*args: str, env: dict | None = None, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*ARENA, *args], cwd=REPO, env=_env(**(env or {})), capture_output=True, text=True, timeout=timeout
    )


def _api(tmp_path: Path, broker_url: str) -> tuple[WsgiServer, str, object]:
    """An API on SQLite with an organizer and three ``ready`` Million Doubt bots (ids 1-3)."""
    url = migrated_sqlite_url(tmp_path / "arena.db")
    engine = make_engine(url)
    with make_sessionmaker(engine)() as s:
        boss, token = create_account(s, "boss", "organizer")
        for i in range(3):
            s.add(
                Bot(
                    owner_id=boss.id,
                    name=f"bot{i}",
                    url=f"http://127.0.0.1:{9000 + i}/",
                    rulesets=["million_doubt"],
                    secret=new_secret(),
                    status="ready",
                )
            )
        s.commit()
    from api import create_app

    server = WsgiServer(create_app(Settings(data_dir=tmp_path, database_url=url, broker_url=broker_url), engine=engine))
    return server, token, engine


@pytest.fixture
def offline_api(tmp_path):
    server, token, engine = _api(tmp_path, "redis://127.0.0.1:1/0")
    yield {"ARENA_API_URL": server.url, "ARENA_TOKEN": token}
    server.close()
    engine.dispose()  # type: ignore[attr-defined]


CREATE = (
    "tournament",
    "create",
    "--ruleset",
    "million_doubt",
    "--bot",
    "1",
    "--bot",
    "2",
    "--bot",
    "3",
    "--games-per-pairing",
    "2",
    "--seed",
    "7",
    "--mix-owners",  # the three bots are one contestant's
)


def test_create_prints_the_bare_id_on_stdout(offline_api):
    done = run(*CREATE, env=offline_api)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1\n"
    assert "tournament 1: million_doubt, created, 0/0 matches finished" in done.stderr
    done = run(*CREATE, "--json", env=offline_api)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["id"] == 2 and body["status"] == "created" and done.stderr == ""


@pytest.mark.slow
def test_accounts_create_prints_the_bare_token_on_stdout(tmp_path):
    done = run(
        "accounts", "create", "--organizer", "boss", env={"ARENA_DATABASE_URL": f"sqlite:///{tmp_path / 'a.db'}"}
    )
    assert done.returncode == 0, done.stderr
    (token,) = done.stdout.splitlines()
    assert re.fullmatch(r"\S{20,}", token) and done.stdout == token + "\n"
    assert "account 1 boss (organizer)" in done.stderr


@pytest.mark.services
def test_start_wait_without_a_worker_says_so(tmp_path, redis_url):
    import redis

    broker = redis_url.rsplit("/", 1)[0] + "/11"  # a Redis database of its own: no worker consumes it
    queue = redis.Redis.from_url(broker)
    queue.delete("arena")
    server, token, engine = _api(tmp_path, broker)
    env = {"ARENA_API_URL": server.url, "ARENA_TOKEN": token}
    try:
        assert run(*CREATE, env=env).stdout == "1\n"
        done = run(
            "tournament",
            "start",
            "1",
            "--if-offline",
            "start",  # its bots serve nothing: started without them
            "--wait",
            "--poll",
            "0.2",
            "--worker-hint-after",
            "0.5",
            "--timeout",
            "10",
            env=env,
        )
        assert queue.llen("arena") == 3  # the real broker holds the three matches, untaken
    finally:
        queue.delete("arena")
        server.close()
        engine.dispose()  # type: ignore[attr-defined]
    assert done.returncode == 1 and done.stdout == ""
    err = " ".join(done.stderr.split())
    assert "Hint: no worker has taken a match of tournament 1" in err
    assert "(3 queued, 0 running)" in err and "Start one with `arena worker`" in err
    assert "ARENA_BROKER_URL" in err and "arena tournament resume 1" in err
    assert err.count("Hint:") == 1  # once per stall, not at every poll
    assert done.stderr.strip().splitlines()[-1] == "Error: tournament 1 still running after 10 s (0/3 matches finished)"


@pytest.mark.services
def test_two_workers_on_one_host_have_different_names(tmp_path, redis_url):
    from worker.celery_app import make_app

    broker = redis_url.rsplit("/", 1)[0] + "/12"
    queue = f"arena.names.{uuid.uuid4().hex[:8]}"  # nothing is ever sent here
    env = {"ARENA_BROKER_URL": broker, "ARENA_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}"}
    procs = []
    client = make_app(Settings.from_env({"ARENA_BROKER_URL": broker}))
    try:
        for i in range(2):
            log = open(tmp_path / f"worker{i}.log", "wb")
            procs.append(
                spawn_child(
                    [*ARENA, "worker", "--pool", "solo", "--checks", "0", "--pars", "0", "-Q", queue],
                    cwd=REPO,
                    env=_env(**env),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        host = socket.gethostname()
        expected = {f"arena-{p.pid}@{host}" for p in procs}
        names: set[str] = set()
        deadline = time.monotonic() + READY_S
        while names != expected and time.monotonic() < deadline:
            assert all(p.poll() is None for p in procs), (tmp_path / "worker0.log").read_text()
            names = {n for reply in client.control.ping(timeout=1.0) for n in reply} & expected
        assert names == expected
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        client.close()


def _nodes(client, prefix: str) -> dict[str, int]:
    """Node name -> process id of the live workers whose name starts with ``prefix``."""
    stats = client.control.inspect(timeout=1.0).stats() or {}
    return {name: int(s["pid"]) for name, s in stats.items() if name.startswith(prefix)}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is not alive
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.services
def test_worker_processes_are_started_restarted_and_stopped(tmp_path, redis_url):
    from worker.celery_app import make_app

    broker = redis_url.rsplit("/", 1)[0] + "/12"
    tag = uuid.uuid4().hex[:8]
    queue = f"arena.procs.{tag}"  # nothing is ever sent here
    env = {"ARENA_BROKER_URL": broker, "ARENA_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}"}
    client = make_app(Settings.from_env({"ARENA_BROKER_URL": broker}))
    log = open(tmp_path / "launcher.log", "wb")
    launcher = spawn_child(
        [
            *ARENA,
            "worker",
            "--processes",
            "2",
            "--checks",
            "0",
            "--pars",
            "0",
            "-c",
            "2",
            "-Q",
            queue,
            "-n",
            f"lt{tag}@127.0.0.1",
        ],
        cwd=REPO,
        env=_env(**env),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    first, second = f"lt{tag}-1@127.0.0.1", f"lt{tag}-2@127.0.0.1"

    def wait_for(cond, what: str) -> dict[str, int]:
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            assert launcher.poll() is None, (tmp_path / "launcher.log").read_text()
            nodes = _nodes(client, f"lt{tag}")
            if cond(nodes):
                return nodes
            time.sleep(0.2)
        raise AssertionError(f"{what}: {(tmp_path / 'launcher.log').read_text()}")

    try:
        nodes = wait_for(lambda n: set(n) == {first, second}, "two nodes")
        assert nodes[first] != nodes[second] != launcher.pid
        os.kill(nodes[first], signal.SIGKILL)  # a worker process dies
        again = wait_for(lambda n: set(n) == {first, second} and n[first] != nodes[first], "a new first node")
        assert again[second] == nodes[second]  # the other one played on
        assert not _alive(nodes[first])
        launcher.send_signal(signal.SIGHUP)  # a restart of every process, not a stop
        hupped = wait_for(
            lambda n: set(n) == {first, second} and n[first] != again[first] and n[second] != again[second],
            "both nodes restarted",
        )
        assert launcher.poll() is None
        again = hupped
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(60) == 0
        assert not _alive(again[first]) and not _alive(again[second])
        assert "exited with status -9" in (tmp_path / "launcher.log").read_text()
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
        client.close()


@pytest.mark.services
def test_the_par_process_runs_at_a_lower_priority(tmp_path, redis_url):
    """``arena worker --pars 1``: one more node, ``NAME-pars``, consuming ``arena.par`` alone at
    niceness +10 (the pars' CPU work yields to the match processes)."""
    from worker.celery_app import make_app

    broker = redis_url.rsplit("/", 1)[0] + "/12"
    tag = uuid.uuid4().hex[:8]
    env = {"ARENA_BROKER_URL": broker, "ARENA_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}"}
    client = make_app(Settings.from_env({"ARENA_BROKER_URL": broker}))
    log = open(tmp_path / "launcher.log", "wb")
    launcher = spawn_child(
        [*ARENA, "worker", "--processes", "1", "--checks", "0", "--pars", "1", "-c", "1"]
        + ["-Q", f"arena.procs.{tag}", "-n", f"np{tag}@127.0.0.1"],
        cwd=REPO,
        env=_env(**env),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    matches, pars = f"np{tag}-1@127.0.0.1", f"np{tag}-pars@127.0.0.1"
    try:
        deadline = time.monotonic() + READY_S
        nodes: dict[str, int] = {}
        while set(nodes) != {matches, pars}:
            assert launcher.poll() is None and time.monotonic() < deadline, (tmp_path / "launcher.log").read_text()
            nodes = _nodes(client, f"np{tag}")
        queues = {
            name: [q["name"] for q in qs]
            for name, qs in (
                client.control.inspect(timeout=1.0, destination=[matches, pars]).active_queues() or {}
            ).items()
        }
        assert queues == {matches: [f"arena.procs.{tag}"], pars: ["arena.par"]}
        base = os.getpriority(os.PRIO_PROCESS, launcher.pid)
        assert os.getpriority(os.PRIO_PROCESS, nodes[pars]) == min(19, base + 10)
        assert os.getpriority(os.PRIO_PROCESS, nodes[matches]) == base
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(60) == 0
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
        client.close()


@pytest.mark.services
def test_a_stop_that_kills_a_worker_process_is_the_launchers_exit_status(tmp_path, redis_url):
    """A process that does not shut down cleanly after the stop (here SIGKILLed during its
    warm shutdown) makes the launcher exit 128 + 9, not 0: a supervisor sees it."""
    tag, client, launcher = _quiet_launcher(tmp_path, redis_url, "lx", start_new_session=True)
    nodes: dict[str, int] = {}
    try:
        deadline = time.monotonic() + READY_S
        while len(nodes) < 2 and time.monotonic() < deadline:
            nodes = _nodes(client, f"lx{tag}")
        assert len(nodes) == 2
        launcher.send_signal(signal.SIGTERM)
        os.kill(nodes[f"lx{tag}-1@127.0.0.1"], signal.SIGKILL)  # dies in its warm shutdown
        assert launcher.wait(60) == 128 + signal.SIGKILL
        assert not any(_alive(p) for p in nodes.values())
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
        client.close()


def _quiet_launcher(tmp_path, redis_url, prefix: str, **popen):
    """``arena worker --processes 2 -c 1`` on a queue nothing is sent to, its nodes named
    ``<prefix><tag>-N@127.0.0.1``: (tag, a client Celery app on its broker, the Popen)."""
    from worker.celery_app import make_app

    broker = redis_url.rsplit("/", 1)[0] + "/12"
    tag = uuid.uuid4().hex[:8]
    env = {"ARENA_BROKER_URL": broker, "ARENA_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}"}
    client = make_app(Settings.from_env({"ARENA_BROKER_URL": broker}))
    launcher = spawn_child(
        [
            *ARENA,
            "worker",
            "--processes",
            "2",
            "--checks",
            "0",
            "--pars",
            "0",
            "-c",
            "1",
            "-Q",
            f"arena.procs.{tag}",
            "-n",
            f"{prefix}{tag}@127.0.0.1",
        ],
        cwd=REPO,
        env=_env(**env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        **popen,
    )
    return tag, client, launcher


@pytest.mark.services
def test_worker_processes_stop_when_the_launcher_is_killed(tmp_path, redis_url):
    tag, client, launcher = _quiet_launcher(tmp_path, redis_url, "lk")
    try:
        deadline = time.monotonic() + READY_S
        nodes: dict[str, int] = {}
        while len(nodes) < 2 and time.monotonic() < deadline:
            nodes = _nodes(client, f"lk{tag}")
        assert len(nodes) == 2
        launcher.kill()  # SIGKILL: no chance to pass anything on
        launcher.wait()
        deadline = time.monotonic() + READY_S
        while any(_alive(p) for p in nodes.values()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(p) for p in nodes.values())  # no orphan plays on
    finally:
        for p in nodes.values():
            if _alive(p):
                os.kill(p, signal.SIGKILL)
        client.close()


def test_a_sigterm_while_the_worker_processes_start_stops_them_all(tmp_path, redis_url):
    """The stop comes while the launcher is starting its processes (the moment its first child
    exists): every process already started gets it, none is started after it, and the
    launcher exits 0 (the signal was lost before: launcher and children played on)."""
    broker = redis_url.rsplit("/", 1)[0] + "/12"
    tag = uuid.uuid4().hex[:8]
    env = {"ARENA_BROKER_URL": broker, "ARENA_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}"}
    launcher = spawn_child(
        [*ARENA, "worker", "--processes", "4", "--checks", "0", "--pars", "0", "-c", "1", "-Q", f"arena.procs.{tag}"],
        cwd=REPO,
        env=_env(**env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    children = Path(f"/proc/{launcher.pid}/task/{launcher.pid}/children")
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + READY_S
        while not children.read_text().split() and time.monotonic() < deadline:
            pass  # no sleep: the signal must land while the others are still being started
        launcher.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + READY_S
        while launcher.poll() is None and time.monotonic() < deadline:
            try:
                seen |= {int(p) for p in children.read_text().split()}
            except OSError:
                break
            time.sleep(0.05)
        assert launcher.wait(READY_S) == 0
        assert seen and not any(_alive(p) for p in seen)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        for p in seen:
            if _alive(p):
                os.kill(p, signal.SIGKILL)


def test_api_server_has_no_control_socket_by_default(tmp_path):
    server = ApiServer(lambda: None, host="127.0.0.1", port=1, workers=1)
    assert server.cfg.control_socket_disable is True
    own = ApiServer(lambda: None, host="127.0.0.1", port=1, workers=1, control_socket=tmp_path / "a.ctl")
    assert own.cfg.control_socket_disable is False and own.cfg.control_socket == str(tmp_path / "a.ctl")


def _is_socket(path: Path) -> bool:
    return path.exists() and stat.S_ISSOCK(path.stat().st_mode)


@pytest.mark.slow
def test_two_api_servers_keep_their_own_control_sockets(tmp_path, free_port):
    home = tmp_path / "home"
    home.mkdir()
    servers = []
    try:
        for name in ("a", "b"):
            port = free_port()
            log = open(tmp_path / f"api-{name}.log", "wb")
            proc = spawn_child(
                [
                    *ARENA,
                    "api",
                    "--port",
                    str(port),
                    "--workers",
                    "1",
                    "--control-socket",
                    str(tmp_path / f"{name}.ctl"),
                ],
                cwd=REPO,
                env=_env(HOME=str(home), ARENA_DATABASE_URL=f"sqlite:///{tmp_path / (name + '.db')}"),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            servers.append((proc, port, tmp_path / f"{name}.ctl"))
        for proc, port, ctl in servers:
            deadline = time.monotonic() + READY_S
            while not (_healthy(port) and _is_socket(ctl)):
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "api-a.log").read_text()
                time.sleep(0.1)
        (a, _, a_ctl), (_, b_port, b_ctl) = servers
        a.send_signal(signal.SIGTERM)
        assert a.wait(30) == 0
        assert not a_ctl.exists()  # gunicorn removes its own socket when it stops...
        assert _is_socket(b_ctl) and _healthy(b_port)  # ...and only its own
        assert not (home / ".gunicorn").exists()  # nothing at gunicorn's shared default path
    finally:
        for proc, _, _ in servers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False
