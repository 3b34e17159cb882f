"""Several machines (docs/operations.md, "Several machines"): the data host (PostgreSQL and Redis
started by ``infra/postgres.sh`` and ``infra/redis.sh`` on a network address, with passwords)
and a worker host (``arena worker`` and ``arena beat``) each in a network namespace of its own,
joined by veth pairs to a bridge in the test's namespace, which holds the API and the bots
(the "API host" and the "bots host"). Created and removed by the test (``ip netns``, root only).

Checked: the data host refuses what it must (the superuser from the network, a wrong password,
Redis without its password); a tournament started through the API is played by the worker
host, every bot checked there first, and every match's result and log is stored exactly once."""

from __future__ import annotations

import ipaddress
import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
import redis
from sqlalchemy import func, select

from arena.crypto import new_key
from arena.db.migrate import upgrade
from arena.db.models import Match, MatchLog, MatchResult
from bots_sdk.samples import SAMPLE_BOTS
from bots_sdk.server import start as start_bot
from tests import children
from tests.helpers import paced, wait_until
from tests.worker.conftest import Arena

pytestmark = [pytest.mark.services, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
IP = shutil.which("ip")
#: A hang guard for a check or the tournament, never a timing.
FINISH_TIMEOUT_S = 300.0


def _run(*cmd: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(list(cmd), capture_output=True, text=True, env=env, cwd=REPO)
    assert done.returncode == 0, f"{' '.join(cmd)}: {done.stderr}"
    return done.stdout.strip()


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.200.0.0/13 that no route of this machine overlaps."""
    used = [
        ipaddress.ip_network(line.split()[0], strict=False)
        for line in _run(IP or "ip", "-4", "route", "show", "table", "all").splitlines()
        if line.split() and line.split()[0][0].isdigit()
    ]
    rng = random.Random()
    while True:
        net = ipaddress.ip_network(f"10.{rng.randrange(200, 208)}.{rng.randrange(256)}.0/24")
        if not any(net.overlaps(u) for u in used):
            return net


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lan:
    """A bridge in this namespace (address ``.1``) and one network namespace per host, each
    joined to it by a veth pair (``eth0``, address ``.2``, ``.3``...)."""

    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:5])
    net: ipaddress.IPv4Network = field(default_factory=_free_subnet)
    namespaces: list[str] = field(default_factory=list)
    bridge_up: bool = False

    @property
    def bridge(self) -> str:
        return f"arb{self.tag}"

    @property
    def gateway(self) -> str:
        return str(self.net[1])

    def up(self) -> None:
        _run("ip", "link", "add", "name", self.bridge, "type", "bridge")
        self.bridge_up = True
        _run("ip", "addr", "add", f"{self.gateway}/{self.net.prefixlen}", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")

    def host(self, role: str) -> tuple[str, str]:
        """A new namespace ``arena-<role>-<tag>`` on the bridge: ``(namespace, its address)``."""
        n = len(self.namespaces) + 1
        ns, veth, peer = f"arena-{role}-{self.tag}", f"av{self.tag}{n}", f"ap{self.tag}{n}"
        address = str(self.net[n + 1])
        _run("ip", "netns", "add", ns)
        self.namespaces.append(ns)
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", peer)
        _run("ip", "link", "set", peer, "netns", ns)
        _run("ip", "link", "set", veth, "master", self.bridge)
        _run("ip", "link", "set", veth, "up")
        _run("ip", "-n", ns, "link", "set", peer, "name", "eth0")
        _run("ip", "-n", ns, "addr", "add", f"{address}/{self.net.prefixlen}", "dev", "eth0")
        _run("ip", "-n", ns, "link", "set", "eth0", "up")
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        return ns, address

    def down(self) -> None:
        """Remove every namespace (and with it its veth pair) and the bridge; idempotent."""
        while self.namespaces:
            subprocess.run(["ip", "netns", "del", self.namespaces.pop()], capture_output=True)
        if self.bridge_up:
            subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
            self.bridge_up = False


@dataclass
class DataHost:
    """PostgreSQL and Redis of ``infra/`` in namespace ``ns``, serving ``address`` with passwords."""

    ns: str
    address: str
    env: dict[str, str]
    database_url: str = ""
    broker_url: str = ""

    def start(self) -> None:
        cmd = ["ip", "netns", "exec", self.ns, "bash"]
        self.database_url = _run(*cmd, "infra/postgres.sh", "start", env=self.env).splitlines()[-1]
        self.broker_url = _run(*cmd, "infra/redis.sh", "start", env=self.env).splitlines()[-1]

    def stop(self) -> None:
        for script in ("infra/redis.sh", "infra/postgres.sh"):
            subprocess.run(["ip", "netns", "exec", self.ns, "bash", script, "stop"], env=self.env, capture_output=True)


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[tuple[Lan, DataHost, str]]:
    """The LAN, its data host (started) and the worker host's namespace; all removed at
    teardown, and at exit whatever happened (``tests.children.on_exit``)."""
    if IP is None or os.geteuid() != 0:
        pytest.skip("network namespaces need root and iproute2 (`ip`)")
    lan = Lan()
    data: DataHost | None = None

    def remove() -> None:
        if data is not None:
            data.stop()
        lan.down()

    children.on_exit(remove)
    try:
        lan.up()
        data_ns, data_address = lan.host("data")
        worker_ns, _ = lan.host("work")
        env = {
            **os.environ,
            "ARENA_PG_PORT": str(_free_port()),  # a port of the namespace; free here too, so its
            "ARENA_REDIS_PORT": str(_free_port()),  # state folder (.services/<name>-PORT) is its own
            "ARENA_PG_HOST": data_address,
            "ARENA_PG_PASSWORD": secrets.token_hex(16),
            "ARENA_REDIS_HOST": data_address,
            "ARENA_REDIS_PASSWORD": secrets.token_hex(16),
        }
        data = DataHost(data_ns, data_address, env)
        data.start()
        yield lan, data, worker_ns
    finally:
        remove()
        children.forget(remove)


def _net_namespace(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/net")


def test_a_tournament_on_a_worker_host_and_a_data_host(hosts, tmp_path, monkeypatch) -> None:
    lan, data, worker_ns = hosts
    pg_port, redis_port = int(data.env["ARENA_PG_PORT"]), int(data.env["ARENA_REDIS_PORT"])
    db, broker = data.database_url, data.broker_url
    assert db == f"postgresql+psycopg://arena:{data.env['ARENA_PG_PASSWORD']}@{data.address}:{pg_port}/arena"
    assert broker == f"redis://:{data.env['ARENA_REDIS_PASSWORD']}@{data.address}:{redis_port}/0"

    # the data host lets in the role arena with its password, and nothing else from the network
    with pytest.raises(psycopg.OperationalError, match="no pg_hba.conf entry"):
        psycopg.connect(host=data.address, port=pg_port, user="postgres", dbname="arena", connect_timeout=10)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(
            host=data.address, port=pg_port, user="arena", password="wrong", dbname="arena", connect_timeout=10
        )
    with pytest.raises(redis.RedisError, match="(?i)authenticat"):
        redis.Redis(host=data.address, port=redis_port, socket_timeout=10).ping()
    assert redis.Redis.from_url(broker, socket_timeout=10).ping()

    # the secrets every host shares: the encryption key of the bots' signing secrets
    key = new_key()
    monkeypatch.setenv("ARENA_ENCRYPTION_KEYS", key)
    upgrade(db)  # arena db upgrade, from the API host
    arena = Arena(db, broker, tmp_path=tmp_path)
    served: list = []
    try:
        # the worker host: arena worker (one match process, its check and par processes) and beat
        worker_env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ARENA_")},
            "ARENA_DATABASE_URL": db,
            "ARENA_BROKER_URL": broker,
            "ARENA_ENCRYPTION_KEYS": key,
            "ARENA_ALLOW_PRIVATE_BOT_URLS": "1",  # the bots host is on the LAN
            "ARENA_DATA_DIR": str(tmp_path / "worker-host"),
            "PYTHONPATH": str(REPO),
        }
        on_worker_host = ["ip", "netns", "exec", worker_ns, sys.executable, "-m", "daifugo_arena.cli"]
        logs = {name: open(tmp_path / f"{name}.log", "wb") for name in ("worker", "beat")}
        worker = children.spawn(
            [
                *on_worker_host,
                "worker",
                "--processes",
                "1",
                "--concurrency",
                "8",
                "--checks",
                "2",
                "--loglevel",
                "INFO",
            ],
            env=worker_env,
            stdin=subprocess.DEVNULL,
            stdout=logs["worker"],
            stderr=subprocess.STDOUT,
        )
        beat = children.spawn(
            [*on_worker_host, "beat", "--schedule", str(tmp_path / "beat-schedule")],
            env=worker_env,
            stdin=subprocess.DEVNULL,
            stdout=logs["beat"],
            stderr=subprocess.STDOUT,
        )
        for f in logs.values():
            f.close()
        # `ip netns exec` enters the namespace, then runs the command in the same process
        host = f"net:[{os.stat(f'/run/netns/{worker_ns}').st_ino}]"
        assert host != _net_namespace(os.getpid())
        wait_until(lambda: _net_namespace(worker.pid) == _net_namespace(beat.pid) == host, "both on the worker host")

        # the bots host (this namespace, on the bridge's address): four sample bots over HTTP,
        # registered through the API and checked by the worker host
        owners: dict[int, dict[str, str]] = {}  # bot id -> its contestant's headers
        for i, sample in enumerate(("greedy", "heuristic", "random", "greedy")):
            r = arena.client.post("/api/v1/accounts", json={"name": f"contestant-{i}-{uuid.uuid4().hex[:6]}"})
            assert r.status_code == 201, r.json
            owner = {"Authorization": f"Bearer {r.json['token']}"}
            port = _free_port()
            r = arena.client.post(
                "/api/v1/bots",
                json={"name": f"{sample}-{i}", "url": f"http://{lan.gateway}:{port}/", "rulesets": ["million_doubt"]},
                headers=owner,
            )
            assert r.status_code == 201, r.json
            served.append(start_bot(SAMPLE_BOTS[sample](seed=i), lan.gateway, port, r.json["secret"]))
            assert arena.client.post(f"/api/v1/bots/{r.json['id']}/check", headers=owner).status_code == 202
            owners[r.json["id"]] = owner
        ids = list(owners)

        def log_tail() -> str:
            return "".join((tmp_path / f"{n}.log").read_text(errors="replace")[-2000:] for n in ("worker", "beat"))

        def bot(bot_id: int) -> dict:
            r = arena.client.get(f"/api/v1/bots/{bot_id}", headers=owners[bot_id])
            assert r.status_code == 200, r.json
            return r.json

        def checked() -> bool:
            statuses = [bot(i)["status"] for i in ids]
            assert worker.poll() is None, log_tail()
            assert "failed" not in statuses, [bot(i)["last_check"] for i in ids]
            return statuses == ["ready"] * len(ids)

        wait_until(paced(checked, 0.2), "every bot checked by the worker host", FINISH_TIMEOUT_S)

        tid = arena.create(
            "million_doubt",
            ids,
            games_per_pairing=2,
            time_rules={"initial": 60.0, "increment": 10.0, "cap": 60.0},
        )
        arena.start(tid)
        t = wait_until(
            paced(lambda: (x := arena.get(f"/tournaments/{tid}"))["status"] != "running" and x, 0.2),
            "the tournament over",
            FINISH_TIMEOUT_S,
        )
        assert t["status"] == "finished" and t["progress"]["finished"] == t["progress"]["total"] == 6, (t, log_tail())

        # every match played once by the worker host, its result and log stored once
        with arena.sessions() as s:
            matches = s.scalars(select(Match.id).where(Match.tournament_id == tid)).all()
            results = s.scalars(select(MatchResult.match_id).where(MatchResult.match_id.in_(matches))).all()
            logs_stored = s.scalar(select(func.count()).select_from(MatchLog).where(MatchLog.match_id.in_(matches)))
            statuses = s.scalars(select(Match.status).where(Match.tournament_id == tid)).all()
        assert len(matches) == 6 and sorted(results) == sorted(matches) and logs_stored == 6
        assert statuses == ["finished"] * 6
        rows = arena.get(f"/tournaments/{tid}/standings")["rows"]
        assert sorted(r["bot_id"] for r in rows) == sorted(ids)
        assert all(r["games"] == 6 and r["faults"] == 0 for r in rows), rows
        assert worker.poll() is None and beat.poll() is None, log_tail()
        assert children.stop(beat) == 0 and children.stop(worker) == 0, log_tail()
    finally:
        for server in served:
            server.close()
        arena.close()
