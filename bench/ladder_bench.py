"""Ladder benchmark (issue 37, point 9): the order a ladder finds, its tick, the rating of a set,
its page with a million stored games, and its throughput with real workers.

    .venv/bin/python bench/ladder_bench.py [--short] [--skip-order] [--skip-services]

Starts what it needs and stops all of it on every exit path (an error, Ctrl-C, SIGTERM):
PostgreSQL and Redis (``infra/postgres.sh``, ``infra/redis.sh`` on free ports), one
``arena worker`` (2 match processes, its defaults on this machine) and one ``arena beat``,
SDK bots served over HTTP on 127.0.0.1 in this process. Prints, in this order:

* ``ladder order <ruleset>: sets N, baseline M`` for each rule set (``bench/ladder_order.py``
  holds this part and its definitions): a field of 12 bots of graded strength (level ``k``
  answers as the ``heuristic`` sample bot with probability ``k/11``, else as a bot that
  passes whenever it may); a pool of real duplicate sets of every table of the field
  played by the arena's runner (Million Doubt 100 sets per pair, the others 8 per table of
  four); 100 runs of the ladder (the product's ``form_tables`` and ``LadderConfig``
  defaults, house entries off; each table one pool set placed and rated by
  ``ladder_ratings.placement`` and ``update``) and 100 of the baseline (a uniform random
  table per step playing as many games as a duplicate set, each from another deal, one
  openskill update per game). N (M): the first checkpoint at which 95 of the 100 runs show
  the field in its levels' order on the live table (``mu - 3 sigma``), strictly; ``>H``
  when not within the horizon of H sets. A baseline set is one step: the same number of
  games as a duplicate set.
* ``ladder tick 1000 bots: X ms``: a Trump Millionaire ladder of 1,000 entries (100 HTTP
  bots, healthy; 900 that dial out, 100 of them connected to a gateway: presence in Redis),
  so 200 can play; the median of 5 runs of :func:`arena.usecases.ladders.tick_ladder`
  (reads, matchmaking, the sets stored), the sets of each tick finished before the next.
* ``ladder rate set: X ms median``: :func:`arena.lifecycle.ladder_sets.rate_set` of the ticks'
  sets (results stored directly), with a million games stored (the details line also gives
  the median before they were loaded: the figure is flat if both agree).
* ``ladder page 1000000 games: X ms``: ``GET /api/v1/ladders/<id>`` of that ladder once
  250,000 stored sets of 4 games (1,000,000 games: matches, seats, results, sets and rating
  history) are bulk-loaded with COPY, median of 5 through the app (``GET /ui/ladders/<id>``
  too when that page exists; the details say which).
* ``ladder sets/min with 2 workers: N, lower bound L``: an open Million Doubt ladder of 12
  HTTP bots thinking ``--think-ms`` (100) per decision, each entered with 4 sets at once and
  3,600 an hour (the ladder's config allows it), ticked by the real ``arena beat`` every
  ``--tick-s`` (1) seconds, played by ``arena worker``. N: sets stored per minute over
  ``--window-s`` seconds once the first sets are stored. L: what the bots' thinking and the
  workers' slots allow, ``min(worker slots, entries x 4 / 2) x 60 / (decisions per set x
  think)`` with the mean decisions of the sets stored in the window.

``--short`` (CI): a small form of every part (the lines' shapes, not their figures).
Details (JSON) go to stderr, with the wall and CPU seconds of each part (``pool_spent``,
``spent`` of each side, ``services_spent``: :class:`Clock`). docs/performance.md, "Ladders",
gives the figures and what they mean.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import ladder_order  # noqa: E402
from orchestration_bench import Services  # noqa: E402

import engine  # noqa: E402
from tests import children  # noqa: E402

BIG_RS = "trump_millionaire"
FLOW_RS = "million_doubt"
ENTRIES, HTTP_BOTS, CONNECTED = 1000, 100, 100
GAMES = 1_000_000


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


class Clock:
    """Wall and CPU seconds (this process and its children that ended) since the last lap:
    where a run's time went, whatever the machine's load (the CPU figure does not stretch
    with it; the wall figure of a quiet machine is about the CPU over the 2 cores where a
    part keeps both busy)."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), self._cpu()

    @staticmethod
    def _cpu() -> float:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    def lap(self) -> dict[str, float]:
        wall, cpu = time.perf_counter(), self._cpu()
        out = {"wall_s": round(wall - self.wall, 1), "cpu_s": round(cpu - self.cpu, 1)}
        self.wall, self.cpu = wall, cpu
        return out


# -- the 1,000-entry ladder: tick, rating, page ------------------------------------------------
class BigLadder:
    """A Trump Millionaire ladder of :data:`ENTRIES` entries written straight to PostgreSQL."""

    def __init__(self, db: str, broker: str, data_dir: Path, entries: int = ENTRIES):
        import redis

        from arena.accounts import create_account
        from arena.db.models import Account, Bot, LadderEntry, utcnow
        from arena.db.session import make_engine, make_sessionmaker
        from arena.relay import conns_key
        from arena.usecases import ladders

        self.db, self.broker, self.data_dir = db, broker, data_dir
        self.engine = make_engine(db)
        self.sessions = make_sessionmaker(self.engine)
        self.redis = redis.Redis.from_url(broker)
        now = utcnow()
        rng = random.Random(37)
        with self.sessions() as s:
            org, self.org_token = create_account(s, "lb-org-" + uuid.uuid4().hex[:6], "organizer")
            ladder = ladders.create_ladder(
                s, org, name="big", ruleset=BIG_RS, options={"target_score": 1}, time_rules={}, open_ladder=True
            )
            self.ladder_id, self.tournament_id = ladder.id, ladder.tournament_id
            owners = [
                Account(name=f"lb-{i}-{uuid.uuid4().hex[:6]}", token_hash=uuid.uuid4().hex) for i in range(entries)
            ]
            s.add_all(owners)
            s.flush()
            http = max(1, entries * HTTP_BOTS // ENTRIES)
            bots = [
                Bot(
                    owner_id=o.id,
                    name=f"b{i}",
                    transport="http" if i < http else "connect",
                    url=f"http://127.0.0.1:9/{i}" if i < http else None,
                    secret="x",
                    rulesets=[BIG_RS],
                    status="ready",
                )
                for i, o in enumerate(owners)
            ]
            s.add_all(bots)
            s.flush()
            self.entries = []
            for i, b in enumerate(bots):
                e = LadderEntry(
                    ladder_id=self.ladder_id,
                    bot_id=b.id,
                    owner_id=b.owner_id,
                    status="active",
                    mu=rng.gauss(25, 4),
                    sigma=rng.uniform(1.5, 8.3),
                    sets=rng.randrange(0, 300),
                    probe_ok=True,
                    probed_at=now if i < http else None,
                    last_set_at=now - timedelta(seconds=rng.uniform(0, 7200)),
                    max_concurrent=1,
                    max_sets_per_hour=30,
                )
                s.add(e)
                self.entries.append(e)
            s.flush()
            self.entry_ids = [e.id for e in self.entries]
            self.bot_of = {e.id: e.bot_id for e in self.entries}
            connect = [b.id for b in bots[http:]]
            s.commit()
        online = connect[: max(1, entries * CONNECTED // ENTRIES)]
        pipe = self.redis.pipeline(transaction=False)
        for b in online:
            pipe.zadd(conns_key(b), {f"gw-bench|{uuid.uuid4().hex}|{time.time():.3f}": time.time() + 3600})
        pipe.execute()
        self.online_bots = online

    def online(self):
        from arena.usecases import ladders

        return ladders.redis_online(self.redis)

    def tick(self, number: int) -> tuple[float, list[int], int]:
        """One :func:`tick_ladder` (timed, ms), the sets it formed, its candidates."""
        from arena.db.models import Ladder, utcnow
        from arena.usecases import ladders

        with self.sessions() as s:
            t = time.perf_counter()
            ladder = s.get(Ladder, self.ladder_id)
            report = ladders.tick_ladder(
                s, ladder, number, now=utcnow(), online=self.online(), rng=random.Random(number), probe_s=300
            )
            ms = (time.perf_counter() - t) * 1000
        return ms, report.formed, report.candidates

    def store(self, match_ids: list[int]) -> None:
        """Results of the given sets, stored directly (the runner's shapes, no pars), their
        matches finished."""
        from sqlalchemy import update

        from arena.db.models import Match, MatchResult, utcnow

        rng = random.Random(len(match_ids))
        with self.sessions() as s:
            for mid in match_ids:
                scores = [float(rng.randint(-20, 20)) for _ in range(4)]
                s.add(
                    MatchResult(
                        match_id=mid,
                        scores=scores,
                        places=[1 + sum(o > x for o in scores) for x in scores],
                        faults=[0, 0, 0, 0],
                        games=[{"scores": [1, 0, -1, -2], "places": [1, 2, 3, 4]} for _ in range(4)],
                        timings={"answered": [12, 11, 12, 13], "decisions": [12, 11, 12, 13]},
                        par_status=None,
                    )
                )
            s.execute(update(Match).where(Match.id.in_(match_ids)).values(status="finished", finished_at=utcnow()))
            s.commit()

    def rate(self, match_ids: list[int]) -> list[float]:
        """:func:`rate_set` of each set, in a session of its own as a worker does (ms each)."""
        from arena.lifecycle import ladder_sets

        out = []
        for mid in match_ids:
            with self.sessions() as s:
                t = time.perf_counter()
                got = ladder_sets.rate_set(s, mid)
                out.append((time.perf_counter() - t) * 1000)
                assert got is not None and got.outcome == "rated", got
        return out

    def ticks_and_rates(self, ticks: int, first: int) -> dict[str, Any]:
        tick_ms, rate_ms, formed, cands = [], [], 0, 0
        for k in range(ticks):
            ms, ids, cands = self.tick(first + k)
            tick_ms.append(ms)
            formed += len(ids)
            self.store(ids)
            rate_ms += self.rate(ids)
        return {
            "tick_ms": [round(x, 1) for x in tick_ms],
            "tick_median_ms": round(statistics.median(tick_ms), 1),
            "candidates": cands,
            "sets_formed": formed,
            "rate_median_ms": round(statistics.median(rate_ms), 2) if rate_ms else None,
            "rate_p90_ms": round(sorted(rate_ms)[int(0.9 * len(rate_ms))], 2) if rate_ms else None,
            "rated": len(rate_ms),
        }

    def stored_sets(self) -> int:
        from sqlalchemy import func, select

        from arena.db.models import LadderSet

        with self.sessions() as s:
            return int(
                s.scalar(select(func.count()).select_from(LadderSet).where(LadderSet.ladder_id == self.ladder_id))
            )

    def bulk_load(self, games: int) -> dict[str, Any]:
        """Store ``games // 4`` rated sets of 4 games among neighbouring entries with COPY:
        matches, seats, results, ladder sets, rating history and the pairs' sums."""
        import itertools

        from sqlalchemy import text

        t0 = time.perf_counter()
        sets = games // 4
        rng = random.Random(4)
        ids = list(self.entry_ids)
        bot_of = self.bot_of
        raw = self.engine.raw_connection()
        try:
            conn = raw.driver_connection
            with conn.cursor() as cur:
                cur.execute("SELECT coalesce(max(id), 0) FROM matches")
                first_id = cur.fetchone()[0] + 1
                cur.execute(
                    "SELECT coalesce(max(index), -1) FROM matches WHERE tournament_id = %s", (self.tournament_id,)
                )
                first_index = cur.fetchone()[0] + 1
            # a set every 2.4 s (a week for 250,000), the last ones in the last hour: as many
            # as a busy hour of the ladder holds (each entry in about 6 of them)
            recent = min(sets, 6 * len(ids) // 4)
            older = time.time() - 3660 - (sets - recent) * 2.4

            def when(k: int) -> float:
                return (
                    older + k * 2.4 if k < sets - recent else time.time() - 3600 + (k - sets + recent) * 3600 / recent
                )

            tables = []
            for _ in range(sets):
                base = rng.randrange(len(ids))
                picked = sorted({ids[(base + rng.randrange(20)) % len(ids)] for _ in range(12)})[:4]
                while len(picked) < 4:
                    picked = sorted({*picked, ids[rng.randrange(len(ids))]})
                rng.shuffle(picked)
                tables.append(picked)
            stamp = lambda k: time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(when(k))) + "+00"  # noqa: E731
            game = json.dumps([{"scores": [1, 0, -1, -2], "places": [1, 2, 3, 4]}] * 4)
            timings = json.dumps({"answered": [12, 11, 12, 13]})
            pairs: dict[tuple[int, int], list[float]] = {}
            per_entry: dict[int, int] = {}
            with conn.cursor() as cur:
                with cur.copy(
                    'COPY matches (id, tournament_id, index, "table", seed, status, attempts, created_at, '
                    "queued_at, started_at, finished_at) FROM STDIN"
                ) as cp:
                    for k in range(sets):
                        ts = stamp(k)
                        cp.write_row(
                            (first_id + k, self.tournament_id, first_index + k, 0, k, "finished", 1, ts, ts, ts, ts)
                        )
                with cur.copy("COPY match_seats (match_id, seat, bot_id) FROM STDIN") as cp:
                    for k, tb in enumerate(tables):
                        for seat, e in enumerate(tb):
                            cp.write_row((first_id + k, seat, bot_of[e]))
                with cur.copy(
                    "COPY match_results (match_id, scores, places, faults, games, timings, created_at) FROM STDIN"
                ) as cp:
                    for k in range(sets):
                        cp.write_row(
                            (first_id + k, "[3, 1, -1, -3]", "[1, 2, 3, 4]", "[0, 0, 0, 0]", game, timings, stamp(k))
                        )
                with cur.copy(
                    "COPY ladder_sets (match_id, ladder_id, kind, entries, tick, salt, commitment, rating, placement, "
                    "adjusted, created_at, rated_at) FROM STDIN"
                ) as cp:
                    for k, tb in enumerate(tables):
                        ts = stamp(k)
                        cp.write_row(
                            (
                                first_id + k,
                                self.ladder_id,
                                "rated",
                                json.dumps(tb),
                                k,
                                "00" * 16,
                                "0" * 64,
                                "rated",
                                "[1, 2, 3, 4]",
                                False,
                                ts,
                                ts,
                            )
                        )
                with cur.copy("COPY ladder_rating_history (entry_id, match_id, mu, sigma, sets, at) FROM STDIN") as cp:
                    for k, tb in enumerate(tables):
                        ts = stamp(k)
                        for e in tb:
                            per_entry[e] = per_entry.get(e, 0) + 1
                            cp.write_row((e, first_id + k, 25.0, 3.0, per_entry[e], ts))
                        for a, b in itertools.combinations(sorted(tb), 2):
                            p = pairs.setdefault((a, b), [0, 0.0])
                            p[0] += 1
                            p[1] += 0.5
                cur.execute("SELECT a, b FROM ladder_pairs WHERE ladder_id = %s", (self.ladder_id,))
                existing = {(a, b) for a, b in cur.fetchall()}
                with cur.copy(
                    "COPY ladder_pairs (ladder_id, a, b, sets, a_wins, res_a_sum, res_a_sumsq, res_b_sum, res_b_sumsq, "
                    "last_met_at) FROM STDIN"
                ) as cp:
                    for (a, b), (n, w) in pairs.items():
                        if (a, b) not in existing:
                            cp.write_row((self.ladder_id, a, b, n, w, 0.0, 0.0, 0.0, 0.0, stamp(sets - 1)))
                cur.execute("SELECT setval(pg_get_serial_sequence('matches', 'id'), %s)", (first_id + sets,))
            conn.commit()
        finally:
            raw.close()
        with self.engine.begin() as c:
            for e, n in per_entry.items():
                c.execute(
                    text("UPDATE ladder_entries SET sets = sets + :n, games = games + 4 * :n WHERE id = :e"),
                    {"n": n, "e": e},
                )
            c.execute(text("ANALYZE"))
        return {"sets": sets, "games": sets * 4, "pairs": len(pairs), "load_s": round(time.perf_counter() - t0, 1)}

    def page_figures(self, reads: int = 5) -> dict[str, Any]:
        """Median ms of the API answer (and of the page, when it exists), through the app."""
        from api import create_app
        from arena.config import Settings

        settings = Settings(
            data_dir=self.data_dir,
            database_url=self.db,
            broker_url=self.broker,
            allow_private_bot_urls=True,
            rate_limits=False,
        )
        app = create_app(settings, engine=self.engine)
        client = app.test_client()
        out: dict[str, Any] = {}
        for name, path in (("api", f"/api/v1/ladders/{self.ladder_id}"), ("page", f"/ui/ladders/{self.ladder_id}")):
            first = client.get(path)
            first.get_data()
            if first.status_code == 404 and name == "page":
                out["page"] = "not built on this branch (404)"
                continue
            assert first.status_code == 200, (path, first.status_code)
            if name == "api":
                assert len(first.json["rows"]) >= ENTRIES // 10, len(first.json["rows"])
                out["api_rows"] = len(first.json["rows"])
            times = []
            for _ in range(reads):
                t = time.perf_counter()
                r = client.get(path)
                r.get_data()
                times.append((time.perf_counter() - t) * 1000)
                assert r.status_code == 200
            out[f"{name}_ms"] = [round(x, 1) for x in times]
            out[f"{name}_median_ms"] = round(statistics.median(times), 1)
        return out

    def close(self) -> None:
        from arena.lifecycle import ladders as states
        from arena.relay import conns_key

        with self.sessions() as s:
            states.close_ladder(s, self.ladder_id)
        self.redis.delete(*[conns_key(b) for b in self.online_bots])
        self.redis.close()
        self.engine.dispose()


# -- throughput: real beat, workers, Redis, PostgreSQL, HTTP bots --------------------------------
class Beat:
    """``arena beat`` with a ladder tick every ``tick_s`` seconds."""

    def __init__(self, db: str, broker: str, data_dir: Path, tick_s: int):
        self.log = data_dir / "beat.log"
        env = {
            **os.environ,
            "ARENA_BROKER_URL": broker,
            "ARENA_DATABASE_URL": db,
            "ARENA_DATA_DIR": str(data_dir),
            "ARENA_LADDER_TICK_S": str(tick_s),
            "ARENA_ALLOW_PRIVATE_BOT_URLS": "1",
            "PYTHONPATH": str(REPO),
        }
        with open(self.log, "wb") as fh:
            self.proc = children.spawn(
                [
                    sys.executable,
                    "-m",
                    "daifugo_arena.cli",
                    "beat",
                    "--schedule",
                    str(data_dir / "beat-schedule"),
                    "--loglevel",
                    "INFO",
                ],
                cwd=REPO,
                env=env,
                stdout=fh,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        children.stop(self.proc, 20)


def register(arena: Any, server: Any, name: str) -> tuple[int, dict[str, str]]:
    """A contestant of its own with ``server`` registered and checked (in-process); returns
    the bot id and the owner's headers."""
    r = arena.client.post("/api/v1/accounts", json={"name": f"{name}-{uuid.uuid4().hex[:6]}"})
    assert r.status_code == 201, r.json
    owner = {"Authorization": f"Bearer {r.json['token']}"}
    r = arena.client.post("/api/v1/bots", json={"name": name, "url": server.url, "rulesets": [FLOW_RS]}, headers=owner)
    assert r.status_code == 201, r.json
    bot_id = r.json["id"]
    server.set_secret(r.json["secret"])
    r = arena.eager_client.post(f"/api/v1/bots/{bot_id}/check", headers=owner)
    assert r.status_code == 202, r.json
    assert arena.get(f"/bots/{bot_id}")["status"] == "ready"
    return bot_id, owner


def throughput(
    db: str, broker: str, tmp: Path, *, bots: int, think_ms: int, tick_s: int, window_s: float, stop: list
) -> dict[str, Any]:
    """Sets stored per minute by the real beat and workers, and the lower bound L."""
    from sqlalchemy import func, select
    from tournament_bench import DefaultWorker

    from arena.db.models import LadderSet, Match, MatchResult
    from bots_sdk.samples import SAMPLE_BOTS
    from tests.worker.conftest import Arena, SwitchBot

    concurrent, seats = 4, engine.SEATS[FLOW_RS]
    arena = Arena(db, broker, tmp_path=tmp)
    stop.append(arena.close)
    servers = [SwitchBot(SAMPLE_BOTS["greedy"](), sleep_s=think_ms / 1000) for _ in range(bots)]
    stop.extend(s.close for s in servers)
    owners = [register(arena, s, f"flow{i}") for i, s in enumerate(servers)]
    for s in servers:
        s.mode = "slow"  # checked at full speed; they think from now on
    r = arena.client.post(
        "/api/v1/ladders",
        headers=arena.org,
        json={
            "name": "flow",
            "ruleset": FLOW_RS,
            "open": True,
            "config": {"fill_with_house_bots": False, "max_sets_per_hour": 3600, "max_concurrent": concurrent},
        },
    )
    assert r.status_code == 201, r.json
    ladder_id, tid = r.json["id"], r.json["tournament_id"]
    for bot_id, owner in owners:
        r = arena.client.post(
            f"/api/v1/ladders/{ladder_id}/entries",
            headers=owner,
            json={"bot_id": bot_id, "max_concurrent": concurrent, "max_sets_per_hour": 3600},
        )
        assert r.status_code == 201, r.json
    worker = DefaultWorker(broker, db, tmp, None, None, 2)
    stop.append(worker.stop)
    beat = Beat(db, broker, tmp, tick_s)
    stop.append(beat.stop)

    def stored() -> list[tuple[Any, Any]]:
        with arena.sessions() as s:
            return list(
                s.execute(
                    select(Match.finished_at, MatchResult.timings)
                    .join(MatchResult, MatchResult.match_id == Match.id)
                    .where(Match.tournament_id == tid)
                ).all()
            )

    def spans() -> list[tuple[float, float, float]]:
        """(queued, started, finished) of every set started, epoch seconds (finished: now if
        it plays)."""
        with arena.sessions() as s:
            rows = s.execute(
                select(Match.queued_at, Match.started_at, Match.finished_at).where(
                    Match.tournament_id == tid, Match.started_at.is_not(None)
                )
            ).all()
        now = time.time()
        return [(q.timestamp(), st.timestamp(), f.timestamp() if f else now) for q, st, f in rows]

    deadline = time.monotonic() + 120
    while not stored():  # warm-up: the first set stored
        assert time.monotonic() < deadline, "no ladder set stored within 120 s: " + beat.log.read_text()[-2000:]
        time.sleep(0.2)
    t_start = time.time()
    time.sleep(window_s)
    t_end = time.time()
    rows = [(f, tm) for f, tm in stored() if f is not None and t_start <= f.timestamp() < t_end]
    with arena.sessions() as s:
        formed = s.scalar(select(func.count()).select_from(LadderSet).where(LadderSet.ladder_id == ladder_id))
    n = len(rows) * 60 / (t_end - t_start)
    # where the time went: sets playing at once (their walls clipped to the window) against
    # the most allowed, and a set's wall against its bots' thinking
    window = [(q, a, b) for q, a, b in spans() if b > t_start and a < t_end]
    playing = sum(min(b, t_end) - max(a, t_start) for _, a, b in window) / (t_end - t_start)
    walls = [b - a for _, a, b in window if t_start <= b < t_end]
    waits = [a - q for q, a, _ in window if q and t_start <= a < t_end]
    decisions = [sum(tm.get("decisions") or tm.get("answered") or []) for _, tm in rows]
    mean_decisions = statistics.mean(decisions) if decisions else float("nan")
    slots = worker.slots
    at_once = min(slots, bots * concurrent // seats)
    lower = at_once * 60 / (mean_decisions * think_ms / 1000) if decisions else float("nan")
    return {
        "bots": bots,
        "think_ms": think_ms,
        "tick_s": tick_s,
        "window_s": round(t_end - t_start, 1),
        "sets_in_window": len(rows),
        "sets_formed": formed,
        "worker_slots": slots,
        "sets_at_once": at_once,
        "decisions_per_set": round(mean_decisions, 1),
        "sets_per_min": round(n, 1),
        "lower_bound": round(lower, 1),
        "ratio": round(n / lower, 3) if decisions else None,
        "sets_playing_mean": round(playing, 1),
        "set_wall_s_mean": round(statistics.mean(walls), 2) if walls else None,
        "thinking_share_of_wall": round(mean_decisions * think_ms / 1000 / statistics.mean(walls), 3)
        if walls
        else None,
        "formed_to_claimed_s_mean": round(statistics.mean(waits), 2) if waits else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", action="store_true", help="a small form of every part (CI)")
    ap.add_argument("--skip-order", action="store_true")
    ap.add_argument("--skip-services", action="store_true")
    ap.add_argument("--rulesets", nargs="+", default=list(engine.RULESETS))
    ap.add_argument("--runs", type=int, default=100, help="runs of each side of the order figure")
    ap.add_argument("--horizon", type=int, default=10000, help="most sets a run plays (order figure)")
    ap.add_argument("--think-ms", type=int, default=100)
    ap.add_argument("--tick-s", type=int, default=1, help="ARENA_LADDER_TICK_S of the throughput part")
    ap.add_argument("--window-s", type=float, default=60.0)
    ap.add_argument("--flow-bots", type=int, default=12)
    ap.add_argument("--pool-cache", default=None, help="a folder keeping the order pools (played if absent)")
    args = ap.parse_args(argv)
    if args.short:
        args.runs, args.horizon, args.window_s, args.flow_bots = 20, 60, 10.0, 4
        args.rulesets = ["million_doubt"] if args.rulesets == list(engine.RULESETS) else args.rulesets
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)  # even when started in the background (SIGINT ignored)
    started = time.perf_counter()
    details: dict[str, Any] = {"load_average": [round(x, 1) for x in os.getloadavg()]}
    lines: list[str] = []

    def emit(line: str) -> None:
        lines.append(line)
        print(line, flush=True)

    if not args.skip_order:
        for ruleset in args.rulesets:
            clock = Clock()
            pool = ladder_order.Pool(ruleset, 2 if args.short else ladder_order.SLOTS[ruleset])
            pool.load_or_fill(args.pool_cache)
            got = {
                "pool_sets": len(pool.sets),
                "pool_s": round(pool.play_s, 1),
                "pool_check": ladder_order.pool_check(pool),
                "pool_spent": clock.lap(),
            }
            verdicts = {}
            for side in ("ladder", "baseline"):  # both sides on the one pool (forked, not copied)
                verdicts[side] = v = ladder_order.judge(pool, side, args.runs, args.horizon)
                got[side] = {"sets": v.sets, **v.details, "last_shares": v.shares[-6:], "spent": clock.lap()}
            details[f"order_{ruleset}"] = got
            print(json.dumps({ruleset: got}), file=sys.stderr, flush=True)
            emit(f"ladder order {ruleset}: sets {verdicts['ladder'].text()}, baseline {verdicts['baseline'].text()}")
    if not args.skip_services:
        services = Services()
        stop: list = []
        tmp = Path(tempfile.mkdtemp(prefix="arena-lbench-"))
        clock, spent = Clock(), {}
        details["services_spent"] = spent  # wall and CPU of each part (not the servers' CPU)
        try:
            db, broker = services.stack("lbench")
            spent["stack"] = clock.lap()
            big = BigLadder(db, broker, tmp, entries=100 if args.short else ENTRIES)
            stop.append(big.engine.dispose)
            small = big.ticks_and_rates(2 if args.short else 5, 1)
            small["stored_sets"] = big.stored_sets()
            details["tick_and_rate_before_load"] = small
            emit(f"ladder tick 1000 bots: {small['tick_median_ms']:.0f} ms")
            spent["tick_and_rate_before_load"] = clock.lap()
            details["bulk_load"] = big.bulk_load(4000 if args.short else GAMES)
            spent["bulk_load"] = clock.lap()
            large = big.ticks_and_rates(2 if args.short else 5, 100)
            large["stored_sets"] = big.stored_sets()
            details["tick_and_rate_after_load"] = large
            emit(f"ladder rate set: {large['rate_median_ms']:.1f} ms median")
            page = big.page_figures()
            details["page"] = page
            emit(f"ladder page 1000000 games: {page['api_median_ms']:.0f} ms")
            big.close()
            spent["tick_rate_page_after_load"] = clock.lap()
            print(
                json.dumps({k: details[k] for k in details if not k.startswith("order_")}), file=sys.stderr, flush=True
            )
            flow = throughput(
                db,
                broker,
                tmp,
                bots=args.flow_bots,
                think_ms=args.think_ms,
                tick_s=args.tick_s,
                window_s=args.window_s,
                stop=stop,
            )
            details["throughput"] = flow
            spent["throughput"] = clock.lap()
            emit(f"ladder sets/min with 2 workers: {flow['sets_per_min']:.0f}, lower bound {flow['lower_bound']:.0f}")
        finally:
            for fn in reversed(stop):
                try:
                    fn()
                except Exception as exc:  # noqa: BLE001 - stop the rest whatever happens
                    print(f"stopping: {type(exc).__name__}: {exc}", file=sys.stderr)
            services.stop()
    details["bench_s"] = round(time.perf_counter() - started, 1)
    details["load_average_end"] = [round(x, 1) for x in os.getloadavg()]
    print(json.dumps(details), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
