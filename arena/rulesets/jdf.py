"""JDF's arena facts (docs/rules.md, JDF): :data:`RULESET`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import engine
from arena.rulesets.base import GIVE_DISCARD, ArenaRuleSet, Deal, DemoSize, Probe, dealt, one_point
from engine.options import Options


def _units(options: Options, games: int) -> int:
    return int(getattr(options, "sets")) * int(getattr(options, "games_per_set")) * max(1, games)  # noqa: B009


def _bound(limit: int, units: int, given: Mapping[str, Any]) -> tuple[str, str]:
    return (
        "options.games_per_set" if "games_per_set" in given else "options.sets",
        f"sets x games_per_set must be at most {limit} (it is {units}; "
        "longer matches exceed the runner's decision limit)",
    )


def _deal(g: Any) -> Deal:
    hands, leader = dealt(g)
    state: dict[str, Any] | None = None
    if g.previous_ranks:  # JDF-4, JDF-11: the exchange, the daihinmin's lead, the daifugo's fall
        state = {
            "game_in_set": g.game_in_set,
            "previous_ranks": {str(s): r for s, r in sorted(g.previous_ranks.items())},
        }
        leader = next(s for s, r in g.previous_ranks.items() if r == max(g.previous_ranks.values()))
    bonus = int(g.options.set_bonus) if g.game_in_set >= g.options.games_per_set else 0  # JDF-13
    return Deal(hands, tuple(g.blind), leader, state, bonus)


def _scores(g: Any, seats: int, bonus: int) -> list[float]:
    r: Any = g.unit_result()
    if r is None:  # pragma: no cover - a rollout always ends its game
        return [0.0] * seats
    points = g.options.rank_points
    return [float(points[r["ranks"][str(s)] - 1] + (bonus if r["ranks"][str(s)] == 1 else 0)) for s in range(seats)]


RULESET = ArenaRuleSet(
    name=engine.JDF,
    decisions_per_unit=250,
    match_units=_units,
    unit_bound=_bound,
    default_games=1,
    settle_delta=one_point,  # 1 match point
    par_weight=0.4,
    par_deal=_deal,
    par_scores=_scores,
    check_options={"sets": 1, "games_per_set": 1},  # one game
    check_games=1,
    probes=(
        # JDF-4: game 2 of a set, the bot was daifugo: it gives 2 cards.
        Probe(
            "exchange-give",
            {},
            {
                "hands": {
                    "0": ["3H", "3D", "9S", "TS"],
                    "1": ["4S", "6S", "7S"],
                    "2": ["QD", "5D", "6D"],
                    "3": ["JK", "2S", "5C"],
                },
                "leader": 3,
                "state": {"game_in_set": 2, "previous_ranks": {"0": 1, "1": 2, "2": 3, "3": 4}},
            },
            forces=("give",),
        ),
        *GIVE_DISCARD,
    ),
    demo=DemoSize(
        1, {"sets": 1}, "1 table x 4 seat rotations, each a match of 1 set of 4 games (shortened from 3 sets)"
    ),
)
