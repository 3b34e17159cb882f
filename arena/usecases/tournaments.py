"""Tournament use cases: create, start, resume, cancel, retry, and the launch a worker runs.

Every function but the launch takes the acting ``account``: only organizers create or act on
tournaments (:class:`~arena.usecases.Forbidden`, ``organizer role required``); an unknown
tournament is :class:`~arena.lifecycle.NotFound`. Status changes are
:mod:`arena.lifecycle`'s; work goes out through a :class:`arena.dispatch.Dispatcher`.

Starting (:func:`start_tournament`): up to :data:`INLINE_START_PARTICIPANTS` participants
the schedule is built and stored at once and its first :data:`INLINE_SEND_MATCHES` matches
are sent; the rest, or a larger field's whole schedule, goes to the launch
(``dispatcher.launch_tournament``), which runs :func:`send_tournament` on a worker: store
the schedule (once), then send the ``pending`` matches by batches in schedule order, marking
each batch ``queued``. The matches' rows are locked while their batch is sent, so two
launches (a start clicked twice, a redelivery) never send one match twice. A worker claiming
a match of a batch still being sent waits for that lock, so the batches grow
(:data:`FIRST_SEND_BATCH`, doubling up to :data:`SEND_BATCH`): the first matches are claimed
within milliseconds of the launch instead of after a whole batch of 200 (docs/operations.md,
"Starting a tournament").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload, sessionmaker

import engine
from arena import lifecycle, live, notices
from arena import schedule as sched
from arena.access import is_organizer
from arena.config import Settings
from arena.db.models import Account, Bot, Match, Tournament
from arena.dispatch import Dispatcher, QueueError
from arena.limits import BoundsError, check_match_bounds
from arena.sequential import ALPHA, BETA, SettleRule, default_delta
from arena.status import BotStatus, MatchStatus, TournamentFormat, TournamentStatus
from arena.usecases import Forbidden, InvalidField, Unavailable

log = logging.getLogger("arena.queue")

#: Largest field whose start builds and stores its schedule in the request (a 16-bot Million
#: Doubt round robin is 120 matches: well under a second); larger ones go to a worker.
INLINE_START_PARTICIPANTS = 16
#: Most pending matches a start (or a start again) sends in the request (about 0.5 ms each);
#: the others are sent by the launch on a worker. Sending the first ones here matters: a
#: worker busy starting matches sends slowly (15 ms a match measured by
#: ``bench/tournament_bench.py``), so its first claims would wait on it.
INLINE_SEND_MATCHES = 200
#: Most matches sent per transaction by :func:`send_tournament`.
SEND_BATCH = 200
#: Its first batch (each next one twice the last, up to :data:`SEND_BATCH`).
FIRST_SEND_BATCH = 4


def organizer_tournament(session: Session, account: Account, tournament_id: int) -> Tournament:
    """The tournament an organizer acts on.

    Raises:
        Forbidden: ``account`` is not an organizer.
        NotFound: no such tournament.
    """
    if not is_organizer(account):
        raise Forbidden("organizer role required")
    t = session.get(Tournament, tournament_id)
    if t is None or t.format == TournamentFormat.LADDER:  # a ladder's sets: its own use cases
        raise lifecycle.NotFound(f"tournament {tournament_id} not found")
    return t


def _check_participants(session: Session, ruleset: str, ids: Sequence[int]) -> None:
    if len(set(ids)) != len(ids):
        raise InvalidField("participants", "participants must not repeat")
    bots = {b.id: b for b in session.scalars(select(Bot).where(Bot.id.in_(ids)))}
    for bot_id in ids:
        bot = bots.get(bot_id)
        if bot is None or bot.status == BotStatus.DELETED:
            raise InvalidField("participants", f"bot {bot_id} does not exist")
        if ruleset not in bot.rulesets:
            raise InvalidField("participants", f"bot {bot_id} does not play {ruleset}")
        if bot.status != BotStatus.READY:
            raise InvalidField("participants", f"bot {bot_id} has not passed its check (status {bot.status})")


def create_tournament(
    session: Session,
    account: Account,
    *,
    ruleset: str,
    participants: Sequence[int],
    options: dict[str, Any],
    time_rules: dict[str, float],
    games_per_pairing: int,
    max_faults: int,
    fill_with_house_bots: bool,
    public_when_finished: bool,
    name: str = "",
    seed: int | None = None,
    house_bot: str = sched.DEFAULT_HOUSE_BOT,
    until_settled: dict[str, Any] | None = None,
    separate_owners: bool = False,
) -> Tournament:
    """Create a tournament (``created``) of ``ruleset`` with these fields; commit.

    ``options``: rule-set options (``engine.make_options``); ``time_rules``: TIME-1
    ``{"initial", "increment", "cap"}`` seconds; ``seed``: None to have it drawn when the
    tournament starts (nobody knows it before), else the organizer's (the tournament is
    marked ``seed_chosen`` and left out of the ratings); ``house_bot``: the sample bot of
    the house seats (one of :data:`arena.schedule.HOUSE_BOTS`), stored even without
    ``fill_with_house_bots``; ``until_settled``: None for one round, else
    ``{"max_rounds", "delta"?, "alpha"?, "beta"?}`` (:class:`arena.sequential.SettleRule`;
    ``delta`` defaults to :func:`arena.sequential.default_delta`); ``separate_owners``: never
    two bots of one owner at one table (the schedule leaves such tables out; the API, the form
    and the CLI turn it on unless asked not to).

    Raises:
        Forbidden: not an organizer.
        InvalidField: ``options`` (or the bound it names: :func:`arena.limits.check_match_bounds`)
            refused; ``participants`` repeat, are not ``ready`` bots of the rule set, or are
            too few for its seats without ``fill_with_house_bots``; ``house_bot`` is not a
            sample bot's name; ``until_settled`` out of its ranges.
    """
    if not is_organizer(account):
        raise Forbidden("organizer role required")
    if house_bot not in sched.HOUSE_BOTS:
        raise InvalidField("house_bot", f"unknown house bot {house_bot!r}: one of {', '.join(sched.HOUSE_BOTS)}")
    try:
        normalized = engine.make_options(ruleset, options).to_dict()
        check_match_bounds(ruleset, options)
    except engine.OptionsError as exc:
        raise InvalidField("options", str(exc)) from None
    except BoundsError as exc:
        raise InvalidField(exc.field, str(exc)) from None
    seats = engine.SEATS[ruleset]
    _check_participants(session, ruleset, participants)
    if len(participants) < seats and not fill_with_house_bots:
        raise InvalidField("participants", f"{ruleset} needs at least {seats} participants (or fill_with_house_bots)")
    settle = _settle_rule(ruleset, normalized, until_settled)
    return lifecycle.create_tournament(
        session,
        participants=list(participants),
        name=name,
        organizer_id=account.id,
        ruleset=ruleset,
        options=normalized,
        time_rules=dict(time_rules),
        games_per_pairing=games_per_pairing,
        seed=seed,
        max_faults=max_faults,
        fill_with_house_bots=fill_with_house_bots,
        house_bot=house_bot,
        public_when_finished=public_when_finished,
        until_settled=settle.to_dict() if settle is not None else None,
        format=(TournamentFormat.UNTIL_SETTLED if settle is not None else TournamentFormat.ROUND_ROBIN).value,
        separate_owners=separate_owners,
    )


def _settle_rule(ruleset: str, options: dict[str, Any], until_settled: dict[str, Any] | None) -> SettleRule | None:
    """The organizer's ``until_settled`` as a rule, ``delta`` defaulted for the rule set.

    Raises:
        InvalidField: ``until_settled`` out of its ranges (the message says which key).
    """
    if until_settled is None:
        return None
    delta = until_settled.get("delta")
    try:
        return SettleRule(
            max_rounds=int(until_settled["max_rounds"]),
            delta=float(delta) if delta is not None else default_delta(ruleset, options),
            alpha=float(until_settled.get("alpha", ALPHA)),
            beta=float(until_settled.get("beta", BETA)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidField("until_settled", str(exc).strip("'")) from None


def _send(session: Session, dispatcher: Dispatcher, match_ids: list[int], hint: str) -> None:
    """Send the matches and mark them queued.

    Raises:
        Unavailable: the broker is down (``hint`` ends the message); the matches the
            transition marked queued went back to pending, so a later start sends them.
    """
    try:
        dispatcher.send_matches(match_ids)
    except QueueError as exc:
        lifecycle.release_queued(session, match_ids)
        raise Unavailable(f"{exc}; {hint}") from None
    lifecycle.mark_queued(session, match_ids)


def start_tournament(session: Session, dispatcher: Dispatcher, account: Account, tournament_id: int) -> Tournament:
    """``created|running -> running``: schedule and send its matches (module docstring).

    Raises:
        Forbidden, NotFound: see :func:`organizer_tournament`.
        Conflict: finished or cancelled, already running with nothing left to send, or its
            schedule cannot be built.
        Unavailable: the broker is down: the tournament is running with what was sent so far;
            starting again sends the rest (the reaper also does, once the broker is back).
    """
    return send_start(session, dispatcher, organizer_tournament(session, account, tournament_id))


def send_start(session: Session, dispatcher: Dispatcher, t: Tournament) -> Tournament:
    """The start of :func:`start_tournament` once the organizer is checked (also what a start
    that waited for offline entrants runs: :mod:`arena.usecases.entrants`).

    Raises:
        Conflict, Unavailable: see :func:`start_tournament`.
    """
    schedule: Callable[[int], list[sched.ScheduledMatch]] | None = None
    if t.status == TournamentStatus.CREATED and len(t.participants) <= INLINE_START_PARTICIPANTS:

        def schedule(seed: int) -> list[sched.ScheduledMatch]:  # the seed is drawn by the start (lifecycle)
            return lifecycle.first_round(session, t, seed)

    try:
        pending = lifecycle.start_tournament(session, t.id, schedule)
    except sched.ScheduleError as exc:
        session.rollback()
        raise lifecycle.Conflict(f"cannot schedule tournament {t.id}: {exc}") from None
    # The first matches are sent here (the workers start on them at once); the rest, or a
    # large field's whole schedule, by the launch. The transition marked what it took
    # `queued`; the launch sends `pending` matches only, so the rest go back first (else
    # they wait for the reaper).
    now, rest = pending[:INLINE_SEND_MATCHES], pending[INLINE_SEND_MATCHES:]
    lifecycle.release_queued(session, rest)
    if now:
        _send(
            session,
            dispatcher,
            now,
            "the tournament is running with its schedule stored and no match sent: "
            "start again to send them (the reaper also does, once the broker is back)",
        )
    if rest or not pending:
        try:
            dispatcher.launch_tournament(t.id)
        except QueueError as exc:
            sent = f"{len(now)} of its {len(pending)} matches were sent" if now else "no match was sent"
            raise Unavailable(
                f"{exc}; the tournament is running and {sent}: start again to send the rest "
                "(the reaper also does, once the broker is back)"
            ) from None
    session.refresh(t)
    return t


def resume_tournament(
    session: Session, dispatcher: Dispatcher, account: Account, tournament_id: int, *, include_running: bool = False
) -> Tournament:
    """Send again every match of a running tournament that has no result (``pending``,
    ``queued``, and ``running`` ones with ``include_running``).

    Raises:
        Forbidden, NotFound: see :func:`organizer_tournament`.
        Conflict: not running, or nothing left.
        Unavailable: the broker is down.
    """
    t = organizer_tournament(session, account, tournament_id)
    left = lifecycle.resumable_matches(session, t.id, include_running=include_running)
    _send(session, dispatcher, left, "start or resume again later")
    session.refresh(t)
    return t


def cancel_tournament(
    session: Session, account: Account, tournament_id: int, dispatcher: Dispatcher | None = None
) -> Tournament:
    """Cancel: matches not yet finished are cancelled (one being played keeps its result); a
    start waiting for offline entrants stops waiting. With ``dispatcher``, the owners'
    webhooks hear of the end now (:func:`arena.notices.announce_ends`; else the reaper's).

    Raises:
        Forbidden, NotFound: see :func:`organizer_tournament`.
        Conflict: finished or cancelled already.
    """
    t = organizer_tournament(session, account, tournament_id)
    lifecycle.cancel_tournament(session, t.id)
    if dispatcher is not None:
        notices.announce_ends(session, dispatcher.send_webhook, only=t.id)
    session.refresh(t)
    return t


def retry_tournament(
    session: Session, dispatcher: Dispatcher, account: Account, tournament_id: int, *, settings: Settings
) -> Tournament:
    """Play the ``failed`` matches again (back to ``queued``; a finished tournament runs again),
    then a ``queued`` event on the tournament's live channel (:func:`arena.live.announce`).

    Raises:
        Forbidden, NotFound: see :func:`organizer_tournament`.
        Conflict: cancelled, or nothing failed.
        Unavailable: the broker is down (the matches are then ``pending``).
    """
    t = organizer_tournament(session, account, tournament_id)
    ids = lifecycle.retry_failed(session, t.id)
    notices.rearm_end_notice(session, t.id)  # its next end is announced too
    _send(session, dispatcher, ids, "retry again later")
    live.announce(settings, t.id, "queued", ids)  # the tournament page's live view (after the commit)
    session.refresh(t)
    return t


# -- the launch (what ``arena.enqueue_tournament`` runs) --------------------------------------
def _build(session: Session, tournament_id: int) -> Callable[[], list[sched.ScheduledMatch]]:
    t = session.scalars(
        select(Tournament).where(Tournament.id == tournament_id).options(selectinload(Tournament.participants))
    ).one()
    seed = int(t.seed or 0)  # a running tournament has its seed (store_schedule stores nothing otherwise)
    return lambda: lifecycle.first_round(session, t, seed)


def schedule_tournament(sessions: sessionmaker[Session], tournament_id: int) -> bool:
    """Store the schedule of a running tournament if it has none yet; False when there is no
    such tournament, or its schedule cannot be built (:class:`arena.schedule.ScheduleError`:
    the participants are checked at creation, so only bad stored data): it is then
    cancelled, with the reason logged.

    Raises:
        sqlalchemy.exc.OperationalError: the database is unreachable.
    """
    with sessions() as s:
        if s.get(Tournament, tournament_id) is None:
            return False
        try:
            stored = lifecycle.store_schedule(s, tournament_id, _build(s, tournament_id))
        except sched.ScheduleError as exc:
            s.rollback()
            log.error("tournament %s cannot be scheduled (%s): cancelled", tournament_id, exc)
            lifecycle.cancel_tournament(s, tournament_id)
            return False
        if stored:
            log.info("tournament %s: %d matches stored", tournament_id, stored)
    return True


def pending_matches(session: Session, tournament_id: int) -> list[int]:
    """Ids of the tournament's ``pending`` matches in schedule order."""
    return list(
        session.scalars(
            select(Match.id)
            .where(Match.tournament_id == tournament_id, Match.status == MatchStatus.PENDING)
            .order_by(Match.index)
        )
    )


def send_tournament(
    sessions: sessionmaker[Session],
    tournament_id: int,
    dispatcher: Dispatcher,
    *,
    batch: int = SEND_BATCH,
    first_batch: int = FIRST_SEND_BATCH,
) -> int:
    """The launch (module docstring): :func:`schedule_tournament`, then send the ``pending``
    matches and mark them ``queued``, by batches of ``first_batch``, then twice the last, up
    to ``batch`` matches. Returns how many matches were sent. Nothing is sent for a
    tournament that is not running.

    Raises:
        QueueError: the broker is down (the task retries; what was sent stays ``queued``).
        sqlalchemy.exc.OperationalError: the database is unreachable.
    """
    if not schedule_tournament(sessions, tournament_id):
        return 0
    sent, size = 0, max(1, min(first_batch, batch))
    while True:
        with sessions() as s:
            ids = lifecycle.pending_batch(s, tournament_id, size)
            if not ids:
                s.rollback()
                return sent
            dispatcher.send_matches(ids)  # an error rolls back: the batch stays pending
            lifecycle.mark_queued(s, ids)
            sent += len(ids)
        size = min(batch, size * 2)
