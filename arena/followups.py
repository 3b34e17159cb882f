"""What follows a match's end, wherever it ended (a worker's store, the spool's, a failure):
one step (:func:`follow`) fed by what the lifecycle returned (:class:`Ending`): the event
announced, the round a store added sent, the ratings, the ladder's next sets and the pars,
each sent through the dispatcher (:class:`arena.dispatch.Dispatcher`) the caller was composed
with.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from arena import lifecycle, notices
from arena.config import Settings, people_in_bot_ratings_from_env
from arena.dispatch import Dispatcher, QueueError
from arena.lifecycle import Stored, ladder_sets
from arena.live import announce
from arena.people import rebuild_people_ratings
from arena.ratings import rebuild_ratings
from arena.status import SetRating

log = logging.getLogger("arena.tasks")


#: Key of the PostgreSQL advisory lock serializing ratings rebuilds.
RATINGS_LOCK = 0x6172656E61  # "arena"


def update_ratings(session: Session, ruleset: str, attempts: int = 3) -> int:
    """Step 5: rebuild the ratings of ``ruleset``, the bots' and the people's pool
    (:mod:`arena.people`), and commit (advisory lock on PostgreSQL)."""
    for attempt in range(attempts):
        try:
            if session.get_bind().dialect.name == "postgresql":
                session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": RATINGS_LOCK})
            n = rebuild_ratings(session, ruleset, people=people_in_bot_ratings_from_env())
            rebuild_people_ratings(session, ruleset)
            session.commit()
            return n
        except (IntegrityError, OperationalError):
            session.rollback()
            if attempt == attempts - 1:
                raise
            time.sleep(0.1 * (attempt + 1))
    return 0


@dataclass(frozen=True)
class Ending:
    """How a match's delivery ended, as the lifecycle said it (:meth:`stored`, :meth:`failed`):
    the match, the event to announce (``finished``, ``failed``; "" when nothing changed: a
    duplicate), the round a store added (:class:`arena.lifecycle.Stored`), whether its pars
    wait (``par_status`` ``pending``) and whether a ladder's entries are freed (a ladder set's
    end: ``refill``)."""

    match_id: int
    tournament_id: int
    ruleset: str
    event: str = ""
    added: tuple[int, ...] = ()
    pars: bool = False
    refill: bool = False

    @classmethod
    def stored(
        cls, match_id: int, tournament_id: int, ruleset: str, stored: Stored, *, pars: bool, ladder: bool
    ) -> Ending:
        """A store's ending (:func:`arena.lifecycle.store_result`; not a stale one): stored, or
        a duplicate (only its rating is looked at again). ``ladder``: the match may be a
        ladder's set (its entries are freed)."""
        if not stored:
            return cls(match_id, tournament_id, ruleset)
        return cls(match_id, tournament_id, ruleset, "finished", stored.added, pars, refill=ladder)

    @classmethod
    def failed(cls, match_id: int, tournament_id: int, ruleset: str, *, now: bool, ladder: bool) -> Ending:
        """A failure's ending (:func:`arena.lifecycle.fail_match`; ``now``: it failed the match,
        rather than finding it already done)."""
        return cls(match_id, tournament_id, ruleset, "failed" if now else "", refill=ladder)


def follow(settings: Settings, factory: sessionmaker[Session], dispatcher: Dispatcher, ending: Ending) -> None:
    """What follows a match's end, wherever it ended (a worker's store, the spool's, a
    failure), in this order: its event announced (:func:`arena.live.announce`), the round a
    store added sent (:func:`send_round`), its rating (:func:`rate_after`), its ladder's next
    sets (the dispatcher's ``refill_ladder``) and its pars (the dispatcher's ``send_pars``,
    when they wait). Never raises for the broker (the reaper sends what was not sent)."""
    mid, tid = ending.match_id, ending.tournament_id
    if ending.event:
        announce(settings, tid, ending.event, [mid])
    send_round(settings, dispatcher, tid, ending.added)
    rate_after(factory, mid, tid, ending.ruleset, settings)
    try:
        if ending.refill:
            dispatcher.refill_ladder(mid)
        if ending.pars:
            dispatcher.send_pars([mid])
    except QueueError as exc:  # the tick forms the sets; the reaper sends the pars again
        log.warning("match %s: its ladder's next sets or its pars not sent now (%s)", mid, exc)


def send_round(settings: Settings, dispatcher: Dispatcher, tournament_id: int, match_ids: Sequence[int]) -> None:
    """Send the matches of a round a store added (:class:`arena.lifecycle.Stored`, already
    ``queued``) with ``dispatcher``; then a ``queued`` event. Never raises for the broker: a
    match not sent stays ``queued`` and the reaper sends it (:func:`arena.lifecycle.lost_queued`)."""
    ids = [int(i) for i in match_ids]
    if not ids:
        return
    try:
        dispatcher.send_matches(ids)
    except QueueError as exc:
        log.warning("tournament %s: next round not sent (%s); the reaper sends it", tournament_id, exc)
    log.info("tournament %s: a round of %d matches added", tournament_id, len(ids))
    announce(settings, tournament_id, "queued", ids)


def rate_after(
    factory: sessionmaker[Session],
    match_id: int,
    tournament_id: int,
    ruleset: str,
    settings: Settings | None = None,
) -> bool:
    """Step 5 once a match is done (stored or failed): a ladder set is rated once
    (:func:`arena.lifecycle.ladder_sets.rate_set`; one stored while its pars are on their way
    waits for them, and the par task or the reaper rates it), a comparison set is compared
    with its twin; a tournament's ratings are rebuilt when none of its matches is left
    (:func:`rate_if_done`, with ``settings`` its end announced). A database error only delays
    them (the reaper rates a set left
    pending; the next rebuild has the tournaments'). Returns True when a ladder set's rating
    moved (rated, unrated, void, or its comparison folded)."""
    try:
        with factory() as session:
            rated = ladder_sets.rate_set(session, match_id)
        if rated is not None:
            if rated.outcome is SetRating.COMPARISON:
                with factory() as session:
                    return ladder_sets.add_comparison(session, match_id)
            return rated.changed
    except DBAPIError as exc:
        log.warning("match %s: not rated now (%s); the reaper rates it", match_id, type(exc).__name__)
        return False
    rate_if_done(factory, tournament_id, ruleset, settings)
    return False


def rate_if_done(
    factory: sessionmaker[Session], tournament_id: int, ruleset: str, settings: Settings | None = None
) -> None:
    """Step 5 when no match of the tournament is left to play, and, given ``settings``, the
    end announced to the owners' webhooks once it is over (:func:`arena.notices.announce_ends`);
    a database error here only delays the ratings (the next rebuild has them) and the notice
    (the reaper sends it)."""
    try:
        with factory() as session:
            if lifecycle.tournament_done(session, tournament_id):
                update_ratings(session, ruleset)
                if settings is not None:
                    notices.announce_ends(session, notices.sender_for(settings), only=tournament_id)
    except DBAPIError as exc:
        log.warning("ratings of %s not rebuilt: %s", ruleset, type(exc).__name__)
