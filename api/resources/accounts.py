"""Accounts: ``POST /api/v1/accounts`` (public sign-up, contestant role) and ``GET /accounts/me``.

The token is returned once and stored hashed; ``POST /api/v1/accounts/me/token`` replaces it
(optionally with an expiry). The organizer role is granted only by the
operator command ``arena accounts create --organizer NAME``.

``/accounts/me/webhook``: where the account hears of its bots' checks, of a bot entered in a
tournament about to start while it is offline, and of its tournaments' ends (a signed JSON
POST per event, sent by the workers: :mod:`arena.webhooks`, docs/webhooks.md). ``PUT`` sets
the URL (the bots' URL policy) and answers a fresh signing secret, shown once; ``GET`` shows
it with the last delivery's outcome; ``DELETE`` removes it; ``POST .../test`` sends a
``ping`` event.
"""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import validate

from api.auth import BEARER, current_account
from api.common import TextField, errors
from api.database import db, dispatcher, settings
from api.errors import abort
from arena import webhooks
from arena.accounts import NAME_RE, NameTaken, create_account, rotate_token
from arena.security import MAX_TOKEN_DAYS
from arena.url_policy import MAX_URL_LENGTH
from arena.usecases import webhooks as usecases

blp = Blueprint("accounts", __name__, url_prefix="/api/v1/accounts", description="Accounts and API tokens")


class AccountCreateSchema(ma.Schema):
    name = ma.fields.String(
        required=True,
        validate=validate.Regexp(
            NAME_RE, error="must be 1-64 letters, digits, '_', '.', '-', starting with a letter or digit"
        ),
    )


class AccountSchema(ma.Schema):
    id = ma.fields.Integer(required=True)
    name = ma.fields.String(required=True)
    role = ma.fields.String(required=True, validate=validate.OneOf(("contestant", "organizer")))
    created_at = ma.fields.DateTime(required=True)
    token_expires_at = ma.fields.DateTime(allow_none=True, metadata={"description": "null: no expiry"})


class TokenRotateSchema(ma.Schema):
    expires_in_days = ma.fields.Integer(
        strict=True,
        allow_none=True,
        load_default=None,
        validate=validate.Range(min=1, max=MAX_TOKEN_DAYS),
        metadata={"description": "lifetime of the new token in days (1..3650); omitted or null: no expiry"},
    )


class AccountTokenSchema(AccountSchema):
    token = ma.fields.String(required=True, metadata={"description": "bearer token, shown once"})


@blp.route("")
class Accounts(MethodView):
    @blp.arguments(AccountCreateSchema)
    @blp.response(201, AccountTokenSchema)
    @errors(blp, 409)
    def post(self, data):
        """Create a contestant account; the response holds its bearer token (shown this once)."""
        try:
            account, token = create_account(db(), data["name"])
        except NameTaken:
            abort(409, f"account name {data['name']!r} is taken", name="taken")
        return {
            "id": account.id,
            "name": account.name,
            "role": account.role,
            "created_at": account.created_at,
            "token_expires_at": None,
            "token": token,
        }


@blp.route("/me")
class Me(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, AccountSchema)
    @errors(blp, 401)
    def get(self):
        """The account of the bearer token."""
        return current_account()


@blp.route("/me/token")
class MyToken(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(TokenRotateSchema, required=False)
    @blp.response(200, AccountTokenSchema)
    @errors(blp, 401)
    def post(self, data):
        """Replace the bearer token: the response holds the new one (shown this once); the old
        token stops working at once (API and web sessions signed in with it alike).
        ``expires_in_days`` gives the new token an expiry."""
        account = current_account()
        account, token = rotate_token(db(), account, expires_in_days=(data or {}).get("expires_in_days"))
        return {
            "id": account.id,
            "name": account.name,
            "role": account.role,
            "created_at": account.created_at,
            "token_expires_at": account.token_expires_at,
            "token": token,
        }


class WebhookSetSchema(ma.Schema):
    url = TextField(
        required=True,
        min_length=1,
        max_length=MAX_URL_LENGTH,
        metadata={"description": "http(s) URL the events are POSTed to; public hosts only (as a bot's URL)"},
    )


class WebhookSchema(ma.Schema):
    url = ma.fields.String(required=True)
    events = ma.fields.List(
        ma.fields.String(validate=validate.OneOf(webhooks.EVENTS)),
        required=True,
        metadata={"description": "the events the webhook hears (docs/webhooks.md)"},
    )
    last_delivery = ma.fields.Dict(
        allow_none=True,
        metadata={
            "description": "the last attempt: {event, id, at, attempt, status (HTTP, null: no answer), ok, "
            "error, final}; null before the first"
        },
    )


class WebhookSecretSchema(WebhookSchema):
    secret = ma.fields.String(
        required=True,
        metadata={"description": "signs every delivery (X-Arena-Signature, as a bot request); shown this once"},
    )


class WebhookTestSchema(ma.Schema):
    id = ma.fields.String(required=True, metadata={"description": "the ping event's id (X-Arena-Delivery)"})


def _webhook(account, secret: str | None = None) -> dict:
    out = {"url": account.webhook_url, "events": list(webhooks.EVENTS), "last_delivery": account.webhook_last}
    if secret is not None:
        out["secret"] = secret
    return out


@blp.route("/me/webhook")
class MyWebhook(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, WebhookSchema)
    @errors(blp, 401, 404)
    def get(self):
        """The account's webhook and its last delivery; 404 when it has none."""
        account = current_account()
        db().refresh(account)
        if not account.webhook_url:
            abort(404, "this account has no webhook")
        return _webhook(account)

    @blp.doc(security=BEARER)
    @blp.arguments(WebhookSetSchema)
    @blp.response(200, WebhookSecretSchema)
    @errors(blp, 401)
    def put(self, data):
        """Set the webhook's URL (422 naming ``url`` when the URL policy refuses it); the
        answer holds a fresh signing secret, shown this once (the previous one stops signing)."""
        account, secret = usecases.set_webhook(
            db(), current_account(), data["url"], allow_private=settings().allow_private_bot_urls
        )
        return _webhook(account, secret)

    @blp.doc(security=BEARER)
    @blp.response(204)
    @errors(blp, 401)
    def delete(self):
        """Remove the webhook: nothing more is sent."""
        usecases.clear_webhook(db(), current_account())


@blp.route("/me/webhook/test")
class MyWebhookTest(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(202, WebhookTestSchema)
    @errors(blp, 401, 409, 503)
    def post(self):
        """Send a ``ping`` event to the webhook (a worker delivers it; ``GET`` shows the outcome
        in ``last_delivery``). 409 without a webhook; 503 when the broker is down."""
        return {"id": usecases.ping_webhook(db(), dispatcher(), current_account())}
