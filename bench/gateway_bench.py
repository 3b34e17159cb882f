"""Gateway benchmark (issue 27): bots that dial out, against bots the arena calls over HTTP.

    .venv/bin/python bench/gateway_bench.py [--short] [--samples N] [--matches N] [--seconds S]
                                            [--idle N] [--idle-seconds S] [--profile DIR]

Starts everything it needs on free ports and stops it afterwards: PostgreSQL and Redis
(``infra/postgres.sh``, ``infra/redis.sh``), ONE real ``arena gateway`` process (the bots'
credentials in that PostgreSQL, registered as bots that connect), and the bots, in processes
of their own. First ``--idle`` bots connect and stay connected, idle, through the whole run
(one connection per bot, the SDK's default pool; 10 bots per account; opened by one client
process), as a gateway in service holds many bots of which few play at a time. Then it
prints three lines:

* ``gateway round trip: X ms median, P ms p99; http: Y ms median, Q ms p99``: the same bot
  (the ``greedy`` sample bot), served by ``arena bots serve greedy`` (HTTP, waitress) and by
  ``arena bots connect greedy`` (the SDK's client, ``bots_sdk.connect``, through the gateway),
  asked the same decision requests: real request bodies of seeded random games of the three
  rule sets. The worker's side is this process, with the real players of ``arena/runner``:
  :class:`~arena.runner.players.HttpPlayer` (a keep-alive connection, signed requests) and
  :class:`~arena.runner.connected.ConnectedPlayer` (Redis, its own connection as a match has).
  One decision at a time; ``--samples`` of each after a warm-up, the two transports taking
  turns by blocks of 100, so a drift of the machine's speed weighs on both alike.
* ``gateway decisions/s: N``: ``--matches`` matches at once (threads of 2 load-generating
  processes, each a :class:`ConnectedPlayer` sending one decision at a time, as a match does)
  against 8 instant bots (a :class:`~bots_sdk.bot.Bot` that answers the default legal action;
  2 processes of ``bots_sdk.connect``, 2 connections a bot), all through the one gateway:
  decisions answered per second over ``--seconds`` after a warm-up.
* ``gateway idle connections N: M MB, C % cpu``: once the other bots have left, the gateway
  holding the ``--idle`` connections. M: the gateway process's resident set (RSS, VmRSS,
  10^6 bytes), which includes what the load left allocated; C: its CPU time over
  ``--idle-seconds`` of wall time, in percent of one core (pings, presence renewals).

Details (JSON: the machine's load average, every process's CPU share during the load, the
gateway's CPU per decision, its unique set size, the time the idle bots took to connect) go to
stderr. ``--profile DIR`` records the processes of the load, and the idle gateway, with py-spy
(``pip install py-spy``).

Targets (issue 27): round trip median within 1 ms of the HTTP median; at least 1,000
decisions/s through one gateway process; 1,000 idle connections in under 200 MB. About 90 s
on 2 cores; ``--short`` (CI: 50 idle bots, a few hundred decisions) in about 15 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bots_sdk.bot import Bot  # noqa: E402
from tests import children  # noqa: E402

#: Decisions of each transport per block of the round trip (the transports take turns).
BLOCK = 100
#: Instant bots of the throughput part, their connections each, their processes.
LOAD_BOTS, LOAD_POOL, BOT_PROCESSES = 8, 2, 2
#: Load-generating processes of the throughput part (the matches are their threads).
LOAD_PROCESSES = 2
#: Bots per account of the idle part (the per-account cap is 32 connections).
IDLE_BOTS_PER_ACCOUNT = 10
#: Connections the idle client opens at once.
OPEN_AT_ONCE = 50
#: Seconds a decision may take before it counts as a failure of the bench.
DECISION_TIMEOUT_S = 10.0

FULL = {"samples": 2000, "warmup": 200, "matches": 64, "seconds": 10.0, "load_warmup": 3.0,
        "idle": 1000, "idle_settle": 5.0, "idle_seconds": 40.0}  # fmt: skip
SHORT = {"samples": 200, "warmup": 50, "matches": 16, "seconds": 2.0, "load_warmup": 1.0,
         "idle": 50, "idle_settle": 1.0, "idle_seconds": 2.0}  # fmt: skip


class InstantBot(Bot):
    """Answers every decision at once with the SDK's default (always legal) action."""

    name = "instant"


# -- real decision requests ----------------------------------------------------------------------
def sample_requests(games_per_ruleset: int = 4, seed: int = 27) -> list[bytes]:
    """Decision request bodies (protocol v1 JSON) of seeded random games of the three rule
    sets, in the order the games asked them, the rule sets interleaved."""
    import engine
    from bots_sdk import protocol
    from engine.selfplay import random_action

    rng = random.Random(seed)
    per_ruleset: list[list[bytes]] = []
    for ruleset in ("million_doubt", "trump_millionaire", "jdf"):
        bodies: list[bytes] = []
        for n in range(games_per_ruleset):
            g = engine.new_game(ruleset, None, seed * 100 + n)
            while not g.over:
                d = g.decision()
                req = protocol.build_request(
                    g, d.seat, match_id=f"bench-{ruleset}", game=n, time_rules=engine.TimeRules(), remaining_ms=60000
                )
                bodies.append(protocol.dumps(req))
                g.apply(*random_action(g, rng))
        per_ruleset.append(bodies)
    out: list[bytes] = []
    for i in range(max(len(b) for b in per_ruleset)):
        out += [b[i] for b in per_ruleset if i < len(b)]
    return out


# -- processes -----------------------------------------------------------------------------------
def proc_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_memory(pid: int) -> dict[str, float]:
    """``rss_mb`` (VmRSS) and ``uss_mb`` (private pages, smaps_rollup) of ``pid``, 10^6 bytes."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                out["rss_mb"] = int(line.split()[1]) * 1024 / 1e6
    try:
        private = 0
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    private += int(line.split()[1])
        out["uss_mb"] = private * 1024 / 1e6
    except OSError:
        pass
    return {k: round(v, 1) for k, v in out.items()}


class Child:
    """A child process in its own session; its stderr goes to a log file."""

    def __init__(self, cmd: list[str], env: dict[str, str], log: Path, *, stdin: bool = False):
        self.log = log
        self.fh = open(log, "ab")
        self.proc = children.spawn(
            cmd,
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.fh,
            text=True,
        )

    def line(self) -> str:
        """The next line it prints (raises when it exits first)."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.proc.args} exited with {self.proc.returncode}:\n{tail}")
        return line.strip()

    def stop(self) -> None:
        children.stop(self.proc, 15)
        self.fh.close()


def child_cmd(kind: str, conf: dict, path: Path) -> list[str]:
    """The command of one of this bench's child processes (``--child KIND CONF.json``)."""
    path.write_text(json.dumps(conf))
    return [sys.executable, __file__, "--child", kind, str(path)]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def start_gateway(db: str, broker: str, keys: str, tmp: Path) -> tuple[Child, str, int]:
    """One ``arena gateway`` process on a free port: (child, ws URL, port)."""
    gw = Child(
        [sys.executable, "-m", "daifugo_arena.cli", "gateway", "--port", "0"],
        _env(ARENA_DATABASE_URL=db, ARENA_BROKER_URL=broker, ARENA_ENCRYPTION_KEYS=keys),
        tmp / "gateway.log",
    )
    line = gw.line()  # "gateway <id> listening on ws://127.0.0.1:PORT/v1/bots"
    if " listening on " not in line:
        raise RuntimeError(f"arena gateway printed {line!r}")
    url = line.rsplit(" ", 1)[1]
    return gw, url, int(url.split(":")[2].split("/")[0])


def profile(pid: int, name: str, cfg: dict, seconds: float) -> subprocess.Popen | None:
    """With ``--profile DIR``: ``py-spy record`` of ``pid`` for ``seconds`` into
    ``DIR/<name>.txt`` (collapsed stacks; ``pip install py-spy``)."""
    if not cfg.get("profile"):
        return None
    out = Path(cfg["profile"]) / f"{name}.txt"
    return children.spawn(
        [
            "py-spy",
            "record",
            "--pid",
            str(pid),
            "--duration",
            str(max(1, int(seconds))),
            "--format",
            "raw",
            "--rate",
            "200",
            "--output",
            str(out),
            "--nonblocking",
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def gateway_health(port: int) -> dict[str, Any]:
    import httpx

    return httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).json()


def wait_connections(port: int, n: int, timeout_s: float = 120.0) -> None:
    """Wait until the gateway holds exactly ``n`` connections."""
    until = time.monotonic() + timeout_s
    while (held := gateway_health(port)["connections"]) != n:
        if time.monotonic() > until:
            raise RuntimeError(f"the gateway holds {held} connections, not {n}")
        time.sleep(0.1)


def register_bots(db: str, accounts: list[int]) -> list[list[tuple[int, str]]]:
    """Bots that connect, ``accounts[i]`` bots for account i: their (id, secret), per account."""
    import uuid

    from arena.accounts import create_account
    from arena.db.models import Bot as BotRow
    from arena.db.session import make_engine, make_sessionmaker
    from arena.security import new_secret
    from arena.status import BotStatus

    engine = make_engine(db)
    sessions = make_sessionmaker(engine)
    out: list[list[tuple[int, str]]] = []
    with sessions() as s:
        for n in accounts:
            owner, _ = create_account(s, f"bench-{uuid.uuid4().hex[:8]}")
            rows = [
                BotRow(
                    owner_id=owner.id,
                    name=f"dials-out-{i}",
                    url=None,
                    transport="connect",
                    rulesets=["million_doubt", "trump_millionaire", "jdf"],
                    secret=new_secret(),
                    status=BotStatus.READY,
                )
                for i in range(n)
            ]
            s.add_all(rows)
            s.commit()
            out.append([(r.id, r.secret) for r in rows])
    engine.dispose()
    return out


def match_redis(broker: str):
    """A Redis client as a match holds one (one connection, arena.playing.match_redis)."""
    import redis

    return redis.Redis.from_url(broker, single_connection_client=True)


# -- part 1: the round trip ----------------------------------------------------------------------
def round_trip(gateway_url: str, broker: str, bot: tuple[int, str], cfg: dict, tmp: Path) -> dict:
    from arena import relay
    from arena.runner.connected import ConnectedPlayer
    from arena.runner.players import HttpPlayer

    bot_id, secret = bot
    env = _env(ARENA_BOT_SECRET=secret)
    http_bot = Child(
        [sys.executable, "-m", "daifugo_arena.cli", "bots", "serve", "greedy", "--port", "0"], env, tmp / "http-bot.log"
    )
    ws_bot = Child(
        [
            sys.executable,
            "-m",
            "daifugo_arena.cli",
            "bots",
            "connect",
            "greedy",
            "--bot-id",
            str(bot_id),
            "--gateway",
            gateway_url,
        ],
        env,
        tmp / "ws-bot.log",
    )
    try:
        line = http_bot.line()  # "serving bot 'greedy' on http://127.0.0.1:PORT/ (...)"
        url = line.split(" on ", 1)[1].split(" ", 1)[0]
        client = match_redis(broker)
        until = time.monotonic() + 60
        while not relay.presence(client, [bot_id])[bot_id].connected:
            if time.monotonic() > until or ws_bot.proc.poll() is not None:
                raise RuntimeError("the bot that dials out never connected: " + ws_bot.log.read_text()[-2000:])
            time.sleep(0.05)
        players = {
            "http": HttpPlayer(url, secret, "http", allow_private=True),
            "gateway": ConnectedPlayer(bot_id, client, "gateway", reconnect_s=15),
        }
        bodies = sample_requests()
        times: dict[str, list[float]] = {"http": [], "gateway": []}
        nxt = 0

        def ask(name: str, keep: bool) -> None:
            nonlocal nxt
            body = bodies[nxt % len(bodies)]
            nxt += 1
            t = time.perf_counter()
            out = players[name].decide(body, DECISION_TIMEOUT_S)
            elapsed = time.perf_counter() - t
            if out.fault is not None:
                raise RuntimeError(f"{name}: fault {out.fault}: {out.detail}")
            if keep:
                times[name].append(elapsed)

        for name in players:  # warm up: connections open, code paths hot
            for _ in range(cfg["warmup"]):
                ask(name, False)
        for _ in range(max(1, cfg["samples"] // BLOCK)):
            for name in players:
                for _ in range(BLOCK):
                    ask(name, True)
        players["http"].close()
        client.close()
    finally:
        http_bot.stop()
        ws_bot.stop()

    def q(xs: list[float], p: float) -> float:
        return statistics.quantiles(xs, n=100, method="inclusive")[p - 1] * 1000 if p < 100 else max(xs) * 1000

    return {
        name: {
            "median_ms": round(statistics.median(xs) * 1000, 3),
            "p99_ms": round(q(xs, 99), 3),
            "mean_ms": round(statistics.fmean(xs) * 1000, 3),
            "samples": len(xs),
        }
        for name, xs in times.items()
    }


# -- part 2: decisions per second ----------------------------------------------------------------
def throughput(
    gateway_url: str,
    gw_pid: int,
    gw_port: int,
    broker: str,
    bots: list[tuple[int, str]],
    cfg: dict,
    tmp: Path,
    redis_pid: int | None = None,
    held: int = 0,
) -> dict:
    bodies_file = tmp / "bodies.json"
    bodies_file.write_text(json.dumps([b.decode("utf-8") for b in sample_requests()]))
    hosts = []
    loaders = []
    try:
        for p in range(BOT_PROCESSES):
            part = bots[p::BOT_PROCESSES]
            conf = {"url": gateway_url, "bots": part, "pool": LOAD_POOL}
            hosts.append(
                Child(
                    child_cmd("bots", conf, tmp / f"load-bots-{p}.json"),
                    _env(),
                    tmp / f"load-bots-{p}.log",
                    stdin=True,
                )
            )
        for h in hosts:
            assert h.line() == "ready"
        wait_connections(gw_port, held + len(bots) * LOAD_POOL)
        per = [cfg["matches"] // LOAD_PROCESSES + (i < cfg["matches"] % LOAD_PROCESSES) for i in range(LOAD_PROCESSES)]
        for i, threads in enumerate(per):
            conf = {
                "broker": broker,
                "bots": [b for b, _ in bots],
                "threads": threads,
                "first": i,
                "bodies": str(bodies_file),
            }
            loaders.append(
                Child(
                    child_cmd("load", conf, tmp / f"load-{i}.json"),
                    _env(),
                    tmp / f"load-{i}.log",
                    stdin=True,
                )
            )
        for ld in loaders:
            assert ld.line() == "ready"
        t0 = time.time() + cfg["load_warmup"]  # every loader starts now; it counts from t0
        t1 = t0 + cfg["seconds"]
        for ld in loaders:
            assert ld.proc.stdin is not None
            ld.proc.stdin.write(f"{t0} {t1}\n")
            ld.proc.stdin.flush()
        watched = {"gateway": gw_pid, "redis": redis_pid}
        watched.update({f"bots{i}": h.proc.pid for i, h in enumerate(hosts)})
        watched.update({f"load{i}": ld.proc.pid for i, ld in enumerate(loaders)})
        time.sleep(max(0.0, t0 - time.time()))
        spies = [profile(pid, name, cfg, t1 - time.time()) for name, pid in watched.items() if pid]
        cpu0 = {k: proc_cpu_s(v) for k, v in watched.items() if v}
        w0 = time.time()
        time.sleep(max(0.0, t1 - time.time()))
        cpu1 = {k: proc_cpu_s(v) for k, v in watched.items() if v}
        w1 = time.time()
        results = [json.loads(ld.line()) for ld in loaders]
        for spy in spies:
            if spy is not None:
                spy.wait(30)
    finally:
        for c in loaders + hosts:
            c.stop()
    decisions = sum(r["decisions"] for r in results)
    faults = sum(r["faults"] for r in results)
    if faults:
        raise RuntimeError(f"throughput: {faults} faults: {[r['fault_sample'] for r in results]}")
    lat = sorted(x for r in results for x in r["latency_sample_ms"])
    rate = decisions / (t1 - t0)
    shares = {k: round((cpu1[k] - cpu0[k]) / (w1 - w0), 3) for k in cpu0}
    cpu = shares["gateway"]
    return {
        "decisions": decisions,
        "seconds": cfg["seconds"],
        "decisions_per_s": round(rate),
        "matches_at_once": cfg["matches"],
        "bots": len(bots),
        "connections": len(bots) * LOAD_POOL,
        "gateway_cpu_share": round(cpu, 3),
        "decisions_per_gateway_cpu_s": round(rate / cpu) if cpu > 0 else None,
        "latency_median_ms": round(statistics.median(lat), 3) if lat else None,
        "cpu_shares": shares,
    }


def _load_child(conf: dict) -> None:
    """A load generator: ``threads`` matches, each a ConnectedPlayer asking one decision at a
    time. Prints ``ready`` once set up, reads ``t0 t1`` (Unix seconds) from stdin, then runs
    until ``t1`` and counts the decisions answered between ``t0`` and ``t1``."""
    from arena.runner.connected import ConnectedPlayer

    bodies = [b.encode("utf-8") for b in json.loads(Path(conf["bodies"]).read_text())]
    lock = threading.Lock()
    totals = {"decisions": 0, "faults": 0, "fault_sample": "", "latency": []}
    players = []
    for n in range(conf["threads"]):
        bot_id = conf["bots"][(conf["first"] + n * LOAD_PROCESSES) % len(conf["bots"])]  # spread over the bots
        client = match_redis(conf["broker"])
        client.ping()  # its connection open before the clock starts
        players.append(ConnectedPlayer(bot_id, client, f"m{n}", reconnect_s=15))
    print("ready", flush=True)
    t0, t1 = map(float, sys.stdin.readline().split())

    def match(n: int) -> None:
        p = players[n]
        rng = random.Random(n)
        i = rng.randrange(len(bodies))
        done = faults = 0
        fault = ""
        lat: list[float] = []
        while True:
            t = time.time()
            if t >= t1:
                break
            out = p.decide(bodies[i % len(bodies)], DECISION_TIMEOUT_S)
            i += 1
            end = time.time()
            if t0 <= end < t1:
                done += 1
                if out.fault is not None:
                    faults += 1
                    fault = f"{out.fault}: {out.detail}"
                elif len(lat) < 200:
                    lat.append((end - t) * 1000)
        with lock:
            totals["decisions"] += done
            totals["faults"] += faults
            totals["fault_sample"] = totals["fault_sample"] or fault
            totals["latency"] += lat

    threads = [threading.Thread(target=match, args=(n,)) for n in range(conf["threads"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(
        json.dumps(
            {
                "decisions": totals["decisions"],
                "faults": totals["faults"],
                "fault_sample": totals["fault_sample"],
                "latency_sample_ms": totals["latency"],
                "cpu_s": round(time.process_time(), 2),
            }
        ),
        flush=True,
    )


def _bots_child(conf: dict) -> None:
    """Instant bots over ``bots_sdk.connect`` until stdin closes; prints ``ready`` once every
    connection is welcomed."""
    from bots_sdk.connect import connect

    conns = [
        connect(InstantBot(), conf["url"], bot_id=bot_id, secret=secret, pool=conf["pool"], background=True)
        for bot_id, secret in conf["bots"]
    ]
    for c in conns:
        if not c.wait_authenticated(timeout=60):
            sys.exit(f"bot {c.bot_id} not welcomed: {c.error}")
    print("ready", flush=True)
    sys.stdin.read()
    for c in conns:
        c.stop()


# -- part 3: idle connections --------------------------------------------------------------------
def open_idle(gateway_url: str, gw_port: int, bots: list[tuple[int, str]], tmp: Path) -> tuple[Child, float]:
    """One client process opening an authenticated connection per bot of ``bots`` and holding
    them; returns it once the gateway holds them all, and the seconds that took."""
    conf = {"url": gateway_url, "bots": bots}
    client = Child(child_cmd("idle", conf, tmp / "idle-client.json"), _env(), tmp / "idle-client.log", stdin=True)
    t = time.monotonic()
    try:
        if (line := client.line()) != f"ready {len(bots)}":
            raise RuntimeError(f"the idle client printed {line!r}")
        wait_connections(gw_port, len(bots))
    except BaseException:
        client.stop()
        raise
    return client, time.monotonic() - t


def idle(gw_pid: int, gw_port: int, n: int, cfg: dict) -> dict:
    """The gateway's CPU share over ``idle_seconds`` and its memory, holding ``n`` idle connections."""
    wait_connections(gw_port, n)  # the other parts' bots have left
    time.sleep(cfg["idle_settle"])
    spy = profile(gw_pid, "gateway-idle", cfg, cfg["idle_seconds"])
    cpu0, w0 = proc_cpu_s(gw_pid), time.time()
    time.sleep(cfg["idle_seconds"])
    cpu1, w1 = proc_cpu_s(gw_pid), time.time()
    if spy is not None:
        spy.wait(30)
    held = gateway_health(gw_port)["connections"]
    if held != n:
        raise RuntimeError(f"idle: the gateway held {held} connections at the end, not {n}")
    return {
        "connections": held,
        "seconds": round(w1 - w0, 1),
        "cpu_percent": round((cpu1 - cpu0) / (w1 - w0) * 100, 2),
        **proc_memory(gw_pid),
    }


def _idle_child(conf: dict) -> None:
    """Open one authenticated connection per bot (``OPEN_AT_ONCE`` at a time), answer nothing
    (the library answers the gateway's pings), print ``ready N``, hold them until stdin closes."""
    import asyncio

    from websockets.asyncio.client import connect as ws_connect

    from bots_sdk import wire

    async def one(bot_id: int, secret: str, gate: asyncio.Semaphore, held: list) -> None:
        async with gate:
            ws = await ws_connect(conf["url"], max_size=wire.MAX_FRAME_BYTES, compression=None, open_timeout=60)
            challenge = json.loads(await ws.recv())
            await ws.send(wire.auth_frame(bot_id, secret, challenge["nonce"]))
            welcome = json.loads(await ws.recv())
            if welcome.get("type") != "welcome":
                raise RuntimeError(f"bot {bot_id}: {welcome}")
            held.append(ws)

    async def main() -> None:
        gate = asyncio.Semaphore(OPEN_AT_ONCE)
        held: list = []
        await asyncio.gather(*(one(b, s, gate, held) for b, s in conf["bots"]))
        print(f"ready {len(held)}", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)
        await asyncio.gather(*(ws.close() for ws in held), return_exceptions=True)

    asyncio.run(main())


def redis_pid(services) -> int | None:
    """The PID of the bench's redis-server (infra/redis.sh's pidfile), None if unknown."""
    try:
        return int((REPO / ".services" / f"redis-{services.env['ARENA_REDIS_PORT']}" / "redis.pid").read_text())
    except (OSError, ValueError):
        return None


# -- the bench -----------------------------------------------------------------------------------
def main() -> None:
    from orchestration_bench import Services

    from arena.crypto import new_key

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="a tiny run (CI): figures not meaningful")
    ap.add_argument("--samples", type=int, help="round trips of each transport")
    ap.add_argument("--matches", type=int, help="matches at once in the throughput part")
    ap.add_argument("--seconds", type=float, help="seconds the throughput is measured over")
    ap.add_argument("--idle", type=int, help="idle connections")
    ap.add_argument("--idle-seconds", type=float, help="seconds the idle CPU is measured over")
    ap.add_argument(
        "--profile",
        metavar="DIR",
        help="py-spy record the processes of the throughput part, and the idle gateway, into DIR",
    )
    args = ap.parse_args()
    cfg = dict(SHORT if args.short else FULL)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
        cfg["profile"] = str(Path(args.profile).resolve())
    for key in ("samples", "matches", "seconds", "idle", "idle_seconds"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)

    started = time.perf_counter()
    load_before = os.getloadavg()
    keys = new_key()
    os.environ["ARENA_ENCRYPTION_KEYS"] = keys  # this process writes the secrets the gateway reads
    services = Services()
    tmp = Path(tempfile.mkdtemp(prefix="arena-gwbench-"))
    gw: Child | None = None
    try:
        db, broker = services.stack("gwbench")
        accounts = [1, LOAD_BOTS]
        idle_n = cfg["idle"]
        accounts += [IDLE_BOTS_PER_ACCOUNT] * (idle_n // IDLE_BOTS_PER_ACCOUNT)
        if idle_n % IDLE_BOTS_PER_ACCOUNT:
            accounts.append(idle_n % IDLE_BOTS_PER_ACCOUNT)
        registered = register_bots(db, accounts)
        rtt_bot, load_bots = registered[0][0], registered[1]
        idle_bots = [b for group in registered[2:] for b in group]

        gw, url, port = start_gateway(db, broker, keys, tmp)
        pid = gw.proc.pid
        memory_start = proc_memory(pid)
        crowd, opened_s = open_idle(url, port, idle_bots, tmp)  # held through every part
        try:
            memory_idle = proc_memory(pid)
            rt = round_trip(url, broker, rtt_bot, cfg, tmp)
            load = throughput(url, pid, port, broker, load_bots, cfg, tmp, redis_pid(services), len(idle_bots))
            quiet = idle(pid, port, len(idle_bots), cfg)
        finally:
            crowd.stop()
        details = {
            "round_trip": rt,
            "throughput": load,
            "idle": {**quiet, "opened_s": round(opened_s, 1)},
            "gateway_memory": {"start": memory_start, "idle_connections_opened": memory_idle},
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            "cores": os.cpu_count(),
            "config": cfg,
            "bench_s": round(time.perf_counter() - started, 1),
        }
        print(json.dumps(details), file=sys.stderr)
        g, h = rt["gateway"], rt["http"]
        print(
            f"gateway round trip: {g['median_ms']:.2f} ms median, {g['p99_ms']:.2f} ms p99; "
            f"http: {h['median_ms']:.2f} ms median, {h['p99_ms']:.2f} ms p99"
        )
        print(f"gateway decisions/s: {load['decisions_per_s']}")
        n, mb, cpu = quiet["connections"], quiet["rss_mb"], quiet["cpu_percent"]
        print(f"gateway idle connections {n}: {mb:.0f} MB, {cpu:.1f} % cpu")
    finally:
        if gw is not None:
            gw.stop()
        services.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        {"load": _load_child, "bots": _bots_child, "idle": _idle_child}[sys.argv[2]](
            json.loads(Path(sys.argv[3]).read_text())
        )
    else:
        main()
