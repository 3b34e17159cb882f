"""Who is looking at a page: sign-in, sign-out and the session's account.

A viewer signs in with an API token, either once as ``?token=...`` on any ``/ui`` address
(the token is then dropped from the address by a redirect) or through the login form
(``/ui/login``). The session cookie (signed with the app's secret key, HttpOnly,
SameSite=Lax) holds only the SHA-256 of the token; the account is looked up on every request,
so a deleted account or replaced token ends the session.

What a viewer may see is decided by :mod:`arena.core.access`, the policy the REST API uses too.
"""

from __future__ import annotations

from flask import g, session
from sqlalchemy import select

from api.database import db
from arena.core.db.models import Account
from arena.core.security import hash_token

SESSION_KEY = "token_sha256"
MAX_TOKEN_CHARS = 256


def account_for_token(token: str) -> Account | None:
    """The account holding API token ``token``, or None."""
    token = (token or "").strip()
    if not token or len(token) > MAX_TOKEN_CHARS:
        return None
    return db().scalar(select(Account).where(Account.token_hash == hash_token(token)))


def sign_in(account: Account) -> None:
    session.clear()
    session[SESSION_KEY] = account.token_hash
    session.permanent = False
    g.ui_viewer = account


def sign_out() -> None:
    session.clear()
    g.ui_viewer = None


def viewer() -> Account | None:
    """The signed-in account of this request, or None."""
    if "ui_viewer" not in g:
        digest = session.get(SESSION_KEY)
        account = None
        if isinstance(digest, str) and len(digest) == 64:
            account = db().scalar(select(Account).where(Account.token_hash == digest))
        g.ui_viewer = account
    return g.ui_viewer
