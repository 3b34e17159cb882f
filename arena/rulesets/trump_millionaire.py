"""Trump Millionaire's arena facts (docs/rules.md, TM): :data:`RULESET`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import engine
from arena.rulesets.base import GIVE_DISCARD, ArenaRuleSet, Deal, DemoSize, Probe, dealt, result_scores
from engine.options import Options

#: Upper estimate of Trump Millionaire deals per 100 points of ``target_score``.
TM_DEALS_PER_100 = 300


def _units(options: Options, games: int) -> int:
    target = int(getattr(options, "target_score"))  # noqa: B009 - TM-1
    return max(1, math.ceil(TM_DEALS_PER_100 * target / 100)) * max(1, games)


def most_target_score(limit: int) -> int:
    """The largest ``target_score`` whose estimate of deals stays within ``limit`` units."""
    return limit * 100 // TM_DEALS_PER_100


def _bound(limit: int, units: int, given: Mapping[str, Any]) -> tuple[str, str]:
    return (
        "options.target_score",
        f"must be at most {most_target_score(limit)} (a game of up to {limit} deals; longer games exceed the "
        "runner's decision limit)",
    )


def _settle_delta(options: Mapping[str, Any]) -> float:
    return float(options.get("target_score", 100)) / 10.0  # a tenth of TM-1's target


def _deal(g: Any) -> Deal:
    hands, leader = dealt(g)
    state: dict[str, Any] | None = None
    if g.millionaire is not None:  # TM-3: the Millionaire's exchange, rate and lead
        state, leader = {"millionaire": g.millionaire}, g.millionaire
    return Deal(hands, tuple(g.set_aside), leader, state)


def _scores(g: Any, seats: int, bonus: int) -> list[float]:
    return result_scores(g.unit_result(), seats)  # TM-7


RULESET = ArenaRuleSet(
    name=engine.TRUMP_MILLIONAIRE,
    decisions_per_unit=200,
    match_units=_units,
    unit_bound=_bound,
    default_games=1,
    settle_delta=_settle_delta,
    par_weight=0.5,
    par_deal=_deal,
    par_scores=_scores,
    check_options={"target_score": 1},  # one deal
    check_games=1,
    probes=(
        # TM-3: the bot is the Millionaire of this deal: exchange, then rate, then it leads.
        Probe(
            "exchange-rate",
            {},
            {
                "hands": {
                    "0": ["3S", "4H", "5D", "6C", "7S", "9H", "TD", "QC", "KS", "AH"],
                    "1": ["3H", "4D", "5C", "6S", "7H", "9D", "TC", "QS", "KH", "AD"],
                    "2": ["3D", "4C", "5S", "6H", "7D", "9C", "TS", "QH", "KD", "AC"],
                    "3": ["3C", "4S", "5H", "6D", "7C", "9S", "TH", "QD", "KC", "AS"],
                },
                "leader": 0,
                "set_aside": ["2S", "2H", "2D", "2C", "JK", "JK", "8S", "8H", "8D", "8C", "JS", "JH", "JD", "JC"],
                "state": {"millionaire": 0},
            },
            forces=("exchange", "rate", "play"),
        ),
        *GIVE_DISCARD,
    ),
    demo=DemoSize(
        1, {"target_score": 50}, "1 table x 4 seat rotations, each a game to 50 points (target shortened from 100)"
    ),
)
