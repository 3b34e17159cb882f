"""Accounts: ``POST /api/v1/accounts`` (public sign-up, contestant role) and ``GET /accounts/me``.

The token is returned once and stored hashed. The organizer role is granted only by the
operator command ``arena accounts create --organizer NAME``.
"""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import validate
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.auth import BEARER, current_account
from api.common import errors
from api.database import db
from api.errors import abort
from arena.db.models import Account
from arena.security import hash_token, new_token

blp = Blueprint("accounts", __name__, url_prefix="/api/v1/accounts", description="Accounts and API tokens")

NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class AccountCreateSchema(ma.Schema):
    name = ma.fields.String(required=True, validate=validate.Regexp(
        NAME_RE, error="must be 1-64 letters, digits, '_', '.', '-', starting with a letter or digit"))


class AccountSchema(ma.Schema):
    id = ma.fields.Integer(required=True)
    name = ma.fields.String(required=True)
    role = ma.fields.String(required=True, validate=validate.OneOf(("contestant", "organizer")))
    created_at = ma.fields.DateTime(required=True)


class AccountTokenSchema(AccountSchema):
    token = ma.fields.String(required=True, metadata={"description": "bearer token, shown once"})


class NameTaken(Exception):
    pass


def create_account(session: Session, name: str, role: str = "contestant") -> tuple[Account, str]:
    """Create an account and commit; returns ``(account, token)``.

    Raises:
        NameTaken: an account with this name exists.
    """
    if session.scalar(select(Account.id).where(Account.name == name)) is not None:
        raise NameTaken(name)
    token = new_token()
    account = Account(name=name, role=role, token_hash=hash_token(token))
    session.add(account)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise NameTaken(name) from None
    return account, token


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
        return {"id": account.id, "name": account.name, "role": account.role,
                "created_at": account.created_at, "token": token}


@blp.route("/me")
class Me(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, AccountSchema)
    @errors(blp, 401)
    def get(self):
        """The account of the bearer token."""
        return current_account()
