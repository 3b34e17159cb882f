"""How long a match can last: the bounds the broker's visibility timeout and leases rely on.

:func:`longest_match_seconds`, in seconds, for a match of ``U`` units (Million Doubt: ``games``
games; Trump Millionaire: deals; JDF: ``sets x games_per_set`` games), ``S`` seats, at most
``D`` (the rule set's ``ArenaRuleSet.decisions_per_unit``) decisions per unit, time rules ``initial`` / ``increment``
/ ``cap`` (TIME-1)::

    per_unit = min(S * initial + D * increment,   # a seat spends at most its initial bank plus
                                                  # one increment per action in a unit
                   D * cap)                       # and no request outlasts a full bank
    longest  = U * (per_unit + D * REQUEST_OVERHEAD_S) + S * NOTICES_S_PER_SEAT
    visibility_timeout = ceil(SAFETY * longest + SLACK_S)

TM deals: ``arena.rulesets.trump_millionaire.TM_DEALS_PER_100`` per 100 points of ``target_score`` (an estimate, not a
bound). Without ``ARENA_VISIBILITY_TIMEOUT_S`` the worker uses
:func:`default_visibility_timeout`. Figures and reasons: docs/operations.md, "Visibility
timeout (backstop)".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import engine
from arena.config import Settings
from arena.rulesets import arena_ruleset
from engine.timebank import TimeRules

#: Safety stop of the match runner: more decisions than this in one engine game (a MD game, a
#: whole TM game, a whole JDF match) is taken for an engine bug and ends the match failed.
MAX_DECISIONS_PER_GAME = 200_000
#: Largest absolute value of a scoring option (``burst_score``, ``set_bonus``, an entry of
#: ``rank_points`` or ``rate_choices``): scores stay exact integers in JSON readers (2**53).
MAX_SCORING_VALUE = 1_000_000
#: Most entries of ``rate_choices`` (TM-3).
MAX_RATE_CHOICES = 10

#: Seconds per decision spent outside the banks (engine, signing, transport).
REQUEST_OVERHEAD_S = 0.02
#: Seconds per seat for its match start and end notices (2 notices x 2 s, arena.runner.players).
NOTICES_S_PER_SEAT = 4.0
SAFETY = 1.25
SLACK_S = 5.0


class BoundsError(ValueError):
    """Options that would let a match run past the runner's limits; ``field`` names the
    option (``options.target_score``), ``str(exc)`` says the bound."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def max_units_per_game(ruleset: str) -> int:
    """Most units (TM deals, JDF games) one engine game may hold so that even the upper
    estimate of its decisions stays under :data:`MAX_DECISIONS_PER_GAME`."""
    return MAX_DECISIONS_PER_GAME // arena_ruleset(ruleset).decisions_per_unit


def check_match_bounds(ruleset: str, options: Mapping[str, Any] | None = None) -> None:
    """Check that a match with these (engine-valid) options can finish within the runner's
    limits: the upper estimate of decisions in one engine game is at most
    :data:`MAX_DECISIONS_PER_GAME` (TM: ``ceil(TM_DEALS_PER_100 * target_score / 100)``
    deals of ``decisions_per_unit`` decisions, so ``target_score`` <= 333; JDF:
    ``sets x games_per_set`` <= 800 games), and scoring options are at most
    :data:`MAX_SCORING_VALUE` in absolute value.

    Raises:
        BoundsError: naming the option (``options.<name>``).
        engine.OptionsError: options the engine refuses.
    """
    opts = engine.make_options(ruleset, options)
    given = dict(options or {})
    for name in ("burst_score", "set_bonus", "target_score"):
        if name in given and abs(getattr(opts, name)) > MAX_SCORING_VALUE:
            raise BoundsError(f"options.{name}", f"must be at most {MAX_SCORING_VALUE} in absolute value")
    for name in ("rank_points", "rate_choices"):
        if name in given and any(abs(v) > MAX_SCORING_VALUE for v in getattr(opts, name)):
            raise BoundsError(f"options.{name}", f"entries must be at most {MAX_SCORING_VALUE} in absolute value")
    if "rate_choices" in given and len(getattr(opts, "rate_choices")) > MAX_RATE_CHOICES:  # noqa: B009
        raise BoundsError("options.rate_choices", f"at most {MAX_RATE_CHOICES} entries")
    facts = arena_ruleset(ruleset)
    if facts.unit_bound is None:
        return
    units = facts.match_units(opts, 1)
    limit = max_units_per_game(ruleset)
    if units > limit:
        raise BoundsError(*facts.unit_bound(limit, units, given))


def match_units(ruleset: str, games: int, options: Mapping[str, Any] | None = None) -> int:
    """Units of a match of ``games`` engine games: MD games, TM deals (an estimate per game,
    times the games: a ladder set plays one TM game per seat rotation), JDF games (sets x
    games per set, times the games)."""
    return arena_ruleset(ruleset).match_units(engine.make_options(ruleset, options), games)


def longest_match_seconds(
    ruleset: str, time_rules: TimeRules, games: int | None = None, options: Mapping[str, Any] | None = None
) -> float:
    """Upper bound of a match's wall time in seconds (module docstring formula); ``games``:
    the engine games of the match (None: a tournament's default match, Million Doubt 2 games,
    the others 1)."""
    facts = arena_ruleset(ruleset)
    if games is None:
        games = facts.default_games
    seats = engine.SEATS[ruleset]
    d = facts.decisions_per_unit
    initial, inc, cap = time_rules.initial_ms / 1000, time_rules.increment_ms / 1000, time_rules.cap_ms / 1000
    per_unit = min(seats * initial + d * inc, d * cap)
    return match_units(ruleset, games, options) * (per_unit + d * REQUEST_OVERHEAD_S) + seats * NOTICES_S_PER_SEAT


def visibility_timeout_for(longest_s: float) -> int:
    """``ceil(SAFETY * longest_s + SLACK_S)`` seconds."""
    return math.ceil(SAFETY * longest_s + SLACK_S)


def default_visibility_timeout() -> int:
    """The formula for each rule set's default tournament (60/10/60 s, MD 2 games), largest."""
    return max(visibility_timeout_for(longest_match_seconds(rs, TimeRules())) for rs in engine.RULESETS)


def visibility_timeout(settings: Settings) -> int:
    """``ARENA_VISIBILITY_TIMEOUT_S`` if set, else :func:`default_visibility_timeout`, seconds."""
    return settings.visibility_timeout_s or default_visibility_timeout()
