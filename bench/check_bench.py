"""Duration of the bot check's conformance games, one line per rule set.

    python bench/check_bench.py [--bot random] [--runs N]

Serves the sample bot ``--bot`` with the SDK's server on 127.0.0.1 and runs
``arena.conformance.conformance_game`` for each rule set ``--runs`` times (seeds 0..N-1),
printing ``check <ruleset>: mean S s, max S s, D decisions, kinds asked K/T`` (wall seconds
of one rule set's games; decisions asked of the bot, mean; kinds of ``DECISION_KINDS``
asked in every run). One process; figures vary with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from arena.conformance import DECISION_KINDS, conformance_game  # noqa: E402
from bots_sdk.samples import SAMPLE_BOTS  # noqa: E402
from bots_sdk.server import BotServer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bot", default="random", choices=sorted(SAMPLE_BOTS))
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    for ruleset in DECISION_KINDS:
        walls: list[float] = []
        decisions: list[int] = []
        always = set(DECISION_KINDS[ruleset])
        for run in range(args.runs):
            server = BotServer(SAMPLE_BOTS[args.bot](seed=run), "127.0.0.1", 0, None, 4)
            server.start()
            try:
                out = conformance_game(server.url, ruleset, seed=run, allow_private=True)
            finally:
                server.close()
            if not out["ok"]:
                sys.exit(f"check {ruleset}: run {run} failed: {out['error']}")
            walls.append(out["wall_s"])
            decisions.append(out["decisions"])
            always &= {k for k, row in out["kinds"].items() if row["asked"]}
        print(
            f"check {ruleset}: mean {statistics.mean(walls):.3f} s, max {max(walls):.3f} s, "
            f"{statistics.mean(decisions):.1f} decisions, kinds asked {len(always)}/{len(DECISION_KINDS[ruleset])}",
            flush=True,
        )


if __name__ == "__main__":
    main()
