"""The cost of ratings and standings with one rating update per game (issue 28).

    python bench/ratings_bench.py [--bots 8] [--matches 120] [--games 50] [--seats 2]

Stores a finished tournament of ``--matches`` matches of ``--games`` games each between
``--bots`` bots (``--seats`` per table; every game with a par) into a fresh SQLite database,
then times :func:`arena.ratings.rebuild_ratings` (what the worker runs when a tournament is
over: every rated game of the rule set, one openskill update each) and a first, uncached
read of the standings (:func:`arena.standings.tournament_report`: folds every result, with
the shared-game sums of every pair). Prints::

    ratings rebuild: 6000 games (120 matches) in 0.41 s, 68 us a game
    standings, first read: 6000 games in 0.29 s; cached read: 0.004 s

Times vary with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from arena.accounts import create_account  # noqa: E402
from arena.db.migrate import upgrade  # noqa: E402
from arena.db.models import Bot, Match, MatchResult, MatchSeat, Tournament, utcnow  # noqa: E402
from arena.db.session import make_engine, make_sessionmaker  # noqa: E402
from arena.ratings import rebuild_ratings  # noqa: E402
from arena.standings import tournament_report


def _game(rng: random.Random, seats: int) -> dict:
    raw = [rng.gauss(0.0, 5.0) for _ in range(seats)]
    mean = sum(raw) / seats
    scores = [round(x - mean, 3) for x in raw]
    par = [round(0.6 * x, 3) for x in scores]
    return {"scores": scores, "places": [1 + sum(o > x for o in scores) for x in scores], "par": par}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bots", type=int, default=8)
    ap.add_argument("--matches", type=int, default=120)
    ap.add_argument("--games", type=int, default=50)
    ap.add_argument("--seats", type=int, choices=(2, 4), default=2)
    args = ap.parse_args()
    ruleset = "million_doubt" if args.seats == 2 else "jdf"
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        upgrade(url)
        engine = make_engine(url)
        sessions = make_sessionmaker(engine)
        with sessions() as s:
            org, _ = create_account(s, "org", "organizer")
            bots = []
            for i in range(args.bots):
                b = Bot(owner_id=org.id, name=f"b{i}", url="http://127.0.0.1:9/", rulesets=[ruleset], secret="s")
                s.add(b)
                s.flush()
                bots.append(b.id)
            t = Tournament(
                name="bench",
                organizer_id=org.id,
                ruleset=ruleset,
                options={},
                time_rules={},
                games_per_pairing=args.games,
                seed=1,
                max_faults=3,
                status="finished",
                started_at=utcnow(),
            )
            s.add(t)
            s.flush()
            for index in range(args.matches):
                seated = rng.sample(bots, args.seats)
                m = Match(
                    tournament_id=t.id,
                    index=index,
                    table=index,
                    seed=index,
                    status="finished",
                    finished_at=utcnow(),
                    seats=[MatchSeat(seat=i, bot_id=b) for i, b in enumerate(seated)],
                )
                s.add(m)
                s.flush()
                games = [_game(rng, args.seats) for _ in range(args.games)]
                totals = [sum(g["scores"][i] for g in games) for i in range(args.seats)]
                s.add(
                    MatchResult(
                        match_id=m.id,
                        scores=totals,
                        places=[1 + sum(o > x for o in totals) for x in totals],
                        faults=[0] * args.seats,
                        games=games,
                        timings={},
                    )
                )
            s.commit()
            tid = t.id
        games = args.matches * args.games
        with sessions() as s:
            start = time.perf_counter()
            rebuild_ratings(s, ruleset)
            s.commit()
            took = time.perf_counter() - start
        print(
            f"ratings rebuild: {games} games ({args.matches} matches) in {took:.2f} s, "
            f"{took / games * 1e6:.0f} us a game"
        )
        with sessions() as s:
            start = time.perf_counter()
            tournament_report(s, s.get(Tournament, tid))
            first = time.perf_counter() - start
            start = time.perf_counter()
            tournament_report(s, s.get(Tournament, tid))
            cached = time.perf_counter() - start
        print(f"standings, first read: {games} games in {first:.2f} s; cached read: {cached:.3f} s")
        engine.dispose()


if __name__ == "__main__":
    main()
