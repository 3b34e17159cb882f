"""Bearer-token authentication and access rules.

``Authorization: Bearer <token>``; the SHA-256 of the token is looked up in ``accounts``.
Missing, wrong or expired token (``accounts.token_expires_at``): 401. Contestants manage their own bots;
organizers see every bot but
still cannot modify others' bots (403). What each account (or an anonymous reader of a public
tournament) may read is :mod:`arena.access`.
"""

from __future__ import annotations

from datetime import UTC

from flask import g, request
from sqlalchemy import select

from api.database import db
from api.errors import abort
from arena.access import is_organizer
from arena.db.models import Account, utcnow
from arena.security import hash_token

BEARER: list[dict[str, list[str]]] = [{"bearerAuth": []}]


def current_account() -> Account:
    """The authenticated account; aborts with 401 when the token is missing or unknown."""
    if "account" in g:
        return g.account
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        abort(401, "missing bearer token (Authorization: Bearer <token>)")
    if len(token) > 256:
        abort(401, "invalid token")
    account = db().scalar(select(Account).where(Account.token_hash == hash_token(token)))
    if account is None:
        abort(401, "invalid token")
    if token_expired(account):
        abort(401, "token expired: sign in with a new token (POST /api/v1/accounts/me/token before it expires)")
    g.account = account
    return account


def token_expired(account: Account) -> bool:
    """True when the account's token has an expiry in the past."""
    expires = account.token_expires_at
    if expires is None:
        return False
    if expires.tzinfo is None:  # SQLite gives naive UTC datetimes back
        expires = expires.replace(tzinfo=UTC)
    return expires <= utcnow()


def require_organizer() -> Account:
    """The authenticated account if it is an organizer; 401 or 403 otherwise."""
    account = current_account()
    if not is_organizer(account):
        abort(403, "organizer role required")
    return account


def optional_account() -> Account | None:
    """The authenticated account, or None for a request without ``Authorization``; a header
    with a wrong token is still a 401 (see :func:`current_account`)."""
    if "account" in g:
        return g.account
    if not request.headers.get("Authorization", "").strip():
        return None
    return current_account()


def protect(blp, *, organizer_methods: tuple[str, ...] = (), anonymous_reads: bool = False) -> None:
    """Authenticate every request of ``blp`` before its body is parsed (401 before 422).

    Requests with a method in ``organizer_methods`` also need the organizer role (403).
    With ``anonymous_reads``, ``GET`` requests without a token go through (the views apply
    :mod:`arena.access`, which opens public tournaments to them). ``OPTIONS`` requests
    are left alone.
    """

    @blp.before_request
    def _authenticate():
        if request.method == "OPTIONS":
            return None
        if request.method in organizer_methods:
            require_organizer()
        elif anonymous_reads and request.method in ("GET", "HEAD"):
            optional_account()
        else:
            current_account()
        return None
