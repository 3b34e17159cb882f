"""Daifugo Arena rules engine: pure Python, standard library only, no I/O.

It implements ``docs/rules.md`` (sections C, MD, TM, JDF, LR, TIME-1 and ACT) as ONE engine with
rule-set presets plus options. A few nouns:

* a **card** is an int code (:mod:`engine.cards`; wire notation ``3S``, ``TH``, ``JK``, C-1);
* **readings** are the forms a play can be read as (:mod:`engine.forms`, C-3..C-5, C-8); the
  legal face-up plays of a hand are built form by form (:mod:`engine.plays`);
* an **action** is an ACT dict on the wire and in the log; the engine parses it once into a
  typed action (:mod:`engine.actions`) before a rule set's handler sees it;
* a **game** (:class:`~engine.game.Game`) is a state you push actions onto; its subclasses are
  the rule sets (:mod:`engine.million_doubt`, :mod:`engine.trump_millionaire`,
  :mod:`engine.jdf`) sharing the trick machinery of :mod:`engine.trick` and
  :mod:`engine.climbing`;
* **options** (:mod:`engine.options`) tune a rule set; **time banks** (:mod:`engine.timebank`)
  do TIME-1's arithmetic;
* the **registry** :data:`RULESETS` (:mod:`engine.rulesets`) maps each rule-set id to its
  :class:`RuleSet` (seats, option class, game class, match structure).

Typical use::

    import engine
    g = engine.new_game("million_doubt", seed=42)
    d = g.decision()                         # Decision(seat, kind, info)
    g.apply(d.seat, {"type": "play", "cards": ["5H"]})   # or engine.InvalidAction
    obs = g.observation(1)                   # what seat 1 may see (C-11)
    actions = list(g.legal_actions(1))       # face-up plays, pass, doubt/through, ...
    g.result()                               # None until g.over; seats as "0", "1" keys
    again = engine.replay(g.log())           # deterministic replay

Create a state from a scenario ``setup`` (fixed hands, one deal / game) with
:func:`from_setup`. What one unit is: Million Doubt, one game; Trump Millionaire, one game of
deals to ``target_score``; JDF, one match of ``sets`` x ``games_per_set`` games.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine._build import BUILD  # first: it chooses the pure or the compiled modules
from engine.cards import CardError, format_card, format_cards, parse_card, parse_cards
from engine.game import (
    ACTION_TYPES,
    DECISIONS,
    Action,
    DealResult,
    Decision,
    Game,
    GameResult,
    InvalidAction,
    Result,
    UnitResult,
)
from engine.options import (
    JDF,
    LOCAL_RULES,
    MILLION_DOUBT,
    SEATS,
    TRUMP_MILLIONAIRE,
    JdfOptions,
    LocalRuleOptions,
    MillionDoubtOptions,
    Options,
    OptionsError,
    TrumpMillionaireOptions,
    check_ruleset,
    make_options,
    option_names,
)
from engine.refusals import TEMPLATES as REFUSAL_TEMPLATES
from engine.refusals import Refusal
from engine.rulesets import RULESETS, RuleSet, get_ruleset
from engine.timebank import TimeBank, TimeRules


def new_game(
    ruleset: str, options: Mapping[str, Any] | Options | None = None, seed: int = 0, *, log: bool = True
) -> Game:
    """A new unit of ``ruleset`` with a random deal drawn from ``seed`` (reproducible).

    ``log=False``: the game keeps no log (no events, no actions; as ``Game.copy(log=False)``),
    for rollouts and self-play.

    Raises:
        OptionsError: unknown rule set or bad options.
    """
    opts = make_options(ruleset, options)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise OptionsError(f"seed must be an integer, not {seed!r}")
    return get_ruleset(ruleset).game_class(opts, seed, None, log)


def from_setup(ruleset: str, options: Mapping[str, Any] | Options | None, setup: Mapping[str, Any]) -> Game:
    """A state of one deal (TM) / one game (MD, JDF) from explicit hands, as in scenarios.

    ``setup`` is the scenario ``setup`` object (``tests/scenarios/README.md``):
    ``{"hands": {"0": [cards], ...}, "leader": seat, "set_aside": [cards]?,
    "state": {"millionaire", "rate", "previous_ranks", "game_in_set", "revolution",
    "direction"}?}``. Hands need not be full deals.

    Raises:
        OptionsError: unknown rule set or bad options.
        ValueError: a malformed setup (the message names the key), including a card string
            that is not C-1 (:class:`CardError`) or a card held more times than the deck has.
    """
    opts = make_options(ruleset, options)
    clean = _parse_setup(opts, setup)
    return get_ruleset(ruleset).game_class(opts, None, clean)


def _parse_setup(opts: Options, setup: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(setup, Mapping):
        raise ValueError("setup must be an object")
    hands_raw = setup.get("hands")
    if not isinstance(hands_raw, Mapping):
        raise ValueError("setup.hands must map seats to card lists")
    hands: dict[int, list[int]] = {}
    for s in range(opts.seats):
        cards = hands_raw.get(str(s), hands_raw.get(s, []))
        if not isinstance(cards, list):
            raise ValueError(f"setup.hands.{s} must be a list of cards")
        hands[s] = parse_cards(cards)
    extra = set(map(str, hands_raw)) - {str(s) for s in range(opts.seats)}
    if extra:
        raise ValueError(f"setup.hands has unknown seats {sorted(extra)}")
    leader = setup.get("leader", 0)
    if not isinstance(leader, int) or not 0 <= leader < opts.seats:
        raise ValueError(f"setup.leader must be a seat 0..{opts.seats - 1}")
    set_aside = parse_cards(setup.get("set_aside") or [])
    counts: dict[int, int] = {}
    for c in [c for h in hands.values() for c in h] + set_aside:
        counts[c] = counts.get(c, 0) + 1
        if counts[c] > (2 if c == 52 else 1):
            raise ValueError(f"setup holds {format_card(c)} more times than the deck has")
    state = dict(setup.get("state") or {})
    known = {"millionaire", "rate", "previous_ranks", "game_in_set", "revolution", "direction"}
    unknown = set(state) - known
    if unknown:
        raise ValueError(f"setup.state has unknown keys {sorted(unknown)}")
    if not isinstance(state.get("revolution", False), bool):
        raise ValueError("setup.state.revolution must be true or false")
    if state.get("direction", 1) not in (1, -1) or isinstance(state.get("direction"), bool):
        raise ValueError("setup.state.direction must be 1 or -1")
    return {"hands": hands, "leader": leader, "set_aside": set_aside, "state": state, "raw": dict(setup)}


def replay(log: Mapping[str, Any]) -> Game:
    """Re-run a :meth:`Game.log` through the engine and return the final state.

    Raises:
        InvalidAction: an action of the log is refused (the log does not come from this
            engine, or was altered).
        OptionsError / ValueError: the log's rule set, options or setup are bad.
    """
    if log.get("setup") is not None:
        g = from_setup(log["ruleset"], log.get("options"), log["setup"])
    else:
        g = new_game(log["ruleset"], log.get("options"), log.get("seed") or 0)
    for i, entry in enumerate(log.get("actions", [])):
        if "forfeit" in entry:
            g.forfeit(entry["seat"], entry["forfeit"])
        else:
            try:
                g.apply(entry["seat"], entry["action"])
            except InvalidAction as e:
                raise InvalidAction(e.rule, Refusal.LOG_ACTION, {"index": i, "reason": e.reason}) from None
    return g


__all__ = [
    "BUILD",
    "RULESETS",
    "RuleSet",
    "get_ruleset",
    "SEATS",
    "LOCAL_RULES",
    "MILLION_DOUBT",
    "TRUMP_MILLIONAIRE",
    "JDF",
    "Options",
    "MillionDoubtOptions",
    "LocalRuleOptions",
    "TrumpMillionaireOptions",
    "JdfOptions",
    "OptionsError",
    "make_options",
    "check_ruleset",
    "option_names",
    "CardError",
    "parse_card",
    "parse_cards",
    "format_card",
    "format_cards",
    "Game",
    "Decision",
    "InvalidAction",
    "Refusal",
    "REFUSAL_TEMPLATES",
    "Action",
    "Result",
    "DealResult",
    "GameResult",
    "UnitResult",
    "DECISIONS",
    "ACTION_TYPES",
    "TimeBank",
    "TimeRules",
    "new_game",
    "from_setup",
    "replay",
]
