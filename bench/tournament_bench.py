"""Tournament benchmark (issue 15): thinking bots, the makespan against its lower bound, and
starting 128-bot tournaments.

    .venv/bin/python bench/tournament_bench.py [--think-ms 100] [--quick] [--pool P -c N]

Starts everything it needs and stops it afterwards: PostgreSQL and Redis (``infra/postgres.sh``,
``infra/redis.sh`` on free ports), one real worker started as ``arena worker`` with its
DEFAULT settings (pool and concurrency; ``--pool``/``-c`` override them for comparisons), and
8 sample bots served by the SDK (waitress) on 127.0.0.1 in this process, each thinking
``--think-ms`` milliseconds per decision. Tournaments go through the real API app.

Prints five lines:

* ``makespan/LB million_doubt: X`` and ``makespan/LB trump_millionaire: X``: a round robin of
  the 8 bots (Million Doubt: 28 matches of 2 games; Trump Millionaire: the schedule's tables,
  one deal each, ``target_score`` 1), time rules 60 s / +10 s / 60 s. Makespan: from the start
  request to the tournament finished. LB, from the arena's own timings (the stored results'
  ``timings``)::

      LB = max(longest match wall_s,
               max over bots of (the bot's summed elapsed_ms) / its cap (ARENA_BOT_MAX_CONCURRENCY),
               (summed elapsed_ms of every seat) / worker slots)

* ``start 128 million_doubt: N matches in X s`` and ``start 128 trump_millionaire: N matches in
  X s``: ``POST /start`` of a 128-bot tournament (bots stored directly as ``ready``; no worker
  consumes that broker database, so nothing is played): the answer's time. The details line
  (stderr) also gives the time to store the schedule and send every match
  (``arena.usecases.tournaments.send_tournament``, what the worker's ``arena.enqueue_tournament`` runs,
  here in this process).
* ``tournament page 8000 matches: X ms``: ``GET /ui/tournaments/{id}`` of the 128-bot Million
  Doubt tournament (8,128 matches), signed in as the organizer, median of 3.

``--quick``: bots think 20 ms and Million Doubt plays 2 games per pairing as before (the
whole bench in about 2 minutes instead of 5-8).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from orchestration_bench import Services, wait_finished  # noqa: E402

from bots_sdk.samples import SAMPLE_BOTS  # noqa: E402
from tests import children  # noqa: E402

BOTS = 8
FIELD = 128
TIME_RULES = {"initial": 60.0, "increment": 10.0, "cap": 60.0}


class DefaultWorker:
    """``arena worker`` as an operator starts it (its defaults: :func:`daifugo_arena.cli.worker.default_processes`
    processes of the thread pool), plus overrides if asked."""

    def __init__(
        self,
        broker: str,
        db: str,
        log_dir: Path,
        pool: str | None,
        concurrency: int | None,
        processes: int | None = None,
    ):
        import os

        from daifugo_arena.cli.worker import default_processes

        self.log = log_dir / f"worker-{uuid.uuid4().hex[:6]}.log"
        env = {
            **os.environ,
            "ARENA_BROKER_URL": broker,
            "ARENA_DATABASE_URL": db,
            "ARENA_ALLOW_PRIVATE_BOT_URLS": "1",
            "ARENA_CELERY_EAGER": "0",
            "PYTHONPATH": str(REPO),
        }
        name = f"tbench{uuid.uuid4().hex[:6]}"
        cmd = [
            sys.executable,
            "-m",
            "daifugo_arena.cli",
            "worker",
            "--loglevel",
            os.environ.get("TBENCH_LOGLEVEL", "WARNING"),
            "--hostname",
            f"{name}@127.0.0.1",
        ]
        if pool:
            cmd += ["--pool", pool]
        if concurrency:
            cmd += ["--concurrency", str(concurrency)]
        if processes:
            cmd += ["--processes", str(processes)]
        self.processes = processes or (default_processes() if pool in (None, "threads") else 1)
        with open(self.log, "wb") as fh:
            self.proc = children.spawn(cmd, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT)
        from arena.config import Settings
        from arena.queue import PING_TASK, QUEUE
        from worker.celery_app import make_app

        client = make_app(Settings.from_env({"ARENA_BROKER_URL": broker}))
        try:
            assert client.send_task(PING_TASK, queue=QUEUE).get(timeout=60) == "pong"
            mine = self._match_nodes(client, name)
        except BaseException:
            self.stop()
            raise
        finally:
            client.close()
        self.slots = sum(int(v.get("pool", {}).get("max-concurrency") or 1) for v in mine.values())
        self.pool = next(iter(mine.values())).get("pool", {}).get("implementation", pool or "?")
        self.pids = [int(v["pid"]) for v in mine.values()]

    def _match_nodes(self, client, name: str) -> dict:
        """``celery inspect stats`` of this worker's match processes, once all of them answer
        (an answer lists the nodes that answered within its timeout: ask until every one has)."""
        deadline = time.monotonic() + 120
        mine: dict = {}
        while len(mine) < self.processes and time.monotonic() < deadline:
            stats = client.control.inspect(timeout=2).stats() or {}
            mine = {n: v for n, v in stats.items() if is_match_node(n, name)}
        assert len(mine) == self.processes, f"{len(mine)} of {self.processes} worker processes answered: {sorted(mine)}"
        return mine

    def stop(self) -> None:
        children.stop(self.proc, 20)


def is_match_node(node: str, name: str) -> bool:
    """True if Celery node ``node`` is a match process of the ``arena worker`` started with
    ``--hostname name@HOST``: ``name@HOST`` (one process) or ``name-1@HOST``, ``name-2@HOST``...
    (daifugo_arena.cli.worker's numbering), not its check process ``name-checks@HOST`` nor its par process
    ``name-pars@HOST``, which play no match."""
    base = node.partition("@")[0]
    return base == name or (base.startswith(name + "-") and base[len(name) + 1 :].isdigit())


def lower_bound(stored, cap: int, slots: int) -> dict:
    """LB of the module docstring from the stored results (seconds)."""
    per_bot: dict[int, float] = {}
    total = 0.0
    longest = 0.0
    for m, res, _log in stored:
        longest = max(longest, res.timings["wall_s"])
        for seat in sorted(m.seats, key=lambda s: s.seat):
            ms = res.timings["elapsed_ms"][seat.seat]
            per_bot[seat.bot_id] = per_bot.get(seat.bot_id, 0.0) + ms / 1000
            total += ms / 1000
    terms = {"longest_match_s": longest, "busiest_bot_s": max(per_bot.values()) / cap, "all_thinking_s": total / slots}
    return {**{k: round(v, 2) for k, v in terms.items()}, "lb_s": round(max(terms.values()), 2)}


class Utilization:
    """Samples the bots' decisions in flight every 20 ms while a tournament plays: the
    share of the bots' capacity (``cap`` each) in use, per tenth of the makespan. Tells a
    steady state that leaves slots idle from a tail where matches run out."""

    def __init__(self, servers: list, cap: int, broker: str | None = None):
        import threading

        import redis

        from arena.runner.semaphore import KEY_PREFIX, endpoint_key

        self.servers, self.cap, self.samples = servers, cap, []
        #: per sample: (requests in flight at the bots, requests waiting for a slot)
        self.load: list[tuple[int, ...]] = []
        self._redis = redis.Redis.from_url(broker) if broker else None
        self._queues = [KEY_PREFIX + endpoint_key(s.url) + ":q" for s in servers]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.samples.append(sum(min(s.in_flight, self.cap) for s in self.servers) / (self.cap * len(self.servers)))
            if self._redis is not None:
                pipe = self._redis.pipeline(transaction=False)
                for q in self._queues:
                    pipe.zcard(q)
                for q in self._queues:
                    pipe.zcard(q[:-2])
                got = [int(n) for n in pipe.execute()]
                queued, held = got[: len(self._queues)], got[len(self._queues) :]
                flying = [s.in_flight for s in self.servers]
                # slots idle although requests wait for them: the hand-over's cost
                idle = sum(min(self.cap - f, q) for f, q in zip(flying, queued) if f < self.cap)
                # slots taken (holders) although their bot is not answering a decision
                held_idle = sum(max(0, h - f) for f, h in zip(flying, held))
                self.load.append((sum(flying), sum(queued), idle, sum(held), held_idle))

    def requests(self) -> dict:
        """Mean requests in flight at the bots and waiting for a slot (all bots together)."""
        if not self.load:
            return {}
        return {
            "in_flight_mean": round(statistics.mean(x[0] for x in self.load), 1),
            "waiting_mean": round(statistics.mean(x[1] for x in self.load), 1),
            "idle_slots_with_waiters_mean": round(statistics.mean(x[2] for x in self.load), 1),
            "held_mean": round(statistics.mean(x[3] for x in self.load), 1),
            "held_not_in_flight_mean": round(statistics.mean(x[4] for x in self.load), 1),
        }

    def stop(self) -> list[float]:
        self._stop.set()
        self._thread.join()
        n = len(self.samples)
        return [round(statistics.mean(self.samples[i * n // 10 : (i + 1) * n // 10] or [0]), 2) for i in range(10)]


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process and its children used so far (Linux /proc)."""
    import os

    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def play(
    arena,
    ruleset: str,
    ids: list[int],
    db: str,
    cap: int,
    slots: int,
    servers: list | None = None,
    broker: str | None = None,
    workers: list | None = None,
    **kw,
) -> dict:
    import os

    tid = arena.create(ruleset, ids, time_rules=TIME_RULES, **kw)
    pids = [pid for w in workers or [] for pid in w.pids]
    cpu0 = [cpu_s(p) for p in pids] + [cpu_s(os.getpid())]
    t0 = time.perf_counter()
    usage = Utilization(servers, cap, broker) if servers else None
    arena.start(tid)
    answered = time.perf_counter() - t0
    wait_finished(db, tid)
    makespan = time.perf_counter() - t0
    # share of one core each worker process used, then this process (the bots)
    cpu = [round((cpu_s(p) - c) / makespan, 2) for p, c in zip([*pids, os.getpid()], cpu0)]
    deciles = usage.stop() if usage else []
    stored = arena.stored(tid)
    lb = lower_bound(stored, cap, slots)
    waits = [w for _, res, _ in stored for w in res.timings.get("semaphore_max_wait_ms", [])]
    bypassed = sum(sum(res.timings["semaphore_bypassed"]) for _, res, _ in stored)
    # when the matches were claimed and finished and the tournament finished, seconds after its
    # started_at (set by the start, after the roll call); start_answered_s: POST /start's time
    from arena.db.models import Tournament

    with arena.sessions() as s:
        t_start, t_end = s.get(Tournament, tid).started_at, s.get(Tournament, tid).finished_at
    claims = sorted((m.started_at - t_start).total_seconds() for m, _, _ in stored)
    ends = sorted((m.finished_at - t_start).total_seconds() for m, _, _ in stored if m.finished_at)

    def pct(xs, q):
        return round(xs[min(len(xs) - 1, int(q * len(xs)))], 2) if xs else None

    ramp = {f"claim_{k}th_s": claims[k - 1] for k in (8, 16, 32, 48) if k <= len(claims)}
    timeline = {
        "first_claim_s": pct(claims, 0),
        **{k: round(v, 2) for k, v in ramp.items()},
        f"claim_{slots}th_s": pct(claims, (slots - 1) / max(1, len(claims))),
        "last_claim_s": pct(claims, 1),
        "first_end_s": pct(ends, 0),
        "last_end_s": pct(ends, 1),
        "finished_s": round((t_end - t_start).total_seconds(), 2) if t_end else None,
        "start_answered_s": round(answered, 2),
    }
    return {
        "matches": len(stored),
        "makespan_s": round(makespan, 2),
        **lb,
        "ratio": round(makespan / lb["lb_s"], 3),
        "max_slot_wait_ms": max(waits or [0]),
        "bypassed": bypassed,
        "bot_capacity_used_by_tenth": deciles,
        "requests": usage.requests() if usage else {},
        "timeline": timeline,
        "cpu_cores": {"workers": cpu[:-1], "bench_and_bots": cpu[-1]},
    }


def start_field(arena, broker_idle: str, db: str) -> tuple[dict, int]:
    """Start 128-bot tournaments on a broker database no worker reads; returns the figures
    and the Million Doubt tournament id (for the page)."""
    from api import create_app
    from arena.accounts import create_account
    from arena.config import Settings
    from arena.db.models import Bot
    from arena.db.session import make_engine, make_sessionmaker
    from arena.queue import CeleryDispatcher
    from arena.usecases.tournaments import send_tournament

    settings = Settings(
        data_dir=arena.settings.data_dir, database_url=db, broker_url=broker_idle, allow_private_bot_urls=True
    )
    app = create_app(settings, engine=arena.engine)
    client = app.test_client()
    with arena.sessions() as s:
        owner, _ = create_account(s, "field-" + uuid.uuid4().hex[:6], "contestant")
        bots = [
            Bot(
                owner_id=owner.id,
                name=f"f{i}",
                url=f"http://127.0.0.1:9/{i}",
                secret="x",
                rulesets=["million_doubt", "trump_millionaire"],
                status="ready",
            )
            for i in range(FIELD)
        ]
        s.add_all(bots)
        s.commit()
        ids = [b.id for b in bots]
    out: dict = {}
    md_id = 0
    for ruleset, gpp in (("million_doubt", 2), ("trump_millionaire", 1)):
        r = client.post(
            "/api/v1/tournaments",
            headers=arena.org,
            json={
                "ruleset": ruleset,
                "participants": ids,
                "games_per_pairing": gpp,
                "seed": 15,
                "separate_owners": False,
            },
        )
        assert r.status_code == 201, r.json
        tid = r.json["id"]
        t0 = time.perf_counter()
        # its bots never answer (nothing plays here): the start's roll call finds them offline,
        # and the organizer starts anyway, as one would (POST .../start?if_offline=start)
        r = client.post(f"/api/v1/tournaments/{tid}/start?if_offline=start", headers=arena.org)
        answered = time.perf_counter() - t0
        assert r.status_code == 202, r.json
        t1 = time.perf_counter()
        sent = send_tournament(  # what the worker's enqueue task does
            make_sessionmaker(make_engine(db)), tid, CeleryDispatcher(settings.broker_url)
        )
        queued = time.perf_counter() - t1
        out[ruleset] = {"matches": sent, "answer_s": round(answered, 3), "stored_and_sent_s": round(queued, 2)}
        if ruleset == "million_doubt":
            md_id = tid
    return out, md_id


def page_ms(arena, tournament_id: int) -> float:
    client = arena.client
    token = arena.org["Authorization"].split()[1]
    r = client.post("/ui/login", data={"token": token, "next": f"/ui/tournaments/{tournament_id}"})
    assert r.status_code in (302, 303), r.status_code
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        r = client.get(f"/ui/tournaments/{tournament_id}")
        r.get_data()
        times.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == 200, r.status_code
    return statistics.median(times)


def main() -> None:
    import tempfile

    from arena.config import DEFAULT_BOT_MAX_CONCURRENCY
    from tests.worker.conftest import Arena, SwitchBot

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--think-ms", type=int, default=None, help="bot thinking time per decision (default 100; 20 with --quick)"
    )
    ap.add_argument("--quick", action="store_true", help="bots think 20 ms: about 2 minutes")
    ap.add_argument("--pool", default=None, help="worker pool (default: arena worker's)")
    ap.add_argument("-c", "--concurrency", type=int, default=None, help="worker slots (default: arena worker's)")
    ap.add_argument("--processes", type=int, default=None, help="processes of the arena worker (default: its own)")
    ap.add_argument("--workers", type=int, default=1, help="arena worker commands (default 1)")
    ap.add_argument("--skip-play", action="store_true", help="only the 128-bot starts and the page")
    ap.add_argument(
        "--only",
        choices=["million_doubt", "trump_millionaire"],
        default=None,
        help="play one rule set's round robin, then stop (no 128-bot starts)",
    )
    args = ap.parse_args()
    think_ms = args.think_ms if args.think_ms is not None else (20 if args.quick else 100)

    started = time.perf_counter()
    services = Services()
    tmp = Path(tempfile.mkdtemp(prefix="arena-tbench-"))
    servers: list = []
    worker = None
    extra: list[DefaultWorker] = []
    try:
        db, broker = services.stack("tbench")
        arena = Arena(db, broker, tmp_path=tmp)
        details: dict = {"think_ms": think_ms}
        lines = []
        if not args.skip_play:
            servers += [SwitchBot(SAMPLE_BOTS["greedy"](), sleep_s=think_ms / 1000) for _ in range(BOTS)]
            both = ["million_doubt", "trump_millionaire"]
            md_ids = tm_ids = [arena.register(s, both, f"b{i}") for i, s in enumerate(servers)]
            for s in servers:  # checked at full speed; they think from now on
                s.mode = "slow"
            worker = DefaultWorker(broker, db, tmp, args.pool, args.concurrency, args.processes)
            for _ in range(args.workers - 1):
                extra.append(DefaultWorker(broker, db, tmp, args.pool, args.concurrency, args.processes))
            worker.slots += sum(w.slots for w in extra)
            cap = DEFAULT_BOT_MAX_CONCURRENCY
            details["worker"] = {
                "pool": worker.pool,
                "commands": args.workers,
                "processes": worker.processes * args.workers,
                "slots": worker.slots,
                "cap": cap,
            }
            for ruleset in ("million_doubt", "trump_millionaire"):
                if args.only not in (None, ruleset):
                    continue
                kw: dict = (
                    {"games_per_pairing": 2}
                    if ruleset == "million_doubt"
                    else {"games_per_pairing": 1, "options": {"target_score": 1}}
                )
                details[ruleset] = got = play(
                    arena,
                    ruleset,
                    md_ids if ruleset == "million_doubt" else tm_ids,
                    db,
                    cap,
                    worker.slots,
                    servers=servers,
                    broker=broker,
                    workers=[worker, *extra],
                    **kw,
                )
                lines.append(f"makespan/LB {ruleset}: {got['ratio']:.2f}")
            for w in extra:
                w.stop()
            worker.stop()
            worker = None
        if args.only:
            print(json.dumps(details), file=sys.stderr)
            print("\n".join(lines))
            return
        idle = broker.rsplit("/", 1)[0] + "/9"
        starts, md_field = start_field(arena, idle, db)
        details["start_128"] = starts
        for ruleset in ("million_doubt", "trump_millionaire"):
            s = starts[ruleset]
            lines.append(f"start 128 {ruleset}: {s['matches']} matches in {s['answer_s']:.2f} s")
        details["page_matches"] = starts["million_doubt"]["matches"]
        lines.append(f"tournament page 8000 matches: {page_ms(arena, md_field):.0f} ms")
        arena.close()
        details["bench_s"] = round(time.perf_counter() - started, 1)
        print(json.dumps(details), file=sys.stderr)
        for line in lines:
            print(line)
    finally:
        for w in [worker, *extra]:
            if w is not None:
                w.stop()
        for s in servers:
            s.close()
        services.stop()


if __name__ == "__main__":
    main()
