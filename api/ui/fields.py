"""The fields of the tournament creation form (``/ui/tournaments/new``) and their documented ranges.

The form shows one field per rule-set option (:data:`engine.options.OPTION_CLASSES`), the
time rules (TIME-1, seconds) and the tournament's counts, each with its range and a help
text. The ranges are for display only (``min``/``max`` of the inputs and the help text): the
REST API validates every submitted value (``engine.make_options``,
:func:`arena.limits.check_match_bounds` and the marshmallow schemas of
:mod:`api.resources.tournaments`), and the form shows the API's answer. The bounds that exist
as data are read from their source (the schemas' ``Range`` validators, the constants of
:mod:`arena.limits`); those the engine only checks in code (``sets`` and
``games_per_set`` 1-100, non-negative ``burst_score`` and ``set_bonus``, ``target_score`` and
``rate_choices`` entries >= 1, four ``rank_points``) are written here, and
``tests/api/ui/test_tournament_form.py`` checks every bound against the API's validation.

:func:`form_to_options` turns the submitted text into the API's ``options`` object without
judging it: text that is not a number is passed on as text, so the API's 422 names it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask_babel import gettext as _
from marshmallow import validate

import engine
from api.common import TimeRulesSchema
from api.resources.tournament_schemas import TournamentCreateSchema, UntilSettledSchema
from arena import limits
from arena.rulesets.trump_millionaire import most_target_score


@dataclass(frozen=True)
class OptionField:
    """One rule-set option as a form field.

    ``kind``: ``bool`` (a checkbox), ``int`` or ``int_list`` (comma-separated integers).
    ``min``/``max``: bounds of the value (of each entry for ``int_list``; None: unbounded);
    ``entries``: ``(fewest, most)`` entries of an ``int_list``. ``rule``: the rule id.
    """

    name: str
    kind: str
    rule: str
    help: str  # translated (the request's locale)
    min: int | None = None
    max: int | None = None
    entries: tuple[int, int] | None = None


def _tm_target_max() -> int:
    return most_target_score(limits.max_units_per_game(engine.TRUMP_MILLIONAIRE))


#: Most games in a JDF match (``sets x games_per_set``), :func:`arena.limits.check_match_bounds`.
JDF_MAX_GAMES = limits.max_units_per_game(engine.JDF)
SCORING = limits.MAX_SCORING_VALUE


def _local_rules() -> list[OptionField]:
    helps = {
        "eleven_back": _("A play with a natural J turns the order back (J-back) until the trick clears."),
        "stairs_revolution": _("Stairs of 4 or more cards are a revolution too."),
        "number_lock": _("Two plays one step apart lock the trick to consecutive numbers."),
        "five_skip": _("A play with k natural 5s skips the next k seats."),
        "seven_pass": _("A play with k natural 7s gives up to k cards to the next seat."),
        "ten_discard": _("A play with k natural 10s discards up to k cards."),
    }
    return [OptionField(name, "bool", rule, helps[name]) for name, rule in engine.LOCAL_RULES.items()]


def option_fields() -> dict[str, list[OptionField]]:
    """The option fields of each rule set, in the options' wire order (one field per option of
    the engine: ``engine.option_names``)."""
    tm_max = _tm_target_max()
    fields = [
        OptionField(
            "burst_score",
            "int",
            "MD-17",
            _("Score of a game whose loser holds 11 or more cards at the end (a burst)."),
            0,
            SCORING,
        ),
        OptionField(
            "target_score",
            "int",
            "TM-1",
            _(
                "The game ends after the deal where a seat's total reaches it (at most %(max)s: longer games "
                "exceed the runner's decision limit).",
                max=tm_max,
            ),
            1,
            tm_max,
        ),
        OptionField(
            "rate_choices",
            "int_list",
            "TM-3",
            _("Rates the Millionaire may pick, comma-separated."),
            1,
            SCORING,
            (1, limits.MAX_RATE_CHOICES),
        ),
        OptionField(
            "sets",
            "int",
            "JDF-1",
            _("Sets in a match (sets × games per set at most %(max)s).", max=JDF_MAX_GAMES),
            1,
            100,
        ),
        OptionField("games_per_set", "int", "JDF-1", _("Games in a set."), 1, 100),
        OptionField(
            "rank_points",
            "int_list",
            "JDF-13",
            _("Points for places 1 to 4, comma-separated."),
            -SCORING,
            SCORING,
            (4, 4),
        ),
        OptionField("set_bonus", "int", "JDF-13", _("Extra points of the daifugo of a set's last game."), 0, SCORING),
        *_local_rules(),
    ]
    by_name = {f.name: f for f in fields}
    return {rs: [by_name[name] for name in engine.option_names(rs)] for rs in engine.RULESETS}


def _range(schema_field) -> tuple[float | None, float | None]:
    for v in schema_field.validators:
        if isinstance(v, validate.Range):
            return v.min, v.max
    return None, None


def schema_ranges() -> dict[str, tuple[float | None, float | None]]:
    """``{field: (min, max)}`` of the time rules (seconds) and the counts, from the API schemas."""
    t = TimeRulesSchema().fields
    c = TournamentCreateSchema().fields
    return {
        "initial": _range(t["initial"]),
        "increment": _range(t["increment"]),
        "cap": _range(t["cap"]),
        "games_per_pairing": _range(c["games_per_pairing"]),
        "max_faults": _range(c["max_faults"]),
        "seed": _range(c["seed"]),
        "max_rounds": _range(UntilSettledSchema().fields["max_rounds"]),
    }


def field_name(ruleset: str, option: str) -> str:
    """The form field of an option: ``opt-<ruleset>-<option>`` (the local rules exist in two rule sets)."""
    return f"opt-{ruleset}-{option}"


def default_values() -> dict[str, str | bool]:
    """The form's text (or checkbox state) of every option field at its default."""
    out: dict[str, str | bool] = {}
    for rs, fields in option_fields().items():
        defaults = engine.make_options(rs, {}).to_dict()
        for f in fields:
            v = defaults[f.name]
            out[field_name(rs, f.name)] = (
                v if f.kind == "bool" else (", ".join(str(x) for x in v) if f.kind == "int_list" else str(v))
            )
    return out


def _int_or_text(text: str) -> int | str:
    text = text.strip()
    return int(text) if re.fullmatch(r"[+-]?\d{1,20}", text) else text


def form_to_options(ruleset: str, form: Mapping[str, Any]) -> dict[str, Any]:
    """The API's ``options`` for ``ruleset`` from the submitted form (every option of the rule set).

    Booleans: the checkbox is sent (``"1"``) or not. Integers: the text as an int, or the
    text itself when it is not one (the API's 422 names the option). Lists: comma- or
    space-separated entries, each an int or its text. A number or list left empty (or not
    sent) is left out: the rule set's default. An unknown rule set gives ``{}``.
    """
    out: dict[str, Any] = {}
    for f in option_fields().get(ruleset, []):
        raw = form.get(field_name(ruleset, f.name))
        if f.kind == "bool":
            out[f.name] = raw in ("1", "on", True)
        elif raw is None or not str(raw).strip():
            continue  # empty: the rule set's default
        elif f.kind == "int":
            out[f.name] = _int_or_text(str(raw))
        else:
            out[f.name] = [_int_or_text(p) for p in re.split(r"[,\s、，]+", str(raw).strip()) if p]
    return out


_OPTION_IN_MESSAGE = re.compile(r"option '(\w+)'")


def option_error_fields(ruleset: str, errors: Mapping[str, str]) -> dict[str, str]:
    """The API's field errors keyed by form field: ``options.<name>`` (the bounds check) and
    ``options`` whose message names ``option '<name>'`` (the engine) go to that option's
    field; the others keep their API name (``time_rules.cap``, ``games_per_pairing``, ...)."""
    names = set(engine.option_names(ruleset)) if ruleset in engine.RULESETS else set()
    out: dict[str, str] = {}
    for key, msg in errors.items():
        target = key
        if key.startswith("options.") and key[len("options.") :] in names:
            target = field_name(ruleset, key[len("options.") :])
        elif key == "options":
            m = _OPTION_IN_MESSAGE.search(msg)
            if m and m.group(1) in names:
                target = field_name(ruleset, m.group(1))
        out[target] = msg
    return out
