"""Million Doubt's arena facts (docs/rules.md, MD): :data:`RULESET`."""

from __future__ import annotations

from typing import Any

import engine
from arena.rulesets.base import ArenaRuleSet, DemoSize, Probe, one_point, plain_deal, result_scores
from engine.options import Options

_MD_HIGH = ["9S", "9D", "TH", "QD", "KC", "AS", "2H"]
_MD_LOW = ["3C", "3D", "3H", "4C", "4D", "4H", "5C"]


def _units(options: Options, games: int) -> int:
    return max(1, games)  # the games of the match (RuleSet.games_per_match_option)


def _scores(g: Any, seats: int, bonus: int) -> list[float]:
    return result_scores(g.result(), seats)  # MD-17


RULESET = ArenaRuleSet(
    name=engine.MILLION_DOUBT,
    decisions_per_unit=80,
    match_units=_units,
    unit_bound=None,  # a unit is a game: the match's games are bounded by the API
    default_games=2,  # a duplicate pair
    settle_delta=one_point,  # MD-17: a game is worth 1 to 11
    par_weight=0.6,
    par_deal=plain_deal,
    par_scores=_scores,
    check_options={},
    check_games=2,  # a duplicate pair
    probes=(
        # The bot leads; the liar answers every play with face-down low cards (a lie over the
        # bot's high cards; no 8, J or 4 of a kind): the bot is asked doubt (MD-6).
        Probe("doubt", {}, {"hands": {"0": _MD_HIGH, "1": _MD_LOW}, "leader": 0}, liars=(1,), forces=("play", "doubt")),
        # Opening: seat 1 leads 3C, the bot's seat plays 9S face down (honest), seat 1 doubts:
        # the doubt fails, the bot is the executor and is asked penalty at once (MD-7).
        Probe(
            "penalty",
            {},
            {"hands": {"0": _MD_HIGH, "1": _MD_LOW}, "leader": 1},
            opening=(
                (1, {"type": "play", "cards": ["3C"]}),
                (0, {"type": "play", "cards": ["9S"], "face_down": ["9S"]}),
                (1, {"type": "doubt"}),
            ),
            forces=("penalty", "play"),
        ),
    ),
    demo=DemoSize(10, {}, "6 pairings x 10 games (5 deals, each played from both seats)"),
)
