"""The schemas of the tournaments' endpoints (:mod:`api.resources.tournaments`): what a create
takes, what a tournament, its standings and its pages of matches look like, the start's and
the resume's query arguments."""

from __future__ import annotations

import marshmallow as ma
from marshmallow import validate

import engine
from api.common import IdField, PageArgs, TextField, TimeRulesSchema, page_schema
from api.resources.matches import MatchSchema
from arena.lifecycle import MatchStatus
from arena.roll_call import HEALTH_FAILED, NOT_CONNECTED
from arena.schedule import DEFAULT_HOUSE_BOT, HOUSE_BOTS
from arena.sequential import MAX_ROUNDS_LIMIT
from arena.status import BotTransport, StopReason, TournamentFormat, values
from arena.usecases import entrants

MAX_PARTICIPANTS = 128


DEFAULT_TIME_RULES = {"initial": 60.0, "increment": 10.0, "cap": 60.0}


TIE_BREAK = (
    "higher mean score per game (adjusted when every game has a par, else raw); then more wins; "
    "then higher rating ordinal; then fewer faults; then lower bot id (house bots last)"
)


class UntilSettledSchema(ma.Schema):
    """Play until settled: the organizer's bounds of the sequential test (docs/ranking.md)."""

    max_rounds = ma.fields.Integer(
        strict=True,
        required=True,
        validate=validate.Range(min=1, max=MAX_ROUNDS_LIMIT),
        metadata={"description": "most rounds of the schedule, the first included (each adds fresh deals)"},
    )
    delta = ma.fields.Float(
        validate=validate.Range(min=0, min_inclusive=False, max=1e6),
        metadata={
            "description": "score difference per game the test is tuned to find between the top two "
            "(default: million_doubt 1, trump_millionaire target_score/10, jdf 1)"
        },
    )
    alpha = ma.fields.Float(
        validate=validate.Range(min=0.001, max=0.5),
        metadata={"description": "bound on the chance of saying settled when the top two are equal (default 0.05)"},
    )
    beta = ma.fields.Float(
        validate=validate.Range(min=0.001, max=0.5),
        metadata={"description": "chance of missing a difference of delta with unlimited rounds (default 0.05)"},
    )


class TournamentCreateSchema(ma.Schema):
    name = TextField(load_default="", max_length=128)
    ruleset = ma.fields.String(required=True, validate=validate.OneOf(engine.RULESETS))
    options = ma.fields.Dict(
        keys=ma.fields.String(), load_default=dict, metadata={"description": "rule-set options (engine.options)"}
    )
    time_rules = ma.fields.Nested(TimeRulesSchema, load_default=lambda: dict(DEFAULT_TIME_RULES))
    participants = ma.fields.List(
        IdField(strict=True), required=True, validate=validate.Length(min=1, max=MAX_PARTICIPANTS)
    )
    games_per_pairing = ma.fields.Integer(
        strict=True,
        load_default=2,
        validate=validate.Range(min=1, max=1000),
        metadata={
            "description": "million_doubt: games per match (each dealt afresh, seats "
            "swapped every game: even counts balance the seats); "
            "4-player rule sets: rounds of 4 seat rotations per table"
        },
    )
    seed = ma.fields.Integer(
        strict=True,
        validate=validate.Range(min=0, max=2**63 - 1),
        metadata={
            "description": "leave it out: the seed is then drawn when the tournament starts and shown to nobody "
            "until it is over. A seed given here (a reproducible test) marks the tournament seed_chosen "
            "and leaves it out of the ratings"
        },
    )
    max_faults = ma.fields.Integer(
        strict=True,
        load_default=3,
        validate=validate.Range(min=1, max=100),
        metadata={"description": "FAULT-3 faults per match before forfeit"},
    )
    fill_with_house_bots = ma.fields.Boolean(load_default=False)
    house_bot = ma.fields.String(
        load_default=DEFAULT_HOUSE_BOT,
        validate=validate.OneOf(HOUSE_BOTS),
        metadata={
            "description": "sample bot every house seat plays (with fill_with_house_bots; stored always); "
            "search: 100 ms per decision"
        },
    )
    public_when_finished = ma.fields.Boolean(
        load_default=True,
        metadata={
            "description": "once finished, its pages (/ui), matches and logs are readable by anyone without a token"
        },
    )
    until_settled = ma.fields.Nested(
        UntilSettledSchema,
        allow_none=True,
        load_default=None,
        metadata={"description": "play until settled: add rounds until the top two are settled or max_rounds"},
    )
    separate_owners = ma.fields.Boolean(
        load_default=True,
        metadata={
            "description": "never two bots of one owner at one table: the schedule leaves such pairings and tables out"
        },
    )


class SettleSchema(ma.Schema):
    """The sequential test's verdict at the end of the last round (arena.sequential.Verdict)."""

    settled = ma.fields.Boolean(required=True)
    llr = ma.fields.Float(required=True, metadata={"description": "log-likelihood ratio of the GSPRT"})
    lower = ma.fields.Float(required=True, metadata={"description": "ln(beta / (1 - alpha)) (reported only)"})
    upper = ma.fields.Float(required=True, metadata={"description": "ln((1 - beta) / alpha): settled at or above"})
    leader = ma.fields.Raw(allow_none=True, metadata={"description": "bot id, or a house bot's name"})
    runner_up = ma.fields.Raw(allow_none=True, metadata={"description": "bot id, or a house bot's name"})
    difference = ma.fields.Float(allow_none=True, metadata={"description": "leader's mean minus runner-up's, per game"})
    se = ma.fields.Float(allow_none=True, metadata={"description": "standard error of difference"})
    games = ma.fields.Integer(required=True, metadata={"description": "games holding the leader or the runner-up"})
    adjusted = ma.fields.Boolean(required=True, metadata={"description": "adjusted scores (score - par) were tested"})


class ProgressSchema(ma.Schema):
    finished = ma.fields.Integer(required=True)
    total = ma.fields.Integer(required=True)
    queued = ma.fields.Integer(
        required=True,
        metadata={"description": "matches sent to the workers so far (every stored match but the pending ones)"},
    )


class AbsenceSchema(ma.Schema):
    """An entrant found offline by a roll call (arena.roll_call.Absence)."""

    bot_id = ma.fields.Integer(required=True)
    name = ma.fields.String(required=True)
    owner_id = ma.fields.Integer(required=True)
    transport = ma.fields.String(required=True, validate=validate.OneOf(values(BotTransport)))
    reason = ma.fields.String(
        required=True,
        validate=validate.OneOf((NOT_CONNECTED, HEALTH_FAILED)),
        metadata={
            "description": "not_connected: a bot that dials out holds no connection; health_failed: a bot the "
            "arena calls failed its health check (detail says how)"
        },
    )
    detail = ma.fields.String(required=True)


class RollCallSchema(ma.Schema):
    """The last roll call of the entrants (who was offline when the start looked)."""

    checked_at = ma.fields.String(required=True, metadata={"description": "ISO 8601 UTC"})
    offline = ma.fields.List(ma.fields.Nested(AbsenceSchema), required=True)


class TournamentSchema(ma.Schema):
    id = ma.fields.Integer(required=True)
    name = ma.fields.String(required=True)
    organizer_id = ma.fields.Integer(required=True)
    ruleset = ma.fields.String(required=True)
    options = ma.fields.Dict(required=True)
    time_rules = ma.fields.Dict(required=True)
    games_per_pairing = ma.fields.Integer(required=True)
    seed = ma.fields.Integer(
        allow_none=True,
        metadata={"description": "null for everyone, organizers included, until the seed is revealed"},
    )
    salt = ma.fields.String(allow_none=True, metadata={"description": "hex salt of the commitment; null like seed"})
    commitment = ma.fields.String(
        allow_none=True,
        metadata={"description": "SHA-256(salt || seed as 8 bytes big-endian), hex; set at the start with the seed"},
    )
    seed_revealed = ma.fields.Boolean(
        required=True, metadata={"description": "seed and salt are shown to everyone who may read the tournament"}
    )
    seed_chosen = ma.fields.Boolean(
        required=True,
        metadata={"description": "the organizer set the seed (a reproducible test): not a fair draw, not rated"},
    )
    until_settled = ma.fields.Nested(
        UntilSettledSchema, allow_none=True, metadata={"description": "null: one round (no sequential test)"}
    )
    rounds = ma.fields.Integer(required=True, metadata={"description": "rounds of the schedule stored so far"})
    stop_reason = ma.fields.String(
        allow_none=True,
        validate=validate.OneOf(values(StopReason)),
        metadata={
            "description": "played until settled: settled (after `rounds` rounds) or max_rounds; "
            "null while it plays on, or without until_settled"
        },
    )
    settle = ma.fields.Nested(SettleSchema, allow_none=True)
    max_faults = ma.fields.Integer(required=True)
    fill_with_house_bots = ma.fields.Boolean(required=True)
    house_bot = ma.fields.String(required=True, metadata={"description": "sample bot of the house seats"})
    separate_owners = ma.fields.Boolean(
        required=True, metadata={"description": "never two bots of one owner at one table"}
    )
    format = ma.fields.String(
        required=True,
        validate=validate.OneOf(values(TournamentFormat)),
        metadata={
            "description": "the match source: round_robin, until_settled, ladder (a ladder's sets), or table "
            "(the match of a table where people play: /api/v1/tables)"
        },
    )
    public_when_finished = ma.fields.Boolean(required=True)
    participants = ma.fields.List(ma.fields.Integer(), required=True)
    status = ma.fields.String(required=True)
    waiting_until = ma.fields.DateTime(
        allow_none=True,
        metadata={
            "description": "while its start waits for offline entrants (status still created): when it starts "
            "whoever is online; null otherwise"
        },
    )
    roll_call = ma.fields.Nested(
        RollCallSchema,
        allow_none=True,
        metadata={"description": "the last roll call of the entrants (at the start, and each poll of a wait)"},
    )
    progress = ma.fields.Nested(ProgressSchema, required=True)
    created_at = ma.fields.DateTime(required=True)
    started_at = ma.fields.DateTime(allow_none=True)
    finished_at = ma.fields.DateTime(allow_none=True)


class StandingSchema(ma.Schema):
    rank = ma.fields.Integer(required=True, metadata={"description": "1 = first; 0 before the entrant's first game"})
    bot_id = ma.fields.Integer(allow_none=True)
    bot_name = ma.fields.String(allow_none=True, metadata={"description": "the bot's name; null for a house seat"})
    house_bot = ma.fields.String(allow_none=True)
    matches = ma.fields.Integer(required=True)
    games = ma.fields.Integer(required=True)
    wins = ma.fields.Integer(required=True, metadata={"description": "games finished first (place 1)"})
    total_score = ma.fields.Float(required=True)
    mean_score = ma.fields.Float(allow_none=True, metadata={"description": "raw score per game"})
    ci95 = ma.fields.Float(
        allow_none=True, metadata={"description": "half-width of the 95% interval of `mean_score` (Student t)"}
    )
    par_games = ma.fields.Integer(required=True, metadata={"description": "the entrant's games that have a par"})
    adjusted_mean = ma.fields.Float(
        allow_none=True,
        metadata={"description": "adjusted score (score minus par) per game, over `par_games`; null without one"},
    )
    adjusted_ci95 = ma.fields.Float(
        allow_none=True, metadata={"description": "half-width of the 95% interval of `adjusted_mean`"}
    )
    faults = ma.fields.Integer(required=True)
    mu = ma.fields.Float(
        required=True, metadata={"description": "openskill rating in this tournament, one update a game"}
    )
    sigma = ma.fields.Float(required=True)
    ordinal = ma.fields.Float(required=True, metadata={"description": "conservative rating mu - 3 sigma"})


class NeighbourSchema(ma.Schema):
    upper_rank = ma.fields.Integer(required=True)
    lower_rank = ma.fields.Integer(required=True, metadata={"description": "upper_rank + 1"})
    difference = ma.fields.Float(
        required=True, metadata={"description": "upper's mean minus lower's (the means of `order_by`), per game"}
    )
    ci95 = ma.fields.Float(
        allow_none=True,
        metadata={"description": "half-width of the difference's 95% interval (null below 2 games each)"},
    )
    shared_games = ma.fields.Integer(required=True, metadata={"description": "games both played (paired)"})
    significant = ma.fields.Boolean(
        required=True,
        metadata={"description": "the 95% interval excludes 0 and each played at least 10 games"},
    )
    too_few_games = ma.fields.Boolean(
        required=True, metadata={"description": "one of the two played fewer than 10 games: not tested yet"}
    )


class StandingsSchema(ma.Schema):
    tournament_id = ma.fields.Integer(required=True)
    ruleset = ma.fields.String(required=True)
    tie_break = ma.fields.String(required=True)
    order_by = ma.fields.String(
        required=True,
        validate=validate.OneOf(["raw", "adjusted"]),
        metadata={"description": "`adjusted` when every game played has a par, else `raw`: the mean that orders"},
    )
    games = ma.fields.Integer(required=True, metadata={"description": "games played (each counted once)"})
    games_with_par = ma.fields.Integer(required=True, metadata={"description": "games played that have a par"})
    rows = ma.fields.List(ma.fields.Nested(StandingSchema), required=True)
    neighbours = ma.fields.List(
        ma.fields.Nested(NeighbourSchema),
        required=True,
        metadata={"description": "each pair of ranked neighbours, best first, and whether they differ significantly"},
    )
    settled = ma.fields.Boolean(
        required=True,
        metadata={"description": "every entrant played and every neighbour difference is significant at 95%"},
    )
    top_settled = ma.fields.Boolean(
        required=True,
        metadata={"description": "the leader's difference to every other entrant is significant at 95%"},
    )
    test = ma.fields.String(required=True, metadata={"description": "the significance test, in words"})
    settled_rule = ma.fields.String(required=True, metadata={"description": "what settled means, in words"})


class MatchListArgs(PageArgs):
    bot_id = IdField()
    status = ma.fields.String(validate=validate.OneOf(values(MatchStatus)))


TournamentPageSchema = page_schema(TournamentSchema, "TournamentPage")


MatchPageSchema = page_schema(MatchSchema, "MatchPage")


class StartQuerySchema(ma.Schema):
    if_offline = ma.fields.String(
        load_default=entrants.ASK,
        validate=validate.OneOf(entrants.IF_OFFLINE),
        metadata={
            "description": "when entrants are offline: ask (409 listing them, nothing changes), wait (for them, "
            "at most wait_s seconds, then start), start (at once, without them)"
        },
    )
    wait_s = ma.fields.Integer(
        load_default=entrants.DEFAULT_WAIT_S,
        validate=validate.Range(min=1, max=entrants.MAX_WAIT_S),
        metadata={"description": "if_offline=wait: seconds to wait at most"},
    )


class ResumeQuerySchema(ma.Schema):
    include_running = ma.fields.Boolean(
        load_default=False,
        metadata={"description": "also re-enqueue matches marked running (their worker may be gone)"},
    )
