"""Bots: register, list, read, change, delete, and check (health + conformance).

A new or changed bot (URL or rule sets) is ``unchecked``; ``POST /bots/{id}/check`` makes it
``ready`` or ``failed``; only ``ready`` bots may enter a tournament. The signing ``secret``
is shown once, in the response to ``POST /bots``. Deleting marks the bot ``deleted`` (its
matches and logs keep referring to it) and hides it.
"""

from __future__ import annotations

from datetime import timedelta

import marshmallow as ma
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import validate
from sqlalchemy import func, select

import engine
from api.auth import BEARER, current_account, protect
from api.common import IdField, PageArgs, TextField, errors, page_schema, paginate_query
from api.database import db, settings
from api.errors import abort, field_error
from arena.core.access import is_organizer
from arena.core.conformance import check_bot
from arena.core.db.models import Bot, utcnow
from arena.core.security import SECRET_GRACE_S, new_secret
from arena.core.url_policy import MAX_URL_LENGTH, BotUrlError, check_bot_url

blp = Blueprint("bots", __name__, url_prefix="/api/v1/bots", description="Contestants' bots")
protect(blp)


class BotCreateSchema(ma.Schema):
    name = TextField(required=True, min_length=1, max_length=64)
    url = TextField(required=True, min_length=1, max_length=MAX_URL_LENGTH,
                    metadata={"description": "http(s) endpoint of the bot; public hosts only"})
    rulesets = ma.fields.List(ma.fields.String(validate=validate.OneOf(engine.RULESETS)),
                              required=True, validate=validate.Length(min=1, max=len(engine.RULESETS)))


class BotPatchSchema(ma.Schema):
    name = TextField(min_length=1, max_length=64)
    url = TextField(min_length=1, max_length=MAX_URL_LENGTH)
    rulesets = ma.fields.List(ma.fields.String(validate=validate.OneOf(engine.RULESETS)),
                              validate=validate.Length(min=1, max=len(engine.RULESETS)))


class BotSchema(ma.Schema):
    id = ma.fields.Integer(required=True)
    owner_id = ma.fields.Integer(required=True)
    name = ma.fields.String(required=True)
    url = ma.fields.String(required=True)
    rulesets = ma.fields.List(ma.fields.String(), required=True)
    status = ma.fields.String(required=True, validate=validate.OneOf(("unchecked", "ready", "failed")))
    last_check_at = ma.fields.DateTime(allow_none=True)
    last_check = ma.fields.Dict(allow_none=True)
    created_at = ma.fields.DateTime(required=True)
    updated_at = ma.fields.DateTime(required=True)


class BotSecretSchema(BotSchema):
    secret = ma.fields.String(required=True, metadata={"description": "HMAC signing secret, shown once"})


class BotListArgs(PageArgs):
    owner_id = IdField(metadata={"description": "organizers only: filter by owner"})


BotPageSchema = page_schema(BotSchema, "BotPage")


def _rulesets(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):
        field_error("rulesets", "rule sets must not repeat")
    return [r for r in engine.RULESETS if r in values]


def _url(url: str) -> str:
    try:
        return check_bot_url(url, allow_private=settings().allow_private_bot_urls)
    except BotUrlError as exc:
        field_error("url", str(exc))


def get_bot_for(bot_id: int, *, write: bool) -> Bot:
    """The bot if the caller may see it (owner, or organizer when not ``write``); 404/403."""
    account = current_account()
    bot = db().get(Bot, bot_id)
    if bot is None or bot.status == "deleted":
        abort(404, f"bot {bot_id} not found")
    if bot.owner_id != account.id and (write or not is_organizer(account)):
        abort(403, f"bot {bot_id} belongs to another account")
    return bot


@blp.route("")
class Bots(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(BotCreateSchema)
    @blp.response(201, BotSecretSchema)
    @errors(blp, 401)
    def post(self, data):
        """Register a bot; the response holds its signing ``secret`` (shown this once)."""
        account = current_account()
        bot = Bot(owner_id=account.id, name=data["name"], url=_url(data["url"]),
                  rulesets=_rulesets(data["rulesets"]), secret=new_secret(), status="unchecked")
        db().add(bot)
        db().commit()
        return bot

    @blp.doc(security=BEARER)
    @blp.arguments(BotListArgs, location="query")
    @blp.response(200, BotPageSchema)
    @errors(blp, 401, 403)
    def get(self, args):
        """Your bots (organizers: every bot, optionally ``owner_id``), paginated."""
        account = current_account()
        cond = [Bot.status != "deleted"]
        if is_organizer(account):
            if "owner_id" in args:
                cond.append(Bot.owner_id == args["owner_id"])
        elif "owner_id" in args and args["owner_id"] != account.id:
            abort(403, "only organizers may list other accounts' bots")
        else:
            cond.append(Bot.owner_id == account.id)
        items, total = paginate_query(
            db(), select(Bot).where(*cond).order_by(Bot.id),
            select(func.count()).select_from(Bot).where(*cond), args["page"], args["per_page"])
        return {"items": items, "total": total, "page": args["page"], "per_page": args["per_page"]}


@blp.route("/<int(min=1, max=2147483647):bot_id>")
class BotById(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, BotSchema)
    @errors(blp, 401, 403, 404)
    def get(self, bot_id):
        """One bot (owner or organizer)."""
        return get_bot_for(bot_id, write=False)

    @blp.doc(security=BEARER)
    @blp.arguments(BotPatchSchema)
    @blp.response(200, BotSchema)
    @errors(blp, 401, 403, 404)
    def patch(self, data, bot_id):
        """Change name, URL or rule sets (owner). A new URL or rule sets needs a new check."""
        bot = get_bot_for(bot_id, write=True)
        if "name" in data:
            bot.name = data["name"]
        if "url" in data and data["url"] != bot.url:
            bot.url = _url(data["url"])
            bot.status = "unchecked"
        if "rulesets" in data:
            rulesets = _rulesets(data["rulesets"])
            if rulesets != bot.rulesets:
                bot.rulesets = rulesets
                bot.status = "unchecked"
        bot.updated_at = utcnow()
        db().commit()
        return bot

    @blp.doc(security=BEARER)
    @blp.response(204)
    @errors(blp, 401, 403, 404)
    def delete(self, bot_id):
        """Delete a bot (owner). Its past matches and logs stay; it can no longer enter tournaments."""
        bot = get_bot_for(bot_id, write=True)
        bot.status = "deleted"
        bot.updated_at = utcnow()
        db().commit()
        return None


@blp.route("/<int(min=1, max=2147483647):bot_id>/check")
class BotCheck(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, BotSchema)
    @errors(blp, 401, 403, 404)
    def post(self, bot_id):
        """Run the health check (and the conformance game, see arena.core.conformance) and record it.

        The bot becomes ``ready`` if it passes, ``failed`` otherwise; ``last_check`` holds the
        details (HTTP status, elapsed milliseconds, name and protocols announced, error).
        """
        bot = get_bot_for(bot_id, write=True)
        url, rulesets, secret = bot.url, list(bot.rulesets), bot.secret
        db().commit()  # do not hold a transaction open during the network call
        outcome = check_bot(url, rulesets, allow_private=settings().allow_private_bot_urls, secret=secret)
        bot = db().get(Bot, bot_id)
        if bot.url == url and bot.rulesets == rulesets and bot.status != "deleted":
            bot.status = "ready" if outcome["ok"] else "failed"
        bot.last_check = outcome
        bot.last_check_at = utcnow()
        db().commit()
        return bot


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
        bot = get_bot_for(bot_id, write=True)
        bot.previous_secret = bot.secret
        bot.previous_secret_until = utcnow() + timedelta(seconds=SECRET_GRACE_S)
        bot.secret = new_secret()
        bot.updated_at = utcnow()
        db().commit()
        return bot
