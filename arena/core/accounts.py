"""Creating accounts (shared by the API's sign-up and ``arena accounts create``)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.core.db.models import Account
from arena.core.security import hash_token, new_token

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
