"""The whole stack for bots that dial out, really started: ``dial_stack`` gives a fresh migrated
PostgreSQL database, the API served over HTTP on 127.0.0.1, real ``arena gateway`` processes,
a real Celery worker process (with ``ARENA_GATEWAY_URL``, so the check's bad-authentication
probe runs), all on the test Redis; and helpers to register bots through the API, run bots
that dial out as processes (``arena bots connect``, the Node starter) and read what a
process binds (:func:`inet_sockets`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from sqlalchemy import func, select

from arena import relay
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.models import Bot, Match, MatchLog, MatchResult
from arena.db.session import make_engine, make_sessionmaker
from arena.security import new_secret
from arena.status import BotStatus
from bots_sdk.samples import SAMPLE_BOTS
from bots_sdk.server import start as start_bot
from daifugo_arena.cli.servers import WsgiServer
from tests import children
from tests.helpers import create_pg_database, wait_until

REPO = Path(__file__).resolve().parents[2]
#: Seconds a check or a tournament may take before the test fails (a hang guard, not a timing assertion).
FINISH_TIMEOUT_S = 240.0
#: The /proc/<pid>/net tables and the TCP state of a listening socket.
SOCKET_TABLES = ("tcp", "tcp6", "udp", "udp6")
TCP_LISTEN, TCP_ESTABLISHED = "0A", "01"


@pytest.fixture
def broker(redis_url: str) -> Iterator[str]:
    """The test's Redis with the relay's keys of earlier tests removed."""
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(relay.PREFIX + "*"):
        client.delete(key)
    yield redis_url


def inet_sockets(pid: int) -> list[tuple[str, str, int, int]]:
    """``(table, state, local port, remote port)`` of every TCP and UDP socket process ``pid``
    holds (its fds ``socket:[inode]`` looked up in ``/proc/<pid>/net/{tcp,tcp6,udp,udp6}``;
    ``state`` is the kernel's hex code, ``0A`` listening, ``01`` established)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = []
    for table in SOCKET_TABLES:
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            f = line.split()
            if f[9] in inodes:
                found.append((table, f[3], int(f[1].rsplit(":", 1)[1], 16), int(f[2].rsplit(":", 1)[1], 16)))
    return found


def assert_binds_no_port(pid: int, gateway_ports: set[int], connections: int) -> None:
    """Process ``pid`` holds no listening TCP socket and no UDP socket, and ``connections``
    established TCP connections, every one to a gateway."""
    socks = inet_sockets(pid)
    assert [s for s in socks if s[0].startswith("udp") or s[1] == TCP_LISTEN] == [], socks
    established = [s for s in socks if s[1] == TCP_ESTABLISHED]
    assert len(established) == connections and {s[3] for s in established} <= gateway_ports, (socks, gateway_ports)


@dataclass
class Process:
    """A process a test started, its output in ``log_path``; stopped at teardown."""

    proc: subprocess.Popen
    log_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> int:
        """SIGKILL: the process dies at once, nothing is cleaned up."""
        self.proc.send_signal(signal.SIGKILL)
        return self.proc.wait(30)

    def stop(self) -> None:
        children.stop(self.proc, 15)


@dataclass
class GatewayProcess(Process):
    """A real ``arena gateway`` process: its ``id``, ``url`` (ws://) and ``port``."""

    id: str = ""
    url: str = ""
    port: int = 0

    def health(self) -> dict:
        """The gateway's ``/health`` (``{"gateway", "bots", "connections"}``)."""
        return httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=10, trust_env=False).json()


@dataclass
class DialStack:
    """The stack of ``dial_stack`` (module docstring) and what a test starts on it."""

    api: str
    db: str
    broker: str
    folder: Path
    gateways: list[GatewayProcess]
    worker: Any
    http: httpx.Client
    org: dict[str, str]
    sessions: Any
    processes: list[Process] = field(default_factory=list)
    servers: list[Any] = field(default_factory=list)

    # -- accounts and bots, through the API -------------------------------------------------------
    def account(self, name: str) -> dict[str, str]:
        r = self.http.post("/accounts", json={"name": f"{name}-{uuid.uuid4().hex[:6]}"})
        assert r.status_code == 201, r.text
        return {"Authorization": f"Bearer {r.json()['token']}"}

    def register(self, owner: dict[str, str], name: str, ruleset: str, url: str | None = None) -> dict:
        """``POST /bots``: with ``url`` a bot the arena calls, without one a bot that connects."""
        body: dict[str, Any] = {"name": name, "rulesets": [ruleset]}
        body.update({"url": url} if url else {"transport": "connect"})
        r = self.http.post("/bots", json=body, headers=owner)
        assert r.status_code == 201, r.text
        bot = r.json()
        assert bot["transport"] == ("http" if url else "connect") and bot["status"] == "unchecked"
        return bot

    def http_bot(self, owner: dict[str, str], sample: str, seed: int, ruleset: str) -> int:
        """A sample bot served over HTTP (the SDK's server on 127.0.0.1), registered (not checked)."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        bot = self.register(owner, f"{sample}-{seed}", ruleset, url=f"http://127.0.0.1:{port}/")
        self.servers.append(start_bot(SAMPLE_BOTS[sample](seed=seed), "127.0.0.1", port, bot["secret"]))
        return bot["id"]

    def check(self, owner: dict[str, str], bot_id: int) -> dict:
        """``POST /bots/{id}/check`` (the worker runs it); the check once done."""
        r = self.http.post(f"/bots/{bot_id}/check", headers=owner)
        assert r.status_code == 202, r.text
        path = r.json()["check_url"].removeprefix("/api/v1")

        def done() -> dict | None:
            check = self.http.get(path, headers=owner).json()
            return check if check["status"] not in ("queued", "running") else None

        return wait_until(done, f"check of bot {bot_id} done", FINISH_TIMEOUT_S)

    def bot(self, owner: dict[str, str], bot_id: int) -> dict:
        return self.http.get(f"/bots/{bot_id}", headers=owner).json()

    # -- processes ------------------------------------------------------------------------------------
    def start(self, name: str, cmd: list[str], env: dict[str, str]) -> Process:
        log_path = self.folder / f"{name}.log"
        with open(log_path, "wb") as out:
            proc = children.spawn(cmd, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        self.processes.append(Process(proc, log_path))
        return self.processes[-1]

    def connect_bot(
        self, bot_id: int, secret: str, urls: list[str], *, pool: int, spec: str = "random", env: dict | None = None
    ) -> Process:
        """``arena bots connect SPEC --bot-id N --gateway URL... --pool N``, the secret in
        ``ARENA_BOT_SECRET`` (``env``: more variables)."""
        env = {**{k: v for k, v in os.environ.items() if k != "ARENA_GATEWAY_URL"}, **(env or {})}
        env["ARENA_BOT_SECRET"] = secret
        gateways = sum((["--gateway", u] for u in urls), [])
        cmd = [sys.executable, "-m", "daifugo_arena.cli", "bots", "connect", spec, "--bot-id", str(bot_id), *gateways]
        return self.start(f"bot-{bot_id}", [*cmd, "--pool", str(pool), "--seed", str(bot_id)], env)

    def connections(self, owner: dict[str, str], bot_id: int, count: int) -> dict:
        """Wait until the API shows ``count`` live connections of the bot; its presence."""
        return wait_until(
            lambda: (p := self.bot(owner, bot_id)["presence"]) and p["connections"] == count and p,
            f"{count} connections of bot {bot_id}",
            FINISH_TIMEOUT_S,
        )

    # -- tournaments ------------------------------------------------------------------------------------
    def tournament(self, ruleset: str, participants: list[int], time_rules: dict[str, float], **kw: Any) -> int:
        body = {
            "ruleset": ruleset,
            "participants": participants,
            "seed": 2027,
            "time_rules": time_rules,
            "separate_owners": False,
            **kw,
        }
        r = self.http.post("/tournaments", json=body, headers=self.org)
        assert r.status_code == 201, r.text
        tid = r.json()["id"]
        r = self.http.post(f"/tournaments/{tid}/start", params={"if_offline": "start"}, headers=self.org)
        assert r.status_code == 202, r.text
        return tid

    def wait_finished(self, tid: int) -> dict:
        def done() -> dict | None:
            t = self.http.get(f"/tournaments/{tid}", headers=self.org).json()
            return t if t["status"] != "running" else None

        return wait_until(done, f"tournament {tid} over", FINISH_TIMEOUT_S)

    def matches(self, tid: int) -> list[dict]:
        r = self.http.get(f"/tournaments/{tid}/matches", headers=self.org, params={"per_page": 100})
        return r.json()["items"]

    def standings(self, tid: int) -> dict[int, dict]:
        rows = self.http.get(f"/tournaments/{tid}/standings", headers=self.org).json()["rows"]
        return {r["bot_id"]: r for r in rows}

    def stored(self, tid: int) -> dict[str, Any]:
        """What PostgreSQL holds: matches, results and logs of the tournament (counts, and the
        match ids of the results, each once per row)."""
        with self.sessions() as s:
            ids = select(Match.id).where(Match.tournament_id == tid)
            return {
                "matches": s.scalar(select(func.count()).select_from(Match).where(Match.tournament_id == tid)),
                "result_match_ids": sorted(
                    s.scalars(select(MatchResult.match_id).where(MatchResult.match_id.in_(ids)))
                ),
                "logs": s.scalar(select(func.count()).select_from(MatchLog).where(MatchLog.match_id.in_(ids))),
                "attempts": sorted(s.scalars(select(Match.attempts).where(Match.tournament_id == tid))),
            }

    def log(self, match_id: int) -> dict:
        r = self.http.get(f"/matches/{match_id}/log", headers=self.org)
        assert r.status_code == 200, r.text
        return r.json()


def start_gateway_process(folder: Path, env: dict[str, str], n: int) -> GatewayProcess:
    """A real ``arena gateway --port 0``; returns once it printed where it listens."""
    log_path = folder / f"gateway-{n}.log"
    out_path = folder / f"gateway-{n}.out"
    with open(log_path, "wb") as err, open(out_path, "wb") as out:
        proc = children.spawn(
            [sys.executable, "-m", "daifugo_arena.cli", "gateway", "--port", "0"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
        )
    gw = GatewayProcess(proc, log_path)
    # "gateway <id> listening on ws://127.0.0.1:PORT/v1/bots"
    line = wait_until(
        lambda: (" listening on " in (text := out_path.read_text())) and text or (not gw.alive() and gw.log() or ""),
        f"gateway {n} listening",
        60.0,
    )
    assert " listening on " in line, line
    words = line.split()
    gw.id, gw.url = words[1], words[-1]
    gw.port = int(gw.url.rsplit(":", 1)[1].split("/", 1)[0])
    return gw


@pytest.fixture
def dial_stack(pg_url, redis_url, celery_worker_factory, tmp_path) -> Iterator[Callable[..., DialStack]]:
    """``start(gateways=2) -> DialStack``: a fresh database, ``gateways`` real gateway processes,
    the API over HTTP and a real Celery worker (concurrency 2, ``ARENA_GATEWAY_URL`` the first
    gateway's), on the test Redis (its relay keys cleared first). Everything stopped at teardown."""
    stacks: list[DialStack] = []
    started: list[GatewayProcess] = []
    servers: list[Any] = []

    def start(gateways: int = 2) -> DialStack:
        db = create_pg_database(pg_url, "dial")
        upgrade(db)
        client = redis.Redis.from_url(redis_url)
        for key in client.scan_iter(relay.PREFIX + "*"):
            client.delete(key)
        env = {**os.environ, "ARENA_DATABASE_URL": db, "ARENA_BROKER_URL": redis_url}
        mine = [start_gateway_process(tmp_path, env, len(started) + n + 1) for n in range(gateways)]
        started.extend(mine)
        from api import create_app  # the API's import costs a second: only for the tests that serve it

        settings = Settings(
            data_dir=tmp_path,
            database_url=db,
            broker_url=redis_url,
            allow_private_bot_urls=True,
            rate_limit_prefix=f"dial-{uuid.uuid4().hex}",
            gateway_url=mine[0].url,
        )
        server = WsgiServer(create_app(settings))
        servers.append(server)
        worker = celery_worker_factory(
            broker_url=redis_url, database_url=db, concurrency=2, env={"ARENA_GATEWAY_URL": mine[0].url}
        )
        engine = make_engine(db)
        with make_sessionmaker(engine)() as s:
            _, token = create_account(s, f"org-{uuid.uuid4().hex[:6]}", "organizer")
        stack = DialStack(
            api=server.url,
            db=db,
            broker=redis_url,
            folder=tmp_path,
            gateways=mine,
            worker=worker,
            http=httpx.Client(base_url=server.url + "/api/v1", timeout=60, trust_env=False),
            org={"Authorization": f"Bearer {token}"},
            sessions=make_sessionmaker(engine),
        )
        stacks.append(stack)
        return stack

    yield start
    # the bots' processes and the gateways stop together (each closes its connections)
    children.stop_together([p.proc for stack in stacks for p in stack.processes] + [g.proc for g in started], 15)
    for stack in stacks:
        for s in stack.servers:
            s.close()
        stack.http.close()
    for s in servers:
        s.close()


# -- a SQLite site and gateway processes on it (tests of outages and floods) ----------------------
def add_bot(sessions: Any, name: str) -> tuple[int, str]:
    """A bot that connects, ready, of a new account: ``(id, secret)``."""
    secret = new_secret()
    with sessions() as s:
        owner, _ = create_account(s, name)
        bot = Bot(
            owner_id=owner.id,
            name=name,
            url="",
            transport="connect",
            rulesets=["million_doubt"],
            secret=secret,
            status=BotStatus.READY,
        )
        s.add(bot)
        s.commit()
        return bot.id, secret


@dataclass
class Site:
    """A SQLite database with one bot that connects, and the environment of a gateway on it."""

    env: dict[str, str]
    bot_id: int
    secret: str
    sessions: Any


@pytest.fixture
def site(tmp_path: Path, redis_url: str) -> Site:
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    env = {**os.environ, "ARENA_DATABASE_URL": db, "ARENA_BROKER_URL": redis_url, "ARENA_DATA_DIR": str(tmp_path)}
    os.environ["ARENA_DATA_DIR"] = str(tmp_path)  # the same encryption key as the gateways
    try:
        upgrade(db)
        sessions = make_sessionmaker(make_engine(db))
        bot_id, secret = add_bot(sessions, "outages")
    finally:
        del os.environ["ARENA_DATA_DIR"]
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(relay.PREFIX + "*"):
        client.delete(key)
    return Site(env, bot_id, secret, sessions)


@pytest.fixture
def gateways() -> Iterator[list[subprocess.Popen[str]]]:
    """Gateway processes a test starts (:func:`start_gateway`); continued and stopped at teardown."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.terminate()
            proc.wait(15)


def start_gateway(env: dict[str, str], started: list[subprocess.Popen[str]]) -> tuple[subprocess.Popen[str], str, str]:
    """A real ``arena gateway --port 0``: the process, its id and its URL."""
    proc = children.spawn(
        [sys.executable, "-m", "daifugo_arena.cli", "gateway", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    started.append(proc)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "gateway <id> listening on ws://127.0.0.1:PORT/v1/bots"
    assert " listening on " in line, line
    return proc, line.split()[1], line.rsplit(" ", 1)[1].strip()
