"""The dispatcher port: how the core hands work to whoever plays it.

A :class:`Dispatcher` sends every kind of work, each by id (the rows are in the database):

- matches (``send_matches``): each is played once by
  ``play_and_store(match_id, settings, dispatcher)`` (the runner service); a tournament's next
  round and a match played again are sent the same way;
- the pars of stored matches (``send_pars``): :func:`arena.usecases.pars.fill_pars`;
- the next sets of a done ladder set's entries (``refill_ladder``):
  :func:`arena.usecases.ladders.refill`;
- bot checks (``send_check``): :func:`arena.conformance.run_check`;
- tournament launches (``launch_tournament``): store a running tournament's schedule if it
  has none yet, then send its ``pending`` matches
  (:func:`arena.usecases.tournaments.send_tournament`);
- the match of a table where people play (``send_table``, docs/tables.md): a person waits for
  it, so it goes to the queue every worker consumes first, and in-process it is played on a
  thread of its own (the request that started it returns at once).
- the poll of a start waiting for offline entrants (``await_entrants``, after a countdown):
  :func:`arena.usecases.entrants.await_entrants`;
- owners' webhooks (``send_webhook``): :func:`arena.notices.deliver`.

Two implementations: :class:`arena.queue.CeleryDispatcher` sends Celery tasks by name to the
broker (it imports no runner: the API process uses it); :class:`arena.inprocess.InProcessDispatcher`
runs the work in the calling process before returning (eager mode, ``ARENA_CELERY_EAGER``:
the demo, quick local runs, tests). The one to use is chosen where the app or the command
is composed (``api.create_app(settings, dispatcher=...)``, ``daifugo_arena.cli``); what follows a stored
match (:func:`arena.followups.follow`) goes through the dispatcher its delivery was given, so
nothing below the composition asks which mode it runs in.

``priority`` sends to the queue every worker consumes first (the reaper's re-sends); an
in-process dispatcher ignores it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class QueueError(RuntimeError):
    """The work could not be sent: the broker cannot be reached (the message says why)."""


class Dispatcher(Protocol):
    """Sends matches, checks and tournament launches (module docstring).

    Every method raises :class:`QueueError` when the work cannot be sent; nothing is sent
    then, except, for ``send_matches``, the ids before the failure.
    """

    def send_matches(self, match_ids: Sequence[int], *, priority: bool = False) -> int:
        """Send one match per id, in order; returns how many were sent (in-process: played)."""
        ...

    def send_check(self, check_id: int) -> None:
        """Send one bot check (in-process: run it now)."""
        ...

    def launch_tournament(self, tournament_id: int, *, priority: bool = False) -> None:
        """Send the launch of a running tournament (in-process: store its schedule and play
        every pending match before returning)."""
        ...

    def await_entrants(self, tournament_id: int, countdown_s: float) -> None:
        """Send the next poll of a start waiting for offline entrants, due in ``countdown_s``
        seconds (in-process: on a timer thread)."""
        ...

    def send_webhook(self, account_id: int, message: dict[str, Any]) -> None:
        """Send one webhook event to an account's webhook (in-process: delivered now, once)."""
        ...

    def send_pars(self, match_ids: Sequence[int]) -> int:
        """Send the par computation of each stored match, in order (in-process: computed now);
        returns how many were sent."""
        ...

    def refill_ladder(self, match_id: int) -> None:
        """Send the refill of a done ladder set: its entries' next sets, formed once
        (in-process: nothing; the caller drives the ladder's ticks)."""
        ...

    def send_table(self, match_id: int) -> None:
        """Send a table's match (module docstring; in-process: played on a thread, returns at once)."""
        ...
