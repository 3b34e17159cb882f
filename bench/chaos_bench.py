"""Chaos benchmark (issue 13): a tournament finishes by itself while workers die and Redis
restarts empty, with a bot answering poison pills.

    .venv/bin/python bench/chaos_bench.py [--short]

Starts everything it needs on free ports and stops it afterwards: PostgreSQL and Redis
(``infra/postgres.sh``, ``infra/redis.sh``), two real Celery worker processes (``-Q
arena.priority,arena``), one ``arena beat`` process (the reaper), SDK bots served over HTTP on
127.0.0.1 by this process. Tournaments go through the real API app.

1. Undisturbed: a Million Doubt round-robin of 12 bots (66 matches of 8 games; bots
   think ``THINK_S`` per decision; one of them answers every decision with a poison pill:
   ``[`` x 60000, a lone surrogate, ``NaN``, a duplicate key, an unknown key) on the two
   workers. Its wall time is ``T0``.
2. Chaos: the same tournament again, while every 15-20 s (seeded) one worker is SIGKILLed
   (process group: main process and pool child) and a new one started in its place, and
   Redis is SIGKILLed and restarted empty once, a third of ``T0`` in. No resume call.

Prints one line::

    chaos: N matches, N stored once, N failed, N stuck, finished in X s (bound Y s)

``stored once``: matches with exactly one result and one log whose log replays; ``failed``:
matches ended ``failed``; ``stuck``: matches not done when the run ended (it gives up at 3 x
the bound). Bound: ``1.5 x T0 + lease`` (issue 13's goal). Leases are shortened for the
bench (``ARENA_LEASE_S`` = 6, reaper every 2 s, lost after 6 s) so that it runs in about
three minutes on 2 cores; ``--short`` (CI) plays 2 games per match with kills every 8-10 s.
Details (JSON) go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from orchestration_bench import Services  # noqa: E402

from bots_sdk.samples import SAMPLE_BOTS  # noqa: E402
from tests import children  # noqa: E402

LEASE_ENV = {"ARENA_LEASE_S": "6", "ARENA_REAPER_INTERVAL_S": "2", "ARENA_LOST_AFTER_S": "6"}
BOTS = 12
THINK_S = 0.01
POISON = [
    b"[" * 60000,
    b'{"type":"pass","comment":"\\ud800"}',
    b'{"type":"rate","rate":NaN}',
    b'{"type":"pass","type":"doubt"}',
    b'{"type":"pass","extra":1}',
]


class ThinkingBot(SAMPLE_BOTS["greedy"]):
    name = "thinking"

    def decide(self, message):
        time.sleep(THINK_S)
        return super().decide(message)


class Proc:
    """A child process in its own process group, its output in a log file."""

    def __init__(self, cmd: list[str], env: dict[str, str], log: Path):
        self.log = log
        with open(log, "ab") as fh:
            self.proc = children.spawn(
                cmd, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT
            )

    def kill(self) -> None:
        children.stop(self.proc, signum=signal.SIGKILL)

    def stop(self) -> None:
        children.stop(self.proc, 20)


def _env(broker: str, db: str) -> dict[str, str]:
    return {
        **os.environ,
        "ARENA_BROKER_URL": broker,
        "ARENA_DATABASE_URL": db,
        "ARENA_ALLOW_PRIVATE_BOT_URLS": "1",
        "ARENA_CELERY_EAGER": "0",
        "PYTHONPATH": str(REPO),
        **LEASE_ENV,
    }


def start_worker(broker: str, db: str, tmp: Path) -> Proc:
    tag = uuid.uuid4().hex[:6]
    private = f"chaos.{tag}"
    w = Proc(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "worker.celery_app",
            "worker",
            "--without-mingle",
            "--without-gossip",
            "--without-heartbeat",
            "--concurrency",
            "1",
            "--queues",
            f"{private},arena.priority,arena.checks,arena",
            "--loglevel",
            "INFO",
            "--hostname",
            f"chaos-{tag}@127.0.0.1",
        ],
        _env(broker, db),
        tmp / f"worker-{tag}.log",
    )
    from arena.config import Settings
    from arena.queue import PING_TASK
    from worker.celery_app import make_app

    client = make_app(Settings.from_env({"ARENA_BROKER_URL": broker}))
    try:
        assert client.send_task(PING_TASK, queue=private).get(timeout=60) == "pong"
    except BaseException:
        w.stop()
        raise
    finally:
        client.close()
    return w


def start_beat(broker: str, db: str, tmp: Path) -> Proc:
    return Proc(
        [sys.executable, "-m", "daifugo_arena.cli", "beat", "--schedule", str(tmp / "beat-schedule")],
        _env(broker, db),
        tmp / "beat.log",
    )


def status_counts(db: str, tid: int) -> tuple[str, dict[str, int]]:
    import psycopg

    with psycopg.connect(db.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        status = conn.execute("SELECT status FROM tournaments WHERE id = %s", (tid,)).fetchone()[0]
        rows = conn.execute(
            "SELECT status, count(*) FROM matches WHERE tournament_id = %s GROUP BY status", (tid,)
        ).fetchall()
    return status, {s: int(n) for s, n in rows}


def figures(arena, db: str, tid: int) -> dict[str, int]:
    from sqlalchemy import text

    from arena.runner.replay import replay

    with arena.sessions() as s:
        rows = s.execute(
            text("""
            SELECT m.id, m.status, (SELECT count(*) FROM match_results r WHERE r.match_id = m.id),
                   (SELECT count(*) FROM match_logs l WHERE l.match_id = m.id)
            FROM matches m WHERE m.tournament_id = :t"""),
            {"t": tid},
        ).all()
    stored = arena.stored(tid)
    replayed = {m.id for m, _res, log in stored if replay(log) is not None}
    poison_faults = sum(
        1 for _m, _res, log in stored for f in log["faults"] if f["kind"] in ("invalid_json", "invalid_action")
    )
    return {
        "matches": len(rows),
        "stored_once": sum(1 for mid, st, r, lg in rows if st == "finished" and r == 1 and lg == 1 and mid in replayed),
        "failed": sum(1 for _m, st, _r, _l in rows if st == "failed"),
        "stuck": sum(1 for _m, st, _r, _l in rows if st in ("pending", "queued", "running")),
        "poison_faults": poison_faults,
    }


def run(
    arena,
    ids,
    games: int,
    broker: str,
    db: str,
    tmp: Path,
    services: Services,
    *,
    chaos: bool,
    kill_every: tuple[float, float],
    t0: float | None,
    bound: float | None,
) -> dict:
    tid = arena.create(
        "million_doubt", ids, games_per_pairing=games, time_rules={"initial": 2.0, "increment": 0.2, "cap": 2.0}
    )
    workers = [start_worker(broker, db, tmp), start_worker(broker, db, tmp)]
    rng = random.Random(20261201)
    kills, redis_restarts = 0, 0
    give_up = 3 * bound if bound else 1800.0
    started = time.monotonic()
    arena.start(tid)
    next_kill = started + rng.uniform(*kill_every)
    redis_at = started + (t0 or 0) / 3
    try:
        while True:
            status, _counts = status_counts(db, tid)
            now = time.monotonic()
            if status != "running" or now - started > give_up:
                break
            if chaos and now >= next_kill:
                victim = workers.pop(kills % 2 if len(workers) > 1 else 0)
                victim.kill()
                kills += 1
                workers.append(start_worker(broker, db, tmp))
                next_kill = time.monotonic() + rng.uniform(*kill_every)
            if chaos and not redis_restarts and now >= redis_at:
                subprocess.run(
                    ["bash", str(REPO / "infra" / "redis.sh"), "stop"],
                    env=services.env,
                    capture_output=True,
                    check=False,
                )
                subprocess.run(
                    ["bash", str(REPO / "infra" / "redis.sh"), "start"],
                    env=services.env,
                    capture_output=True,
                    check=True,
                )
                redis_restarts += 1
            time.sleep(0.2)
        elapsed = time.monotonic() - started
    finally:
        for w in workers:
            w.stop()
    return {
        "tournament": tid,
        "elapsed_s": round(elapsed, 1),
        "kills": kills,
        "redis_restarts": redis_restarts,
        **figures(arena, db, tid),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="CI form: 2 games per match, kills every 8-10 s")
    args = parser.parse_args()
    games, kill_every = (2, (8.0, 10.0)) if args.short else (8, (15.0, 20.0))

    from tests.worker.conftest import Arena, SwitchBot

    bench_started = time.monotonic()
    services = Services()
    tmp = Path(tempfile.mkdtemp(prefix="arena-chaos-"))
    servers: list = []
    beat = None
    try:
        db, broker = services.stack("chaos")
        arena = Arena(db, broker, tmp_path=tmp)
        servers = [SwitchBot(ThinkingBot()) for _ in range(BOTS)]
        ids = [arena.register(s, ["million_doubt"], f"c{i}") for i, s in enumerate(servers)]
        servers[-1].poison, servers[-1].mode = POISON, "poison"
        beat = start_beat(broker, db, tmp)
        calm = run(
            arena, ids, games, broker, db, tmp, services, chaos=False, kill_every=kill_every, t0=None, bound=None
        )
        lease = float(LEASE_ENV["ARENA_LEASE_S"])
        bound = 1.5 * calm["elapsed_s"] + lease
        wild = run(
            arena,
            ids,
            games,
            broker,
            db,
            tmp,
            services,
            chaos=True,
            kill_every=kill_every,
            t0=calm["elapsed_s"],
            bound=bound,
        )
        arena.close()
        print(
            json.dumps(
                {
                    "undisturbed": calm,
                    "chaos": wild,
                    "bound_s": round(bound, 1),
                    "lease": LEASE_ENV,
                    "games_per_match": games,
                    "kill_every_s": kill_every,
                    "bench_s": round(time.monotonic() - bench_started, 1),
                }
            ),
            file=sys.stderr,
        )
        print(
            f"chaos: {wild['matches']} matches, {wild['stored_once']} stored once, {wild['failed']} failed, "
            f"{wild['stuck']} stuck, finished in {wild['elapsed_s']:.0f} s (bound {bound:.0f} s)"
        )
    finally:
        if beat is not None:
            beat.stop()
        for s in servers:
            s.close()
        services.stop()


if __name__ == "__main__":
    main()
