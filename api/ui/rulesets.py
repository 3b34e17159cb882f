"""The pages' facts per rule set, registered against the engine's ids: its display name, the
replay's hint and the label of its scoring unit, each a message of the catalogs (marked here,
translated when a page renders: :func:`page_ruleset` is called inside a request).

The other facts a page needs come from the engine's descriptor (``engine.RULESETS``: seats,
``scoring_unit``, ``games_per_match_option``); nothing in the pages, their templates or
``static/replay.js`` asks which rule set it shows (``infra/ruleset_gate.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from flask_babel import gettext as _

import engine
from api.ui.marks import N_


@dataclass(frozen=True)
class PageRuleSet:
    """A rule set's page facts (English messages of the catalogs).

    Attributes:
        name: the rule-set id (a key of ``engine.RULESETS``).
        title: its display name.
        replay_hint: what the replay shows of the hands (its ``#replay-hint``).
        unit_label: the label of its scoring unit's picker on a match page (``Deal``,
            ``Game``), None when a match's engine game is one unit.
        first_game_options: the table form's defaults that make a person's first game short
            (option name -> the field's text; docs/tables.md), over the rule set's own.
    """

    name: str
    title: str
    replay_hint: str
    unit_label: str | None
    first_game_options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


#: The registry: rule-set id -> :class:`PageRuleSet`, in ``engine.RULESETS`` order.
PAGE_RULESETS: Mapping[str, PageRuleSet] = MappingProxyType(
    {
        engine.MILLION_DOUBT: PageRuleSet(
            engine.MILLION_DOUBT,
            N_("Million Doubt"),
            N_("Face-down cards are shown as card backs until a doubt reveals them (hover a back to see the card)."),
            None,
        ),
        engine.TRUMP_MILLIONAIRE: PageRuleSet(
            engine.TRUMP_MILLIONAIRE,
            N_("Trump Millionaire"),
            N_("Every hand is shown face up; cards new in a hand (the Millionaire's exchange, TM-3) are outlined."),
            N_("Deal"),
            MappingProxyType({"target_score": "30"}),
        ),
        engine.JDF: PageRuleSet(
            engine.JDF,
            N_("JDF"),
            N_(
                "Every hand is shown face up; cards new in a hand after the card exchange (JDF-4) are outlined, "
                "and the blind cards (JDF-2) are named when their set ends."
            ),
            N_("Game"),
            MappingProxyType({"sets": "1"}),
        ),
    }
)
assert tuple(PAGE_RULESETS) == tuple(engine.RULESETS), "every rule set has its page facts"


def page_ruleset(name: str) -> PageRuleSet:
    """The :class:`PageRuleSet` of ``name``.

    Raises:
        engine.OptionsError: ``name`` is not a rule-set id.
    """
    return PAGE_RULESETS[engine.get_ruleset(name).name]


def page_facts(name: str) -> dict[str, Any]:
    """What a template needs of rule set ``name``, in the current locale: ``title``,
    ``replay_hint``, ``unit_label`` ("" when none), and the engine's ``seats``,
    ``scoring_unit`` and ``many_games`` (``games_per_match_option``). An unknown id (an old
    row) gives its id as the title and no unit."""
    rs = PAGE_RULESETS.get(name)
    if rs is None:
        return {"title": name, "replay_hint": "", "unit_label": "", **replay_facts(None)}
    return {
        "title": _(rs.title),
        "replay_hint": _(rs.replay_hint),
        "unit_label": _(rs.unit_label) if rs.unit_label else "",
        **replay_facts(name),
    }


def replay_facts(name: str | None) -> dict[str, Any]:
    """The rule set's facts the replay's script reads (``static/replay.js``: ``R.seats``,
    ``R.scoring_unit``, ``R.many_games``), from ``engine.RULESETS``; an unknown id: none."""
    facts = engine.RULESETS.get(name) if isinstance(name, str) else None
    if facts is None:
        return {"seats": 0, "scoring_unit": None, "many_games": False}
    return {"seats": facts.seats, "scoring_unit": facts.scoring_unit, "many_games": facts.games_per_match_option}


__all__ = ["PAGE_RULESETS", "PageRuleSet", "page_facts", "page_ruleset", "replay_facts"]
