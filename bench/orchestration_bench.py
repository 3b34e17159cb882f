"""Orchestration benchmark: the arena's cost per decision and its throughput with real workers.

    .venv/bin/python bench/orchestration_bench.py

Starts everything it needs and stops it afterwards: PostgreSQL and Redis (``infra/postgres.sh``,
``infra/redis.sh`` on free ports), real ``celery -A worker.celery_app worker`` processes, sample
bots served by the SDK (waitress) on 127.0.0.1 in this process. Tournaments go through the
real API app (bots registered and checked, tournament created and started into Redis).

Prints four lines:

* ``per-decision overhead ratio: R``: arena time per decision (sum of the matches' wall time
  / decisions, one worker process) / the bare keep-alive httpx round trip of the same kind
  of decision requests (real requests of seeded Million Doubt games, unsigned) to the same
  bot, measured before and after the tournament (mean of the two). Bots answer at once (the
  greedy sample bot: no sleep, only its own decision code).
* ``decisions/s per worker process: N``: decisions / tournament wall time, same run.
* ``matches/min with 1 worker: N`` and ``matches/min with 2 workers: N``: a tournament of
  bots that think a fixed 5 ms per decision (I/O-bound, as real tournaments are), with one
  worker process, then two (``--concurrency 2``).

Targets (issue 6): ratio <= 1.25; 2 workers >= 1.8 x the matches/min of 1. Finishes in well
under four minutes on 2 cores.
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
from bots_sdk.server import start as serve_bot  # noqa: E402

BARE_REQUESTS = 2000
THINK_S = 0.005


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Services:
    def __init__(self) -> None:
        self.env = {**os.environ, "ARENA_PG_PORT": str(free_port()), "ARENA_REDIS_PORT": str(free_port())}
        self.started: list[str] = []

    def start(self, script: str) -> str:
        out = subprocess.run(["bash", str(REPO / "infra" / script), "start"], env=self.env,
                             capture_output=True, text=True, check=True)
        self.started.append(script)
        return out.stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        for script in reversed(self.started):
            subprocess.run(["bash", str(REPO / "infra" / script), "stop"], env=self.env, capture_output=True)


class Worker:
    def __init__(self, broker: str, db: str, concurrency: int, log_dir: Path):
        self.log = log_dir / f"worker-{uuid.uuid4().hex[:6]}.log"
        env = {**os.environ, "ARENA_BROKER_URL": broker, "ARENA_DATABASE_URL": db,
               "ARENA_ALLOW_PRIVATE_BOT_URLS": "1", "ARENA_CELERY_EAGER": "0",
               "PYTHONPATH": str(REPO)}
        with open(self.log, "wb") as fh:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "--without-mingle",
                 "--without-gossip", "--without-heartbeat", "--concurrency", str(concurrency),
                 "--queues", "arena", "--loglevel", "WARNING", "--hostname", f"bench-{uuid.uuid4().hex[:6]}@127.0.0.1"],
                cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        from worker.celery_app import make_app
        from arena.config import Settings

        client = make_app(Settings.from_env({"ARENA_BROKER_URL": broker}))
        for _ in range(concurrency):  # every pool process answers before we measure
            assert client.send_task("arena.ping", queue="arena").get(timeout=60) == "pong"
        client.close()

    def stop(self) -> None:
        import signal

        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


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
            bodies.append(protocol.dumps(protocol.build_request(
                g, d.seat, match_id="bench", game=0, time_rules=engine.TimeRules(),
                remaining_ms=60000)))
            g.apply(*random_action(g, rng))
    return bodies


def bare_round_trip(url: str) -> float:
    """Mean seconds of a keep-alive httpx POST of real decision requests (no signing, no
    arena work around it): each sampled request is sent in turn, several times over."""
    bodies = sample_requests()
    with httpx.Client(trust_env=False) as client:
        for body in bodies[:100]:
            client.post(url, content=body).read()
        times = []
        for i in range(BARE_REQUESTS):
            body = bodies[i % len(bodies)]
            t = time.perf_counter()
            r = client.post(url, content=body)
            r.read()
            times.append(time.perf_counter() - t)
    return statistics.fmean(times)


def run_tournament(arena, servers, games: int, workers: int, tmp: Path, broker: str, db: str) -> dict:
    ids = [arena.register(s, ["million_doubt"], f"b{i}-{uuid.uuid4().hex[:4]}") for i, s in enumerate(servers)]
    tid = arena.create("million_doubt", ids, games_per_pairing=games,
                       time_rules={"initial": 60.0, "increment": 10.0, "cap": 60.0})
    w = Worker(broker, db, workers, tmp)
    try:
        t0 = time.perf_counter()
        arena.start(tid)
        while arena.get(f"/tournaments/{tid}")["status"] == "running":
            time.sleep(0.05)
        wall = time.perf_counter() - t0
    finally:
        w.stop()
    stored = arena.stored(tid)
    decisions = sum(sum(res.timings["decisions"]) for _, res, _ in stored)
    match_wall = sum(res.timings["wall_s"] for _, res, _ in stored)
    return {"matches": len(stored), "decisions": decisions, "wall_s": wall, "match_wall_s": match_wall}


def main() -> None:
    import tempfile

    from arena.db.migrate import upgrade
    from tests.worker.conftest import Arena, SwitchBot

    started = time.perf_counter()
    services = Services()
    tmp = Path(tempfile.mkdtemp(prefix="arena-bench-"))
    servers = []
    try:
        pg = services.start("postgres.sh")
        broker = services.start("redis.sh")
        from sqlalchemy import create_engine, text

        from arena.db.session import normalize_url

        admin = create_engine(normalize_url(pg), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text('CREATE DATABASE "bench"'))
        admin.dispose()
        db = normalize_url(pg).rsplit("/", 1)[0] + "/bench"
        upgrade(db)
        arena = Arena(db, broker, tmp_path=tmp)

        fast = [SwitchBot(SAMPLE_BOTS["greedy"]()) for _ in range(4)]
        servers += fast
        # the machine's speed drifts: measure the bare round trip before and after the
        # tournament and compare with their mean
        bare_before = bare_round_trip(fast[0].url)
        a = run_tournament(arena, fast, 20, 1, tmp, broker, db)
        bare = (bare_before + bare_round_trip(fast[0].url)) / 2
        per_decision = a["match_wall_s"] / a["decisions"]

        slow = [SwitchBot(ThinkingBot()) for _ in range(6)]
        servers += slow
        one = run_tournament(arena, slow, 10, 1, tmp, broker, db)
        two = run_tournament(arena, slow, 10, 2, tmp, broker, db)
        arena.close()
        details = {"bare_round_trip_ms": round(bare * 1000, 3), "arena_ms_per_decision": round(per_decision * 1000, 3),
                   "fast": a, "thinking_1_worker": one, "thinking_2_workers": two,
                   "bench_s": round(time.perf_counter() - started, 1)}
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
    main()
