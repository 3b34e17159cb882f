"""Tournaments (organizers create, start and cancel; any account reads).

Creating validates the rule set, its options (``engine.make_options``: 422 naming the
option), the time rules (TIME-1, seconds), the participants (existing ``ready`` bots that play
the rule set) and the games per pairing. Starting builds the whole schedule
(:mod:`arena.schedule`), stores one ``matches`` row per match and enqueues one
``arena.run_match`` task per match. If the broker is down the start answers 503 and the
matches stay ``pending``; starting again enqueues them. For more than
``INLINE_START_PARTICIPANTS`` participants, building, storing and enqueueing happen on a worker
(``arena.enqueue_tournament``, :mod:`arena.usecases.tournaments`): the start answers at once.
Each view parses, calls its use case (:mod:`arena.usecases.tournaments`) and returns.

Fairness (docs/fairness.md): the seed is drawn when the tournament starts, in the transaction
that publishes its ``commitment``; ``seed``, ``salt`` and the match seeds are null for
everyone, organizers included, until the seed is revealed (:func:`arena.access.can_see_seed`).
A seed the organizer set (``seed`` on create) marks the tournament ``seed_chosen`` (left out
of the ratings). Logs are embargoed for contestants until the tournament is over.

Play until settled (docs/ranking.md): ``until_settled`` adds rounds of the schedule until the
sequential test (:mod:`arena.sequential`) finds the top settled or ``max_rounds`` is reached;
``rounds``, ``stop_reason`` and ``settle`` (the test's last verdict) say where it stands.
"""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import validate
from sqlalchemy import ColumnElement, exists, func, select
from sqlalchemy.orm import selectinload

import engine
from api.auth import BEARER, optional_account, protect, require_organizer
from api.common import IdField, PageArgs, TextField, TimeRulesSchema, errors, page_schema, paginate_query
from api.database import db, dispatcher, redis_client, settings, tournament_logs_download
from api.errors import abort
from api.resources.matches import MatchSchema, match_dict
from arena import access as policy
from arena import roll_call
from arena.db.models import Match, MatchSeat, Tournament
from arena.lifecycle import MatchStatus, TournamentStatus
from arena.roll_call import HEALTH_FAILED, NOT_CONNECTED
from arena.schedule import DEFAULT_HOUSE_BOT, HOUSE_BOTS
from arena.sequential import MAX_ROUNDS_LIMIT
from arena.standings import standings_dict
from arena.status import BotTransport, StopReason, TournamentFormat, values
from arena.usecases import entrants
from arena.usecases import tournaments as usecases
from arena.usecases.tournaments import INLINE_SEND_MATCHES, INLINE_START_PARTICIPANTS

__all__ = ["INLINE_SEND_MATCHES", "INLINE_START_PARTICIPANTS", "blp"]

blp = Blueprint(
    "tournaments",
    __name__,
    url_prefix="/api/v1/tournaments",
    description="Round-robin tournaments, their matches, standings and logs",
)
protect(blp, organizer_methods=("POST",), anonymous_reads=True)

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


def progress_counts(tournament_ids: list[int]) -> dict[int, tuple[int, int, int]]:
    """``{tournament id: (finished matches, all matches, matches not pending)}`` in one
    grouped query."""
    if not tournament_ids:
        return {}
    rows = db().execute(
        select(
            Match.tournament_id,
            func.count(),
            func.count().filter(Match.status == MatchStatus.FINISHED),
            func.count().filter(Match.status != MatchStatus.PENDING),
        )
        .where(Match.tournament_id.in_(tournament_ids))
        .group_by(Match.tournament_id)
    )
    return {tid: (int(done), int(total), int(sent)) for tid, total, done, sent in rows}


def tournament_dict(t: Tournament, progress: tuple[int, int, int] | None = None) -> dict:
    """The API shape of a tournament (seed and salt only once revealed:
    :func:`arena.access.can_see_seed`); ``progress`` = ``(finished, total, queued)``
    if already counted."""
    finished, total, queued = progress if progress is not None else progress_counts([t.id]).get(t.id, (0, 0, 0))
    revealed = policy.seed_revealed(db(), t)
    return {
        "id": t.id,
        "name": t.name,
        "organizer_id": t.organizer_id,
        "ruleset": t.ruleset,
        "options": t.options,
        "time_rules": t.time_rules,
        "games_per_pairing": t.games_per_pairing,
        "seed": t.seed if revealed else None,
        "salt": t.salt if revealed else None,
        "commitment": t.commitment,
        "seed_revealed": revealed,
        "seed_chosen": bool(t.seed_chosen),
        "until_settled": t.until_settled,
        "rounds": t.rounds or 1,
        "stop_reason": t.stop_reason,
        "settle": t.settle,
        "max_faults": t.max_faults,
        "fill_with_house_bots": t.fill_with_house_bots,
        "house_bot": t.house_bot,
        "separate_owners": bool(t.separate_owners),
        "format": t.format,
        "public_when_finished": t.public_when_finished,
        "participants": [p.bot_id for p in t.participants],
        "status": t.status,
        "waiting_until": t.waiting_until if t.status == TournamentStatus.CREATED else None,
        "roll_call": t.roll_call if t.roll_call and "offline" in t.roll_call else None,
        "progress": {"finished": finished, "total": total, "queued": queued},
        "created_at": t.created_at,
        "started_at": t.started_at,
        "finished_at": t.finished_at,
    }


def get_tournament(tournament_id: int) -> Tournament:
    """The tournament if the request's viewer may see it (:mod:`arena.access`).

    404 if there is none; an anonymous reader gets 401 for a tournament that is missing or
    not public (nothing tells it whether the tournament exists)."""
    viewer = optional_account()
    t = db().get(Tournament, tournament_id)
    if t is not None and t.format == TournamentFormat.LADDER:  # a ladder's sets: /api/v1/ladders/{id}
        t = None
    if t is None or not policy.can_view_tournament(db(), viewer, t):
        if viewer is None:
            abort(401, "missing bearer token (Authorization: Bearer <token>): the tournament is not public")
        abort(404, f"tournament {tournament_id} not found")
    return t


@blp.route("")
class Tournaments(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(TournamentCreateSchema)
    @blp.response(201, TournamentSchema)
    @errors(blp, 401, 403)
    def post(self, data):
        """Create a tournament (organizers)."""
        return tournament_dict(usecases.create_tournament(db(), require_organizer(), **data))

    @blp.doc(security=BEARER)
    @blp.arguments(PageArgs, location="query")
    @blp.response(200, TournamentPageSchema)
    @errors(blp, 401)
    def get(self, args):
        """All tournaments, newest first, paginated (without a token: the public ones)."""
        # a ladder's sets: /api/v1/ladders; a table's match: /api/v1/tables
        cond: list[ColumnElement[bool]] = [
            Tournament.format.not_in([TournamentFormat.LADDER.value, TournamentFormat.TABLE.value])
        ]
        if optional_account() is None:
            cond += [Tournament.status == TournamentStatus.FINISHED, Tournament.public_when_finished.is_(True)]
        items, total = paginate_query(
            db(),
            select(Tournament)
            .where(*cond)
            .order_by(Tournament.id.desc())
            .options(selectinload(Tournament.participants)),
            select(func.count()).select_from(Tournament).where(*cond),
            args["page"],
            args["per_page"],
        )
        counts = progress_counts([t.id for t in items])
        return {
            "items": [tournament_dict(t, counts.get(t.id, (0, 0, 0))) for t in items],
            "total": total,
            "page": args["page"],
            "per_page": args["per_page"],
        }


@blp.route("/<int(min=1, max=2147483647):tournament_id>")
class TournamentById(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, TournamentSchema)
    @errors(blp, 401, 404)
    def get(self, tournament_id):
        """A tournament with its progress (matches finished / total)."""
        return tournament_dict(get_tournament(tournament_id))


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


@blp.route("/<int(min=1, max=2147483647):tournament_id>/start")
class TournamentStart(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(StartQuerySchema, location="query")
    @blp.response(202, TournamentSchema)
    @errors(blp, 401, 403, 404, 409, 503)
    def post(self, query, tournament_id):
        """Start (organizers): the tournament becomes ``running`` and its matches are
        scheduled and enqueued. Up to :data:`INLINE_START_PARTICIPANTS` participants the
        schedule is stored in the request and its first :data:`INLINE_SEND_MATCHES` matches
        are sent (a worker's ``arena.enqueue_tournament`` sends the others); for a larger
        field a worker builds and stores the schedule and enqueues its matches, so the
        answer comes at once whatever the field: ``progress.total`` counts the stored matches (0 until the
        schedule is stored, seconds later) and ``progress.queued`` those sent so far.

        First a roll call of the entrants (a bot that dials out and holds no connection, a bot
        the arena calls whose health check fails, within 3 s): with someone offline,
        ``if_offline=ask`` (the default) answers 409 with ``details.offline`` (each bot, why)
        and changes nothing; ``wait`` keeps the tournament ``created`` with ``waiting_until``
        (202): a worker polls every few seconds and starts it once everyone is online or the
        time is up, and each offline bot's owner is told (webhook ``entrant.offline``, the
        bot's page); ``start`` starts at once without them. ``roll_call`` keeps who was offline.

        409 if finished or cancelled, or already running with nothing left to enqueue;
        503 if the task broker is unreachable: the tournament is running, with what was sent
        so far; start again to send the rest (``arena beat``'s reaper also sends it by
        itself once the broker is back, after ``ARENA_LOST_AFTER_S``).
        """
        roll = roll_call.caller(redis_client(), allow_private=settings().allow_private_bot_urls)
        outcome = entrants.start_or_wait(
            db(),
            dispatcher(),
            require_organizer(),
            tournament_id,
            roll,
            if_offline=query["if_offline"],
            wait_s=query["wait_s"],
        )
        return tournament_dict(outcome.tournament)


class ResumeQuerySchema(ma.Schema):
    include_running = ma.fields.Boolean(
        load_default=False,
        metadata={"description": "also re-enqueue matches marked running (their worker may be gone)"},
    )


@blp.route("/<int(min=1, max=2147483647):tournament_id>/resume")
class TournamentResume(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(ResumeQuerySchema, location="query")
    @blp.response(202, TournamentSchema)
    @errors(blp, 401, 403, 404, 409, 503)
    def post(self, query, tournament_id):
        """Re-enqueue (organizers) every match of a running tournament that has no result:
        ``pending`` and ``queued`` ones, and ``running`` ones with ``include_running``.

        For a broker that lost its queue (a Redis restart without persistence). Tasks are
        idempotent: a match delivered twice is played at most once more and stored once.
        409 if the tournament is not running or nothing is left; 503 if the broker is down.
        """
        t = usecases.resume_tournament(
            db(), dispatcher(), require_organizer(), tournament_id, include_running=query["include_running"]
        )
        return tournament_dict(t)


@blp.route("/<int(min=1, max=2147483647):tournament_id>/cancel")
class TournamentCancel(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, TournamentSchema)
    @errors(blp, 401, 403, 404, 409)
    def post(self, tournament_id):
        """Cancel (organizers): matches not yet finished are cancelled; 409 if finished/cancelled.

        A match already being played finishes and keeps its result; the worker skips the others.
        """
        return tournament_dict(usecases.cancel_tournament(db(), require_organizer(), tournament_id, dispatcher()))


@blp.route("/<int(min=1, max=2147483647):tournament_id>/retry")
class TournamentRetry(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(202, TournamentSchema)
    @errors(blp, 401, 403, 404, 409, 503)
    def post(self, tournament_id):
        """Play the tournament's ``failed`` matches again (organizers).

        A failed match could not be played for a reason that is not a bot's (its ``failure``
        says why). Its status goes back to ``queued``; a finished tournament runs again until
        they are done. 409 if cancelled or nothing failed; 503 if the broker is down (the
        matches are then ``pending``: start the tournament again to send them).
        """
        t = usecases.retry_tournament(db(), dispatcher(), require_organizer(), tournament_id, settings=settings())
        return tournament_dict(t)


@blp.route("/<int(min=1, max=2147483647):tournament_id>/standings")
class TournamentStandings(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, StandingsSchema)
    @errors(blp, 401, 404)
    def get(self, tournament_id):
        """Standings from the stored results, and what is settled.

        Raw and adjusted (score minus par) means per game with 95% intervals; for each pair of
        neighbours in the order, the difference and whether it is significant at 95%; whether
        the ranking and its first place are settled (docs/ranking.md).
        """
        t = get_tournament(tournament_id)
        return {"tournament_id": t.id, "ruleset": t.ruleset, "tie_break": TIE_BREAK, **standings_dict(db(), t)}


@blp.route("/<int(min=1, max=2147483647):tournament_id>/matches")
class TournamentMatches(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(MatchListArgs, location="query")
    @blp.response(200, MatchPageSchema)
    @errors(blp, 401, 404)
    def get(self, args, tournament_id):
        """Matches of the tournament in schedule order, paginated; filter by ``bot_id``, ``status``.

        Contestants see the matches of their own bots (all matches once the tournament
        finished, if one of their bots took part); organizers see all.
        """
        t = get_tournament(tournament_id)
        cond = [Match.tournament_id == t.id]
        visible = policy.visible_matches_condition(db(), optional_account(), t)
        if visible is not None:
            cond.append(visible)
        if "bot_id" in args:
            cond.append(exists().where(MatchSeat.match_id == Match.id, MatchSeat.bot_id == args["bot_id"]))
        if "status" in args:
            cond.append(Match.status == args["status"])
        stmt = (
            select(Match)
            .where(*cond)
            .order_by(Match.index)
            .options(selectinload(Match.seats), selectinload(Match.result))
        )
        items, total = paginate_query(
            db(), stmt, select(func.count()).select_from(Match).where(*cond), args["page"], args["per_page"]
        )
        viewer = optional_account()
        return {
            "items": [match_dict(m, show_seed=policy.can_see_match_seed(db(), viewer, m, t)) for m in items],
            "total": total,
            "page": args["page"],
            "per_page": args["per_page"],
        }


@blp.route("/<int(min=1, max=2147483647):tournament_id>/logs")
class TournamentLogs(MethodView):
    @blp.doc(
        security=BEARER,
        responses={
            "200": {
                "description": 'JSON Lines: first ``{"tournament": {...}}`` (this tournament as '
                "``GET /tournaments/{id}`` shows it to you: the seed commitment, and the seed and salt once "
                'revealed), then one ``{"match_id": n, "log": {...}}`` per match log. '
                "``arena logs verify FILE`` replays every log and checks the commitment",
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            }
        },
    )
    @errors(blp, 401, 403, 404)
    def get(self, tournament_id):
        """All logs you may read of a tournament as a streamed JSON Lines download.

        Organizers get every log; once the tournament is over, owners of a participant get
        the logs of every match (without other bots' URLs); before that, and for others, 403
        (log embargo). The first line is the tournament (its commitment, and seed and salt
        once revealed), so ``arena logs verify`` checks the file alone. Rows are fetched in
        batches while streaming.
        """
        t = get_tournament(tournament_id)
        account = optional_account()
        if not policy.can_download_tournament_logs(db(), account, t):
            if policy.is_over(t) or account is None or not policy.owns_participant(db(), account, t.id):
                abort(403, f"none of your bots takes part in tournament {t.id}")
            abort(403, f"the logs of tournament {t.id} are embargoed until it is finished")
        return tournament_logs_download(t, account, tournament_dict(t))
