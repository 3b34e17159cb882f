"""The ladders' health probes of HTTP bots (docs/ladder.md, "Health"): what the task
``arena.ladder_probe`` runs, in the check process (queue ``arena.checks``).

:func:`run_probes` sends each due entry's bot one health request (the check's own,
:func:`arena.health.health_check`: pinned addresses, no redirect, bounded answer), and
once more after a failure; a bot that fails both is paused by the health rule
(:func:`arena.lifecycle.ladders.record_probe`) and comes back after a passing check. A bot
that dials out is not probed: its presence on a gateway says it can play.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena.config import Settings
from arena.db.models import Bot, LadderEntry
from arena.db.session import shared_sessions
from arena.health import health_check
from arena.lifecycle import ladders
from arena.status import BotTransport

log = logging.getLogger("arena.ladder")

#: Seconds one probe waits for the health answer; probes run at once on this many threads.
PROBE_TIMEOUT_S = 5.0
PROBE_THREADS = 16


def _probe(url: str, allow_private: bool) -> tuple[bool, str | None]:
    """Two tries of the health request: ``(ok, error of the last try)``."""
    error = None
    for _ in range(2):
        out = health_check(url, timeout_s=PROBE_TIMEOUT_S, allow_private=allow_private)
        if out["ok"]:
            return True, None
        error = out["error"]
    return False, error


def run_probes(
    entry_ids: Sequence[int], settings: Settings | None = None, sessions: sessionmaker[Session] | None = None
) -> str:
    """Probe the HTTP bots of ``entry_ids`` and record each outcome (module docstring).
    Returns a status line ``"probed N: P paused"``."""
    settings = settings or Settings.from_env()
    factory = sessions or shared_sessions(settings.database_url)
    with factory() as s:
        rows = s.execute(
            select(LadderEntry.id, Bot.url)
            .join(Bot, Bot.id == LadderEntry.bot_id)
            .where(LadderEntry.id.in_([int(e) for e in entry_ids]), Bot.transport == BotTransport.HTTP)
        ).all()
    targets = [(entry_id, url) for entry_id, url in rows if url]
    if not targets:
        return "probed 0: 0 paused"
    with ThreadPoolExecutor(max_workers=min(PROBE_THREADS, len(targets))) as pool:
        results = list(pool.map(lambda t: _probe(t[1], settings.allow_private_bot_urls), targets))
    paused = 0
    for (entry_id, _url), (ok, error) in zip(targets, results, strict=True):
        with factory() as s:
            paused += ladders.record_probe(s, entry_id, ok, error)
        if not ok:
            log.warning("ladder entry %s: health probe failed (%s)", entry_id, error)
    return f"probed {len(targets)}: {paused} paused"
