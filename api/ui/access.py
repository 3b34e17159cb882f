"""Who is looking at a page, and what they may see (the API's access rules, see api.auth).

A viewer signs in with an API token, either once as ``?token=...`` on any ``/ui`` address
(the token is then dropped from the address by a redirect) or through the login form
(``/ui/login``). The session cookie (signed with the app's secret key, HttpOnly,
SameSite=Lax) holds only the SHA-256 of the token; the account is looked up on every request,
so a deleted account or replaced token ends the session.

Rules:

* a tournament that is ``finished`` with ``public_when_finished`` (default true): its page,
  its matches and their logs are readable by anyone, signed in or not;
* otherwise a signed-in account is needed: every account may see a tournament page and its
  standings (as ``GET /api/v1/tournaments/{id}`` and ``/standings``); matches and logs follow
  :func:`api.auth.can_read_match` (organizers all; contestants their bots' matches, all the
  tournament's matches once it finished if one of their bots took part).
"""

from __future__ import annotations

from flask import g, session
from sqlalchemy import select

from api.auth import can_read_match, is_organizer, owns_participant
from api.database import db
from arena.core.db.models import Account, Match, Tournament
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


def is_public(t: Tournament) -> bool:
    """A finished tournament whose organizer left ``public_when_finished`` on."""
    return t.status == "finished" and bool(t.public_when_finished)


def can_view_tournament(account: Account | None, t: Tournament) -> bool:
    return is_public(t) or account is not None


def can_view_match(account: Account | None, m: Match, t: Tournament) -> bool:
    if is_public(t):
        return True
    return account is not None and can_read_match(account, m, t)


def sees_all_matches(account: Account | None, t: Tournament) -> bool:
    """True if every match of ``t`` is readable; else only the viewer's bots' matches are."""
    if is_public(t):
        return True
    if account is None:
        return False
    return is_organizer(account) or (t.status == "finished" and owns_participant(account, t.id))


def can_download_tournament_logs(account: Account | None, t: Tournament) -> bool:
    """The tournament's JSONL log download (as ``GET /api/v1/tournaments/{id}/logs``)."""
    if is_public(t):
        return True
    return account is not None and (is_organizer(account) or owns_participant(account, t.id))
