"""The environment's facts per rule set: what the observation vector holds beyond the common
parts, and the running totals behind the rewards (docs/env.md, "Observation").

One :class:`EnvRuleSet` per rule set of ``engine.RULESETS``, registered against the same id
in :data:`ENV_RULESETS` (:func:`env_ruleset`); the encoder (:mod:`bots_sdk.env.encoding`) and
the environment (:mod:`bots_sdk.env.aec`) read them and never ask which rule set they play.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import engine
from engine.jdf import Jdf
from engine.million_doubt import MillionDoubt
from engine.trump_millionaire import TrumpMillionaire

#: ``parts(m, at, g, rel)``: write the rule set's parts of the vector ``m`` (``at``: part name
#: -> start index, :func:`bots_sdk.env.encoding.layout`; ``rel``: seat -> relative seat).
Parts = Callable[[Any, Mapping[str, int], Any, Callable[[int], int]], None]


@dataclass(frozen=True)
class EnvRuleSet:
    """The environment's facts of one rule set.

    Attributes:
        name: the rule-set id (a key of ``engine.RULESETS``).
        parts: the hook writing the rule set's own parts of the observation vector from the
            engine state (:data:`Parts`): Million Doubt ``pending_doubt``; Trump Millionaire
            and JDF the unit, the totals, the rate and Millionaire (TM-3) or the previous
            ranks (JDF-4), the hidden cards' count.
        totals: the seats' running totals while the unit is not over (the rewards' base: TM-7
            deal points, JDF-13 game points and set bonus), or None when the rule set scores
            once, at the end (Million Doubt, MD-17).
    """

    name: str
    parts: Parts
    totals: Callable[[Any], Sequence[int]] | None


def _set_totals(m: Any, at: Mapping[str, int], totals: Sequence[int], rel: Callable[[int], int]) -> None:
    for s, x in enumerate(totals):
        m[at["totals"] + rel(s)] = x


def _md_parts(m: Any, at: Mapping[str, int], g: MillionDoubt, rel: Callable[[int], int]) -> None:
    if g.pending is not None:
        m[at["flags"] + 4] = 1.0  # pending_doubt


def _tm_parts(m: Any, at: Mapping[str, int], g: TrumpMillionaire, rel: Callable[[int], int]) -> None:
    m[at["unit"]] = g.deal_index
    m[at["rate"]] = g.rate
    if g.millionaire is not None:
        m[at["millionaire"] + rel(g.millionaire)] = 1.0
    m[at["hidden_count"]] = len(g.set_aside)
    _set_totals(m, at, g.totals, rel)


def _jdf_parts(m: Any, at: Mapping[str, int], g: Jdf, rel: Callable[[int], int]) -> None:
    m[at["unit"]] = g.game_index
    for s, r in (g.previous_ranks or {}).items():
        m[at["previous_ranks"] + rel(s)] = r
    m[at["hidden_count"]] = len(g.blind)
    _set_totals(m, at, g.totals, rel)


def _running_totals(g: Any) -> Sequence[int]:
    return list(g.totals)


#: The registry: rule-set id -> :class:`EnvRuleSet`, the ids of ``engine.RULESETS``.
ENV_RULESETS: Mapping[str, EnvRuleSet] = MappingProxyType(
    {
        engine.MILLION_DOUBT: EnvRuleSet(engine.MILLION_DOUBT, _md_parts, None),
        engine.TRUMP_MILLIONAIRE: EnvRuleSet(engine.TRUMP_MILLIONAIRE, _tm_parts, _running_totals),
        engine.JDF: EnvRuleSet(engine.JDF, _jdf_parts, _running_totals),
    }
)
assert tuple(ENV_RULESETS) == tuple(engine.RULESETS), "every rule set has its environment facts"


def env_ruleset(name: str) -> EnvRuleSet:
    """The :class:`EnvRuleSet` of ``name``.

    Raises:
        engine.OptionsError: ``name`` is not a rule-set id.
    """
    return ENV_RULESETS[engine.get_ruleset(name).name]


__all__ = ["ENV_RULESETS", "EnvRuleSet", "env_ruleset"]
