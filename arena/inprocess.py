"""The in-process dispatcher of eager mode (``ARENA_CELERY_EAGER``: the demo, quick local runs).

:class:`InProcessDispatcher` implements :class:`arena.dispatch.Dispatcher` without a broker:
each call does the work in the calling process, with the caller's settings (its database),
and returns when it is done, as the Celery task would have done it on a worker:

- ``send_matches``: each match is played and stored, one after the other, by
  ``play_and_store(match_id, settings, self)`` (what ``arena.run_match`` runs): what follows
  its store comes back here (a next round is played, its pars computed);
- ``send_pars``: :func:`arena.usecases.pars.fill_pars` (what ``arena.compute_par`` runs);
- ``refill_ladder``: nothing (a quick local run drives its ladder's ticks itself);
- ``send_check``: :func:`arena.conformance.run_check` (what ``arena.check_bot`` runs);
- ``launch_tournament``: the schedule is stored if there is none yet
  (:func:`arena.usecases.tournaments.schedule_tournament`), then every ``pending`` match is
  played in schedule order;
- ``send_table``: the table's match is played as ``send_matches`` plays one, on a daemon
  thread (a person plays it through the pages: the request that started it must return).
- ``await_entrants``: the poll of a waiting start (:func:`arena.usecases.entrants.await_entrants`)
  on a timer thread, after the countdown;
- ``send_webhook``: one delivery now (:func:`arena.notices.deliver`), no retry.

It imports the match runner and the conformance check: only the composition of an eager app
or command (``daifugo_arena.cli``, tests) imports this module, never the API package (an import contract).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from arena import notices, roll_call
from arena.config import Settings
from arena.conformance import run_check
from arena.db.session import shared_sessions
from arena.delivery import play_and_store
from arena.usecases.entrants import await_entrants
from arena.usecases.pars import fill_pars
from arena.usecases.tournaments import pending_matches, schedule_tournament

log = logging.getLogger("arena.inprocess")


class InProcessDispatcher:
    """:class:`arena.dispatch.Dispatcher` running the work here (module docstring).

    ``sessions``: the session factory of the launches (default: one per database URL of
    ``settings``); the matches and checks open their own from ``settings``.
    """

    def __init__(self, settings: Settings, *, sessions: sessionmaker[Session] | None = None) -> None:
        self.settings = settings
        self._factory = sessions

    @property
    def sessions(self) -> sessionmaker[Session]:
        return self._factory if self._factory is not None else shared_sessions(self.settings.database_url)

    def send_matches(self, match_ids: Sequence[int], *, priority: bool = False) -> int:
        ids = [int(mid) for mid in match_ids]
        for mid in ids:  # a round a store adds (played until settled) is played from here too
            play_and_store(mid, self.settings, self)
        return len(ids)

    def send_pars(self, match_ids: Sequence[int]) -> int:
        ids = [int(mid) for mid in match_ids]
        for mid in ids:
            fill_pars(mid, self.settings)
        return len(ids)

    def refill_ladder(self, match_id: int) -> None:
        return None

    def send_check(self, check_id: int) -> None:
        run_check(int(check_id), self.settings)

    def send_table(self, match_id: int) -> None:
        threading.Thread(
            target=self.send_matches, args=([int(match_id)],), name=f"table-match-{match_id}", daemon=True
        ).start()

    def launch_tournament(self, tournament_id: int, *, priority: bool = False) -> None:
        if not schedule_tournament(self.sessions, tournament_id):
            return
        with self.sessions() as s:
            ids = pending_matches(s, tournament_id)
        self.send_matches(ids)

    def await_entrants(self, tournament_id: int, countdown_s: float) -> None:
        timer = threading.Timer(max(0.0, float(countdown_s)), self._poll, args=[int(tournament_id)])
        timer.daemon = True
        timer.start()

    def _poll(self, tournament_id: int) -> None:
        roll = roll_call.caller(
            roll_call.redis_of(self.settings.broker_url), allow_private=self.settings.allow_private_bot_urls
        )
        try:
            await_entrants(self.sessions, tournament_id, self, roll, self.settings)
        except Exception:  # a timer thread has nobody to raise to
            log.exception("tournament %s: the poll of its waiting start broke", tournament_id)

    def send_webhook(self, account_id: int, message: dict[str, Any]) -> None:
        notices.deliver(
            self.sessions, int(account_id), message, allow_private=self.settings.allow_private_bot_urls, attempt=1
        )
