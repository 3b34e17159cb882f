"""The arena's facts per rule set, registered against the engine's ids.

python-chess's model (``chess/variant.py``: a variant class carries its facts, ``VARIANTS``,
``find_variant``): every fact the arena, the CLI and the pages need about a rule set beyond
the engine's (``engine.RULESETS``: seats, classes, decision kinds, titles) is an attribute of
its :class:`ArenaRuleSet` here, one module per rule set; nothing else asks which rule set it
plays (``infra/ruleset_gate.py`` fails on a branch that does)::

    >>> from arena.rulesets import arena_ruleset
    >>> rs = arena_ruleset("jdf")
    >>> rs.decisions_per_unit, rs.check_games, [p.name for p in rs.probes]
    (250, 1, ['exchange-give', 'give', 'discard'])

:data:`ARENA_RULESETS` holds exactly the ids of ``engine.RULESETS``, in the same order.
How to add a rule set: docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import engine
from arena.rulesets import jdf, million_doubt, trump_millionaire
from arena.rulesets.base import GIVE_DISCARD, ArenaRuleSet, Deal, DemoSize, Probe

#: The registry: rule-set id -> :class:`ArenaRuleSet`, in ``engine.RULESETS`` order.
ARENA_RULESETS: Mapping[str, ArenaRuleSet] = MappingProxyType(
    {rs.name: rs for rs in (million_doubt.RULESET, trump_millionaire.RULESET, jdf.RULESET)}
)
assert tuple(ARENA_RULESETS) == tuple(engine.RULESETS), "every rule set of the engine has its arena facts"


def arena_ruleset(name: str) -> ArenaRuleSet:
    """The :class:`ArenaRuleSet` of ``name``.

    Raises:
        engine.OptionsError: ``name`` is not a rule-set id.
    """
    return ARENA_RULESETS[engine.get_ruleset(name).name]


__all__ = ["ARENA_RULESETS", "ArenaRuleSet", "Deal", "DemoSize", "GIVE_DISCARD", "Probe", "arena_ruleset"]
