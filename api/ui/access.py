"""Who is looking at a page: sign-in, sign-out and the session's account.

A viewer signs in through the login form only (``POST /ui/login`` with the API token in the
form body; a token never travels in an address, so it never reaches an access log). Sessions
are server-side: signing in stores a row in ``ui_sessions`` (the SHA-256 of a random
256-bit session id, the account, an expiry :data:`SESSION_LIFETIME_S` seconds later) and the
cookie (signed with the app's secret key; ``HttpOnly``, ``SameSite=Lax``, ``Secure`` unless
``ARENA_COOKIE_SECURE=0``, path ``/ui``) holds only the session id. Logout deletes the row,
so a copied cookie stops working at once; rotating the account's token
(``POST /api/v1/accounts/me/token``) ends all its sessions, and an expired token ends them too.

What a viewer may see is decided by :mod:`arena.access`, the policy the REST API uses too.
"""

from __future__ import annotations

import secrets
from datetime import UTC, timedelta

from flask import g, session
from sqlalchemy import delete, select

from api.auth import token_expired
from api.database import db
from arena.db.models import Account, UiSession, utcnow
from arena.security import hash_token

SESSION_KEY = "sid"
MAX_TOKEN_CHARS = 256
#: Lifetime of a web session, seconds (12 hours).
SESSION_LIFETIME_S = 12 * 3600


def account_for_token(token: str) -> Account | None:
    """The account holding API token ``token`` (not expired), or None."""
    token = (token or "").strip()
    if not token or len(token) > MAX_TOKEN_CHARS:
        return None
    account = db().scalar(select(Account).where(Account.token_hash == hash_token(token)))
    return None if account is None or token_expired(account) else account


def sign_in(account: Account) -> None:
    """Start a server-side session for ``account`` (commits) and put its id in the cookie."""
    sid = secrets.token_urlsafe(32)
    now = utcnow()
    db().add(
        UiSession(
            id_hash=hash_token(sid),
            account_id=account.id,
            created_at=now,
            expires_at=now + timedelta(seconds=SESSION_LIFETIME_S),
        )
    )
    db().commit()
    session.clear()
    session[SESSION_KEY] = sid
    session.permanent = False
    g.ui_viewer = account


def sign_out() -> None:
    """Delete the session's row (commits) and clear the cookie."""
    sid = session.get(SESSION_KEY)
    if isinstance(sid, str) and len(sid) <= 64:
        db().execute(delete(UiSession).where(UiSession.id_hash == hash_token(sid)))
        db().commit()
    session.clear()
    g.ui_viewer = None


def viewer() -> Account | None:
    """The signed-in account of this request, or None (no, unknown, expired or revoked session)."""
    if "ui_viewer" not in g:
        sid = session.get(SESSION_KEY)
        account = None
        if isinstance(sid, str) and len(sid) <= 64:
            row = db().get(UiSession, hash_token(sid))
            if row is not None:
                expires = row.expires_at if row.expires_at.tzinfo else row.expires_at.replace(tzinfo=UTC)
                if expires > utcnow():
                    account = db().get(Account, row.account_id)
                    if account is not None and token_expired(account):
                        account = None
        g.ui_viewer = account
    return g.ui_viewer
