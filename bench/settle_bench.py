"""Error rates of "play until settled" (arena.sequential) by seeded simulation.

Prints one line per case::

    settle <case>: settled S, wrong leader W, rounds R (N tournaments)

S: the share of tournaments stopped "settled" before or at max_rounds; W: the share settled
with a leader that is not the true best (with equal top two, every settled one); R: the mean
rounds played. Cases: equal top two (S is the false "settled" rate, to compare with alpha),
and a leader ahead by 1, 2 and 3 times delta (S is the power within max_rounds), for
Million Doubt-like two-seat games (zero-sum: the winner scores k, the loser -k, k from 1 to 7,
or 11 for a burst one time in ten) and four-seat tables (normal scores, sd 20, zero-sum).
docs/ranking.md ("Play until settled") quotes the figures. Standard library only; about
a minute. Usage: ``python bench/settle_bench.py [--tournaments N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena import sequential as sq  # noqa: E402
from arena.status import StopReason  # noqa: E402

Round = Callable[[random.Random], list[list[tuple[int, float]]]]
MD_MEAN_POINTS = 4.7  # mean |score| of a simulated game: 0.9 * 4 + 0.1 * 11


def md_rounds(n: int, games: int, lead: float = 0.0) -> Round:
    """Round robin of ``n`` bots, ``games`` a pair; bot 1 is ``lead`` points per game ahead."""
    p_first = 0.5 + lead / (4 * MD_MEAN_POINTS)

    def play(rng: random.Random) -> list[list[tuple[int, float]]]:
        out = []
        for a, b in itertools.combinations(range(1, n + 1), 2):
            p = p_first if a == 1 else 0.5
            for _ in range(games):
                k = 11 if rng.random() < 0.1 else rng.randint(1, 7)
                s = k if rng.random() < p else -k
                out.append([(a, float(s)), (b, float(-s))])
        return out

    return play


def table_rounds(lead: float, games: int = 4, sd: float = 20.0) -> Round:
    """One four-seat table, ``games`` games a round; entrant 1 ``lead`` points ahead."""

    def play(rng: random.Random) -> list[list[tuple[int, float]]]:
        out = []
        for _ in range(games):
            xs = {e: (lead if e == 1 else 0.0) + rng.gauss(0, sd) for e in (1, 2, 3, 4)}
            mean = sum(xs.values()) / 4
            out.append([(e, x - mean) for e, x in xs.items()])
        return out

    return play


def simulate(play: Round, rule: sq.SettleRule, n: int, seed: int) -> tuple[float, float, float]:
    rng = random.Random(seed)
    settled = wrong = rounds = 0
    for _ in range(n):
        games: list[list[tuple[int, float]]] = []
        for r in range(1, rule.max_rounds + 1):
            games += play(rng)
            verdict = sq.evaluate(games, rule)
            reason = sq.decide(verdict, r, rule)
            if reason is not None:
                break
        rounds += r
        if reason is StopReason.SETTLED:
            settled += 1
            wrong += verdict.leader != 1
    return settled / n, wrong / n, rounds / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tournaments", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20261210)
    args = ap.parse_args()
    md, tm = 1.0, 10.0  # delta: points per game (the defaults of Million Doubt and a 100-point TM game)
    cases = [
        ("md 2 bots x10 games, equal, max 10", md_rounds(2, 10), sq.SettleRule(10, md)),
        ("md 2 bots x10 games, equal, max 30", md_rounds(2, 10), sq.SettleRule(30, md)),
        ("md 2 bots x2 games, equal, max 30", md_rounds(2, 2), sq.SettleRule(30, md)),
        ("md 4 bots x2 games, equal, max 10", md_rounds(4, 2), sq.SettleRule(10, md)),
        ("md 8 bots x2 games, equal, max 10", md_rounds(8, 2), sq.SettleRule(10, md)),
        ("table 4 x4 games, equal, max 20", table_rounds(0.0), sq.SettleRule(20, tm)),
        ("md 2 bots x10 games, equal, max 10, alpha 0.2", md_rounds(2, 10), sq.SettleRule(10, md, alpha=0.2)),
        ("md 2 bots x10 games, 1 delta apart, max 30", md_rounds(2, 10, md), sq.SettleRule(30, md)),
        ("md 2 bots x10 games, 2 delta apart, max 30", md_rounds(2, 10, 2 * md), sq.SettleRule(30, md)),
        ("md 2 bots x10 games, 3 delta apart, max 30", md_rounds(2, 10, 3 * md), sq.SettleRule(30, md)),
        (
            "md 2 bots x10 games, win rate 0.92 (heuristic vs random), max 10",
            md_rounds(2, 10, 7.9),
            sq.SettleRule(10, md),
        ),
        ("md 4 bots x2 games, leader 3 delta ahead, max 30", md_rounds(4, 2, 3 * md), sq.SettleRule(30, md)),
        ("table 4 x4 games, 1 delta ahead, max 30", table_rounds(tm), sq.SettleRule(30, tm)),
        ("table 4 x4 games, 3 delta ahead, max 30", table_rounds(3 * tm), sq.SettleRule(30, tm)),
    ]
    for name, play, rule in cases:
        settled, wrong, rounds = simulate(play, rule, args.tournaments, args.seed)
        print(
            f"settle {name}: settled {settled:.3f}, wrong leader {wrong:.3f}, rounds {rounds:.1f} "
            f"({args.tournaments} tournaments)",
            flush=True,
        )


if __name__ == "__main__":
    main()
