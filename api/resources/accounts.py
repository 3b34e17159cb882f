"""Accounts: ``POST /api/v1/accounts`` (public sign-up, contestant role) and ``GET /accounts/me``.

The token is returned once and stored hashed; ``POST /api/v1/accounts/me/token`` replaces it
(optionally with an expiry). The organizer role is granted only by the
operator command ``arena accounts create --organizer NAME``.
"""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import validate

from api.auth import BEARER, current_account
from api.common import errors
from api.database import db
from api.errors import abort
from arena.accounts import NAME_RE, NameTaken, create_account, rotate_token
from arena.security import MAX_TOKEN_DAYS

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
