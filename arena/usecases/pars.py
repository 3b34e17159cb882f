"""Fill the pars of a stored match (the task ``arena.compute_par``; docs/ranking.md).

:func:`fill_pars` reads a result whose ``par_status`` is ``pending`` and its log, computes
every game's par with :func:`arena.par.match_pars` (``ARENA_PAR_ROLLOUTS`` rollouts, the
rule set's weight; no transaction is open meanwhile), then stores them once (:func:`arena.lifecycle.store_pars`:
``games[i].par`` per player, the log with its pars, ``par_status`` ``done``). When pars are
off (``ARENA_PAR_ROLLOUTS=0``), a game cannot have one, or computing them fails (logged),
the result becomes ``skipped``.
When the tournament is over and this was its last par, the ratings of its rule set are
rebuilt (they read the pars). Any number of deliveries store the pars once.

What follows each store asks for them through its dispatcher's ``send_pars``
(:func:`arena.followups.follow`): a worker's sends the task by name to
:data:`arena.queue.PAR_QUEUE`; the in-process dispatcher of eager mode calls :func:`fill_pars`
at once.
"""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from arena import lifecycle, matchlog
from arena import par as luck
from arena.config import Settings
from arena.db.models import Match, MatchLog, MatchResult, Tournament
from arena.db.session import shared_sessions
from arena.followups import update_ratings
from arena.lifecycle import ladder_sets
from arena.status import ParStatus

log = logging.getLogger("arena.pars")


def fill_pars(match_id: int, settings: Settings | None = None, sessions: sessionmaker[Session] | None = None) -> str:
    """Compute and store the pars of match ``match_id`` (module docstring). Returns a status
    line: ``"stored pars of match N ..."``, ``"duplicate ..."`` (another delivery stored them
    first), ``"skipped ..."`` or ``"nothing to do ..."`` (no result, or not ``pending``).

    Raises:
        sqlalchemy.exc.OperationalError: the database is unreachable (the task retries).
    """
    settings = settings or Settings.from_env()
    factory = sessions or shared_sessions(settings.database_url)
    with factory() as session:
        row = session.get(MatchResult, int(match_id))
        status = row.par_status if row is not None else None
        data = session.scalar(select(MatchLog.data).where(MatchLog.match_id == int(match_id)))
    if status != ParStatus.PENDING or data is None:
        return f"nothing to do for match {match_id}: par status {status}"
    rollouts = settings.par_rollouts
    if rollouts < 1:
        with factory() as session:
            lifecycle.skip_pars(session, int(match_id))
        _rate_if_last(factory, int(match_id))
        return f"skipped pars of match {match_id}: ARENA_PAR_ROLLOUTS is 0"
    try:
        match_log = matchlog.decode(data)
        weight = luck.weight_of(str(match_log.get("ruleset")))
        pars = luck.match_pars(match_log, rollouts, weight=weight)
    except luck.ParError as exc:
        log.warning("match %s: no par (%s)", match_id, exc)
        with factory() as session:
            lifecycle.skip_pars(session, int(match_id))
        _rate_if_last(factory, int(match_id))
        return f"skipped pars of match {match_id}: {exc}"
    except Exception:  # a bug here must not come back with every re-send: skipped, logged
        log.exception("match %s: the pars could not be computed", match_id)
        with factory() as session:
            lifecycle.skip_pars(session, int(match_id))
        _rate_if_last(factory, int(match_id))
        return f"skipped pars of match {match_id}: internal error"
    per_player = [luck.player_pars(gm, p) for gm, p in zip(match_log["games"], pars, strict=True)]
    with factory() as session:
        stored = lifecycle.store_pars(
            session, int(match_id), per_player, luck.with_pars(match_log, pars, rollouts, weight=weight)
        )
    if stored:
        _rate_if_last(factory, int(match_id))
    word = "stored" if stored else "duplicate"
    return f"{word} pars of match {match_id} ({len(pars)} games, {rollouts} rollouts)"


def _rate_if_last(factory: sessionmaker[Session], match_id: int) -> None:
    """A ladder set waiting for its pars is rated now (:func:`arena.lifecycle.ladder_sets.rate_set`);
    else rebuild the ratings of the match's rule set when its tournament is over and no
    result of it waits for its pars any more (the ratings read them); a database error here
    only delays the ratings (the reaper rates a set left pending; the next rebuild has them)."""
    try:
        with factory() as session:
            if ladder_sets.rate_set(session, match_id) is not None:
                return
        with factory() as session:
            row = session.execute(
                select(Match.tournament_id, Tournament.ruleset)
                .join(Tournament, Tournament.id == Match.tournament_id)
                .where(Match.id == match_id)
            ).first()
            if row is None or not lifecycle.tournament_done(session, row[0]):
                return
            waiting = session.scalar(
                select(MatchResult.match_id)
                .join(Match, Match.id == MatchResult.match_id)
                .where(Match.tournament_id == row[0], MatchResult.par_status == ParStatus.PENDING)
                .limit(1)
            )
            if waiting is None:
                update_ratings(session, row[1])
    except DBAPIError as exc:
        log.warning("ratings not rebuilt after the pars of match %s: %s", match_id, type(exc).__name__)
