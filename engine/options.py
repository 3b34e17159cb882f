"""Rule-set ids and their options: a typed, validated structure.

Each rule set of RULES.md is a preset of the one engine; its behaviour is tuned by options.

================== ===================== ============ ===============================================
rule set           option                type         meaning (rule id)
================== ===================== ============ ===============================================
million_doubt      ``burst_score``       int          score of a game ending in a burst (MD-17), 11
trump_millionaire  ``target_score``      int          total that ends the game (TM-1), 100
trump_millionaire  ``rate_choices``      list[int]    rates the Millionaire may pick (TM-3), [1,2,3]
jdf                ``sets``              int          sets in a match (JDF-1), 3
jdf                ``games_per_set``     int          games in a set (JDF-1), 4
jdf                ``rank_points``       list[int]    points for places 1..4 (JDF-13), [3,2,1,0]
jdf                ``set_bonus``         int          extra point of a set's last daifugo (JDF-13), 1
tm and jdf         ``eleven_back``       bool         LR-1, off
tm and jdf         ``stairs_revolution`` bool         LR-2, off
tm and jdf         ``number_lock``       bool         LR-3, off
tm and jdf         ``five_skip``         bool         LR-4, off
tm and jdf         ``seven_pass``        bool         LR-5, off
tm and jdf         ``ten_discard``       bool         LR-6, off
================== ===================== ============ ===============================================

Local rules (LR-*) are refused for ``million_doubt`` (RULES.md, section LR).

Example::

    >>> opts = make_options("jdf", {"five_skip": True})
    >>> opts.five_skip, opts.sets
    (True, 3)
    >>> make_options("million_doubt", {"five_skip": True})
    Traceback (most recent call last):
    ...
    engine.options.OptionsError: option 'five_skip' is a local rule (LR-4) and cannot be used with million_doubt
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

MILLION_DOUBT = "million_doubt"
TRUMP_MILLIONAIRE = "trump_millionaire"
JDF = "jdf"

#: The rule-set ids, in RULES.md order.
RULESETS: tuple[str, ...] = (MILLION_DOUBT, TRUMP_MILLIONAIRE, JDF)

#: Number of seats of each rule set (MD-1, TM-2, JDF-1).
SEATS: dict[str, int] = {MILLION_DOUBT: 2, TRUMP_MILLIONAIRE: 4, JDF: 4}

#: Local-rule option names and their rule ids (RULES.md section LR).
LOCAL_RULES: dict[str, str] = {
    "eleven_back": "LR-1",
    "stairs_revolution": "LR-2",
    "number_lock": "LR-3",
    "five_skip": "LR-4",
    "seven_pass": "LR-5",
    "ten_discard": "LR-6",
}


class OptionsError(ValueError):
    """An unknown rule set, an unknown option, or an option of the wrong type or value.

    The message names the rule set or the option, e.g. ``unknown option 'fiveskip' for jdf``.
    """


@dataclass(frozen=True)
class Options:
    """The options of one rule set (see the module docstring for the table).

    Options that do not apply to ``ruleset`` keep their defaults and are not listed by
    :meth:`to_dict`. Build one with :func:`make_options`, which validates.
    """

    ruleset: str
    burst_score: int = 11
    target_score: int = 100
    rate_choices: tuple[int, ...] = (1, 2, 3)
    sets: int = 3
    games_per_set: int = 4
    rank_points: tuple[int, ...] = (3, 2, 1, 0)
    set_bonus: int = 1
    eleven_back: bool = False
    stairs_revolution: bool = False
    number_lock: bool = False
    five_skip: bool = False
    seven_pass: bool = False
    ten_discard: bool = False

    @property
    def seats(self) -> int:
        """Number of seats of the rule set."""
        return SEATS[self.ruleset]

    def to_dict(self) -> dict[str, Any]:
        """The options that apply to this rule set, JSON-ready (lists, not tuples)."""
        out: dict[str, Any] = {}
        for name in _ALLOWED[self.ruleset]:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out


_INT_OPTIONS = {"burst_score", "target_score", "sets", "games_per_set", "set_bonus"}
_INT_LIST_OPTIONS = {"rate_choices", "rank_points"}

_ALLOWED: dict[str, tuple[str, ...]] = {
    MILLION_DOUBT: ("burst_score",),
    TRUMP_MILLIONAIRE: ("target_score", "rate_choices") + tuple(LOCAL_RULES),
    JDF: ("sets", "games_per_set", "rank_points", "set_bonus") + tuple(LOCAL_RULES),
}


def check_ruleset(ruleset: Any) -> str:
    """Return ``ruleset`` if it is a known rule-set id; raise :class:`OptionsError` otherwise."""
    if ruleset not in RULESETS:
        raise OptionsError(f"unknown rule set {ruleset!r}; known: {', '.join(RULESETS)}")
    return ruleset


def make_options(ruleset: str, values: Mapping[str, Any] | Options | None = None) -> Options:
    """Validate ``values`` for ``ruleset`` and return an :class:`Options`.

    ``values`` maps option names to JSON values (bools, ints, lists of ints); missing options
    take their defaults. An :class:`Options` of the same rule set is returned unchanged.

    Raises:
        OptionsError: unknown rule set; unknown option; a local rule with ``million_doubt``;
            wrong type (``True`` is not an int, ``1`` is not a bool); a value out of range
            (``target_score`` < 1, empty ``rate_choices``, ``rank_points`` not 4 long, ...).
    """
    check_ruleset(ruleset)
    if isinstance(values, Options):
        if values.ruleset != ruleset:
            raise OptionsError(f"options are for {values.ruleset}, not {ruleset}")
        return values
    values = dict(values or {})
    if not isinstance(values, dict):
        raise OptionsError("options must be an object")
    kwargs: dict[str, Any] = {}
    allowed = _ALLOWED[ruleset]
    for name, value in values.items():
        if name not in allowed:
            if name in LOCAL_RULES:
                raise OptionsError(
                    f"option {name!r} is a local rule ({LOCAL_RULES[name]}) and cannot be used with {ruleset}"
                )
            raise OptionsError(
                f"unknown option {name!r} for {ruleset}; known: {', '.join(allowed)}"
            )
        if name in LOCAL_RULES:
            if not isinstance(value, bool):
                raise OptionsError(f"option {name!r} must be true or false, not {value!r}")
            kwargs[name] = value
        elif name in _INT_OPTIONS:
            if not isinstance(value, int) or isinstance(value, bool):
                raise OptionsError(f"option {name!r} must be an integer, not {value!r}")
            kwargs[name] = value
        elif name in _INT_LIST_OPTIONS:
            if not isinstance(value, (list, tuple)) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in value
            ):
                raise OptionsError(f"option {name!r} must be a list of integers, not {value!r}")
            kwargs[name] = tuple(value)
    opts = Options(ruleset=ruleset, **kwargs)
    _check_ranges(opts)
    return opts


def _check_ranges(o: Options) -> None:
    if o.burst_score < 0:
        raise OptionsError("option 'burst_score' must be >= 0")
    if o.target_score < 1:
        raise OptionsError("option 'target_score' must be >= 1")
    if not o.rate_choices or any(r < 1 for r in o.rate_choices):
        raise OptionsError("option 'rate_choices' must be a non-empty list of integers >= 1")
    if not 1 <= o.sets <= 100:
        raise OptionsError("option 'sets' must be between 1 and 100")
    if not 1 <= o.games_per_set <= 100:
        raise OptionsError("option 'games_per_set' must be between 1 and 100")
    if len(o.rank_points) != 4:
        raise OptionsError("option 'rank_points' must list 4 integers (places 1 to 4)")
    if o.set_bonus < 0:
        raise OptionsError("option 'set_bonus' must be >= 0")


def option_names(ruleset: str) -> tuple[str, ...]:
    """Names of the options that apply to ``ruleset``."""
    return _ALLOWED[check_ruleset(ruleset)]


__all__ = [
    "RULESETS", "SEATS", "LOCAL_RULES", "MILLION_DOUBT", "TRUMP_MILLIONAIRE", "JDF",
    "Options", "OptionsError", "make_options", "check_ruleset", "option_names",
]
