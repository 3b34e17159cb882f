"""Use cases of the arena: what a request, a form or a command asks the core to do.

One function per use case, shared by the REST views (:mod:`api.resources`), the browser's
forms (:mod:`api.ui.forms`) and the command line: :mod:`arena.usecases.tournaments`
(create, start, resume, cancel, retry; the launch a worker runs) and
:mod:`arena.usecases.bots` (register, list, read, change, delete, check, rotate the
secret). Each takes a database session, the acting account where access matters, and a
:class:`arena.dispatch.Dispatcher` where work is sent; it commits what it changes and
returns the rows. A refusal is one of the typed errors below, or of :mod:`arena.lifecycle`
(:class:`~arena.lifecycle.NotFound`, :class:`~arena.lifecycle.Conflict`,
:class:`~arena.lifecycle.TooManyChecks`) or :class:`arena.accounts.NameTaken`, its ``str``
a message for the user; :func:`api.errors.refusal` maps each to its HTTP answer, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from arena.lifecycle import CheckRunning, Conflict


class Forbidden(Exception):
    """The acting account may not do this (HTTP 403)."""


class InvalidField(Exception):
    """A value of the request is refused (HTTP 422 naming ``field``); ``str``: the reason."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Unavailable(Exception):
    """The work could not be sent (the broker is down; HTTP 503), ``retry_after_s``: seconds
    to wait before trying again, or None when not said."""

    def __init__(self, message: str, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class BotCheckRunning(CheckRunning):
    """Bot ``bot_id`` already has check ``check_id`` queued or running (HTTP 409, the check's
    URL in ``Location``)."""

    def __init__(self, message: str, bot_id: int, check_id: int) -> None:
        super().__init__(message, check_id)
        self.bot_id = bot_id


class EntrantsOffline(Conflict):
    """Tournament ``tournament_id`` was not started: entrants are offline (HTTP 409 with the
    list, ``offline``; :mod:`arena.usecases.entrants`). ``waiting_until``: when its start
    stops waiting for them, if it waits."""

    def __init__(self, tournament_id: int, offline: Sequence[Any], waiting_until: datetime | None = None) -> None:
        names = "; ".join(a.describe() for a in offline)
        super().__init__(
            f"tournament {tournament_id} was not started: {len(offline)} of its entrants "
            f"{'is' if len(offline) == 1 else 'are'} offline ({names}); start it with "
            "if_offline=wait to wait for them, or if_offline=start to start without them"
        )
        self.tournament_id = tournament_id
        self.offline = list(offline)
        self.waiting_until = waiting_until
