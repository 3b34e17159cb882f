"""What an owner's webhook hears (:mod:`arena.webhooks`), and its delivery by the workers.

Events, each sent to the accounts with a ``webhook_url`` only:

* ``check.finished`` (:func:`check_finished`): to the bot's owner, when a check is over;
* ``entrant.offline`` (:func:`entrants_offline`): to the owner of each bot found offline by
  the roll call of a tournament about to start (``waiting_until``: when the start gives up
  waiting; null: it started without the bot);
* ``tournament.ended`` (:func:`announce_ends`): to the organizer and the owners of the
  entrants, once per end (``tournaments.end_notified_at``, a compare-and-set; the reaper
  announces an end a worker could not: a cancel, a worker killed at the wrong moment); a
  retried tournament is announced again when it ends again.

A notice is a task (``arena.send_webhook``, queue ``arena.webhooks``, consumed beside the bot
checks: never a match's thread); :func:`deliver` is its body: it reads the account's URL and
secret at send time, posts (:func:`arena.webhooks.post`), records the outcome in
``accounts.webhook_last``, and tells the task whether to try again (with
:func:`arena.webhooks.backoff_s`, :data:`arena.webhooks.ATTEMPTS` at most). A failure to send
the task never fails what caused the notice (a check, a match, a start): it is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.orm import Session, sessionmaker

from arena import webhooks
from arena.config import Settings
from arena.db.models import Account, Bot, BotCheck, Tournament, TournamentParticipant, utcnow
from arena.db.session import shared_sessions
from arena.dispatch import QueueError
from arena.lifecycle.base import rows_changed
from arena.queue import CeleryDispatcher
from arena.roll_call import Absence
from arena.standings import tournament_report
from arena.status import TournamentStatus
from arena.url_policy import BotUrlError, check_bot_url

log = logging.getLogger("arena.notices")

#: Sends one webhook task: ``send(account_id, message)`` (a Dispatcher's ``send_webhook``).
Send = Callable[[int, dict[str, Any]], None]
#: Ended tournaments announced per sweep at most.
ENDS_PER_SWEEP = 20


def sender_for(settings: Settings) -> Send:
    """How a worker (or eager mode) sends a notice: an ``arena.send_webhook`` task to the
    broker; in eager mode (no broker, no worker) one delivery now, in this process."""
    if settings.celery_eager:
        sessions = shared_sessions(settings.database_url)
        allow = settings.allow_private_bot_urls

        def now(account_id: int, message: dict[str, Any]) -> None:
            deliver(sessions, account_id, message, allow_private=allow, attempt=1)

        return now
    return CeleryDispatcher(settings.broker_url).send_webhook


def _listening(session: Session, account_ids: Sequence[int]) -> set[int]:
    """The accounts among ``account_ids`` with a webhook."""
    if not account_ids:
        return set()
    return set(
        session.scalars(select(Account.id).where(Account.id.in_(set(account_ids)), Account.webhook_url.is_not(None)))
    )


def _send_all(send: Send, messages: list[tuple[int, dict[str, Any]]]) -> int:
    """Send each ``(account, message)``; returns how many went. Never raises: a broker that
    is down costs the notices, not what caused them."""
    sent = 0
    for account_id, message in messages:
        try:
            send(account_id, message)
            sent += 1
        except QueueError as exc:
            log.warning("webhook %s to account %s not sent: %s", message["event"], account_id, exc)
    return sent


def tournament_data(t: Tournament) -> dict[str, Any]:
    """What an event says of a tournament: id, name, rule set, status, its page's path."""
    return {"id": t.id, "name": t.name, "ruleset": t.ruleset, "status": t.status, "path": f"/ui/tournaments/{t.id}"}


def check_finished(session: Session, send: Send, check_id: int) -> int:
    """``check.finished`` to the owner of the bot of check ``check_id``; returns the notices sent."""
    row = session.execute(
        select(BotCheck, Bot.name, Bot.owner_id).join(Bot, Bot.id == BotCheck.bot_id).where(BotCheck.id == check_id)
    ).first()
    if row is None:
        return 0
    check, name, owner = row
    if owner not in _listening(session, [owner]):
        return 0
    data = {
        "check": {"id": check.id, "status": check.status, "ok": bool((check.result or {}).get("ok"))},
        "bot": {"id": check.bot_id, "name": name},
        "path": f"/ui/bots/{check.bot_id}",
    }
    message = webhooks.envelope(webhooks.CHECK_FINISHED, data, event_id=f"check-{check.id}")
    return _send_all(send, [(owner, message)])


def entrants_offline(
    session: Session, send: Send, t: Tournament, absences: Sequence[Absence], waiting_until: datetime | None
) -> int:
    """``entrant.offline`` to the owner of each absent bot; returns the notices sent."""
    listening = _listening(session, [a.owner_id for a in absences])
    stamp = int(utcnow().timestamp())
    messages = []
    for a in absences:
        if a.owner_id not in listening:
            continue
        data = {
            "tournament": tournament_data(t),
            "bot": {"id": a.bot_id, "name": a.name, "transport": a.transport, "path": f"/ui/bots/{a.bot_id}"},
            "reason": a.reason,
            "detail": a.detail,
            "waiting_until": waiting_until.isoformat() if waiting_until is not None else None,
        }
        event_id = f"tournament-{t.id}-offline-{a.bot_id}-{stamp}"
        messages.append((a.owner_id, webhooks.envelope(webhooks.ENTRANT_OFFLINE, data, event_id=event_id)))
    return _send_all(send, messages)


def _end_messages(session: Session, t: Tournament) -> list[tuple[int, dict[str, Any]]]:
    """The ``tournament.ended`` notices of ``t``: the organizer and each owner of an entrant,
    each with its own bots' places."""
    entrants = session.execute(
        select(Bot.id, Bot.name, Bot.owner_id)
        .join(TournamentParticipant, TournamentParticipant.bot_id == Bot.id)
        .where(TournamentParticipant.tournament_id == t.id)
    ).all()
    listening = _listening(session, [t.organizer_id] + [owner for _b, _n, owner in entrants])
    if not listening:
        return []
    rows = {r.entrant: r for r in tournament_report(session, t).rows}
    out = []
    for account_id in sorted(listening):
        mine = []
        for bot_id, name, owner in entrants:
            if owner != account_id:
                continue
            st = rows.get(bot_id)
            mine.append(
                {
                    "id": bot_id,
                    "name": name,
                    "rank": st.rank if st else 0,
                    "games": st.games if st else 0,
                    "mean_score": st.mean_score if st else None,
                }
            )
        data = {"tournament": tournament_data(t), "entrants": len(entrants), "bots": mine}
        event_id = f"tournament-{t.id}-ended-{int((t.finished_at or utcnow()).timestamp())}"
        out.append((account_id, webhooks.envelope(webhooks.TOURNAMENT_ENDED, data, event_id=event_id)))
    return out


def announce_ends(session: Session, send: Send, *, only: int | None = None) -> list[int]:
    """Announce every tournament that is over (finished or cancelled) and not announced yet
    (``only``: that one alone), up to :data:`ENDS_PER_SWEEP`; each is marked announced
    (``end_notified_at``, compare-and-set: of concurrent sweeps one announces it) in the
    transaction that sends its notices; commit. Returns the ids announced."""
    cond: list[ColumnElement[bool]] = [
        Tournament.status.in_((TournamentStatus.FINISHED, TournamentStatus.CANCELLED)),
        Tournament.end_notified_at.is_(None),
    ]
    if only is not None:
        cond.append(Tournament.id == only)
    ids = list(session.scalars(select(Tournament.id).where(*cond).order_by(Tournament.id).limit(ENDS_PER_SWEEP)))
    done = []
    for tid in ids:
        won = rows_changed(
            session, update(Tournament).where(Tournament.id == tid, *cond).values(end_notified_at=utcnow())
        )
        if won != 1:
            session.rollback()
            continue
        t = session.get(Tournament, tid)
        assert t is not None
        messages = _end_messages(session, t)
        session.commit()  # announced: a notice that cannot be sent now is logged, not repeated
        _send_all(send, messages)
        done.append(tid)
    session.rollback()
    return done


def rearm_end_notice(session: Session, tournament_id: int) -> None:
    """The tournament will end again (its failed matches are retried): announce that end too; commit."""
    session.execute(update(Tournament).where(Tournament.id == tournament_id).values(end_notified_at=None))
    session.commit()


def deliver(
    sessions: sessionmaker[Session], account_id: int, message: dict[str, Any], *, allow_private: bool, attempt: int
) -> webhooks.Delivery | None:
    """One attempt (number ``attempt``, from 1) at delivering ``message`` to the account's
    webhook as it is now (module docstring); the outcome is stored in
    ``accounts.webhook_last``. None when the account has no webhook any more (nothing sent).
    A URL the policy refuses now is a final failure."""
    with sessions() as s:
        account = s.get(Account, account_id)
        if account is None or not account.webhook_url or not account.webhook_secret:
            return None
        url, secret = account.webhook_url, account.webhook_secret
    try:
        check_bot_url(url, allow_private=allow_private)
    except BotUrlError as exc:
        outcome = webhooks.Delivery(None, False, False, f"refused by the URL policy: {exc}")
    else:
        outcome = webhooks.post(url, secret, message, allow_private=allow_private)
    last = {
        "event": message.get("event"),
        "id": message.get("id"),
        "at": utcnow().isoformat(),
        "attempt": attempt,
        "status": outcome.status,
        "ok": outcome.ok,
        "error": outcome.error,
        "final": outcome.ok or not outcome.retry or attempt >= webhooks.ATTEMPTS,
    }
    with sessions() as s:
        s.execute(update(Account).where(Account.id == account_id).values(webhook_last=last))
        s.commit()
    return outcome
