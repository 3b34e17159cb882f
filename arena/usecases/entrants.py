"""Starting a tournament whose entrants may be offline (issue 42: laptops sleep in a class).

:func:`start_or_wait` is the start the API, the form and the command line call: a roll call
of the entrants first (:mod:`arena.roll_call`: a bot that dials out and holds no connection,
a bot the arena calls whose health check fails), then, by ``if_offline``:

* ``ask`` (the default): nobody offline, the tournament starts
  (:func:`arena.usecases.tournaments.send_start`); else :class:`~arena.usecases.EntrantsOffline`
  (409, the list) and nothing changes: the organizer chooses;
* ``wait``: nobody offline, it starts; else it waits, at most ``wait_s`` seconds
  (:data:`MAX_WAIT_S`): the tournament stays ``created`` with ``waiting_until``
  (:func:`arena.lifecycle.begin_wait`), each offline bot's owner is told (webhook
  ``entrant.offline``; the bot's page says so), and a worker polls (:func:`await_entrants`,
  every :data:`POLL_S` seconds): once everyone is online, or the time is up, it starts;
* ``start``: it starts at once, whoever is offline (their owners are told too).

A waiting tournament may be started at once (``start``, the wait ends), waited for longer
(``wait`` again: a new deadline) or cancelled. The roll call is stored on the tournament
(``roll_call``), so its page and the API say who was offline. A running tournament is
started again as before (its pending matches sent), without a roll call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena import lifecycle, live, notices
from arena.config import Settings
from arena.db.models import Account, Bot, Tournament, TournamentParticipant, utcnow
from arena.dispatch import Dispatcher, QueueError
from arena.lifecycle.base import aware
from arena.roll_call import Absence, Entrant, absences_of, record
from arena.status import TournamentStatus
from arena.usecases import EntrantsOffline, InvalidField, Unavailable
from arena.usecases.tournaments import organizer_tournament, send_start

log = logging.getLogger("arena.entrants")

#: What a start does when entrants are offline (module docstring).
ASK, WAIT, START = "ask", "wait", "start"
IF_OFFLINE = (ASK, WAIT, START)
#: Seconds a start waits for offline entrants by default, and at most.
DEFAULT_WAIT_S, MAX_WAIT_S = 300, 3600
#: Seconds between two roll calls of a waiting start.
POLL_S = 3.0

#: Finds the offline entrants among those given (:func:`arena.roll_call.roll_call` with the
#: caller's Redis and URL policy).
RollCall = Callable[[Sequence[Entrant]], list[Absence]]


@dataclass
class StartOutcome:
    """What :func:`start_or_wait` did: the tournament (running, or waiting), and the
    entrants found offline (empty when everyone answered)."""

    tournament: Tournament
    offline: list[Absence] = field(default_factory=list)

    @property
    def waiting(self) -> bool:
        return self.tournament.status == TournamentStatus.CREATED and self.tournament.waiting_until is not None


def entrants_of(session: Session, tournament_id: int) -> list[Entrant]:
    """The bots entered in the tournament (house seats are not: they are never offline)."""
    rows = session.execute(
        select(Bot.id, Bot.name, Bot.owner_id, Bot.transport, Bot.url)
        .join(TournamentParticipant, TournamentParticipant.bot_id == Bot.id)
        .where(TournamentParticipant.tournament_id == tournament_id)
        .order_by(Bot.id)
    ).all()
    return [Entrant(int(b), str(n), int(o), str(tr), u) for b, n, o, tr, u in rows]


def _wait_s(wait_s: float | None) -> float:
    value = DEFAULT_WAIT_S if wait_s is None else wait_s
    if not 1 <= value <= MAX_WAIT_S:
        raise InvalidField("wait_s", f"must be from 1 to {MAX_WAIT_S} seconds")
    return float(value)


def start_or_wait(
    session: Session,
    dispatcher: Dispatcher,
    account: Account,
    tournament_id: int,
    roll: RollCall,
    *,
    if_offline: str = ASK,
    wait_s: float | None = None,
) -> StartOutcome:
    """Start the tournament, or tell who is offline, or wait for them (module docstring).

    Raises:
        Forbidden, NotFound: see :func:`arena.usecases.tournaments.organizer_tournament`.
        InvalidField: ``if_offline`` is not one of :data:`IF_OFFLINE`; ``wait_s`` out of 1..:data:`MAX_WAIT_S`.
        EntrantsOffline: ``ask`` and someone is offline (nothing changed).
        Conflict, Unavailable: see :func:`arena.usecases.tournaments.start_tournament`; a
            wait that cannot send its first poll is Unavailable (the tournament waits: the
            reaper sends the poll once the broker is back).
    """
    if if_offline not in IF_OFFLINE:
        raise InvalidField("if_offline", f"must be one of {', '.join(IF_OFFLINE)}")
    seconds = _wait_s(wait_s) if if_offline == WAIT else 0.0
    t = organizer_tournament(session, account, tournament_id)
    if t.status != TournamentStatus.CREATED:
        return StartOutcome(send_start(session, dispatcher, t))
    if t.waiting_until is not None and if_offline == START:
        return StartOutcome(_end_wait_and_start(session, dispatcher, t.id), _offline(t))
    absences = roll(entrants_of(session, t.id))
    if not absences:
        lifecycle.end_wait(session, t.id)
        lifecycle.record_roll_call(session, t.id, record([], utcnow()))
        session.refresh(t)
        return StartOutcome(send_start(session, dispatcher, t))
    if if_offline == ASK:
        session.rollback()
        raise EntrantsOffline(t.id, absences, waiting_until=aware(t.waiting_until))
    if if_offline == START:
        lifecycle.end_wait(session, t.id)
        lifecycle.record_roll_call(session, t.id, record(absences, utcnow()))
        session.refresh(t)
        notices.entrants_offline(session, dispatcher.send_webhook, t, absences, None)
        return StartOutcome(send_start(session, dispatcher, t), absences)
    until = utcnow() + timedelta(seconds=seconds)
    t = lifecycle.begin_wait(session, t.id, until, record(absences, utcnow()))
    notices.entrants_offline(session, dispatcher.send_webhook, t, absences, until)
    try:
        dispatcher.await_entrants(t.id, POLL_S)
    except QueueError as exc:
        raise Unavailable(
            f"{exc}; the tournament waits for its entrants until {until.isoformat()}, "
            "and starts when the broker is back (the reaper polls it)"
        ) from None
    return StartOutcome(t, absences)


def _offline(t: Tournament) -> list[Absence]:
    return absences_of(t.roll_call)


def _end_wait_and_start(session: Session, dispatcher: Dispatcher, tournament_id: int) -> Tournament:
    """End the wait and start (if another ended it first, the tournament as it is now)."""
    if lifecycle.end_wait(session, tournament_id):
        t = session.get(Tournament, tournament_id)
        assert t is not None
        session.refresh(t)
        return send_start(session, dispatcher, t)
    t = session.get(Tournament, tournament_id)
    assert t is not None
    session.refresh(t)
    return t


def await_entrants(
    sessions: sessionmaker[Session], tournament_id: int, dispatcher: Dispatcher, roll: RollCall, settings: Settings
) -> str:
    """What the task ``arena.await_entrants`` runs: one poll of a waiting start (module
    docstring). Once everyone is online, or the time is up, the wait ends and the tournament
    starts; else the roll call is stored, a ``waiting`` event goes to the tournament's live
    view and the next poll is sent (:data:`POLL_S`). A duplicate poll (a redelivery, the
    reaper's) finds the last roll call fresh and stops. Returns a status line.

    Raises:
        QueueError: the next poll could not be sent (the task retries; the reaper sends it).
        sqlalchemy.exc.OperationalError: the database is unreachable.
    """
    with sessions() as s:
        t = lifecycle.take_roll_call_turn(s, tournament_id, POLL_S / 2)
        if t is None:
            return f"tournament {tournament_id}: not waiting, or polled a moment ago"
        until = aware(t.waiting_until)
        entrants = entrants_of(s, tournament_id)
    absences = roll(entrants)
    now = utcnow()
    if absences and until is not None and now < until:
        with sessions() as s:
            lifecycle.record_roll_call(s, tournament_id, record(absences, now))
        live.announce(settings, tournament_id, "waiting", [])
        dispatcher.await_entrants(tournament_id, min(POLL_S, max(0.0, (until - now).total_seconds())))
        return f"tournament {tournament_id}: {len(absences)} entrant(s) still offline"
    with sessions() as s:
        lifecycle.record_roll_call(s, tournament_id, record(absences, now))
        if not lifecycle.end_wait(s, tournament_id):
            return f"tournament {tournament_id}: its wait was ended meanwhile"
        t = s.get(Tournament, tournament_id)
        assert t is not None
        s.refresh(t)
        try:
            send_start(s, dispatcher, t)
        except (lifecycle.Conflict, Unavailable) as exc:  # cancelled meanwhile; the broker: the reaper
            log.warning("tournament %s: start after its wait: %s", tournament_id, exc)
    live.announce(settings, tournament_id, "started", [])
    who = f"{len(absences)} still offline" if absences else "everyone online"
    return f"tournament {tournament_id}: started ({who})"
