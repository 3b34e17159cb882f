"""An account's webhook (:mod:`arena.webhooks`, :mod:`arena.notices`): set it, remove it, test it.

The URL passes the bots' URL policy (:func:`arena.url_policy.check_bot_url`: public
addresses only unless ``ARENA_ALLOW_PRIVATE_BOT_URLS``); setting it gives a fresh signing
secret, shown to the owner once (the deliveries are signed with it).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from arena import webhooks
from arena.db.models import Account, utcnow
from arena.dispatch import Dispatcher, QueueError
from arena.lifecycle import Conflict
from arena.security import new_secret
from arena.url_policy import BotUrlError, check_bot_url
from arena.usecases import InvalidField, Unavailable


def set_webhook(session: Session, account: Account, url: str, *, allow_private: bool) -> tuple[Account, str]:
    """Give ``account`` the webhook ``url`` and a fresh secret; commit. Returns the account and
    the secret (shown once).

    Raises:
        InvalidField: ``url`` refused by the URL policy.
    """
    try:
        checked = check_bot_url(url, allow_private=allow_private)
    except BotUrlError as exc:
        raise InvalidField("url", str(exc)) from None
    secret = new_secret()
    row = session.get(Account, account.id)
    assert row is not None
    row.webhook_url, row.webhook_secret, row.webhook_last = checked, secret, None
    session.commit()
    return row, secret


def clear_webhook(session: Session, account: Account) -> None:
    """Remove the account's webhook (nothing more is sent; tasks already queued find none); commit."""
    row = session.get(Account, account.id)
    assert row is not None
    row.webhook_url, row.webhook_secret, row.webhook_last = None, None, None
    session.commit()


def ping_webhook(session: Session, dispatcher: Dispatcher, account: Account) -> str:
    """Send a ``ping`` event to the account's webhook (through a worker); returns its id.

    Raises:
        Conflict: the account has no webhook.
        Unavailable: the broker is down.
    """
    row = session.get(Account, account.id)
    if row is None or not row.webhook_url:
        raise Conflict("this account has no webhook: set one first (PUT /api/v1/accounts/me/webhook)")
    event_id = f"ping-{account.id}-{int(utcnow().timestamp() * 1000)}"
    message = webhooks.envelope(webhooks.PING, {"account": {"id": row.id, "name": row.name}}, event_id=event_id)
    try:
        dispatcher.send_webhook(row.id, message)
    except QueueError as exc:
        raise Unavailable(f"the test event was not sent: {exc}") from None
    return event_id
