"""Orchestration benchmark: the arena's cost per decision and its throughput with real workers.

    .venv/bin/python bench/orchestration_bench.py

Starts everything it needs and stops it afterwards: PostgreSQL and Redis (``infra/postgres.sh``,
``infra/redis.sh`` on free ports), real ``celery -A worker.celery_app worker`` processes, sample
bots served by the SDK (waitress) on 127.0.0.1 in this process. Tournaments go through the
real API app (bots registered and checked, tournament created and started into Redis).

Prints four lines:

* ``per-decision overhead ratio: R``: arena time per decision / bare round trip.

  Arena time per decision: the matches' summed wall time (``run_match``, from the first
  notice to the last) / their decisions, over 4 tournaments of 4 bots (6 matches of 20
  games each) on one worker process. Bare round trip: a keep-alive ``httpx.Client`` POST of
  the same kind of decision requests (real requests of seeded Million Doubt games, signed
  with the bot's secret before the clock starts) to the same bot, from a separate process
  as the worker's requests are; measured before each tournament and after the last, and
  averaged (the machine's speed drifts). Bots answer at once (the greedy sample bot: no
  sleep, only its own decision code and the signature check). The details line (stderr)
  also gives the round trip through httpx's transport alone (``bare_transport_ms``), which
  is what the arena's requests go through (arena/runner/players.py), and the arena time over it.
* ``decisions/s per worker process: N``: decisions / tournament wall time (from the start
  request to the last result stored), same tournaments.
* ``matches/min with 1 worker: N`` and ``matches/min with 2 workers: N``: tournaments of 8
  bots that think a fixed 5 ms per decision (I/O-bound, as real tournaments are; 28 matches
  of 10 games each), played with one worker process, then two (``--concurrency 2``), two
  again, then one; each figure sums its two tournaments, so a drift of the machine's speed
  during the bench weighs on both alike.

While a tournament runs, this process only serves the bots and asks PostgreSQL for the
tournament's status every 20 ms (one small query): nothing else competes with the bots for
its GIL.

Targets (issue 6): ratio <= 1.25; 2 workers >= 1.8 x the matches/min of 1. Finishes in well
under four minutes on 2 cores.

``--profile PATH`` measures instead where a worker's CPU time goes: one fast tournament on a
worker process run under cProfile (``--pool solo``: the match in the profiled process), its
stats written to PATH and the top functions printed with the worker's CPU milliseconds per
decision (issue 41: profile, do not guess).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from bots_sdk import protocol  # noqa: E402
from bots_sdk.samples import SAMPLE_BOTS  # noqa: E402
from tests import children  # noqa: E402

#: Requests of each bare measurement, through each of the two clients (bare_round_trip).
BARE_REQUESTS = 1000
THINK_S = 0.005
#: Fast tournaments (the overhead ratio): FAST_ROUNDS tournaments of 4 bots (6 matches of
#: FAST_GAMES games each), a bare round trip measured before each and after the last.
FAST_BOTS, FAST_GAMES, FAST_ROUNDS = 4, 20, 4
#: Thinking tournaments (matches/min): THINKING_BOTS bots, every pair plays THINKING_GAMES games
#: (28 matches each), played with 1, 2, 2, then 1 worker processes.
THINKING_BOTS, THINKING_GAMES = 8, 10
SCALING_ORDER = (1, 2, 2, 1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Services:
    """PostgreSQL and Redis of a bench (``infra/postgres.sh``, ``infra/redis.sh`` on free ports),
    stopped by :meth:`stop`, or at exit whatever happened: an error, Ctrl-C, SIGTERM (a
    timeout) or SIGHUP end the bench through its ``finally`` blocks (``tests.children``)."""

    def __init__(self) -> None:
        self.env = {**os.environ, "ARENA_PG_PORT": str(free_port()), "ARENA_REDIS_PORT": str(free_port())}
        self.started: list[str] = []
        children.install_signal_handlers()
        children.on_exit(self.stop)

    def start(self, script: str) -> str:
        out = subprocess.run(
            ["bash", str(REPO / "infra" / script), "start"], env=self.env, capture_output=True, text=True, check=True
        )
        self.started.append(script)
        return out.stdout.strip().splitlines()[-1]

    def stack(self, name: str) -> tuple[str, str]:
        """Start PostgreSQL and Redis, create and migrate the database ``name``; returns
        ``(database URL, broker URL)``."""
        from sqlalchemy import create_engine, text

        from arena.db.migrate import upgrade
        from arena.db.session import normalize_url

        pg = self.start("postgres.sh")
        broker = self.start("redis.sh")
        admin = create_engine(normalize_url(pg), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        db = normalize_url(pg).rsplit("/", 1)[0] + f"/{name}"
        upgrade(db)
        return db, broker

    def stop(self) -> None:
        children.forget(self.stop)
        while self.started:
            script = self.started.pop()
            subprocess.run(["bash", str(REPO / "infra" / script), "stop"], env=self.env, capture_output=True)


#: ``python -c`` of a profiled worker: celery's main under cProfile with a CPU-time clock.
_PROFILED = (
    "import cProfile, runpy, sys, time\n"
    "p = cProfile.Profile(time.process_time)\n"
    "sys.argv = sys.argv[1:]\n"
    "p.enable()\n"
    "try:\n    runpy.run_module('celery', run_name='__main__')\n"
    "except SystemExit:\n    pass\n"
    "finally:\n    p.disable()\n    p.dump_stats({path!r})\n"
)


class Worker:
    def __init__(self, broker: str, db: str, concurrency: int, log_dir: Path, profile: str | None = None):
        self.log = log_dir / f"worker-{uuid.uuid4().hex[:6]}.log"
        env = {
            **os.environ,
            "ARENA_BROKER_URL": broker,
            "ARENA_DATABASE_URL": db,
            "ARENA_ALLOW_PRIVATE_BOT_URLS": "1",
            "ARENA_CELERY_EAGER": "0",
            "PYTHONPATH": str(REPO),
        }
        # profiled: the solo pool plays the match in the process cProfile watches, on CPU time
        prefix = ["-c", _PROFILED.format(path=profile), "celery"] if profile else ["-m", "celery"]
        pool = ["--pool", "solo"] if profile else []
        with open(self.log, "wb") as fh:
            self.proc = children.spawn(
                [
                    sys.executable,
                    *prefix,
                    "-A",
                    "worker.celery_app",
                    "worker",
                    "--without-mingle",
                    "--without-gossip",
                    "--without-heartbeat",
                    *pool,
                    "--concurrency",
                    str(concurrency),
                    "--queues",
                    "arena.priority,arena.checks,arena",
                    "--loglevel",
                    "WARNING",
                    "--hostname",
                    f"bench-{uuid.uuid4().hex[:6]}@127.0.0.1",
                ],
                cwd=REPO,
                env=env,
                stdout=fh,
                stderr=subprocess.STDOUT,
            )
        from arena.config import Settings
        from arena.queue import PING_TASK, QUEUE
        from worker.celery_app import make_app

        client = make_app(Settings.from_env({"ARENA_BROKER_URL": broker}))
        try:
            for _ in range(concurrency):  # every pool process answers before we measure
                assert client.send_task(PING_TASK, queue=QUEUE).get(timeout=60) == "pong"
        except BaseException:
            self.stop()
            raise
        finally:
            client.close()

    def stop(self) -> None:
        children.stop(self.proc, 15)


class ThinkingBot(SAMPLE_BOTS["greedy"]):
    name = "thinking"

    def decide(self, message):
        time.sleep(THINK_S)
        return super().decide(message)


def sample_requests(n_games: int = 12) -> list[bytes]:
    """Real decision requests (bodies) of seeded random Million Doubt games: the same kind of
    requests the tournament sends, so the bare round trip pays the same bot-side work."""
    import random

    import engine
    from engine.selfplay import random_action

    rng = random.Random(99)
    bodies = []
    for seed in range(n_games):
        g = engine.new_game("million_doubt", None, seed)
        while not g.over:
            d = g.decision()
            bodies.append(
                protocol.dumps(
                    protocol.build_request(
                        g, d.seat, match_id="bench", game=0, time_rules=engine.TimeRules(), remaining_ms=60000
                    )
                )
            )
            g.apply(*random_action(g, rng))
    return bodies


def bare_round_trip(url: str, secret: str | None) -> tuple[float, float]:
    """Mean seconds of a keep-alive POST of real decision requests to ``url``, sent from a
    separate process as the worker's are (a client in the bots' own process would share
    their GIL): ``(through httpx.Client, through httpx's transport alone)``.

    The first is THE bare round trip of the ratio: what ``httpx.Client.post`` costs. The
    second is the floor of the arena's own path (it sends through ``httpx.HTTPTransport``
    directly, see arena/runner/players.py), printed in the details for comparison.

    The requests are signed with the bot's secret as the arena signs them (the bot verifies
    each signature, as it does in the tournament), but before the clock starts: only the
    round trip is timed. Each sampled request is sent in turn, several times over, the two
    clients taking turns by blocks of 100 requests."""
    out = subprocess.run(
        [sys.executable, __file__, "--bare", url, secret or ""], capture_output=True, text=True, check=True, cwd=REPO
    )
    client_s, transport_s = out.stdout.strip().splitlines()[-1].split()
    return float(client_s), float(transport_s)


def _bare_client(url: str, secret: str | None) -> tuple[float, float]:
    bodies = sample_requests()
    signed = [(body, protocol.sign(secret, body)) for body in bodies]
    target = httpx.URL(url)

    def via_client(client: httpx.Client, body: bytes, headers: dict) -> int:
        r = client.post(url, content=body, headers=headers)
        r.read()
        return r.status_code

    def via_transport(transport: httpx.HTTPTransport, body: bytes, headers: dict) -> int:
        r = transport.handle_request(httpx.Request("POST", target, content=body, headers=headers))
        r.read()
        r.close()
        return r.status_code

    times: dict[str, list[float]] = {"client": [], "transport": []}
    with httpx.Client(trust_env=False) as client, httpx.HTTPTransport() as transport:
        senders = {
            "client": lambda b, h: via_client(client, b, h),
            "transport": lambda b, h: via_transport(transport, b, h),
        }
        for send in senders.values():  # warm up: connections open, code paths hot
            for body, headers in signed[:100]:
                if send(body, headers) != 200:
                    raise RuntimeError(f"bare round trip: HTTP error from {url}")
        for block in range(BARE_REQUESTS // 100):
            for name, send in senders.items():
                for i in range(block * 100, block * 100 + 100):
                    body, headers = signed[i % len(signed)]
                    t = time.perf_counter()
                    status = send(body, headers)
                    times[name].append(time.perf_counter() - t)
                    if status != 200:
                        raise RuntimeError(f"bare round trip: HTTP {status} from {url}")
    return statistics.fmean(times["client"]), statistics.fmean(times["transport"])


def wait_finished(db: str, tournament_id: int) -> None:
    """Wait until the tournament is no longer running, with one cheap SQL query every 20 ms.

    The bots are served by this process: polling through the API app (Flask, SQLAlchemy,
    marshmallow: milliseconds of Python under the GIL) would delay the bots' answers and
    charge that delay to the arena."""
    import psycopg

    with psycopg.connect(db.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        while True:
            status = conn.execute("SELECT status FROM tournaments WHERE id = %s", (tournament_id,)).fetchone()[0]
            if status != "running":
                return
            time.sleep(0.02)


def register(arena, servers) -> list[int]:
    """Register and check the bots (each gets its signing secret)."""
    return [arena.register(s, ["million_doubt"], f"b{i}-{uuid.uuid4().hex[:4]}") for i, s in enumerate(servers)]


def run_tournament(
    arena,
    ids: list[int],
    games: int,
    tmp: Path,
    broker: str,
    db: str,
    *,
    workers: int = 1,
    worker: Worker | None = None,
) -> dict:
    """One Million Doubt round-robin of ``ids``: on ``worker`` if given (left running), else on
    a new worker process with ``workers`` pool processes (stopped afterwards)."""
    tid = arena.create(
        "million_doubt", ids, games_per_pairing=games, time_rules={"initial": 60.0, "increment": 10.0, "cap": 60.0}
    )
    w = worker or Worker(broker, db, workers, tmp)
    try:
        t0 = time.perf_counter()
        arena.start(tid)
        wait_finished(db, tid)
        wall = time.perf_counter() - t0
    finally:
        if worker is None:
            w.stop()
    stored = arena.stored(tid)
    decisions = sum(sum(res.timings["decisions"]) for _, res, _ in stored)
    match_wall = sum(res.timings["wall_s"] for _, res, _ in stored)
    return {"matches": len(stored), "decisions": decisions, "wall_s": wall, "match_wall_s": match_wall}


def summed(runs: list[dict]) -> dict:
    """The figures of several :func:`run_tournament` results, added up."""
    return {k: sum(r[k] for r in runs) for k in ("matches", "decisions", "wall_s", "match_wall_s")}


def overhead_rounds(arena, servers, ids: list[int], tmp: Path, broker: str, db: str) -> dict:
    """The fast phase: FAST_ROUNDS tournaments on one worker process, with a bare round trip
    measured before each and after the last, so both sides see the same drift of the
    machine's speed. Returns the summed tournament figures and the mean bare times (s)."""
    worker = Worker(broker, db, 1, tmp)
    bares, floors, runs = [], [], []
    try:
        for r in range(FAST_ROUNDS + 1):
            bare, floor = bare_round_trip(servers[0].url, servers[0].secret)
            bares.append(bare)
            floors.append(floor)
            if r == FAST_ROUNDS:
                break
            runs.append(run_tournament(arena, ids, FAST_GAMES, tmp, broker, db, worker=worker))
    finally:
        worker.stop()
    return {
        **summed(runs),
        "bare_s": statistics.fmean(bares),
        "bare_transport_s": statistics.fmean(floors),
        "bare_ms_each": [round(x * 1000, 3) for x in bares],
    }


def scaling_rounds(arena, ids: list[int], tmp: Path, broker: str, db: str) -> tuple[dict, dict]:
    """The thinking phase: tournaments with 1, 2, 2 and 1 worker processes, in that order (so
    a steady drift of the machine's speed weighs on both sides alike). Returns the summed
    figures with 1 worker and with 2."""
    runs = {1: [], 2: []}
    for n in SCALING_ORDER:
        runs[n].append(run_tournament(arena, ids, THINKING_GAMES, tmp, broker, db, workers=n))
    return summed(runs[1]), summed(runs[2])


def profile_worker(path: str) -> None:
    """``--profile``: one fast tournament on a profiled worker; the top functions (module docstring)."""
    import pstats
    import tempfile

    from tests.worker.conftest import Arena, SwitchBot

    services = Services()
    tmp = Path(tempfile.mkdtemp(prefix="arena-bench-"))
    servers = [SwitchBot(SAMPLE_BOTS["greedy"]()) for _ in range(FAST_BOTS)]
    try:
        db, broker = services.stack("bench")
        arena = Arena(db, broker, tmp_path=tmp)
        ids = register(arena, servers)
        worker = Worker(broker, db, 1, tmp, profile=path)
        try:
            run = run_tournament(arena, ids, FAST_GAMES, tmp, broker, db, worker=worker)
        finally:
            worker.stop()
        arena.close()
        stats = pstats.Stats(path)
        total = stats.total_tt  # type: ignore[attr-defined]
        print(
            f"profile: {run['decisions']} decisions, worker CPU {total:.1f} s (profiled), "
            f"{total / run['decisions'] * 1000:.3f} ms a decision; match wall {run['match_wall_s']:.1f} s"
        )
        stats.sort_stats("cumulative").print_stats(45)
        stats.sort_stats("tottime").print_stats(30)
    finally:
        for s in servers:
            s.close()
        services.stop()


def main() -> None:
    import tempfile

    from tests.worker.conftest import Arena, SwitchBot

    started = time.perf_counter()
    services = Services()
    tmp = Path(tempfile.mkdtemp(prefix="arena-bench-"))
    servers = []
    try:
        db, broker = services.stack("bench")
        arena = Arena(db, broker, tmp_path=tmp)

        fast = [SwitchBot(SAMPLE_BOTS["greedy"]()) for _ in range(FAST_BOTS)]
        servers += fast
        a = overhead_rounds(arena, fast, register(arena, fast), tmp, broker, db)
        bare, floor = a.pop("bare_s"), a.pop("bare_transport_s")
        per_decision = a["match_wall_s"] / a["decisions"]

        slow = [SwitchBot(ThinkingBot()) for _ in range(THINKING_BOTS)]
        servers += slow
        slow_ids = register(arena, slow)
        one, two = scaling_rounds(arena, slow_ids, tmp, broker, db)
        arena.close()
        details = {
            "bare_round_trip_ms": round(bare * 1000, 3),
            "bare_transport_ms": round(floor * 1000, 3),
            "arena_vs_transport": round(per_decision / floor, 3),
            "arena_ms_per_decision": round(per_decision * 1000, 3),
            "fast": a,
            "thinking_1_worker": one,
            "thinking_2_workers": two,
            "bench_s": round(time.perf_counter() - started, 1),
        }
        print(json.dumps(details), file=sys.stderr)
        print(f"per-decision overhead ratio: {per_decision / bare:.2f}")
        print(f"decisions/s per worker process: {a['decisions'] / a['wall_s']:.0f}")
        m1 = one["matches"] / one["wall_s"] * 60
        m2 = two["matches"] / two["wall_s"] * 60
        print(f"matches/min with 1 worker: {m1:.1f}")
        print(f"matches/min with 2 workers: {m2:.1f}")
    finally:
        for s in servers:
            s.close()
        services.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--bare"]:  # the bare round trip's client process (bare_round_trip)
        print(*_bare_client(sys.argv[2], sys.argv[3] or None))
    elif sys.argv[1:2] == ["--profile"]:
        profile_worker(sys.argv[2])
    else:
        main()
