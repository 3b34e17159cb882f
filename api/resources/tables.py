"""Tables where people play, against bots or each other (docs/tables.md).

``POST /api/v1/tables`` opens a table: with ``opponents`` (a person sits down against bots:
house sample bots by name, the caller's own bots whatever their check, other owners' ready
bots that people may play), started at once; with ``seats`` (organizers: a class table,
``"person"`` for each student's seat) it waits until students took every person's seat by
following its link (``join_key``: ``POST /tables/{id}/join``) and the organizer starts it.
A person plays through the table's page (``/ui/tables/{id}``), or here: ``GET
/tables/{id}/seat`` gives the frames of the caller's seat (:mod:`arena.tables`: the request it
is asked now, exactly what a bot in that seat gets) and ``POST /tables/{id}/answer`` a try
(``rid`` of that request, the ``action``: JSON as a bot answers); the worker's engine judges
each try (a refused one says its rule id on the seat's frames).

Limits: ``ARENA_TABLES_PER_ACCOUNT`` tables open per account, ``ARENA_TABLES_PER_CLIENT`` opened
from one client whatever its accounts, ``ARENA_TABLES_MAX`` on the site (429), and the
per-address limit of writes (``api.ratelimit``).
"""

from __future__ import annotations

import json
from typing import Any

import marshmallow as ma
import redis
from flask import url_for
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import validate
from sqlalchemy import select

import engine
from api.auth import BEARER, current_account, protect
from api.common import PageArgs, TextField, errors, page_schema
from api.database import db, dispatcher, redis_client, settings
from api.errors import abort
from api.ratelimit import client
from arena import access as policy
from arena import tables as seat_frames
from arena.db.models import Account, Bot, Match, MatchResult, Table, Tournament
from arena.people import tables_of
from arena.status import SeatKind, TableKind, values
from arena.usecases import Unavailable
from arena.usecases import tables as usecases

blp = Blueprint("tables", __name__, url_prefix="/api/v1/tables", description="Tables where people play")
protect(blp)


class PlayTableTimeRulesSchema(ma.Schema):
    initial = ma.fields.Float(
        validate=validate.Range(min=usecases.PERSON_INITIAL_S[0], max=usecases.PERSON_INITIAL_S[1]),
        metadata={"description": "seconds, default 300"},
    )
    increment = ma.fields.Float(
        validate=validate.Range(min=usecases.PERSON_INCREMENT_S[0], max=usecases.PERSON_INCREMENT_S[1]),
        metadata={"description": "seconds added per answer, default 30"},
    )
    cap = ma.fields.Float(
        validate=validate.Range(min=usecases.PERSON_INITIAL_S[0], max=usecases.PERSON_INITIAL_S[1]),
        metadata={"description": "seconds, default 300, at least initial"},
    )


_SEAT_SPEC = (
    "a house sample bot's name (random, greedy, heuristic, search) or a bot id: your own bots whatever their "
    "check, another owner's ready bot whose owner lets people play it (play_people)"
)


class PlayTableCreateSchema(ma.Schema):
    ruleset = ma.fields.String(required=True, validate=validate.OneOf(engine.RULESETS))
    options = ma.fields.Dict(load_default=dict, metadata={"description": "the rule set's options, as a tournament's"})
    opponents = ma.fields.List(
        ma.fields.Raw(),
        validate=validate.Length(min=1, max=3),
        metadata={"description": "a person's table: the other seats in order, each " + _SEAT_SPEC},
    )
    seats = ma.fields.List(
        ma.fields.Raw(),
        validate=validate.Length(min=2, max=4),
        metadata={"description": 'organizers, a class table: every seat in order, "person" or ' + _SEAT_SPEC},
    )
    seat = ma.fields.Integer(
        load_default=0, validate=validate.Range(min=0, max=3), metadata={"description": "a person's table: yours"}
    )
    games = ma.fields.Integer(
        load_default=2,
        validate=validate.Range(min=1, max=usecases.MAX_GAMES),
        metadata={"description": "Million Doubt games (seats swapped each game); one game otherwise"},
    )
    person_time_rules = ma.fields.Nested(PlayTableTimeRulesSchema, load_default=dict)
    seed = ma.fields.Integer(
        allow_none=True,
        load_default=None,
        validate=validate.Range(min=0, max=2**63 - 1),
        metadata={"description": "a chosen seed (practice a deal): the table is then rated nowhere"},
    )

    @ma.validates_schema
    def _one_kind(self, data: dict[str, Any], **_: Any) -> None:
        if ("opponents" in data) == ("seats" in data):
            raise ma.ValidationError("give opponents (a person's table) or seats (a class table), not both", "seats")


class PlayTableSeatSchema(ma.Schema):
    seat = ma.fields.Integer(required=True)
    kind = ma.fields.String(required=True, validate=validate.OneOf(values(SeatKind)))
    name = ma.fields.String(allow_none=True, metadata={"description": "the person's or the bot's name; null: free"})
    account_id = ma.fields.Integer(allow_none=True)
    bot_id = ma.fields.Integer(allow_none=True)
    house_bot = ma.fields.String(allow_none=True)


class PlayTableSchema(ma.Schema):
    id = ma.fields.Integer(required=True)
    kind = ma.fields.String(required=True, validate=validate.OneOf(values(TableKind)))
    tournament_id = ma.fields.Integer(required=True)
    match_id = ma.fields.Integer(allow_none=True, metadata={"description": "null until it starts"})
    opened_by = ma.fields.Integer(required=True)
    ruleset = ma.fields.String(required=True)
    options = ma.fields.Dict(required=True)
    status = ma.fields.String(
        required=True, metadata={"description": "created (seats to take), running, finished, cancelled"}
    )
    seats = ma.fields.List(ma.fields.Nested(PlayTableSeatSchema), required=True)
    time_rules = ma.fields.Dict(required=True, metadata={"description": "the bots' TIME-1 values, seconds"})
    person_time_rules = ma.fields.Dict(required=True, metadata={"description": "the people's, seconds"})
    games = ma.fields.Integer(required=True)
    seed_chosen = ma.fields.Boolean(required=True)
    join_key = ma.fields.String(
        allow_none=True, metadata={"description": "a class table's link key: its opener and organizers only"}
    )
    match_status = ma.fields.String(allow_none=True)
    scores = ma.fields.List(ma.fields.Float(), allow_none=True, metadata={"description": "per seat, once finished"})
    places = ma.fields.List(ma.fields.Integer(), allow_none=True)
    created_at = ma.fields.DateTime(required=True)


PlayTablePageSchema = page_schema(PlayTableSchema, "PlayTablePage")


class PlayTableJoinSchema(ma.Schema):
    key = TextField(required=True, min_length=1, max_length=64)


class PlayTableAnswerSchema(ma.Schema):
    rid = TextField(required=True, min_length=1, max_length=64, metadata={"description": "the request's id"})
    action = ma.fields.Dict(required=True, metadata={"description": "the answer, as a bot answers (docs/protocol.md)"})


class PlayTableFramesSchema(ma.Schema):
    match_id = ma.fields.Integer(required=True)
    seat = ma.fields.Integer(required=True)
    frames = ma.fields.List(
        ma.fields.Dict(),
        required=True,
        metadata={"description": "the seat's last view, notice and pending request (arena.tables), oldest first"},
    )


def seat_names(table: Table) -> list[str | None]:
    """Each seat's display name: the person's account name (None: free), the bot's name, the house bot's."""
    ids = [int(s["account_id"]) for s in table.seats if s.get("kind") == SeatKind.PERSON and s.get("account_id")]
    bots = [int(s["bot_id"]) for s in table.seats if s.get("kind") == SeatKind.BOT]
    people = dict(db().execute(select(Account.id, Account.name).where(Account.id.in_(ids))).all()) if ids else {}
    names = dict(db().execute(select(Bot.id, Bot.name).where(Bot.id.in_(bots))).all()) if bots else {}
    out: list[str | None] = []
    for s in table.seats:
        kind = s.get("kind")
        if kind == SeatKind.PERSON:
            out.append(people.get(int(s["account_id"])) if s.get("account_id") else None)
        elif kind == SeatKind.BOT:
            out.append(names.get(int(s["bot_id"]), f"bot {s['bot_id']}"))
        else:
            out.append(str(s.get("house_bot")))
    return out


def table_dict(table: Table, viewer: Account) -> dict[str, Any]:
    """The API's table object as ``viewer`` may read it."""
    t: Tournament = table.tournament
    m = db().scalar(select(Match).where(Match.tournament_id == t.id))
    res = db().get(MatchResult, m.id) if m is not None else None
    names = seat_names(table)
    seats = []
    for i, s in enumerate(table.seats):
        seats.append(
            {
                "seat": i,
                "kind": s.get("kind"),
                "name": names[i],
                "account_id": s.get("account_id"),
                "bot_id": s.get("bot_id"),
                "house_bot": s.get("house_bot"),
            }
        )
    sees_key = table.opened_by == viewer.id or policy.is_organizer(viewer)
    return {
        "id": table.id,
        "kind": table.kind,
        "tournament_id": t.id,
        "match_id": m.id if m is not None else None,
        "opened_by": table.opened_by,
        "ruleset": t.ruleset,
        "options": t.options,
        "status": t.status,
        "seats": seats,
        "time_rules": t.time_rules,
        "person_time_rules": table.person_time_rules,
        "games": t.games_per_pairing,
        "seed_chosen": t.seed_chosen,
        "join_key": table.join_key if sees_key else None,
        "match_status": m.status if m is not None else None,
        "scores": list(res.scores) if res is not None else None,
        "places": list(res.places) if res is not None else None,
        "created_at": table.created_at,
    }


def readable_table(table_id: int, account: Account) -> Table:
    """The table if ``account`` may read it (at it, or an organizer); 404 otherwise."""
    table = db().get(Table, table_id)
    if table is None or not policy.can_view_tournament(db(), account, table.tournament):
        abort(404, f"table {table_id} not found")
    return table


def limits() -> dict[str, Any]:
    """The limits of an open: per account, per client (the caller's) and on the site."""
    cfg = settings()
    return {
        "tables_per_account": cfg.tables_per_account,
        "tables_max": cfg.tables_max,
        "tables_per_client": cfg.tables_per_client,
        "client": client(),
    }


def table_path(table_id: int) -> str:
    return url_for("tables.TableById", table_id=table_id)


@blp.route("")
class Tables(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(PlayTableCreateSchema)
    @blp.response(201, PlayTableSchema)
    @errors(blp, 401, 403, 409, 429, 503)
    def post(self, data):
        """Open a table (module docstring); a person's table starts at once.

        403: ``seats`` (a class table) from a contestant; 429 (``Retry-After``): the caller has
        ``ARENA_TABLES_PER_ACCOUNT`` tables open, its address ``ARENA_TABLES_PER_CLIENT``
        (whatever its accounts), or the site ``ARENA_TABLES_MAX``; 503: no worker can be
        reached (the table is cancelled)."""
        account = current_account()
        common = {
            "ruleset": data["ruleset"],
            "options": data["options"],
            "games": data["games"],
            "person_time_rules": data["person_time_rules"],
            "seed": data["seed"],
            **limits(),
        }
        if "seats" in data:
            table = usecases.open_class_table(db(), account, seats=data["seats"], **common)
        else:
            table = usecases.open_solo_table(
                db(), dispatcher(), account, opponents=data["opponents"], seat=data["seat"], **common
            )
        return table_dict(table, account), 201, {"Location": table_path(table.id)}

    @blp.doc(security=BEARER)
    @blp.arguments(PageArgs, location="query")
    @blp.response(200, PlayTablePageSchema)
    @errors(blp, 401)
    def get(self, args):
        """The tables you sat at or opened, newest first."""
        account = current_account()
        rows, total = tables_of(db(), account.id, page=args["page"], per_page=args["per_page"])
        return {
            "items": [table_dict(r.table, account) for r in rows],
            "total": total,
            "page": args["page"],
            "per_page": args["per_page"],
        }


@blp.route("/<int(min=1, max=2147483647):table_id>")
class TableById(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, PlayTableSchema)
    @errors(blp, 401, 404)
    def get(self, table_id):
        """A table (its opener, its people, the owners of its bots, organizers)."""
        account = current_account()
        return table_dict(readable_table(table_id, account), account)


@blp.route("/<int(min=1, max=2147483647):table_id>/join")
class TableJoin(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(PlayTableJoinSchema)
    @blp.response(200, PlayTableSchema)
    @errors(blp, 401, 404, 409, 429)
    def post(self, data, table_id):
        """Take a free person's seat of a class table by its link key (the seat held already, if any).

        404: no such table or a wrong key; 409: it started, or every seat is taken."""
        account = current_account()
        usecases.join_table(db(), account, table_id, data["key"], tables_per_account=settings().tables_per_account)
        return table_dict(usecases.table_for(db(), table_id), account)


@blp.route("/<int(min=1, max=2147483647):table_id>/start")
class TableStart(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(202, PlayTableSchema)
    @errors(blp, 401, 403, 404, 409, 503)
    def post(self, table_id):
        """Start a class table once every person's seat is taken (its opener, organizers)."""
        account = current_account()
        return table_dict(usecases.start_class_table(db(), dispatcher(), account, table_id), account)


@blp.route("/<int(min=1, max=2147483647):table_id>/cancel")
class TableCancel(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, PlayTableSchema)
    @errors(blp, 401, 403, 404, 409)
    def post(self, table_id):
        """Cancel a table not over (its opener, organizers): a match playing plays out."""
        account = current_account()
        return table_dict(usecases.cancel_table(db(), account, table_id), account)


def seat_frames_of(table_id: int, account: Account) -> dict[str, Any]:
    """``{"match_id", "seat", "frames"}`` of ``account``'s seat at a running table; 403/404/409/503."""
    mid, seat = usecases.playing_seat(db(), account, readable_table(table_id, account))
    db().rollback()
    client = redis_client()
    if client is None:
        raise Unavailable("tables need Redis (ARENA_BROKER_URL)", 5)
    try:
        frames = seat_frames.snapshot(client, mid, seat)
    except redis.RedisError as exc:
        raise Unavailable(f"the tables' relay (Redis) cannot be reached: {type(exc).__name__}", 2) from None
    return {"match_id": mid, "seat": seat, "frames": [json.loads(f) for f in frames]}


@blp.route("/<int(min=1, max=2147483647):table_id>/seat")
class TableSeat(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, PlayTableFramesSchema)
    @errors(blp, 401, 403, 404, 409, 503)
    def get(self, table_id):
        """Your seat's frames now: its last view, notice, the request you are asked (if any) and
        the engine's last refusal of a try at it."""
        return seat_frames_of(table_id, current_account())


@blp.route("/<int(min=1, max=2147483647):table_id>/answer")
class TableAnswer(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(PlayTableAnswerSchema)
    @blp.response(202, PlayTableAnswerSchema)
    @errors(blp, 401, 403, 404, 409, 503)
    def post(self, data, table_id):
        """Try an answer to the request you are asked now (its ``rid``): the worker's engine
        judges it and says so on your seat's frames (``accepted``, or ``refused`` with the
        rule's id, and you are asked on). 422 on ``rid``: not the request you are asked now."""
        answer_for(table_id, current_account(), data["rid"], data["action"])
        return data, 202


def answer_for(table_id: int, account: Account, rid: str, action: dict[str, Any]) -> None:
    """Push ``account``'s try (:func:`arena.usecases.tables.answer`); the page's route uses it too."""
    client = redis_client()
    if client is None:
        raise Unavailable("tables need Redis (ARENA_BROKER_URL)", 5)
    readable_table(table_id, account)
    usecases.answer(db(), client, account, table_id, rid, json.dumps(action, separators=(",", ":")).encode())


__all__ = ["answer_for", "blp", "readable_table", "seat_frames_of", "seat_names", "table_dict"]
