"""Ladders (docs/ladder.md): bots matched, rated and ranked continuously, per rule set.

An open ladder (one per rule set) is public: its table, sets, logs and entrants' entries are
read without a token. A private ladder (an organizer's class or club) is read and entered by
its members only (to others it does not exist: 404). The owner of a ready bot enters it
(``POST /ladders/{id}/entries``), pauses, resumes or withdraws it; every tick (Celery beat,
``ARENA_LADDER_TICK_S``) forms sets among the entries that can play now; each stored set is
rated once. Each view parses, calls its use case (:mod:`arena.usecases.ladders`) and returns.
"""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import validate

import engine
from api.auth import BEARER, current_account, optional_account, protect
from api.common import IdField, TextField, TimeRulesSchema, errors
from api.database import db, redis_client, settings
from arena import ladder_ratings, ladderboard
from arena.db.models import Ladder, LadderEntry
from arena.sources.ladder import LadderConfig
from arena.status import EntryStatus, LadderStatus, values
from arena.usecases import ladders as usecases

blp = Blueprint("ladders", __name__, url_prefix="/api/v1/ladders", description="Ladders that never close")
protect(blp, anonymous_reads=True)


class LadderCreateSchema(ma.Schema):
    name = TextField(required=True, min_length=1, max_length=128)
    ruleset = ma.fields.String(required=True, validate=validate.OneOf(engine.RULESETS))
    options = ma.fields.Dict(load_default=dict, metadata={"description": "rule-set options, fixed for the ladder"})
    time_rules = ma.fields.Nested(TimeRulesSchema, load_default=lambda: TimeRulesSchema().load({}))
    max_faults = ma.fields.Integer(strict=True, load_default=3, validate=validate.Range(min=1, max=100))
    open = ma.fields.Boolean(
        load_default=False,
        metadata={"description": "the rule set's one open ladder (any ready bot enters; public), else private"},
    )
    description = TextField(load_default="", max_length=2000)
    members = ma.fields.List(IdField(strict=True), load_default=list, validate=validate.Length(max=1000))
    config = ma.fields.Dict(
        load_default=dict,
        metadata={
            "description": "matchmaking and health knobs, defaults for missing keys: "
            + ", ".join(f"{k} ({v!r})" for k, v in LadderConfig().to_dict().items())
        },
    )


class LadderSchema(ma.Schema):
    id = ma.fields.Integer(required=True)
    name = ma.fields.String(required=True)
    ruleset = ma.fields.String(required=True)
    open = ma.fields.Boolean(required=True, metadata={"description": "the rule set's open ladder (public)"})
    status = ma.fields.String(required=True, validate=validate.OneOf(values(LadderStatus)))
    description = ma.fields.String(required=True)
    owner_id = ma.fields.Integer(required=True)
    options = ma.fields.Dict(required=True)
    time_rules = ma.fields.Dict(required=True)
    max_faults = ma.fields.Integer(required=True)
    config = ma.fields.Dict(required=True)
    tournament_id = ma.fields.Integer(required=True, metadata={"description": "the tournament holding its sets"})
    last_tick_at = ma.fields.DateTime(allow_none=True)
    created_at = ma.fields.DateTime(required=True)


class TableRowSchema(ma.Schema):
    rank = ma.fields.Integer(required=True)
    entry_id = ma.fields.Integer(required=True)
    bot_id = ma.fields.Integer(allow_none=True)
    house_bot = ma.fields.String(allow_none=True, metadata={"description": "a house sample bot filling tables"})
    name = ma.fields.String(required=True)
    owner = ma.fields.String(allow_none=True)
    owner_id = ma.fields.Integer(allow_none=True)
    status = ma.fields.String(required=True, validate=validate.OneOf(values(EntryStatus)))
    mu = ma.fields.Float(required=True, metadata={"description": "openskill Plackett-Luce mean"})
    sigma = ma.fields.Float(required=True, metadata={"description": "its uncertainty"})
    conservative = ma.fields.Float(required=True, metadata={"description": "mu - 3 sigma: the order"})
    sets = ma.fields.Integer(required=True, metadata={"description": "rated sets"})
    games = ma.fields.Integer(required=True)
    faults = ma.fields.Integer(required=True)
    provisional = ma.fields.Boolean(required=True, metadata={"description": "fewer rated sets than placement_sets"})
    ahead = ma.fields.Boolean(
        allow_none=True, metadata={"description": "above the next row with 95% confidence; null on the last row"}
    )
    online = ma.fields.Boolean(allow_none=True, metadata={"description": "can play now"})
    paused_by = ma.fields.String(allow_none=True, metadata={"description": "owner, or health (the ladder's rule)"})
    paused_reason = ma.fields.String(allow_none=True)
    pause = ma.fields.Dict(allow_none=True, metadata={"description": "why, as a code and its parameters"})
    paused_at = ma.fields.DateTime(allow_none=True)
    last_set_at = ma.fields.DateTime(allow_none=True)
    parent_bot_id = ma.fields.Integer(allow_none=True, metadata={"description": "the bot it is a new version of"})


class TableSchema(ma.Schema):
    ladder = ma.fields.Nested(LadderSchema, required=True)
    rows = ma.fields.List(ma.fields.Nested(TableRowSchema), required=True)


class SetSchema(ma.Schema):
    match_id = ma.fields.Integer(required=True)
    status = ma.fields.String(required=True)
    kind = ma.fields.String(required=True, metadata={"description": "rated, or comparison (a version and its parent)"})
    rating = ma.fields.String(required=True, metadata={"description": "pending, rated, unrated, void, comparison"})
    entries = ma.fields.List(ma.fields.Integer(), required=True, metadata={"description": "entry id per seat"})
    names = ma.fields.List(ma.fields.String(), required=True)
    commitment = ma.fields.String(required=True, metadata={"description": "SHA-256(salt || seed), set when formed"})
    created_at = ma.fields.DateTime(required=True)
    started_at = ma.fields.DateTime(allow_none=True)
    finished_at = ma.fields.DateTime(allow_none=True)
    scores = ma.fields.List(ma.fields.Float(), allow_none=True)
    faults = ma.fields.List(ma.fields.Integer(), allow_none=True)
    placement = ma.fields.List(ma.fields.Integer(), allow_none=True, metadata={"description": "places rated"})
    adjusted = ma.fields.Boolean(allow_none=True, metadata={"description": "placed by luck-adjusted scores"})
    seed = ma.fields.Integer(allow_none=True, metadata={"description": "the set's seed, once it is stored"})
    salt = ma.fields.String(allow_none=True, metadata={"description": "its salt, once it is stored"})


class SetListArgs(ma.Schema):
    playing = ma.fields.Boolean(load_default=False, metadata={"description": "the sets queued or playing now"})
    bot_id = IdField(load_default=None, metadata={"description": "one bot's sets"})
    before = IdField(load_default=None, metadata={"description": "match ids below this (the next page)"})
    limit = ma.fields.Integer(load_default=20, validate=validate.Range(min=1, max=100))


class EntryCreateSchema(ma.Schema):
    bot_id = IdField(required=True, strict=True)
    max_concurrent = ma.fields.Integer(strict=True, load_default=1, validate=validate.Range(min=1, max=64))
    max_sets_per_hour = ma.fields.Integer(strict=True, load_default=30, validate=validate.Range(min=1, max=3600))


class HistoryPointSchema(ma.Schema):
    at = ma.fields.DateTime(required=True)
    mu = ma.fields.Float(required=True)
    sigma = ma.fields.Float(required=True)
    sets = ma.fields.Integer(required=True)


class CompareSchema(ma.Schema):
    parent_bot_id = ma.fields.Integer(allow_none=True)
    sets = ma.fields.Integer(required=True, metadata={"description": "deals both versions played"})
    mean = ma.fields.Float(allow_none=True, metadata={"description": "this version's set score minus its parent's"})
    ci95 = ma.fields.Float(allow_none=True, metadata={"description": "half-width of the 95% interval of mean"})


class EntrySchema(ma.Schema):
    entry_id = ma.fields.Integer(required=True)
    ladder_id = ma.fields.Integer(required=True)
    bot_id = ma.fields.Integer(allow_none=True)
    status = ma.fields.String(required=True, validate=validate.OneOf(values(EntryStatus)))
    paused_by = ma.fields.String(allow_none=True)
    paused_reason = ma.fields.String(allow_none=True, metadata={"description": "why it is paused (English)"})
    pause = ma.fields.Dict(
        allow_none=True,
        metadata={
            "description": "why it is paused as a code and its parameters: owner, forfeits (n, window, bar), "
            "probe (error)"
        },
    )
    paused_at = ma.fields.DateTime(allow_none=True, metadata={"description": "since when"})
    mu = ma.fields.Float(required=True)
    sigma = ma.fields.Float(required=True)
    conservative = ma.fields.Float(required=True)
    sets = ma.fields.Integer(required=True)
    games = ma.fields.Integer(required=True)
    faults = ma.fields.Integer(required=True)
    fault_streak = ma.fields.Integer(required=True, metadata={"description": "stored sets in a row at max_faults"})
    max_concurrent = ma.fields.Integer(required=True)
    max_sets_per_hour = ma.fields.Integer(required=True)
    probe_ok = ma.fields.Boolean(required=True, metadata={"description": "its last health probe passed"})
    probed_at = ma.fields.DateTime(allow_none=True)
    entered_at = ma.fields.DateTime(required=True)
    last_set_at = ma.fields.DateTime(allow_none=True)
    compare = ma.fields.Nested(CompareSchema, allow_none=True)
    history = ma.fields.List(ma.fields.Nested(HistoryPointSchema), required=True)


class OfficialSchema(ma.Schema):
    computed_at = ma.fields.DateTime(allow_none=True)
    sets = ma.fields.Integer(required=True)
    table = ma.fields.List(ma.fields.Dict(), required=True, metadata={"description": "rank, entry_id, strength, se"})
    matrix = ma.fields.Dict(required=True, metadata={"description": "entries, z, significant (top of the table)"})


class CollusionRowSchema(ma.Schema):
    a = ma.fields.Integer(required=True, metadata={"description": "entry id"})
    b = ma.fields.Integer(required=True, metadata={"description": "entry id"})
    sets = ma.fields.Integer(required=True, metadata={"description": "rated sets together"})
    a_wins = ma.fields.Float(required=True, metadata={"description": "sets a placed above b (ties halved)"})
    expected = ma.fields.Float(required=True, metadata={"description": "what the fitted strengths predict"})
    z = ma.fields.Float(required=True)
    bound = ma.fields.Float(required=True, metadata={"description": "the |z| a pair had to pass (Bonferroni, 5%)"})


class RecallRowSchema(ma.Schema):
    entry_id = ma.fields.Integer(required=True)
    sets = ma.fields.Integer(required=True)
    mean = ma.fields.Float(required=True, metadata={"description": "score in a set's last game minus its first"})
    t = ma.fields.Float(required=True)
    bound = ma.fields.Float(required=True, metadata={"description": "the t it had to pass (Bonferroni, 5%)"})


class IntegritySchema(ma.Schema):
    pairs = ma.fields.List(ma.fields.Nested(CollusionRowSchema), required=True)
    recall = ma.fields.List(
        ma.fields.Nested(RecallRowSchema),
        required=True,
        metadata={"description": "entries better in a set's last game than its first: they may remember the deal"},
    )


class MemberSchema(ma.Schema):
    account_id = IdField(required=True, strict=True)


def ladder_dict(ladder: Ladder) -> dict[str, Any]:
    """The API shape of a ladder (its rules from its tournament)."""
    t = ladder.tournament
    return {
        "id": ladder.id,
        "name": ladder.name,
        "ruleset": ladder.ruleset,
        "open": ladder.open_ruleset is not None,
        "status": ladder.status,
        "description": ladder.description,
        "owner_id": ladder.owner_id,
        "options": t.options,
        "time_rules": t.time_rules,
        "max_faults": t.max_faults,
        "config": ladder.config,
        "tournament_id": ladder.tournament_id,
        "last_tick_at": ladder.last_tick_at,
        "created_at": ladder.created_at,
    }


def compare_dict(entry: LadderEntry) -> dict[str, Any] | None:
    """A new version's comparison with its parent: mean difference per deal and its 95% half-width."""
    c = entry.compare
    if not c:
        return None
    n, total, sumsq = int(c.get("sets", 0)), float(c.get("sum", 0.0)), float(c.get("sumsq", 0.0))
    mean = total / n if n else None
    ci = None
    if n >= 2 and mean is not None:
        var = max(0.0, (sumsq - n * mean * mean) / (n - 1))
        ci = 1.96 * (var / n) ** 0.5
    parent = db().get(LadderEntry, c.get("parent_entry")) if c.get("parent_entry") is not None else None
    return {"parent_bot_id": parent.bot_id if parent else None, "sets": n, "mean": mean, "ci95": ci}


def entry_dict(entry: LadderEntry) -> dict[str, Any]:
    """The API shape of an entry, with its rating history."""
    return {
        "entry_id": entry.id,
        "ladder_id": entry.ladder_id,
        "bot_id": entry.bot_id,
        "status": entry.status,
        "paused_by": entry.paused_by,
        "paused_reason": entry.paused_reason,
        "pause": entry.pause,
        "paused_at": entry.paused_at,
        "mu": entry.mu,
        "sigma": entry.sigma,
        "conservative": ladder_ratings.conservative(entry.mu, entry.sigma),
        "sets": entry.sets,
        "games": entry.games,
        "faults": entry.faults,
        "fault_streak": entry.fault_streak,
        "max_concurrent": entry.max_concurrent,
        "max_sets_per_hour": entry.max_sets_per_hour,
        "probe_ok": entry.probe_ok,
        "probed_at": entry.probed_at,
        "entered_at": entry.entered_at,
        "last_set_at": entry.last_set_at,
        "compare": compare_dict(entry),
        "history": [
            {"at": at, "mu": mu, "sigma": sigma, "sets": n} for at, mu, sigma, n in ladderboard.history(db(), entry.id)
        ],
    }


def online():
    """Who is connected to a gateway, from the broker's Redis (:func:`arena.usecases.ladders.redis_online`)."""
    return usecases.redis_online(redis_client())


@blp.route("")
class Ladders(MethodView):
    @blp.response(200, LadderSchema(many=True))
    def get(self):
        """The ladders the caller may read: open ones (public), and private ones of its own."""
        return [ladder_dict(ld) for ld in usecases.list_ladders(db(), optional_account())]

    @blp.doc(security=BEARER)
    @blp.arguments(LadderCreateSchema)
    @blp.response(201, LadderSchema)
    @errors(blp, 401, 403, 409, 422)
    def post(self, data):
        """Create a ladder (organizers): open (one per rule set) or private (its members)."""
        open_ladder = data.pop("open")
        ladder = usecases.create_ladder(db(), current_account(), open_ladder=open_ladder, **data)
        return ladder_dict(ladder)


@blp.route("/<int:ladder_id>")
class LadderById(MethodView):
    @blp.response(200, TableSchema)
    @errors(blp, 404)
    def get(self, ladder_id: int):
        """The ladder and its live table (conservative rating first; who can play now)."""
        ladder, rows = usecases.live_table(db(), optional_account(), ladder_id, online(), settings().ladder_probe_s)
        return {"ladder": ladder_dict(ladder), "rows": rows}  # the schema reads each row's attributes


@blp.route("/<int:ladder_id>/close")
class LadderClose(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, LadderSchema)
    @errors(blp, 401, 403, 404, 409)
    def post(self, ladder_id: int):
        """Close the ladder (its owner, or an organizer): no new set."""
        return ladder_dict(usecases.close_ladder(db(), current_account(), ladder_id))


@blp.route("/<int:ladder_id>/members")
class LadderMembers(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(MemberSchema)
    @blp.response(204)
    @errors(blp, 401, 403, 404, 422)
    def post(self, data, ladder_id: int):
        """Let an account's bots enter this private ladder (its owner, or an organizer)."""
        usecases.add_member(db(), current_account(), ladder_id, data["account_id"])


@blp.route("/<int:ladder_id>/official")
class LadderOfficial(MethodView):
    @blp.response(200, OfficialSchema)
    @errors(blp, 404)
    def get(self, ladder_id: int):
        """The official table: the last batch fit over every rated set (Bradley-Terry), with the
        pairwise significance matrix of its top (``ARENA_LADDER_FIT_S``)."""
        usecases.ladder_for(db(), optional_account(), ladder_id)
        fitted = ladderboard.official(db(), ladder_id)
        if fitted is None:
            return {"computed_at": None, "sets": 0, "table": [], "matrix": {"entries": [], "z": [], "significant": []}}
        return {"computed_at": fitted.computed_at, "sets": fitted.sets, "table": fitted.table, "matrix": fitted.matrix}


@blp.route("/<int:ladder_id>/collusion")
class LadderCollusion(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, IntegritySchema)
    @errors(blp, 401, 403, 404)
    def get(self, ladder_id: int):
        """Operators: pairs of entries whose results together differ significantly from apart,
        and entries that score better in a set's last game than in its first (the same deal:
        they may remember it)."""
        return usecases.collusion_view(db(), current_account(), ladder_id)


@blp.route("/<int:ladder_id>/sets")
class LadderSets(MethodView):
    @blp.arguments(SetListArgs, location="query")
    @blp.response(200, SetSchema(many=True))
    @errors(blp, 404, 422)
    def get(self, args, ladder_id: int):
        """Sets playing now (``playing=true``) or done, newest first; a set's seed and salt once
        it is stored (its log verifies with them: ``arena logs verify --seed --salt``)."""
        rows = usecases.ladder_sets(
            db(),
            optional_account(),
            ladder_id,
            playing=args["playing"],
            bot_id=args["bot_id"],
            limit=args["limit"],
            before=args["before"],
        )
        return [r.to_dict() for r in rows]


@blp.route("/<int:ladder_id>/entries")
class LadderEntries(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(EntryCreateSchema)
    @blp.response(201, EntrySchema)
    @errors(blp, 401, 403, 404, 409, 422)
    def post(self, data, ladder_id: int):
        """Enter the caller's ready bot (a withdrawn entry comes back with its rating)."""
        entry = usecases.enter_ladder(db(), current_account(), ladder_id, data.pop("bot_id"), **data)
        return entry_dict(entry)


@blp.route("/<int:ladder_id>/entries/<int:bot_id>")
class LadderEntryById(MethodView):
    @blp.response(200, EntrySchema)
    @errors(blp, 404)
    def get(self, ladder_id: int, bot_id: int):
        """A bot's entry: status (why and since when it is paused), rating and its history,
        faults, health, and a new version's comparison with its parent."""
        return entry_dict(usecases.entry_view(db(), optional_account(), ladder_id, bot_id))


def _entry_action(name: str, act):
    class Action(MethodView):
        @blp.doc(security=BEARER)
        @blp.response(200, EntrySchema)
        @errors(blp, 401, 403, 404, 409)
        def post(self, ladder_id: int, bot_id: int):
            return entry_dict(act(db(), current_account(), ladder_id, bot_id))

    Action.post.__doc__ = {
        "pause": "Pause the bot's entry (its owner): never seated until resumed.",
        "resume": "Resume a paused entry; one paused by the health rule comes back after a passing check.",
        "withdraw": "Withdraw the bot from the ladder (its rating and history stay).",
    }[name]
    Action.__name__ = f"LadderEntry{name.title()}"
    blp.route(f"/<int:ladder_id>/entries/<int:bot_id>/{name}")(Action)


_entry_action("pause", usecases.pause_entry)
_entry_action("resume", usecases.resume_entry)
_entry_action("withdraw", usecases.withdraw_entry)
