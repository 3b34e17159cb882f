"""Daifugo Arena rules engine (pure Python, standard library only). API documented below once complete."""
from engine.options import (  # noqa: F401
    JDF, LOCAL_RULES, MILLION_DOUBT, RULESETS, SEATS, TRUMP_MILLIONAIRE,
    Options, OptionsError, check_ruleset, make_options, option_names,
)
