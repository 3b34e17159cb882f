"""The bot check state machine (``bot_checks.status``, and the bot's ``checking`` status).

::

    (bot unchecked|ready|failed) --begin_check--> queued --claim_check--> running
    running --finish_check--> passed | failed        (the bot: ready | failed | unchecked)
    queued|running --release_check / error_check / abandoned--> error
                                                      (the bot: back to its status before)

A check records the bot's URL and rule sets when it is asked, and the client that asked
(:func:`arena.clients.client_key`); its outcome decides the bot's status only if they are
still the bot's. The queue is fair per client (:func:`claim_check`): a delivery runs the
queued check whose network, client and account run the fewest checks and were served longest
ago, not the oldest one, so no account's, address's or network's flood of checks delays
another's check by more than one check's length. ``updated_at`` is the check's heartbeat
(:func:`record_check_progress`); a check without one for :data:`CHECK_STALE_S` seconds is
abandoned. Each public function is a transaction of its own (it commits, or rolls back and
raises).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from arena.clients import network_key
from arena.crypto import EncryptionKeyError
from arena.db.models import Account, Bot, BotCheck, utcnow
from arena.lifecycle import ladders
from arena.lifecycle.base import (
    ACTIVE_CHECKS,
    BotStatus,
    CheckStatus,
    Conflict,
    LifecycleError,
    aware,
    failure_text,
    is_postgresql,
    lock_or_404,
    locked,
    rows_changed,
)
from arena.status import BotTransport

#: Most checks queued or running at once for the bots of one account (HTTP 429 beyond).
MAX_CHECKS_PER_ACCOUNT = 2
#: A queued or running check without a heartbeat for this long (seconds) is abandoned (its
#: worker died): a new check of the bot may start. A running check beats at least every
#: decision (at most 10 s apart, arena.conformance.CONFORMANCE_TIME_RULES_S).
CHECK_STALE_S = 300
#: ``Retry-After`` of a refused check (too many running for the account), seconds.
CHECK_RETRY_AFTER_S = 30
#: The window of the per-account check time cap (``ARENA_CHECK_SECONDS_PER_HOUR``), seconds.
CHECK_TIME_WINDOW_S = 3600
#: Key of the PostgreSQL advisory lock serializing the queue's picks (:func:`claim_check`).
CHECK_QUEUE_LOCK = 0x636865636B  # "check"
#: Most queued checks one pick looks at (oldest first).
PICK_WINDOW = 1000


class CheckRunning(Conflict):
    """The bot already has a check queued or running (``check_id``); HTTP 409."""

    def __init__(self, message: str, check_id: int):
        super().__init__(message)
        self.check_id = check_id


class TooManyChecks(LifecycleError):
    """The account has :data:`MAX_CHECKS_PER_ACCOUNT` checks queued or running, or used its
    hour of check time; HTTP 429 with ``Retry-After: retry_after_s``."""

    def __init__(self, message: str, retry_after_s: int = CHECK_RETRY_AFTER_S):
        super().__init__(message)
        self.retry_after_s = max(1, int(retry_after_s))


@dataclass(frozen=True)
class CheckPlan:
    """What a claimed bot check runs with: the URL and rule sets recorded when it was asked,
    the bot's signing secret and (during a rotation's grace period) its previous secret."""

    check_id: int
    bot_id: int
    url: str | None
    rulesets: tuple[str, ...]
    secret: str
    previous_secret: str | None
    attempt: int
    #: ``"http"`` (``url`` is called) or ``"connect"`` (the bot dials out; ``url`` is None)
    transport: str = "http"
    #: the bot's name as a tournament's matches name it (``name#id``)
    name: str = ""


def _check_seconds(session: Session, account_id: int, now: datetime) -> tuple[float, datetime | None]:
    """Seconds of checks the account ran in the last :data:`CHECK_TIME_WINDOW_S` (a running
    check counts up to now), and the start of its oldest check in the window."""
    since = now - timedelta(seconds=CHECK_TIME_WINDOW_S)
    rows = session.execute(
        select(BotCheck.started_at, BotCheck.finished_at).where(
            BotCheck.account_id == account_id, BotCheck.started_at.is_not(None), BotCheck.started_at >= since
        )
    ).all()
    used, oldest = 0.0, None
    for started_at, finished_at in rows:
        started, finished = aware(started_at), aware(finished_at) or now
        assert started is not None  # the query keeps started checks only
        used += max(0.0, (min(finished, now) - started).total_seconds())
        oldest = started if oldest is None or started < oldest else oldest
    return used, oldest


def _drop_abandoned(live: list[BotCheck], bot: Bot, now: datetime, stale_after_s: float) -> tuple[list[BotCheck], str]:
    """Mark ``error`` the checks of ``live`` without a heartbeat for ``stale_after_s`` seconds
    (in the caller's transaction). Returns the checks still live and the bot's status before
    its check (its abandoned check's ``previous_status``, else its status now)."""
    stale = now - timedelta(seconds=stale_after_s)
    previous = bot.status
    for c in live:
        if aware(c.updated_at) < stale:
            c.status = CheckStatus.ERROR
            c.error = f"abandoned: no progress for {stale_after_s:g} s (its worker stopped)"
            c.finished_at = now
            if c.bot_id == bot.id:
                previous = c.previous_status
    return [c for c in live if c.status in ACTIVE_CHECKS], previous


def _refuse_check(
    session: Session,
    bot: Bot,
    live: list[BotCheck],
    now: datetime,
    max_per_account: int,
    max_seconds_per_hour: float | None,
) -> None:
    """Raise (rolled back) when the bot may not be checked now (:func:`begin_check`)."""
    mine = [c for c in live if c.bot_id == bot.id]
    if mine:
        session.rollback()
        raise CheckRunning(
            f"bot {bot.id} already has check {mine[0].id} {mine[0].status}; wait for it to finish", mine[0].id
        )
    if len(live) >= max_per_account:
        session.rollback()
        raise TooManyChecks(
            f"your account already has {len(live)} bot checks queued or running "
            f"(at most {max_per_account} at a time); retry when one has finished"
        )
    if max_seconds_per_hour is not None:
        used, oldest = _check_seconds(session, bot.owner_id, now)
        if used >= max_seconds_per_hour:
            session.rollback()
            wait = (oldest + timedelta(seconds=CHECK_TIME_WINDOW_S) - now).total_seconds() if oldest else 60
            raise TooManyChecks(
                f"your account's bot checks ran {used:.0f} s in the last hour (at most "
                f"{max_seconds_per_hour:g} s an hour); retry in {max(1, round(wait))} s",
                retry_after_s=round(wait),
            )


def begin_check(
    session: Session,
    bot_id: int,
    *,
    max_per_account: int = MAX_CHECKS_PER_ACCOUNT,
    stale_after_s: float = CHECK_STALE_S,
    max_seconds_per_hour: float | None = None,
    client: str | None = None,
) -> BotCheck:
    """``unchecked|ready|failed -> checking``: store a ``queued`` check of the bot's current URL
    and rule sets, asked by ``client`` (:func:`arena.clients.client_key`; None: unknown, the
    account stands for it in the queue's order); commit. The caller sends it to a worker (then
    :func:`release_check` if that fails). The owner's account row is locked ``FOR UPDATE``
    first, so concurrent requests of one account count each other.

    A check of the bot without a heartbeat for ``stale_after_s`` seconds is marked ``error``
    (abandoned) and does not count. With ``max_seconds_per_hour``, an account whose checks
    ran that many seconds in the last hour (``ARENA_CHECK_SECONDS_PER_HOUR``) gets no more
    until the oldest of them leaves the hour.

    Raises:
        NotFound: no such bot, or deleted.
        CheckRunning: the bot has a live check (``exc.check_id``).
        TooManyChecks: the account has ``max_per_account`` live checks, or used its check
            time (``exc.retry_after_s``: when to ask again).
    """
    found = lock_or_404(session, Bot, bot_id, "bot", gone=lambda b: b.status == BotStatus.DELETED, lock=False)
    locked(session, Account, found.owner_id)  # the account first: its requests count each other
    bot = locked(session, Bot, bot_id)
    assert bot is not None  # bot rows are never deleted
    now = utcnow()
    live = list(
        session.scalars(select(BotCheck).where(BotCheck.account_id == bot.owner_id, BotCheck.status.in_(ACTIVE_CHECKS)))
    )
    live, previous = _drop_abandoned(live, bot, now, stale_after_s)
    _refuse_check(session, bot, live, now, max_per_account, max_seconds_per_hour)
    if previous == BotStatus.CHECKING:  # a checking bot without a live check: its check was lost
        previous = BotStatus.UNCHECKED
    check = BotCheck(
        bot_id=bot.id,
        account_id=bot.owner_id,
        status=CheckStatus.QUEUED,
        url=bot.url,
        rulesets=list(bot.rulesets),
        previous_status=previous,
        attempts=0,
        progress={},
        created_at=now,
        updated_at=now,
        client=client[:100] if client else None,
    )
    session.add(check)
    bot.status = BotStatus.CHECKING
    session.commit()
    return check


def release_check(session: Session, check_id: int, reason: str) -> None:
    """``queued -> error`` for a check that could not be sent to a worker (``reason``); the bot
    goes back to its status before the check; commit (as :func:`error_check`)."""
    error_check(session, check_id, reason)


def _client_of(client: str | None, account_id: int) -> str:
    return client or f"account:{account_id}"


def _network_of(client: str | None, account_id: int) -> str:
    """The network of a check's client (:func:`arena.clients.network_key`: an IPv4 /24, an IPv6
    /48), or its account when its client is unknown."""
    return network_key(client.split("/", 1)[0]) if client else f"account:{account_id}"


def _fairest(session: Session, queued: list[BotCheck], now: datetime) -> list[BotCheck]:
    """``queued`` in the order the queue serves them: first the checks whose network, then
    whose client, then whose account runs the fewest checks now; then the network, the client,
    the account served longest ago (never in the last hour first); then the oldest. So a flood
    from many addresses of one network (one machine) counts as one client."""
    running = session.execute(
        select(BotCheck.client, BotCheck.account_id).where(BotCheck.status == CheckStatus.RUNNING)
    ).all()
    counts: dict[str, int] = {}
    for client, account_id in running:
        for key in (
            "n:" + _network_of(client, account_id),
            "c:" + _client_of(client, account_id),
            f"a:{account_id}",
        ):
            counts[key] = counts.get(key, 0) + 1
    since = now - timedelta(seconds=CHECK_TIME_WINDOW_S)
    last: dict[str, datetime] = {}
    for client, account_id, at in session.execute(
        select(BotCheck.client, BotCheck.account_id, func.max(BotCheck.started_at))
        .where(BotCheck.started_at.is_not(None) & (BotCheck.started_at >= since))
        .group_by(BotCheck.client, BotCheck.account_id)
    ).all():
        stamp = aware(at)
        if stamp is None:
            continue
        for key in (
            "n:" + _network_of(client, account_id),
            "c:" + _client_of(client, account_id),
            f"a:{account_id}",
        ):
            if key not in last or stamp > last[key]:
                last[key] = stamp
    never = since - timedelta(seconds=1)

    def order(c: BotCheck) -> tuple[Any, ...]:
        keys = (
            "n:" + _network_of(c.client, c.account_id),
            "c:" + _client_of(c.client, c.account_id),
            f"a:{c.account_id}",
        )
        return (
            *(counts.get(k, 0) for k in keys),
            *(last.get(k, never) for k in keys),
            aware(c.created_at) or now,
            c.id,
        )

    return sorted(queued, key=order)


def claim_check(session: Session, check_id: int) -> CheckPlan | None:
    """The check a delivery of the task message of check ``check_id`` runs now,
    ``queued|running -> running`` (``attempts + 1``, ``run_by`` the message's ``check_id``);
    commit.

    Which check: the one this message was running already (a redelivery after its worker
    died: it runs again); else the first queued check of the fair order (:func:`_fairest`),
    its own or another client's. Every check has one message, and every message runs one
    queued check, so every check is run once; a message whose own check another message ran
    runs another queued check. The picks are serialized (an advisory lock on PostgreSQL).

    Returns None (nothing to run) when no check is queued. A check picked whose bot was
    deleted, or whose bot's signing secret cannot be decrypted here (a wrong or missing
    ``ARENA_ENCRYPTION_KEYS``), becomes ``error`` with the reason, and the next one is picked.
    """
    if is_postgresql(session):
        session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": CHECK_QUEUE_LOCK})
    again = session.scalars(
        select(BotCheck).where(BotCheck.run_by == check_id, BotCheck.status == CheckStatus.RUNNING)
    ).first()
    if again is None:  # a message of the version before run_by, delivered again: its own check
        own = session.get(BotCheck, check_id)
        again = own if own is not None and own.status == CheckStatus.RUNNING and own.run_by is None else None
    now = utcnow()
    if again is not None:
        candidates = [again]
    else:
        queued = list(
            session.scalars(
                select(BotCheck)
                .where(BotCheck.status == CheckStatus.QUEUED)
                .order_by(BotCheck.created_at, BotCheck.id)
                .limit(PICK_WINDOW)
            )
        )
        candidates = _fairest(session, queued, now)
    for check in candidates:
        plan = _start(session, check, check_id, now)
        if plan is not None:
            return plan
    session.commit()
    return None


def _start(session: Session, check: BotCheck, run_by: int, now: datetime) -> CheckPlan | None:
    """``check`` running for the message of ``run_by``, in the caller's transaction (committed
    when started); None, with the check ``error``, when it cannot run."""
    bot = session.get(Bot, check.bot_id)
    if bot is None or bot.status == BotStatus.DELETED:
        check.status = CheckStatus.ERROR
        check.error = "the bot was deleted"
        check.finished_at = check.updated_at = now
        session.flush()
        return None
    try:
        secret, previous = bot.secret, bot.grace_secret()
    except EncryptionKeyError as exc:  # not the bot's fault: the check could not run
        _errored(
            session,
            check,
            f"{exc}: the check could not run on this worker; check the bot again once an operator has fixed the key",
        )
        session.flush()
        return None
    check.status = CheckStatus.RUNNING
    check.attempts = (check.attempts or 0) + 1
    check.started_at = check.started_at or now
    check.updated_at = now
    check.run_by = run_by
    transport = BotTransport.HTTP if check.url is not None else BotTransport.CONNECT
    plan = CheckPlan(
        check.id,
        bot.id,
        check.url,
        tuple(check.rulesets),
        secret,
        previous,
        check.attempts,
        transport=transport.value,
        name=f"{bot.name}#{bot.id}",
    )
    session.commit()
    return plan


def record_check_progress(session: Session, check_id: int, progress: dict[str, Any]) -> bool:
    """Store the progress of a running check and beat its heartbeat; commit. False if the
    check is no longer running (abandoned or finished)."""
    changed = rows_changed(
        session,
        update(BotCheck)
        .where(BotCheck.id == check_id, BotCheck.status == CheckStatus.RUNNING)
        .values(progress=progress, updated_at=utcnow()),
    )
    session.commit()
    return changed == 1


def finish_check(session: Session, check_id: int, result: dict[str, Any]) -> str | None:
    """``running -> passed|failed`` by ``result["ok"]``; the bot's ``last_check`` is the result
    and, if it is still ``checking`` the URL and rule sets checked, it becomes ``ready`` or
    ``failed`` (``unchecked`` if they changed; a deleted bot stays deleted); commit.

    A passed check of a bot now ``ready`` lifts the ladders' health pauses of its entries and
    lets a new version take its parent's place (:func:`arena.lifecycle.ladders.after_check_passed`).

    Returns the bot's new status, or None when the check was no longer running (nothing
    changed: a duplicate delivery, or an abandoned check).
    """
    check = locked(session, BotCheck, check_id)
    if check is None or check.status != CheckStatus.RUNNING:
        session.rollback()
        return None
    now = utcnow()
    check.status = CheckStatus.PASSED if result.get("ok") else CheckStatus.FAILED
    check.result = result
    check.finished_at = check.updated_at = now
    bot = locked(session, Bot, check.bot_id)
    assert bot is not None
    bot.last_check = result
    bot.last_check_at = now
    if bot.status == BotStatus.CHECKING:
        if bot.url == check.url and list(bot.rulesets) == list(check.rulesets):
            bot.status = BotStatus.READY if result.get("ok") else BotStatus.FAILED
        else:
            bot.status = BotStatus.UNCHECKED
    if bot.status == BotStatus.READY and result.get("ok"):
        ladders.after_check_passed(session, bot)  # health pauses lifted; a new version promoted
    status = bot.status
    session.commit()
    return status


def error_check(session: Session, check_id: int, reason: str) -> bool:
    """``running|queued -> error`` (the check itself broke, not the bot: ``reason``); the bot
    goes back to its status before the check; commit. False if it was already done."""
    check = locked(session, BotCheck, check_id)
    if check is None or check.status not in ACTIVE_CHECKS:
        session.rollback()
        return False
    _errored(session, check, reason)
    session.commit()
    return True


def _errored(session: Session, check: BotCheck, reason: str) -> None:
    """``check`` ``error`` with ``reason``, its bot back to its status before (the caller's
    transaction)."""
    check.status = CheckStatus.ERROR
    check.error = failure_text(reason, "error")
    check.finished_at = check.updated_at = utcnow()
    bot = locked(session, Bot, check.bot_id)
    if bot is not None and bot.status == BotStatus.CHECKING:
        bot.status = check.previous_status
