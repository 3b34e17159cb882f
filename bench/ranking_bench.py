"""How many games it takes to rank bots of known strength, raw and luck-adjusted (issue 28).

Prints, for each rule set::

    games to rank <ruleset>: raw N, adjusted M
    identical bots <ruleset>: adjusted means differ by D, within the 95% interval: yes|no

Method (docs/ranking.md, "The bench"):

1. **A pool of seeded games, played once.** Four bots of known strength order (``--bots``, the
   weakest first; defaults per rule set in :data:`BOTS`) play ``--rounds`` round-robin rounds:
   Million Doubt, every pair of bots one match of 2 games (seats swapped), 12 games a round;
   Trump Millionaire and JDF, the four bots at one table in the 4 seat rotations, 4 games a
   round. Every game is dealt afresh from its own seed (``derive_seed(SEED, "pool", ruleset,
   round, game)``), as in a tournament. Games go through :func:`arena.runner.match.run_match` with
   in-process sample bots (``search<N>``: the search bot with a count budget of N rollouts a
   decision and no clock, so reproducible), split over ``--workers`` processes; each game's
   par (:func:`arena.par.game_par`, ``--rollouts``) is computed where it was played.
2. **Tournaments drawn from the pool.** A tournament of L rounds draws L whole rounds from the
   pool with replacement (a bootstrap of rounds: every bot sits in every seat equally often in
   each); it finds the true order when the bots' mean scores per game are in the strength
   order, strictly. For each L of a growing sequence ``--tournaments`` (4,000) tournaments are drawn
   (the same draws for raw and adjusted scores); the games to rank are the games of the
   shortest L from which the order is found in at least 95% of the tournaments (``>`` when
   the pool's rounds do not suffice). Each bot's adjusted scores are first shifted by its
   mean par over the pool (:func:`centred`), so that raw and adjusted scores have the same
   means in the pool and only their spreads are compared.
3. **Identical bots.** ``--identical-rounds`` rounds of the same bot (``--identical``) in every
   seat, its copies seeded apart: D is the difference between the adjusted means per game of
   copy 0 and copy 1 over all those rounds, with the normal 95% interval of the per-round
   differences; "yes" when the interval holds 0.

The pool keeps each game's luck unweighted (:func:`arena.par.game_par` with weight 1); the
adjusted scores subtract the rule set's weight (:data:`arena.par.WEIGHTS`, or ``--weight``)
times it, as the arena's stored pars do. ``--calibrate`` instead plays a **calibration
pool**, the same bots and rounds dealt from other seeds (salt ``"calibration"``), and prints
the par's optimal weight, ``par weight <ruleset>: W (se S, 95% interval A to B)``
(:func:`calibration`): how :data:`arena.par.WEIGHTS` were chosen.

``--oracle R`` also replays every deal of the pool R times with the same bots seeded afresh and
prints the same figures for the **matchup oracle**, a par that knows the mean score of those
very bots on that very deal (centred per place in the round): the most a par of the deal could
take out, whatever its baseline. ``--cache FILE`` keeps the pools (JSON) so that the
tournaments can be drawn again without playing (same arguments).

Usage: ``python bench/ranking_bench.py [--rulesets R ...] [--rounds N] [--identical-rounds N]
[--rollouts K] [--workers N] [--tournaments N] [--tm-target N] [--jdf-sets N] [--baseline B]
[--oracle R] [--cache FILE] [--weight W] [--calibrate]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402
from arena import par  # noqa: E402
from arena.runner.match import run_match  # noqa: E402
from arena.seeds import derive_seed  # noqa: E402
from bots_sdk.samples import SAMPLE_BOTS, SearchBot  # noqa: E402

SEED = 20261207
#: Bots per rule set, weakest first (their order measured on large pools: docs/ranking.md);
#: a name after ``+`` fills a seat and is not ranked (Trump Millionaire: ``greedy`` and
#: ``heuristic`` are about as strong there, so one of them only fills the fourth seat).
BOTS = {
    "million_doubt": ["random", "greedy", "heuristic", "search16"],
    "trump_millionaire": ["random", "heuristic", "search16", "+greedy"],
    "jdf": ["random", "greedy", "heuristic", "search16"],
}


def make_bot(name: str, seed: int) -> Any:
    """A sample bot by name; ``search<N>``: the search bot with N rollouts a decision, no clock."""
    if name.startswith("search") and name[6:].isdigit():
        return SearchBot(seed=seed, max_rollouts=int(name[6:]), budget_ms=1e9, clock=lambda: 0.0)
    return SAMPLE_BOTS[name](seed=seed)


def round_games(ruleset: str, bots: Sequence[str]) -> list[list[int]]:
    """The games of one round: per game, the bot index of each seat."""
    if engine.get_ruleset(ruleset).seats == 2:
        out = []
        for a, b in itertools.combinations(range(len(bots)), 2):
            out += [[a, b], [b, a]]
        return out
    n = len(bots)
    return [[(s + j) % n for s in range(n)] for j in range(n)]


def _play(ruleset: str, options: dict, bots: list[str], seats: list[int], seed: int, bot_salt: str) -> dict[str, Any]:
    """One game seeded ``seed``, the bots seeded from it and ``bot_salt``: its game record."""
    players = [make_bot(bots[b].lstrip("+"), derive_seed(seed, bot_salt, s)) for s, b in enumerate(seats)]
    spec = [{"seed": seed, "seats": list(range(len(seats)))}]
    return run_match(players, ruleset, options, notices=False, game_specs=spec)["games"][0]


def play_round(
    ruleset: str,
    options: dict,
    bots: list[str],
    rnd: int,
    rollouts: int,
    salt: str,
    baseline: str = par.BASELINE,
    oracle: int = 0,
) -> list[dict[str, Any]]:
    """One round of the pool: per game ``{"seats": [bot index], "scores": [...], "par": [...]}``
    (per seat), and with ``oracle`` the mean scores of that many replays of the same deal by the
    same bots seeded afresh (``"oracle"``)."""
    out = []
    for j, seats in enumerate(round_games(ruleset, bots)):
        seed = derive_seed(SEED, salt, ruleset, rnd, j)
        gm = _play(ruleset, options, bots, seats, seed, "bot")
        scores = [float(gm["result"]["scores"][str(s)]) for s in range(len(seats))]
        p = par.game_par(
            ruleset,
            options,
            seed,
            len(seats),
            rollouts=rollouts,
            actions=gm["engine_log"]["actions"],
            baseline=baseline,
        )
        out.append({"seats": seats, "scores": scores, "par": p})
        if oracle:
            again = [_play(ruleset, options, bots, seats, seed, f"replay{k}") for k in range(oracle)]
            out[-1]["oracle"] = [
                sum(float(g["result"]["scores"][str(s)]) for g in again) / oracle for s in range(len(seats))
            ]
    return out


def oracle_pars(pool: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """The pool with each game's par replaced by the **matchup oracle**: the mean score of the
    replays of its deal by the same bots (the most any par of the deal alone could know, the
    bots included), minus the mean of that over the pool's games of the same place in the
    round (the same bots in the same seats), so that it has mean zero like a par."""
    slots = len(pool[0])
    n = len(pool[0][0]["seats"])
    mean = [[sum(r[j]["oracle"][s] for r in pool) / len(pool) for s in range(n)] for j in range(slots)]
    return [[{**g, "par": [g["oracle"][s] - mean[j][s] for s in range(n)]} for j, g in enumerate(r)] for r in pool]


def per_round(
    games: list[dict[str, Any]], nbots: int, weight: float = 1.0
) -> tuple[list[float], list[float], list[int]]:
    """Per bot: raw score sum, adjusted score sum (score minus ``weight`` times the pool's
    unweighted par), games, over one round."""
    raw, adj, count = [0.0] * nbots, [0.0] * nbots, [0] * nbots
    for g in games:
        for s, b in enumerate(g["seats"]):
            raw[b] += g["scores"][s]
            adj[b] += g["scores"][s] - weight * g["par"][s]
            count[b] += 1
    return raw, adj, count


def _slope(pairs: list[tuple[float, float]]) -> tuple[float, float, float]:
    """Sums over centred ``(y, p)`` pairs: sum y*p, sum p*p, sum y*y."""
    return sum(y * p for y, p in pairs), sum(p * p for _, p in pairs), sum(y * y for y, _ in pairs)


def calibration(pool: list[list[dict[str, Any]]], nbots: int, draws: int = 1000) -> dict[str, Any]:
    """The control-variate weight of the par estimated on ``pool`` (its pars unweighted):
    ``w* = Cov(score, par) / Var(par)`` over every seat of every game, each bot's scores and
    pars centred on the bot's own means (the weight that minimises the summed variance of the
    bots' adjusted scores), with a bootstrap of rounds (``draws``) for its 95% interval; also
    the weight per bot and the correlation of score and par per bot."""

    def moments(rounds: list[list[dict[str, Any]]]) -> list[tuple[float, float, float, float, float, int]]:
        acc = [[0.0, 0.0, 0.0, 0.0, 0.0, 0] for _ in range(nbots)]  # sum y, p, yp, pp, yy, n
        for r in rounds:
            for g in r:
                for s, b in enumerate(g["seats"]):
                    y, p = g["scores"][s], g["par"][s]
                    a = acc[b]
                    a[0] += y
                    a[1] += p
                    a[2] += y * p
                    a[3] += p * p
                    a[4] += y * y
                    a[5] += 1
        return [tuple(a) for a in acc]  # type: ignore[misc]

    def per_round_moments() -> list[list[tuple[float, float, float, float, float, int]]]:
        return [moments([r]) for r in pool]

    def weight_of(m: list[tuple[float, float, float, float, float, int]]) -> tuple[float, list[float], list[float]]:
        cov_t = var_t = 0.0
        per_bot, corr = [], []
        for sy, sp, syp, spp, syy, n in m:
            if n < 2:
                per_bot.append(float("nan"))
                corr.append(float("nan"))
                continue
            cov = syp - sy * sp / n
            var = spp - sp * sp / n
            vy = syy - sy * sy / n
            cov_t += cov
            var_t += var
            per_bot.append(cov / var if var else float("nan"))
            corr.append(cov / math.sqrt(var * vy) if var and vy else float("nan"))
        return (cov_t / var_t if var_t else 0.0), per_bot, corr

    rows = per_round_moments()

    def total(idx: Sequence[int]) -> list[tuple[float, float, float, float, float, int]]:
        out = [[0.0, 0.0, 0.0, 0.0, 0.0, 0] for _ in range(nbots)]
        for i in idx:
            for b in range(nbots):
                for k in range(6):
                    out[b][k] += rows[i][b][k]
        return [tuple(a) for a in out]  # type: ignore[misc]

    w, per_bot, corr = weight_of(total(range(len(rows))))
    rng = random.Random(SEED)
    boot = sorted(weight_of(total([rng.randrange(len(rows)) for _ in rows]))[0] for _ in range(draws))
    lo, hi = boot[int(0.025 * draws)], boot[int(0.975 * draws) - 1]
    mean = sum(boot) / draws
    se = math.sqrt(sum((x - mean) ** 2 for x in boot) / (draws - 1))
    return {"weight": w, "low": lo, "high": hi, "se": se, "per_bot": per_bot, "corr": corr}


def centred(
    rounds: list[tuple[list[float], list[float], list[int]]],
) -> list[tuple[list[float], list[float], list[int]]]:
    """The rounds with each bot's adjusted scores shifted by its mean par over the pool: both
    scores then have the pool's raw means, so the tournaments drawn compare their spreads only
    (the par has mean zero; over a finite pool it does not quite, and the order found would
    reward or punish that luck of the pool instead of the variance the par takes out)."""
    nb = len(rounds[0][0])
    games = [sum(r[2][b] for r in rounds) for b in range(nb)]
    off = [(sum(r[1][b] for r in rounds) - sum(r[0][b] for r in rounds)) / games[b] for b in range(nb)]
    return [(raw, [adj[b] - off[b] * cnt[b] for b in range(nb)], cnt) for raw, adj, cnt in rounds]


def success(
    rounds: list[tuple[list[float], list[float], list[int]]], length: int, draws: int, seed: int, nb: int
) -> tuple[float, float]:
    """Shares of ``draws`` tournaments of ``length`` rounds (drawn with replacement) whose raw
    and adjusted means of the first ``nb`` bots (the ranked ones) are in the order of the bot
    indices (strictly increasing)."""
    rng = random.Random(seed)
    ok_raw = ok_adj = 0
    for _ in range(draws):
        raw, adj, cnt = [0.0] * nb, [0.0] * nb, [0] * nb
        for _ in range(length):
            r = rounds[rng.randrange(len(rounds))]
            for b in range(nb):
                raw[b] += r[0][b]
                adj[b] += r[1][b]
                cnt[b] += r[2][b]
        mr = [raw[b] / cnt[b] for b in range(nb)]
        ma = [adj[b] / cnt[b] for b in range(nb)]
        ok_raw += all(mr[b] < mr[b + 1] for b in range(nb - 1))
        ok_adj += all(ma[b] < ma[b + 1] for b in range(nb - 1))
    return ok_raw / draws, ok_adj / draws


def lengths(limit: int) -> list[int]:
    """A growing sequence of tournament lengths (rounds) up to ``limit``: every length up to
    40 rounds, then steps of about 5%."""
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n = n + 1 if n < 40 else max(n + 1, int(n * 1.05))
    return out


def games_to_rank(rounds: list, games_per_round: int, draws: int, ranked: int) -> tuple[str, str]:
    """(raw, adjusted) games needed for the true order in 95% of tournaments (module docstring)."""
    found: list[int | None] = [None, None]
    for L in lengths(len(rounds)):
        shares = success(rounds, L, draws, L, ranked)
        for i in range(2):
            if found[i] is None and shares[i] >= 0.95:
                found[i] = L
        if None not in found:
            break
    return tuple(f"{f * games_per_round}" if f else f">{len(rounds) * games_per_round}" for f in found)  # type: ignore[return-value]


def identical(rounds: list[tuple[list[float], list[float], list[int]]]) -> tuple[float, float, bool]:
    """Adjusted mean per game of copy 0 minus copy 1, the half-width of its 95% interval from
    the per-round differences, and whether the interval holds 0."""
    diffs = [r[1][0] / r[2][0] - r[1][1] / r[2][1] for r in rounds]
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = 1.96 * sd / math.sqrt(n)
    total_adj = [sum(r[1][b] for r in rounds) / sum(r[2][b] for r in rounds) for b in (0, 1)]
    d = total_adj[0] - total_adj[1]
    return d, half, abs(d) <= half


def pair_line(rounds: list, a: int, b: int) -> str:
    """The per-round difference of two bots' mean scores per game: mean, sd, raw and adjusted."""
    out = []
    for i in (0, 1):
        d = [r[i][b] / r[2][b] - r[i][a] / r[2][a] for r in rounds]
        m = sum(d) / len(d)
        out.append((m, math.sqrt(sum((x - m) ** 2 for x in d) / (len(d) - 1))))
    ratio = (out[1][1] / out[0][1]) ** 2 if out[0][1] else float("nan")
    return (
        f"difference per round raw {out[0][0]:.2f} (sd {out[0][1]:.2f}), adjusted {out[1][0]:.2f}"
        f" (sd {out[1][1]:.2f}), variance ratio {ratio:.2f}"
    )


def build_pool(
    executor: ProcessPoolExecutor,
    ruleset: str,
    options: dict,
    bots: list[str],
    rounds: int,
    rollouts: int,
    salt: str,
    baseline: str,
    oracle: int = 0,
) -> list[list[dict[str, Any]]]:
    jobs = [
        executor.submit(play_round, ruleset, options, bots, r, rollouts, salt, baseline, oracle) for r in range(rounds)
    ]
    return [j.result() for j in jobs]


def calibrate(
    executor: ProcessPoolExecutor, cache: dict[str, Any], args: Any, ruleset: str, opts: dict, bots: list[str]
) -> None:
    """Play (or take from the cache) the calibration pool of ``ruleset``: the bench's bots and
    rounds, seeds salted ``"calibration"`` (none of them a seed of the pool ranked); print the
    par's optimal weight (:func:`calibration`)."""
    key = json.dumps(["calibration", ruleset, opts, bots, args.rounds, args.rollouts, args.baseline])
    t = time.perf_counter()
    if key not in cache:
        cache[key] = build_pool(executor, ruleset, opts, bots, args.rounds, args.rollouts, "calibration", args.baseline)
        if args.cache:
            args.cache.write_text(json.dumps(cache))
    pool = cache[key]
    c = calibration(pool, len(bots))
    print(
        f"# calibration {ruleset} {opts}: {len(pool)} rounds of {len(pool[0])} games, bots {bots},"
        f" rollouts {args.rollouts}, baseline {args.baseline} ({time.perf_counter() - t:.0f} s)"
    )
    print(
        "#   per bot: "
        + ", ".join(f"{b} w {w:.2f} corr {r:.2f}" for b, w, r in zip(bots, c["per_bot"], c["corr"], strict=True))
    )
    print(
        f"par weight {ruleset}: {c['weight']:.3f} (se {c['se']:.3f}, 95% interval {c['low']:.3f} to {c['high']:.3f})",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rulesets", nargs="+", default=list(engine.RULESETS))
    ap.add_argument("--rounds", type=int, default=200, help="rounds in each rule set's pool")
    ap.add_argument("--identical-rounds", type=int, default=100)
    ap.add_argument("--identical", default="heuristic", help="the bot of the identical-bots pool")
    ap.add_argument("--rollouts", type=int, default=16, help="par rollouts (ARENA_PAR_ROLLOUTS)")
    ap.add_argument("--baseline", default=par.BASELINE, choices=par.BASELINES, help="the par's baseline")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--tournaments", type=int, default=4000, help="tournaments drawn per length")
    ap.add_argument("--tm-target", type=int, default=100, help="Trump Millionaire target_score")
    ap.add_argument("--jdf-sets", type=int, default=3, help="JDF sets")
    ap.add_argument("--bots", default=None, help="comma-separated bots, weakest first (all rule sets)")
    ap.add_argument("--cache", type=Path, default=None, help="JSON file keeping the pools")
    ap.add_argument(
        "--oracle", type=int, default=0, help="also replay each deal N times with the same bots: the matchup oracle"
    )
    ap.add_argument(
        "--weight", type=float, default=None, help="the par's weight (default: the rule set's, arena.par.WEIGHTS)"
    )
    ap.add_argument(
        "--calibrate",
        action="store_true",
        help="play a calibration pool (other seeds) and print the par's optimal weight per rule set",
    )
    args = ap.parse_args(argv)
    cache: dict[str, Any] = json.loads(args.cache.read_text()) if args.cache and args.cache.exists() else {}
    options = {
        "million_doubt": {},
        "trump_millionaire": {"target_score": args.tm_target},
        "jdf": {"sets": args.jdf_sets},
    }
    with ProcessPoolExecutor(max_workers=args.workers) as ex:
        for ruleset in args.rulesets:
            bots = args.bots.split(",") if args.bots else BOTS[ruleset]
            opts = options[ruleset]
            key = json.dumps(
                [ruleset, opts, bots, args.rounds, args.rollouts, args.identical, args.identical_rounds, args.baseline]
                + ([args.oracle] if args.oracle else [])
            )
            t = time.perf_counter()
            if args.calibrate:
                calibrate(ex, cache, args, ruleset, opts, bots)
                continue
            if key not in cache:
                n = engine.get_ruleset(ruleset).seats
                cache[key] = {
                    "pool": build_pool(
                        ex, ruleset, opts, bots, args.rounds, args.rollouts, "pool", args.baseline, args.oracle
                    ),
                    "identical": build_pool(
                        ex,
                        ruleset,
                        opts,
                        [args.identical] * (n if n > 2 else 2),
                        args.identical_rounds,
                        args.rollouts,
                        "identical",
                        args.baseline,
                    ),
                }
                if args.cache:
                    args.cache.write_text(json.dumps(cache))
            weight = par.weight_of(ruleset) if args.weight is None else args.weight
            pool = [per_round(r, len(bots), weight) for r in cache[key]["pool"]]
            gpr = len(cache[key]["pool"][0])
            means_raw = [sum(r[0][b] for r in pool) / sum(r[2][b] for r in pool) for b in range(len(bots))]
            means_adj = [sum(r[1][b] for r in pool) / sum(r[2][b] for r in pool) for b in range(len(bots))]
            print(
                f"# {ruleset} {opts}: {len(pool)} rounds of {gpr} games, bots {bots}, rollouts {args.rollouts}"
                f", baseline {args.baseline}, weight {weight} ({time.perf_counter() - t:.0f} s)",
                flush=True,
            )
            print(
                f"#   mean per game raw {[round(m, 2) for m in means_raw]}, adjusted {[round(m, 2) for m in means_adj]}"
            )
            ranked = sum(1 for b in bots if not b.startswith("+"))
            for b in range(ranked - 1):
                print(f"#   {bots[b]} < {bots[b + 1]}: " + pair_line(pool, b, b + 1))
            raw, adj = games_to_rank(centred(pool), gpr, args.tournaments, ranked)
            print(f"games to rank {ruleset}: raw {raw}, adjusted {adj}", flush=True)
            if args.oracle:
                best = [per_round(r, len(bots)) for r in oracle_pars(cache[key]["pool"])]
                for b in range(ranked - 1):
                    print(f"#   oracle {bots[b]} < {bots[b + 1]}: " + pair_line(best, b, b + 1))
                raw, adj = games_to_rank(centred(best), gpr, args.tournaments, ranked)
                print(f"#   games to rank with the matchup oracle ({args.oracle} replays): raw {raw}, adjusted {adj}")
            nid = len(cache[key]["identical"][0][0]["seats"])
            ident = [per_round(r, nid, weight) for r in cache[key]["identical"]]
            d, half, ok = identical(ident)
            verdict = "yes" if ok else "no"
            print(f"identical bots {ruleset}: adjusted means differ by {d:.3f}, within the 95% interval: {verdict}")
            print(f"#   (95% interval of the difference: +-{half:.3f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
