"""The ladder's order figure (issue 37): how many sets the ladder plays until the true order of
a graded field is found, against a baseline ladder on the same games. Used by
``bench/ladder_bench.py`` (its docstring and docs/performance.md, "Ladders", give the method);
``python bench/ladder_order.py`` runs this part alone.

The field: :data:`LEVELS` bots, level ``k`` answering each decision as the ``heuristic``
sample bot with probability ``k / (LEVELS - 1)`` and otherwise as :class:`LoserBot` (passes
whenever it may, leads its strongest play of fewest cards, doubts every claim). Strength grows
with the level by construction; the pool checks it (:func:`pool_check`).

The pool: the outcome of a table is a duplicate set played by the arena's runner
(:func:`arena.runner.match.run_match` with :func:`arena.sources.base.duplicate_specs`) from a
seed of the table and a slot ``j < K``: slot ``j`` of a table is always the same real set (the
bots are seeded from it), played the first time a run draws it and kept (:class:`Pool`).
Both sides draw slots uniformly with replacement: the same games.

The ladder side: every tick (60 s of simulated time) :func:`arena.sources.ladder.form_tables`
with a :class:`arena.sources.ladder.LadderConfig` of the product's defaults (house entries
off: the field alone is ranked) seats the candidates (each entry as ``POST /entries`` enters
it: one set at a time, 30 an hour; a tick's sets end before the next), each table plays one
pool set, placed by :func:`arena.ladder_ratings.placement` and rated by one
:func:`arena.ladder_ratings.update`. The baseline: a uniform random table of ``seats`` bots
per step, ``seats`` games (a duplicate set's count) each from another slot of that table (other
deals: no duplicates) and one :func:`arena.ladder_ratings.update` per game, places by the
game's scores. A baseline "set" is that step.

Judge: a run has found the order when its table (``mu - 3 sigma``, the live table's order) is
the levels' order, strictly; ``sets N`` is the first checkpoint (about every 2.5 %) at which
at least 95 % of the runs have found it (``>H``: not within the horizon).
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import pickle
import random
import signal
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402
from arena import ladder_ratings  # noqa: E402
from arena.runner.match import run_match  # noqa: E402
from arena.seeds import derive_seed  # noqa: E402
from arena.sources.base import duplicate_specs  # noqa: E402
from arena.sources.ladder import Candidate, LadderConfig, form_tables, pair  # noqa: E402
from bots_sdk.bot import DOUBT, PASS, Bot, Request  # noqa: E402
from bots_sdk.samples import HeuristicBot, RandomBot  # noqa: E402

SEED = 20261237
LEVELS = 12
#: Rule-set options of the pool's sets: one deal a game (a Trump Millionaire game to 1 point, a
#: JDF match of one set of one game), so that a set is 2 or 4 deals.
OPTIONS: dict[str, dict[str, Any]] = {
    "million_doubt": {},
    "trump_millionaire": {"target_score": 1},
    "jdf": {"sets": 1, "games_per_set": 1},
}
#: Slots per table (K): Million Doubt has 66 tables of 2, the others 495 of 4.
SLOTS = {"million_doubt": 100, "trump_millionaire": 8, "jdf": 8}
#: The ladder's tick (ARENA_LADDER_TICK_S) and an entry's limits as POST /entries sets them.
TICK_S = 60
ENTRY_CONCURRENT, ENTRY_PER_HOUR = 1, 30


class LoserBot(RandomBot):
    """The weak end of the field: passes whenever it may, else leads or follows with its
    strongest play of the fewest cards; doubts every claim (Million Doubt); the random bot's
    choices otherwise."""

    name = "loser"

    def play(self, req: Request) -> dict:
        if req.can_pass:
            return PASS
        plays = req.plays()
        if not plays:
            return super().play(req)
        few = min(len(p["cards"]) for p in plays)
        return [p for p in plays if len(p["cards"]) == few][-1]

    def doubt(self, req: Request) -> dict:
        return DOUBT


class GradedBot(Bot):
    """Level ``level`` of :data:`LEVELS`: the heuristic's answer with probability
    ``level / (LEVELS - 1)``, else the loser's."""

    name = "graded"

    def __init__(self, level: int, seed: int):
        super().__init__()
        self.p = level / (LEVELS - 1)
        self.rng = random.Random(seed)
        self.strong = HeuristicBot(seed=derive_seed(seed, "heuristic"))
        self.weak = LoserBot(seed=derive_seed(seed, "loser"))

    def decide(self, request: Any) -> dict:
        return (self.strong if self.rng.random() < self.p else self.weak).decide(request)


#: A pool set: the level of each player (player order of the set), and per game each
#: player's score.
PoolSet = tuple[tuple[int, ...], list[list[float]]]


def play_set(ruleset: str, table: tuple[int, ...], slot: int) -> PoolSet:
    """Slot ``slot`` of ``table`` (levels, sorted): one duplicate set from its own seed, the
    players in an order drawn from it."""
    seed = derive_seed(SEED, "pool", ruleset, *table, slot)
    order = list(table)
    random.Random(seed).shuffle(order)
    players = [GradedBot(level, derive_seed(seed, "bot", p)) for p, level in enumerate(order)]
    log = run_match(players, ruleset, OPTIONS[ruleset], notices=False, game_specs=duplicate_specs(ruleset, seed))
    games = []
    for g in log["games"]:
        seat_of = {p: s for s, p in enumerate(g["seats"])}
        games.append([float(g["result"]["scores"][str(seat_of[p])]) for p in range(len(order))])
    return tuple(order), games


def _play_tables(ruleset: str, tables: list[tuple[int, ...]], slots: int) -> dict[tuple[tuple[int, ...], int], PoolSet]:
    return {(t, j): play_set(ruleset, t, j) for t in tables for j in range(slots)}


def _play_chunk(job: tuple[str, list[tuple[int, ...]], int]) -> dict[tuple[tuple[int, ...], int], PoolSet]:
    return _play_tables(*job)


def _plain_signals() -> None:
    """A child process dies of SIGTERM and ignores Ctrl-C (its parent stops it)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Pool:
    """The pool of a rule set: every slot of every table (:meth:`fill`), or slots played on
    first use and kept."""

    def __init__(self, ruleset: str, slots: int):
        self.ruleset, self.slots = ruleset, slots
        self.sets: dict[tuple[tuple[int, ...], int], PoolSet] = {}
        self.play_s = 0.0

    def fill(self, processes: int) -> None:
        """Play every slot of every table over ``processes`` processes (killed at once if
        this one is interrupted: ``multiprocessing.Pool`` terminates them on its way out)."""
        t = time.perf_counter()
        tables = list(itertools.combinations(range(LEVELS), engine.SEATS[self.ruleset]))
        chunks = [(self.ruleset, tables[i :: 4 * processes], self.slots) for i in range(4 * processes)]
        with mp.get_context("fork").Pool(processes, initializer=_plain_signals) as workers:
            for got in workers.imap_unordered(_play_chunk, chunks):
                self.sets.update(got)
        self.play_s += time.perf_counter() - t

    def load_or_fill(self, cache: str | None, processes: int = 2) -> None:
        """Take the pool from ``cache`` (a folder) if it holds it, else :meth:`fill` it and
        keep it there."""
        path = Path(cache) / f"pool-{self.ruleset}-{LEVELS}-{self.slots}.pickle" if cache else None
        if path is not None and path.exists():
            self.sets = pickle.loads(path.read_bytes())
            return
        self.fill(processes)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(pickle.dumps(self.sets))

    def get(self, table: Sequence[int], slot: int) -> PoolSet:
        key = (tuple(sorted(table)), slot)
        got = self.sets.get(key)
        if got is None:
            t = time.perf_counter()
            got = self.sets[key] = play_set(self.ruleset, key[0], slot)
            self.play_s += time.perf_counter() - t
        return got


def in_order(ratings: Sequence[tuple[float, float]]) -> bool:
    """The live table's order (``mu - 3 sigma``, best first) is the levels' (best = highest)."""
    c = [ladder_ratings.conservative(mu, sigma) for mu, sigma in ratings]
    return all(c[i] < c[i + 1] for i in range(len(c) - 1))


@dataclass
class LadderRun:
    """One simulated ladder (module docstring)."""

    pool: Pool
    seats: int
    cfg: LadderConfig
    rng: random.Random
    ratings: list[tuple[float, float]] = field(default_factory=list)
    rated: list[int] = field(default_factory=list)
    last: list[float | None] = field(default_factory=list)
    history: deque[tuple[float, tuple[int, ...]]] = field(default_factory=deque)
    #: Sets of each entry, and of each pair, in ``history`` (the last hour).
    hour: list[int] = field(default_factory=list)
    recent: dict[tuple[int, int], int] = field(default_factory=dict)
    met: dict[tuple[int, int], int] = field(default_factory=dict)
    sets: int = 0
    ticks: int = 0
    idle_ticks: int = 0

    def __post_init__(self) -> None:
        self.ratings = [(ladder_ratings.MU0, ladder_ratings.SIGMA0)] * LEVELS
        self.rated = [0] * LEVELS
        self.last = [None] * LEVELS
        self.hour = [0] * LEVELS

    def tick(self) -> None:
        now = self.ticks * TICK_S
        self.ticks += 1
        hour, recent = self.hour, self.recent
        while self.history and now - self.history[0][0] >= 3600:  # the last hour's sets only
            _, members = self.history.popleft()
            for b in members:
                hour[b] -= 1
            for a, b in itertools.combinations(members, 2):
                p = pair(a, b)
                recent[p] -= 1
                if not recent[p]:
                    del recent[p]
        last = self.last
        cands = [
            Candidate(
                entry_id=b,
                owner_id=1000 + b,
                mu=self.ratings[b][0],
                sigma=self.ratings[b][1],
                sets=self.rated[b],
                free=max(0, min(ENTRY_CONCURRENT, ENTRY_PER_HOUR - hour[b])),
                idle_s=None if last[b] is None else now - last[b],  # type: ignore[operator]
            )
            for b in range(LEVELS)
        ]
        tables = form_tables(cands, self.seats, self.cfg, recent=recent, met=self.met, rng=self.rng)
        if not tables:
            self.idle_ticks += 1
        for table in tables:
            order, games = self.pool.get(table, self.rng.randrange(self.pool.slots))
            scores = [sum(g[p] for g in games) for p in range(len(order))]
            places, _ = ladder_ratings.placement(scores, [{} for _ in games])
            up = ladder_ratings.update([self.ratings[b] for b in order], places)
            for b, r in zip(order, up.ratings, strict=True):
                self.ratings[b] = r
                self.rated[b] += 1
                self.last[b] = now
            for a, b in itertools.combinations(order, 2):
                p = pair(a, b)
                self.met[p] = self.met.get(p, 0) + 1
            self.history.append((now, tuple(order)))
            for b in order:
                hour[b] += 1
            for a, b in itertools.combinations(order, 2):
                p = pair(a, b)
                recent[p] = recent.get(p, 0) + 1
            self.sets += 1

    def advance(self, to: int) -> None:
        while self.sets < to:
            self.tick()


@dataclass
class BaselineRun:
    """The baseline ladder (module docstring)."""

    pool: Pool
    seats: int
    rng: random.Random
    ratings: list[tuple[float, float]] = field(default_factory=list)
    sets: int = 0

    def __post_init__(self) -> None:
        self.ratings = [(ladder_ratings.MU0, ladder_ratings.SIGMA0)] * LEVELS

    def step(self) -> None:
        table = sorted(self.rng.sample(range(LEVELS), self.seats))
        for slot in self.rng.sample(range(self.pool.slots), self.seats):
            order, games = self.pool.get(table, slot)
            g = games[self.rng.randrange(len(games))]
            places, _ = ladder_ratings.placement(g, [{}])
            up = ladder_ratings.update([self.ratings[b] for b in order], places)
            for b, r in zip(order, up.ratings, strict=True):
                self.ratings[b] = r
        self.sets += 1

    def advance(self, to: int) -> None:
        while self.sets < to:
            self.step()


class RandomSetsRun(BaselineRun):
    """Diagnosis (``--sides random_sets``): the ladder's unit and rating without its
    matchmaking: a uniform random table per step, one pool set, one update per set."""

    def step(self) -> None:
        table = sorted(self.rng.sample(range(LEVELS), self.seats))
        order, games = self.pool.get(table, self.rng.randrange(self.pool.slots))
        places, _ = ladder_ratings.placement([sum(g[p] for g in games) for p in range(len(order))], [{} for _ in games])
        up = ladder_ratings.update([self.ratings[b] for b in order], places)
        for b, r in zip(order, up.ratings, strict=True):
            self.ratings[b] = r
        self.sets += 1


def _serve(conn: Any, pool: Pool, side: str, seeds: list[int], cfg: dict[str, Any], tau: float | None) -> None:
    """A simulation process: owns the runs of ``seeds``; answers each checkpoint ``n`` with
    how many of them have found the order after ``n`` sets."""
    _plain_signals()
    if tau is not None:
        from openskill.models import PlackettLuce

        ladder_ratings.MODEL = PlackettLuce(tau=tau)
    seats = engine.SEATS[pool.ruleset]
    config = LadderConfig.from_dict(cfg)
    kinds = {"baseline": BaselineRun, "random_sets": RandomSetsRun}
    runs: list[Any] = [
        LadderRun(pool, seats, config, random.Random(s))
        if side == "ladder"
        else kinds[side](pool, seats, random.Random(s))
        for s in seeds
    ]
    while True:
        n = conn.recv()
        if n is None:
            break
        ok = 0
        for r in runs:
            r.advance(n)
            ok += in_order(r.ratings)
        extra = {
            "pool_sets": len(pool.sets),
            "pool_play_s": round(pool.play_s, 1),
            "idle_ticks": sum(getattr(r, "idle_ticks", 0) for r in runs),
            "ticks": sum(getattr(r, "ticks", 0) for r in runs),
        }
        conn.send((ok, extra))
    conn.close()


def checkpoints(start: int, horizon: int) -> list[int]:
    """Sets at which the runs are judged: every ``start`` sets up to 40 times ``start``, then
    about every 2.5 %."""
    out, n = [], start
    while n <= horizon:
        out.append(n)
        n = n + start if n < 40 * start else int(n * 1.025)
    return out


@dataclass
class Verdict:
    """Sets until the order is found in 95 % of the runs (None: not within ``horizon``), and
    the share found at each checkpoint."""

    sets: int | None
    horizon: int
    shares: list[tuple[int, float]]
    details: dict[str, Any]

    def text(self) -> str:
        return str(self.sets) if self.sets is not None else f">{self.horizon}"


def judge(
    pool: Pool,
    side: str,
    runs: int,
    horizon: int,
    *,
    processes: int = 2,
    cfg: dict[str, Any] | None = None,
    tau: float | None = None,
    step: int | None = None,
) -> Verdict:
    """Advance ``runs`` runs of ``side`` (``ladder`` or ``baseline``) checkpoint by checkpoint
    over ``processes`` processes until 95 % of them have found the order or ``horizon``."""
    cfg = {"fill_with_house_bots": False, **(cfg or {})}
    ruleset = pool.ruleset
    ctx = mp.get_context("fork")
    procs, conns = [], []
    for i in range(processes):
        here, there = ctx.Pipe()
        seeds = [derive_seed(SEED, side, ruleset, r) for r in range(i, runs, processes)]
        p = ctx.Process(target=_serve, args=(there, pool, side, seeds, cfg, tau), daemon=True)
        p.start()
        procs.append(p)
        conns.append(here)
    shares: list[tuple[int, float]] = []
    found = None
    extra: dict[str, Any] = {}
    finished = False
    t0 = time.perf_counter()
    try:
        for n in checkpoints(step or (LEVELS // engine.SEATS[ruleset]), horizon):
            for c in conns:
                c.send(n)
            got = [c.recv() for c in conns]
            share = sum(ok for ok, _ in got) / runs
            shares.append((n, round(share, 3)))
            extra = {k: sum(e[k] for _, e in got) for k in got[0][1]}
            if share >= 0.95:
                found = n
                break
        for c in conns:
            c.send(None)
        finished = True
    finally:
        for p in procs:
            p.join(10 if finished else 0)
            if p.is_alive():
                p.kill()
                p.join()
    extra["seconds"] = round(time.perf_counter() - t0, 1)
    return Verdict(found, horizon, shares, extra)


def pool_check(pool: Pool) -> dict[str, float]:
    """Each adjacent pair of levels over every pool set holding both: the share of sets the
    higher level placed above the lower (ties count half). Above 0.5 for each pair: the pool
    agrees with the levels' order."""
    above: dict[int, float] = {}
    seen: dict[int, int] = {}
    for order, games in pool.sets.values():
        totals = [sum(g[p] for g in games) for p in range(len(order))]
        for i, j in itertools.combinations(range(len(order)), 2):
            lo, hi = (i, j) if order[i] < order[j] else (j, i)
            if order[hi] - order[lo] != 1:
                continue
            k = order[lo]
            seen[k] = seen.get(k, 0) + 1
            above[k] = above.get(k, 0.0) + (
                1.0 if totals[hi] > totals[lo] else 0.5 if totals[hi] == totals[lo] else 0.0
            )
    return {f"{k + 1}>{k}": round(above[k] / seen[k], 2) for k in sorted(seen)}


def _stop(signum: int, frame: Any) -> None:
    """SIGTERM or Ctrl-C: unwind, so that :func:`judge` and :meth:`Pool.fill` stop their
    processes."""
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="the ladder order figure of bench/ladder_bench.py")
    ap.add_argument("--rulesets", nargs="+", default=list(engine.RULESETS))
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--horizon", type=int, default=10000)
    ap.add_argument("--tau", type=float, default=None, help="openskill tau instead of the product's")
    ap.add_argument("--config", default="{}", help="LadderConfig keys (JSON) over the product's defaults")
    ap.add_argument("--slots", type=int, default=None)
    ap.add_argument("--cache", default=None, help="a folder keeping the pools (pickle) between runs")
    ap.add_argument("--sides", nargs="+", default=["ladder", "baseline"])
    args = ap.parse_args(argv)
    import json

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)  # even when started in the background (SIGINT ignored)

    for ruleset in args.rulesets:
        got = {}
        pool = Pool(ruleset, args.slots or SLOTS[ruleset])
        pool.load_or_fill(args.cache)
        print(f"# {ruleset} pool: {len(pool.sets)} sets in {pool.play_s:.0f} s; {pool_check(pool)}", flush=True)
        for side in args.sides:
            v = judge(pool, side, args.runs, args.horizon, cfg=json.loads(args.config), tau=args.tau)
            got[side] = v
            print(f"# {ruleset} {side}: {v.text()} {v.details} {v.shares[-8:]}", flush=True)
        if "ladder" in got and "baseline" in got:
            print(f"ladder order {ruleset}: sets {got['ladder'].text()}, baseline {got['baseline'].text()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
