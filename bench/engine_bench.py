"""Engine speed: random self-play per CPU second, the pure and the compiled engine (and
OpenSpiel's C++ Dou Dizhu with ``--peer``) interleaved on one pinned core.

    python bench/engine_bench.py [--seconds S] [--rounds R] [--cpu N] [--log] [--peer] [--peer-python PATH]

Prints, per rule set, exactly::

    <ruleset>: N decisions/s (pure P, compiled C)

N is the compiled engine's figure. When the compiled engine is not built
(``bash infra/build_engine.sh``), a line ``compiled: not run (<why>)`` goes to stderr and each line
is ``<ruleset>: N decisions/s (pure N)``. With ``--peer``, one more line for OpenSpiel's Dou Dizhu,
``open_spiel dou_dizhu: M decisions/s``, and the ratios, ``vs open_spiel: <ruleset> pure
x.xx, compiled y.yy; ...``. The first line gives the load average before and after (the
machine is shared) and the core.

A decision is one action of a player applied to the engine. Both engines are driven the same
way, by a Python loop of their user's (as the ``search`` bot's rollouts and the training
environment drive ours): list the legal actions, pick one uniformly (``random.random``), apply
it. Ours: :func:`engine.selfplay.random_game` on games that keep no log (``new_game(...,
log=False)``; ``--log`` keeps it, as the arena's games do), plays listed by
:meth:`engine.Game.face_up_plays` and pushed on the trusted path (:meth:`engine.Game.push`);
in Million Doubt one play in five is replaced by a random bluff (random held cards, some face
down, judged by the engine). OpenSpiel: ``state.legal_actions()`` and ``state.apply_action``;
its chance nodes (the deal) are sampled the same way and not counted as decisions.

Each engine runs in a worker process of its own (``ARENA_ENGINE=pure``, ``=compiled``; the
peer in ``--peer-python``, a Python with ``open_spiel``, by default this one), all pinned to
core ``--cpu`` (``taskset``); the parent asks each in turn for ``--seconds`` of CPU time per
rule set, ``--rounds`` times, alternating the order, and divides the decisions by the CPU
seconds the workers report (``time.process_time``). Goal (issue 41): compiled >= 1.0x and
pure >= 0.5x OpenSpiel's figure in every rule set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from pinned import Worker, engine_workers, load_line, start_worker

ROOT = Path(__file__).resolve().parent.parent
RULESETS = ("million_doubt", "trump_millionaire", "jdf")
PEER_GAME = "dou_dizhu"


# -- workers (one per engine; they read one JSON command a line, answer one JSON line) ------------
def _ours_worker(log: bool) -> None:
    sys.path.insert(0, str(ROOT))
    import random

    import engine
    from engine.selfplay import random_game

    print(json.dumps({"build": engine.BUILD}), flush=True)
    state: dict[str, tuple[random.Random, int]] = {rs: (random.Random(12345), 0) for rs in RULESETS}
    for line in sys.stdin:
        cmd = json.loads(line)
        rs, seconds = cmd["ruleset"], cmd["seconds"]
        rng, seed = state[rs]
        decisions = 0
        start = time.process_time()
        while True:
            decisions += random_game(engine.new_game(rs, None, seed, log=log), rng)
            seed += 1
            cpu = time.process_time() - start
            if cpu >= seconds:
                break
        state[rs] = (rng, seed)
        print(json.dumps({"count": decisions, "cpu": cpu}), flush=True)


def _peer_worker() -> None:
    import random

    import pyspiel  # open_spiel

    game = pyspiel.load_game(PEER_GAME)
    version = getattr(pyspiel, "__version__", "")
    print(json.dumps({"build": f"open_spiel {version}".strip()}), flush=True)
    rng = random.Random(12345)
    for line in sys.stdin:
        seconds = json.loads(line)["seconds"]
        decisions = 0
        start = time.process_time()
        while True:
            s = game.new_initial_state()
            while not s.is_terminal():
                if s.is_chance_node():
                    outcomes = s.chance_outcomes()
                    s.apply_action(outcomes[int(rng.random() * len(outcomes))][0])
                else:
                    legal = s.legal_actions()
                    s.apply_action(legal[int(rng.random() * len(legal))])
                    decisions += 1
            cpu = time.process_time() - start
            if cpu >= seconds:
                break
        print(json.dumps({"count": decisions, "cpu": cpu}), flush=True)


# -- the parent -----------------------------------------------------------------------------------
def measure(workers: list[Worker], peer: Worker | None, rounds: int, seconds: float) -> None:
    """``rounds`` rounds: each worker in turn (the order reversed every other round) plays
    ``seconds`` of CPU time of each rule set (the peer, its one game, once a round)."""
    for r in range(rounds):
        order = workers if r % 2 == 0 else workers[::-1]
        for rs in RULESETS:
            for w in order:
                if w is not peer:
                    w.run(rs, seconds)
                elif rs == RULESETS[0]:
                    w.run(PEER_GAME, seconds)


def report(workers: list[Worker], peer: Worker | None) -> None:
    ours = {w.name: w for w in workers if w is not peer}
    for rs in RULESETS:
        rates = {name: w.rate(rs) for name, w in ours.items()}
        best = rates.get("compiled", rates.get("pure", 0.0))
        parts = ", ".join(f"{name} {rate:.0f}" for name, rate in rates.items())
        print(f"{rs}: {best:.0f} decisions/s ({parts})", flush=True)
    if peer is not None:
        peer_rate = peer.rate(PEER_GAME)
        print(f"open_spiel {PEER_GAME}: {peer_rate:.0f} decisions/s ({peer.build})", flush=True)
        ratios = "; ".join(
            f"{rs} " + ", ".join(f"{name} {w.rate(rs) / peer_rate:.2f}" for name, w in ours.items()) for rs in RULESETS
        )
        print(f"vs open_spiel: {ratios}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="CPU seconds per engine and rule set, per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1, help="the core every worker is pinned to")
    ap.add_argument("--log", action="store_true", help="games keep their log (as the arena's): events and actions")
    ap.add_argument("--peer", action="store_true", help="also OpenSpiel's C++ Dou Dizhu (pip install open_spiel)")
    ap.add_argument("--peer-python", default=sys.executable, help="a Python that imports pyspiel (default: this one)")
    ap.add_argument("--worker", choices=("ours", "peer"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker == "ours":
        _ours_worker(args.log)
        return
    if args.worker == "peer":
        _peer_worker()
        return

    me = [sys.executable, str(Path(__file__).resolve())]
    workers: list[Worker] = []
    try:
        workers += engine_workers([*me, "--worker", "ours"] + (["--log"] if args.log else []), args.cpu)
        peer = None
        if args.peer:
            peer_argv = [args.peer_python, str(Path(__file__).resolve()), "--worker", "peer"]
            env = {k: v for k, v in os.environ.items() if k != "ARENA_ENGINE"}
            peer = start_worker("open_spiel", peer_argv, env, args.cpu)
            if peer is not None:
                workers.append(peer)
        if not workers:
            sys.exit("engine_bench: no engine to run")
        before = os.getloadavg()[0]
        measure(workers, peer, args.rounds, args.seconds)
        extra = "; games logged" if args.log else "; games without log"
        print(load_line("engine_bench", before, args.cpu, args.rounds, args.seconds, extra), flush=True)
        report(workers, peer)
    finally:
        for w in workers:
            w.stop()


if __name__ == "__main__":
    main()
