"""``arena demo --ladder``: the ladder part of the demo (:mod:`cli.demo` runs the rest: the
database, the API, the accounts and the sample bots).

On the embedded default (SQLite, eager mode) there is no Celery beat: :func:`drive_ticks` calls
the ladder's own tick, :func:`arena.usecases.ladders.tick`, in a loop, each tick's sets played
and stored in this process by the in-process dispatcher's ``send_matches`` (each set rated as
it is stored). This loop is the demo's, for a few minutes on one machine; the service never
schedules anything itself: there, Celery beat runs the tick every ``ARENA_LADDER_TICK_S``
seconds (``arena beat``, docs/ladder.md).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from arena.db.models import utcnow
from arena.usecases import ladders

#: The ladder demo's bots, of graded strength (docs/search-bot.md, docs/performance.md):
#: (account name, bot name, sample bot, seed), strongest first.
LADDER_BOTS = (
    ("alice", "search", "search", 1),
    ("bob", "heuristic", "heuristic", 2),
    ("carol", "greedy", "greedy", 3),
    ("dave", "random", "random", 4),
)
#: The demo ladder's knobs (docs/ladder.md): no house bots (the table shows the four sample
#: bots only), and a few minutes of play need no hourly caps.
LADDER_CONFIG: dict[str, Any] = {
    "fill_with_house_bots": False,
    "house_bots": [],
    "pair_free_sets": 100000,
    "max_sets_per_hour": 3600,
}
#: What each demo bot's owner declares when entering it: one set at a time, no hourly limit
#: that a few minutes would reach.
ENTRY_LIMITS = {"max_concurrent": 1, "max_sets_per_hour": 3600}


@dataclass
class TickCount:
    """What :func:`drive_ticks` did: ticks run, sets formed (and played), seconds."""

    ticks: int = 0
    sets: int = 0
    seconds: float = 0.0


def drive_ticks(
    sessions: sessionmaker[Session],
    send: Callable[[list[int]], object],
    online: ladders.Online,
    *,
    seconds: float | None,
    ticks: int | None,
    probe_s: int,
    on_tick: Callable[[TickCount], None] | None = None,
    rng: random.Random | None = None,
) -> TickCount:
    """Run the ladders' tick again and again (module docstring) until ``ticks`` ticks have run
    (when given) or ``seconds`` have passed; each tick's sets are played by ``send`` before the
    next one. Each tick is a second after the previous at least (its own tick number: a tick
    runs once, :func:`arena.usecases.ladders.tick_number`)."""
    done = TickCount()
    started = time.monotonic()
    last: datetime | None = None
    while True:
        if ticks is not None and done.ticks >= ticks:
            break
        if ticks is None and seconds is not None and time.monotonic() - started >= seconds:
            break
        now = utcnow()
        if last is not None and now < last + timedelta(seconds=1):
            now = last + timedelta(seconds=1)
        last = now
        reports = ladders.tick(sessions, send, tick_s=1, probe_s=probe_s, online=online, now=now, rng=rng)
        done.ticks += 1
        done.sets += sum(len(r.formed) for r in reports)
        done.seconds = time.monotonic() - started
        if on_tick is not None:
            on_tick(done)
    return done
