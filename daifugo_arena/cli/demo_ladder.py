"""``arena demo --ladder``: the ladder part of the demo (:func:`run_ladder`; what both demos
start from, the database, the API, the accounts and the sample bots: :mod:`daifugo_arena.cli.demo_stage`).

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
from pathlib import Path
from typing import Any

import redis
from sqlalchemy.orm import Session, sessionmaker

from arena.config import Settings
from arena.db.models import utcnow
from arena.db.session import make_sessionmaker
from arena.inprocess import InProcessDispatcher
from arena.rulesets import arena_ruleset
from arena.usecases import ladders
from daifugo_arena.cli import ladder as ladder_cli
from daifugo_arena.cli.demo_stage import DEMO_TIME_RULES, DialOut, nobody, serve_or_hint, start_stage
from daifugo_arena.cli.display import progress_bar

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


@dataclass
class LadderRun:
    """How long ``arena demo --ladder`` plays: ``ticks`` ticks, or else ``minutes`` minutes."""

    minutes: float = 3.0
    ticks: int | None = None


@dataclass
class LadderDemoResult:
    """What the ladder demo produced (:func:`run_ladder`): the API, the ladder, its live table
    (``GET /ladders/{id}``), the ticks and sets played."""

    api_url: str
    ladder_id: int
    table: dict
    ticks: int
    sets: int
    seconds: float


def run_ladder(
    ruleset: str,
    out: Path,
    db_url: str,
    db_engine: Any,
    dialout: DialOut | None,
    port: int,
    serve: bool,
    run: LadderRun,
    console: Any,
    started: float,
) -> LadderDemoResult:
    """The ladder demo (:mod:`daifugo_arena.cli.demo_ladder`): four sample bots of graded strength enter an
    open ladder through the API, then the demo's loop drives the ladder's tick, each tick's
    sets played in-process; the live table and the official table at the end."""
    settings = Settings.from_env()
    size = arena_ruleset(ruleset).demo
    how = "dialing out to a gateway" if dialout is not None else "over HTTP"
    length = f"{run.ticks} ticks" if run.ticks is not None else f"{run.minutes:g} minutes"
    console.print(
        f"[bold]Daifugo Arena ladder demo[/bold]: {ruleset}, 4 sample bots of graded strength {how} "
        f"(search > heuristic > greedy > random), SQLite at {out / 'arena.db'}, sets run in-process (eager mode)"
    )
    console.print(
        f"the demo drives the ladder's tick itself for {length}, one tick after the other "
        "(a service runs it on Celery beat every ARENA_LADDER_TICK_S seconds); each set is one deal "
        "played in every seat rotation"
    )
    sessions = make_sessionmaker(db_engine)
    with start_stage(settings, db_engine, port, ruleset, dialout, LADDER_BOTS, console) as stage:
        public, bots = stage.public, stage.bots
        ld = stage.organizer.create_ladder(
            name=f"demo {ruleset} ladder",
            ruleset=ruleset,
            open=True,
            options=size.options,
            time_rules=DEMO_TIME_RULES,
            config=LADDER_CONFIG,
        )
        lid = ld["id"]
        for (account, *_), bot_id in zip(LADDER_BOTS, bots, strict=True):
            with public.with_token(stage.tokens[account]) as owner:
                owner.enter_ladder(lid, bot_id, **ENTRY_LIMITS)
        console.print(f"ladder {lid} created, the 4 bots entered; watch it: {stage.url}/ui/ladders/{lid}")
        online = ladders.redis_online(redis.Redis.from_url(dialout.redis.url)) if dialout is not None else nobody
        send = InProcessDispatcher(settings, sessions=sessions).send_matches
        with progress_bar(console) as bar:
            task = bar.add_task("ladder ticks", total=run.ticks)

            def show_tick(count: TickCount) -> None:
                bar.update(task, completed=count.ticks, description=f"ladder ticks ({count.sets} sets played)")

            count = drive_ticks(
                sessions,
                send,
                online,
                seconds=None if run.ticks is not None else run.minutes * 60,
                ticks=run.ticks,
                probe_s=settings.ladder_probe_s,
                on_tick=show_tick,
            )
        with sessions() as session:
            ladders.fit_ladder(session, lid)
        table = public.ladder(lid)
        console.print(f"ladder demo: {count.ticks} ticks, {count.sets} sets played in {count.seconds:.0f} s")
        console.print(ladder_cli.live_table(table))
        names = {r["entry_id"]: r["name"] for r in table["rows"]}
        console.print(ladder_cli.official_tables(public.ladder_official(lid), names))
        seconds = stage.finish(out, db_url, started, ladder_id=lid, ruleset=ruleset)
        result = LadderDemoResult(stage.url, lid, table, count.ticks, count.sets, seconds)
        serve_or_hint(serve, stage.url, out, f"ladders/{lid}", console)
        return result
