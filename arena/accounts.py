"""Creating accounts (shared by the API's sign-up and ``arena accounts create``)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.db.models import Account, UiSession, utcnow
from arena.security import hash_token, new_token

#: Account names: 1-64 letters, digits, ``_``, ``.``, ``-``, starting with a letter or digit.
NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class NameTaken(Exception):
    """An account with this name exists."""


def create_account(session: Session, name: str, role: str = "contestant") -> tuple[Account, str]:
    """Create an account with a fresh token and commit; returns ``(account, token)``.

    Only the token's SHA-256 is stored; the token is returned this once.

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


def rotate_token(session: Session, account: Account, *, expires_in_days: int | None = None) -> tuple[Account, str]:
    """Give ``account`` a fresh token (the old one stops working), end its web sessions and
    commit; returns ``(account, token)``. ``expires_in_days``: lifetime of the new token in
    days, None for no expiry."""
    token = new_token()
    account.token_hash = hash_token(token)
    account.token_expires_at = utcnow() + timedelta(days=expires_in_days) if expires_in_days else None
    session.execute(delete(UiSession).where(UiSession.account_id == account.id))
    session.commit()
    return account, token
