"""Rule-set ids and their options: a typed, validated structure.

Each rule set of docs/rules.md is a preset of the one engine; its behaviour is tuned by options.

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

Each rule set has its option class (:class:`MillionDoubtOptions`, :class:`TrumpMillionaireOptions`,
:class:`JdfOptions`; the last two share the local rules of :class:`LocalRuleOptions`). Local
rules (LR-*) are refused for ``million_doubt`` (docs/rules.md, section LR).

Example::

    >>> opts = make_options("jdf", {"five_skip": True})
    >>> opts.five_skip, opts.sets
    (True, 3)
    >>> type(opts).__name__
    'JdfOptions'
    >>> make_options("million_doubt", {"five_skip": True})
    Traceback (most recent call last):
    ...
    engine.options.OptionsError: option 'five_skip' is a local rule (LR-4) and cannot be used with million_doubt
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

MILLION_DOUBT = "million_doubt"
TRUMP_MILLIONAIRE = "trump_millionaire"
JDF = "jdf"

#: The rule-set ids, in docs/rules.md order (the registry :data:`engine.RULESETS` maps them to
#: their :class:`~engine.rulesets.RuleSet`).
RULESET_IDS: tuple[str, ...] = (MILLION_DOUBT, TRUMP_MILLIONAIRE, JDF)

#: Number of seats of each rule set (MD-1, TM-2, JDF-1).
SEATS: dict[str, int] = {MILLION_DOUBT: 2, TRUMP_MILLIONAIRE: 4, JDF: 4}

#: Local-rule option names and their rule ids (docs/rules.md section LR).
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
    """The options of one rule set: the base of the per-rule-set option classes.

    Build one with :func:`make_options`, which validates. ``NAMES`` lists the options of the
    class in their wire order (:meth:`to_dict`).
    """

    RULESET: ClassVar[str] = ""
    NAMES: ClassVar[tuple[str, ...]] = ()

    @property
    def ruleset(self) -> str:
        """The rule-set id these options are for."""
        return self.RULESET

    @property
    def seats(self) -> int:
        """Number of seats of the rule set."""
        return SEATS[self.RULESET]

    def to_dict(self) -> dict[str, Any]:
        """The options of this rule set, JSON-ready (lists, not tuples), in wire order."""
        out: dict[str, Any] = {}
        for name in self.NAMES:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True)
class MillionDoubtOptions(Options):
    """``million_doubt`` options: ``burst_score`` (MD-17, default 11)."""

    RULESET: ClassVar[str] = MILLION_DOUBT
    NAMES: ClassVar[tuple[str, ...]] = ("burst_score",)
    burst_score: int = 11


@dataclass(frozen=True)
class LocalRuleOptions(Options):
    """The local rules LR-1..LR-6 (``trump_millionaire`` and ``jdf``), all off by default."""

    eleven_back: bool = False
    stairs_revolution: bool = False
    number_lock: bool = False
    five_skip: bool = False
    seven_pass: bool = False
    ten_discard: bool = False


@dataclass(frozen=True)
class TrumpMillionaireOptions(LocalRuleOptions):
    """``trump_millionaire`` options: ``target_score`` (TM-1, 100), ``rate_choices`` (TM-3,
    (1, 2, 3)) and the local rules."""

    RULESET: ClassVar[str] = TRUMP_MILLIONAIRE
    NAMES: ClassVar[tuple[str, ...]] = ("target_score", "rate_choices") + tuple(LOCAL_RULES)
    target_score: int = 100
    rate_choices: tuple[int, ...] = (1, 2, 3)


@dataclass(frozen=True)
class JdfOptions(LocalRuleOptions):
    """``jdf`` options: ``sets`` (JDF-1, 3), ``games_per_set`` (JDF-1, 4), ``rank_points``
    (JDF-13, (3, 2, 1, 0)), ``set_bonus`` (JDF-13, 1) and the local rules."""

    RULESET: ClassVar[str] = JDF
    NAMES: ClassVar[tuple[str, ...]] = ("sets", "games_per_set", "rank_points", "set_bonus") + tuple(LOCAL_RULES)
    sets: int = 3
    games_per_set: int = 4
    rank_points: tuple[int, ...] = (3, 2, 1, 0)
    set_bonus: int = 1


#: The option class of each rule set.
OPTION_CLASSES: dict[str, type[Options]] = {
    MILLION_DOUBT: MillionDoubtOptions,
    TRUMP_MILLIONAIRE: TrumpMillionaireOptions,
    JDF: JdfOptions,
}

_INT_OPTIONS = {"burst_score", "target_score", "sets", "games_per_set", "set_bonus"}
_INT_LIST_OPTIONS = {"rate_choices", "rank_points"}


def check_ruleset(ruleset: Any) -> str:
    """Return ``ruleset`` if it is a known rule-set id; raise :class:`OptionsError` otherwise."""
    if ruleset not in RULESET_IDS:
        raise OptionsError(f"unknown rule set {ruleset!r}; known: {', '.join(RULESET_IDS)}")
    return str(ruleset)


def make_options(ruleset: str, values: Mapping[str, Any] | Options | None = None) -> Options:
    """Validate ``values`` for ``ruleset`` and return its option class's instance.

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
    if values is not None and not isinstance(values, Mapping):
        raise OptionsError("options must be an object")
    if not values:
        return _DEFAULTS[ruleset]  # immutable: one shared instance of the defaults
    cls = OPTION_CLASSES[ruleset]
    kwargs: dict[str, Any] = {}
    allowed = cls.NAMES
    for name, value in dict(values or {}).items():
        if name not in allowed:
            if name in LOCAL_RULES:
                raise OptionsError(
                    f"option {name!r} is a local rule ({LOCAL_RULES[name]}) and cannot be used with {ruleset}"
                )
            raise OptionsError(f"unknown option {name!r} for {ruleset}; known: {', '.join(allowed)}")
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
    opts = cls(**kwargs)
    _check_ranges(opts)
    return opts


def _check_ranges(o: Options) -> None:
    if isinstance(o, MillionDoubtOptions) and o.burst_score < 0:
        raise OptionsError("option 'burst_score' must be >= 0")
    if isinstance(o, TrumpMillionaireOptions):
        if o.target_score < 1:
            raise OptionsError("option 'target_score' must be >= 1")
        if not o.rate_choices or any(r < 1 for r in o.rate_choices):
            raise OptionsError("option 'rate_choices' must be a non-empty list of integers >= 1")
    if isinstance(o, JdfOptions):
        if not 1 <= o.sets <= 100:
            raise OptionsError("option 'sets' must be between 1 and 100")
        if not 1 <= o.games_per_set <= 100:
            raise OptionsError("option 'games_per_set' must be between 1 and 100")
        if len(o.rank_points) != 4:
            raise OptionsError("option 'rank_points' must list 4 integers (places 1 to 4)")
        if o.set_bonus < 0:
            raise OptionsError("option 'set_bonus' must be >= 0")


_DEFAULTS: dict[str, Options] = {name: cls() for name, cls in OPTION_CLASSES.items()}


def option_names(ruleset: str) -> tuple[str, ...]:
    """Names of the options that apply to ``ruleset``, in wire order."""
    return OPTION_CLASSES[check_ruleset(ruleset)].NAMES


__all__ = [
    "RULESET_IDS",
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
    "OPTION_CLASSES",
    "OptionsError",
    "make_options",
    "check_ruleset",
    "option_names",
]
