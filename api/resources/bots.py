"""Bots: register, list, read, change, delete, and check (health + conformance).

A bot is reached one of two ways (``transport``): ``http``, the arena calls its ``url``;
``connect``, the bot dials out to a gateway (docs/protocol.md) and has no URL (``url`` is
null); its ``presence`` (connected, how many connections, since when) is read from Redis
(null when Redis cannot be reached, and for a bot the arena calls). A new or changed bot
(URL, transport or rule sets) is ``unchecked``; ``POST /bots/{id}/check`` answers
202 at once with the check (its URL in ``Location``), the bot is ``checking`` while a worker
runs it (:mod:`arena.conformance`), then ``ready`` or ``failed``; only ``ready`` bots may
enter a tournament. One check per bot at a time (409), at most
:data:`~arena.lifecycle.MAX_CHECKS_PER_ACCOUNT` per account (429). The signing
``secret`` is shown once, in the response to ``POST /bots``. A bot entered in a created or
running tournament cannot change its URL or transport (409). Deleting marks the bot ``deleted`` (its
matches and logs keep referring to it) and hides it; its seats in matches not yet played
forfeit without a request. Every status change is in :mod:`arena.lifecycle`; each view
parses, calls its use case (:mod:`arena.usecases.bots`) and returns.
"""

from __future__ import annotations

import marshmallow as ma
from flask import url_for
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import validate
from sqlalchemy import select

import engine
from api.auth import BEARER, current_account, protect
from api.common import IdField, PageArgs, TextField, errors, page_schema
from api.database import db, dispatcher, redis_client, settings
from api.errors import abort
from api.ratelimit import client
from arena.db.models import Bot, BotCheck
from arena.status import LISTED_BOT_STATUSES, BotTransport, values
from arena.url_policy import MAX_URL_LENGTH
from arena.usecases import bots as usecases

blp = Blueprint("bots", __name__, url_prefix="/api/v1/bots", description="Contestants' bots")
protect(blp)


TRANSPORT_DESCRIPTION = (
    "how the arena reaches the bot: http (the arena calls its url) or connect "
    "(the bot dials out to a gateway; no url, works behind NAT)"
)


class BotCreateSchema(ma.Schema):
    name = TextField(required=True, min_length=1, max_length=64)
    transport = ma.fields.String(
        load_default=BotTransport.HTTP.value,
        validate=validate.OneOf(values(BotTransport)),
        metadata={"description": TRANSPORT_DESCRIPTION + "; default http"},
    )
    url = TextField(
        allow_none=True,
        min_length=1,
        max_length=MAX_URL_LENGTH,
        metadata={
            "description": "http(s) endpoint of the bot; public hosts only. Required for transport http, "
            "absent (or null) for transport connect"
        },
    )
    rulesets = ma.fields.List(
        ma.fields.String(validate=validate.OneOf(engine.RULESETS)),
        required=True,
        validate=validate.Length(min=1, max=len(engine.RULESETS)),
    )
    parent_id = IdField(
        strict=True,
        load_default=None,
        metadata={
            "description": "register a new version of one of your bots: once its check passes it takes the "
            "parent's place on every ladder the parent is entered in (from the parent's mean, its uncertainty "
            "reset) and plays it on identical deals"
        },
    )


PLAY_PEOPLE_DESCRIPTION = (
    "people may play this bot at their tables (docs/tables.md) once it passed its check; its owner always may"
)


class BotPatchSchema(ma.Schema):
    name = TextField(min_length=1, max_length=64)
    play_people = ma.fields.Boolean(metadata={"description": PLAY_PEOPLE_DESCRIPTION})
    transport = ma.fields.String(
        validate=validate.OneOf(values(BotTransport)),
        metadata={"description": TRANSPORT_DESCRIPTION + "; a new transport needs a new check (to http: give url)"},
    )
    url = TextField(allow_none=True, min_length=1, max_length=MAX_URL_LENGTH)
    rulesets = ma.fields.List(
        ma.fields.String(validate=validate.OneOf(engine.RULESETS)),
        validate=validate.Length(min=1, max=len(engine.RULESETS)),
    )


class BotSchema(ma.Schema):
    id = ma.fields.Integer(required=True)
    owner_id = ma.fields.Integer(required=True)
    name = ma.fields.String(required=True)
    transport = ma.fields.String(
        required=True, validate=validate.OneOf(values(BotTransport)), metadata={"description": TRANSPORT_DESCRIPTION}
    )
    url = ma.fields.String(required=True, allow_none=True, metadata={"description": "null for transport connect"})
    presence = ma.fields.Method(
        "_presence",
        allow_none=True,
        metadata={
            "description": "transport connect: {connected, connections, since (ISO 8601 UTC of the oldest "
            "live connection, or null)}; null for transport http, or when it cannot be read (Redis down)"
        },
    )
    rulesets = ma.fields.List(ma.fields.String(), required=True)
    parent_id = ma.fields.Integer(allow_none=True, metadata={"description": "the bot this one is a new version of"})
    play_people = ma.fields.Boolean(required=True, metadata={"description": PLAY_PEOPLE_DESCRIPTION})
    status = ma.fields.String(required=True, validate=validate.OneOf(values(LISTED_BOT_STATUSES)))
    last_check_at = ma.fields.DateTime(allow_none=True)
    last_check = ma.fields.Dict(allow_none=True)
    warnings = ma.fields.Method(
        "_warnings",
        metadata={"description": "warnings of the last check, e.g. a badly signed request not answered 401"},
    )
    max_concurrency = ma.fields.Integer(
        dump_only=True,
        dump_default=lambda: settings().bot_max_concurrency,
        metadata={
            "description": "most requests the arena sends to this "
            "bot's endpoint at once (shared by every bot registered "
            "at the same endpoint; ARENA_BOT_MAX_CONCURRENCY)"
        },
    )
    created_at = ma.fields.DateTime(required=True)
    updated_at = ma.fields.DateTime(required=True)

    def _warnings(self, obj) -> list[str]:
        return list((obj.last_check or {}).get("warnings") or [])

    def _presence(self, obj) -> dict | None:
        return getattr(obj, PRESENCE_ATTR, None)


#: The attribute :func:`with_presence` sets on each bot it answers with.
PRESENCE_ATTR = "presence"


def with_presence(bots: list[Bot]) -> list[Bot]:
    """``bots``, each with its presence (:func:`arena.usecases.bots.presence_of`, one Redis
    round trip) for :class:`BotSchema` to answer."""
    found = usecases.presence_of(redis_client(), bots)
    for b in bots:
        setattr(b, PRESENCE_ATTR, found[b.id])
    return bots


class BotCheckSchema(ma.Schema):
    id = ma.fields.Integer(required=True)
    bot_id = ma.fields.Integer(required=True)
    status = ma.fields.String(
        required=True,
        metadata={"description": "queued, running, passed, failed, or error (the check could not be run)"},
    )
    url = ma.fields.String(
        required=True, allow_none=True, metadata={"description": "the bot URL checked (null: a bot that connects)"}
    )
    rulesets = ma.fields.List(ma.fields.String(), required=True)
    progress = ma.fields.Dict(
        allow_none=True,
        metadata={
            "description": "{stage, rulesets: {ruleset: {kind: {asked, faults}}}}: decisions asked per kind so far"
        },
    )
    result = ma.fields.Dict(
        allow_none=True,
        metadata={
            "description": "the outcome when done: ok, health, signature, conformance per rule set, warnings, "
            "warning_codes (each warning as {code, params}, same order); a bot that connects and was not "
            "connected: health.step (never_connected, auth_failed, refused, dropped, connected, unknown) and "
            "health.error_code ({code, params}) say which step it reached; conformance.<ruleset>.faults: "
            "{kind, code, params, rule, detail, received, elapsed_ms, decision, probe} (code and params: the "
            'fault\'s code and its parameters, docs/protocol.md "Fault codes"; detail: their English text)'
        },
    )
    warnings = ma.fields.Method("_warnings", metadata={"description": "warnings of the result (passing checks too)"})
    error = ma.fields.String(allow_none=True)
    attempts = ma.fields.Integer(required=True)
    check_url = ma.fields.Method("_url", metadata={"description": "where to follow this check"})
    created_at = ma.fields.DateTime(required=True)
    started_at = ma.fields.DateTime(allow_none=True)
    finished_at = ma.fields.DateTime(allow_none=True)

    def _warnings(self, obj) -> list[str]:
        return list((obj.result or {}).get("warnings") or [])

    def _url(self, obj) -> str:
        return check_path(obj.bot_id, obj.id)


def check_path(bot_id: int, check_id: int) -> str:
    """The URL path of a bot check."""
    return url_for("bots.BotCheckById", bot_id=bot_id, check_id=check_id)


class BotSecretSchema(BotSchema):
    secret = ma.fields.String(required=True, metadata={"description": "HMAC signing secret, shown once"})


class BotListArgs(PageArgs):
    owner_id = IdField(metadata={"description": "organizers only: filter by owner"})


BotPageSchema = page_schema(BotSchema, "BotPage")


def get_bot_for(bot_id: int, *, write: bool) -> Bot:
    """The bot if the caller may see it (owner, or organizer when not ``write``); 404/403."""
    return usecases.bot_for(db(), current_account(), bot_id, write=write)


@blp.route("")
class Bots(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(BotCreateSchema)
    @blp.response(201, BotSecretSchema)
    @errors(blp, 401, 409)
    def post(self, data):
        """Register a bot; the response holds its signing ``secret`` (shown this once).

        409: the account already holds ``ARENA_MAX_BOTS_PER_ACCOUNT`` bots (50 by default;
        deleted ones do not count)."""
        cfg = settings()
        bot = usecases.register_bot(
            db(),
            current_account(),
            allow_private=cfg.allow_private_bot_urls,
            max_bots=cfg.max_bots_per_account,
            **data,
        )
        return with_presence([bot])[0]

    @blp.doc(security=BEARER)
    @blp.arguments(BotListArgs, location="query")
    @blp.response(200, BotPageSchema)
    @errors(blp, 401, 403)
    def get(self, args):
        """Your bots (organizers: every bot, optionally ``owner_id``), paginated."""
        items, total = usecases.list_bots(
            db(), current_account(), owner_id=args.get("owner_id"), page=args["page"], per_page=args["per_page"]
        )
        return {"items": with_presence(items), "total": total, "page": args["page"], "per_page": args["per_page"]}


@blp.route("/<int(min=1, max=2147483647):bot_id>")
class BotById(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, BotSchema)
    @errors(blp, 401, 403, 404)
    def get(self, bot_id):
        """One bot (owner or organizer); a bot that connects with its ``presence``."""
        return with_presence([get_bot_for(bot_id, write=False)])[0]

    @blp.doc(security=BEARER)
    @blp.arguments(BotPatchSchema)
    @blp.response(200, BotSchema)
    @errors(blp, 401, 403, 404, 409)
    def patch(self, data, bot_id):
        """Change name, URL, transport, rule sets, or whether people may play the bot at their
        tables (``play_people``) (owner). A new URL, transport or rule sets needs a new check.
        To ``connect``: no ``url`` (the URL is dropped); to ``http``: give ``url``.

        409: a URL, transport or rule-set change while a check runs, or a URL or transport
        change while the bot is entered in a created or running tournament (its matches only
        reach it the way that passed the check; register another bot, or delete this one to
        withdraw it)."""
        bot = usecases.change_bot(
            db(), current_account(), bot_id, allow_private=settings().allow_private_bot_urls, **data
        )
        return with_presence([bot])[0]

    @blp.doc(security=BEARER)
    @blp.response(204)
    @errors(blp, 401, 403, 404)
    def delete(self, bot_id):
        """Delete a bot (owner). Its past matches and logs stay; it can no longer enter
        tournaments; its matches not yet played in the tournaments it had entered are
        forfeits (every game of its seat, FAULT-2/3), and in its matches playing now its seat
        forfeits from its next decision: once this answers, at most the one request already in
        flight reaches it, and its URL is never called again."""
        usecases.delete_bot(db(), current_account(), bot_id, redis_client())
        return None


def _latest_check(bot_id: int) -> BotCheck | None:
    return db().scalars(select(BotCheck).where(BotCheck.bot_id == bot_id).order_by(BotCheck.id.desc()).limit(1)).first()


@blp.route("/<int(min=1, max=2147483647):bot_id>/check")
class BotCheckLatest(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(
        202, BotCheckSchema, headers={"Location": {"schema": {"type": "string"}, "description": "the check's URL"}}
    )
    @errors(blp, 401, 403, 404, 409, 429, 503)
    def post(self, bot_id):
        """Start a check of the bot (owner): 202 at once; follow ``check_url`` (also ``Location``).

        A worker runs the URL check, the health check, one badly signed request (a bot that
        answers it with anything but 401 passes with a warning) and short conformance games
        asking every decision kind of each rule set (arena.conformance). The bot is
        ``checking`` until the check is done, then ``ready`` or ``failed``. 409 while the bot
        has a check queued or running (its URL in ``Location``); 429 (``Retry-After``) when
        the account already has 2 checks queued or running, or its checks ran
        ``ARENA_CHECK_SECONDS_PER_HOUR`` (900) seconds in the last hour; 503 when no worker can be
        reached (nothing changed)."""
        check = usecases.check_bot(
            db(),
            dispatcher(),
            current_account(),
            bot_id,
            max_seconds_per_hour=settings().check_seconds_per_hour,
            client=client(),
        )
        return check, 202, {"Location": check_path(bot_id, check.id)}

    @blp.doc(security=BEARER)
    @blp.response(200, BotCheckSchema)
    @errors(blp, 401, 403, 404)
    def get(self, bot_id):
        """The bot's latest check (owner or organizer): status, progress per decision kind, result."""
        get_bot_for(bot_id, write=False)
        check = _latest_check(bot_id)
        if check is None:
            abort(404, f"bot {bot_id} has never been checked")
        return check


@blp.route("/<int(min=1, max=2147483647):bot_id>/checks/<int(min=1, max=2147483647):check_id>")
class BotCheckById(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, BotCheckSchema)
    @errors(blp, 401, 403, 404)
    def get(self, bot_id, check_id):
        """One check of the bot (owner or organizer)."""
        get_bot_for(bot_id, write=False)
        check = db().get(BotCheck, check_id)
        if check is None or check.bot_id != bot_id:
            abort(404, f"bot {bot_id} has no check {check_id}")
        return check


@blp.route("/<int(min=1, max=2147483647):bot_id>/secret")
class BotSecret(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, BotSecretSchema)
    @errors(blp, 401, 403, 404)
    def post(self, bot_id):
        """Rotate the signing secret (owner); the response holds the new ``secret`` (shown once).

        The arena signs with the new secret at once and, for 24 hours (SECRET_GRACE_S), also
        sends the previous secret's signature (``X-Arena-Signature-Previous``), which the SDK
        accepts: deploy the new secret to the bot within that time."""
        return usecases.rotate_secret(db(), current_account(), bot_id)
