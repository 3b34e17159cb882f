"""``arena demo``: the whole service on embedded defaults, in one process, in a minute.

Everything over real HTTP on 127.0.0.1: a fresh SQLite database ``DIR/arena.db`` (``--out
DIR``, default ``./demo-output``) with ``ARENA_CELERY_EAGER=1`` and
``ARENA_ALLOW_PRIVATE_BOT_URLS=1`` set; the REST API (:func:`daifugo_arena.cli.compose.make_app`) served by
:class:`daifugo_arena.cli.servers.WsgiServer` (``--port``, or a free port) and an organizer account; four
sample bots (:data:`bots_sdk.samples.SAMPLE_BOTS`, :func:`bots_sdk.server.start`) registered
and checked by four contestant accounts; a round-robin tournament created and started, a
progress bar polling ``GET /tournaments/{id}``; then the standings, every match log in
``DIR/logs`` (replayed through the engine), ``DIR/demo.json`` (API URL, tokens, tournament
id) and where to open the replay pages. ``--serve`` keeps the API and the pages up until
Ctrl-C. Sizes: each rule set's ``arena.rulesets.ArenaRuleSet.demo``. Step by step: docs/design-notes.md, "The demo".

``--connect``: the sample bots are registered as bots that connect and dial out
(:func:`bots_sdk.connect`) to a gateway run in this process, through a Redis
(``ARENA_BROKER_URL``): a throwaway ``redis-server`` the demo starts and stops, or
``--redis-url`` (:mod:`daifugo_arena.cli.demo_services`); ``ARENA_ALLOW_PRIVATE_BOT_URLS`` is ``0`` then.

``--serve`` also offers a table (docs/tables.md): the demo's bots let people play them, an
account ``player`` is made (its token printed, and in ``demo.json``) and ``/ui/play`` seats it
against them or the house bots; a table needs Redis: the ``--connect`` one, or a throwaway
``redis-server`` started for it (without one the demo serves everything but the tables, and
says so).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import redis

import engine
from arena.config import Settings
from arena.db.session import make_engine
from arena.rulesets import arena_ruleset
from arena.runner.replay import verify_logs
from daifugo_arena.cli.client import ApiClient, download_logs
from daifugo_arena.cli.demo_ladder import LadderDemoResult, LadderRun, run_ladder
from daifugo_arena.cli.demo_services import DemoRedis
from daifugo_arena.cli.demo_stage import (
    DEMO_BOTS,
    DEMO_TIME_RULES,
    DialOut,
    fresh_out_dir,
    serve_or_hint,
    shown,
    start_stage,
)
from daifugo_arena.cli.display import progress_bar, standings_table


@dataclass
class DemoResult:
    """What :func:`run_demo` produced (for tests and the command's last lines)."""

    api_url: str
    tournament_id: int
    organizer_token: str
    standings: dict
    log_paths: list[Path]
    verified: int
    failures: list[tuple[str, str]]
    seconds: float


def run_demo(
    ruleset: str,
    out: Path,
    *,
    port: int = 0,
    serve: bool = False,
    seed: int | None = None,
    games_per_pairing: int | None = None,
    connect_bots: bool = False,
    redis_url: str | None = None,
    ladder: LadderRun | None = None,
    console=None,
) -> DemoResult | LadderDemoResult:
    """Run the demo (module docstring); prints to ``console`` (a rich Console).

    With ``serve`` the API keeps running after the tournament until KeyboardInterrupt. With
    ``connect_bots`` the bots dial out through a gateway and Redis (``redis_url``, or a
    throwaway ``redis-server``). With ``ladder``, a ladder instead of the tournament
    (:func:`run_ladder`).

    Raises:
        click.ClickException: a step failed (the message says which), e.g. the port is taken.
    """
    from rich.console import Console

    # soft_wrap: a line is never cut by rich. Written to a file or a pipe, rich would wrap at
    # 80 columns and split the database path, the URLs and the commands to copy.
    console = console or Console(soft_wrap=True)
    started = time.monotonic()
    out = out.expanduser().resolve()
    fresh_out_dir(out)
    db_url = f"sqlite:///{out / 'arena.db'}"
    # Before any import that reads the settings (worker.celery_app builds its app at import).
    os.environ.update(
        {
            "ARENA_DATA_DIR": str(out),
            "ARENA_DATABASE_URL": db_url,
            "ARENA_CELERY_EAGER": "1",
            "ARENA_ALLOW_PRIVATE_BOT_URLS": "0" if connect_bots else "1",
        }
    )
    db_engine = make_engine(db_url)
    dialout = DialOut(db_engine, redis_url) if connect_bots else None
    tables = _TablesRedis(console) if serve and dialout is None else None
    try:
        if ladder is not None:
            return run_ladder(ruleset, out, db_url, db_engine, dialout, port, serve, ladder, console, started)
        return _run(ruleset, out, db_url, db_engine, dialout, port, serve, seed, games_per_pairing, console, started)
    finally:
        if dialout is not None:
            dialout.close()
        if tables is not None:
            tables.close()
        db_engine.dispose()


class _TablesRedis:
    """The Redis of the tables of ``--serve`` (module docstring): a throwaway ``redis-server``
    (``ARENA_BROKER_URL`` then names it), or none when it cannot be started (``url`` None)."""

    def __init__(self, console: Any):
        self.redis: DemoRedis | None = None
        try:
            self.redis = DemoRedis()
        except click.ClickException as exc:
            console.print(f"[yellow]no table to play at: {exc.message.split(':', 1)[0]} (redis-server)[/yellow]")
            return
        os.environ["ARENA_BROKER_URL"] = self.redis.url

    def close(self) -> None:
        if self.redis is not None:
            self.redis.close()


def _run(
    ruleset: str,
    out: Path,
    db_url: str,
    db_engine: Any,
    dialout: DialOut | None,
    port: int,
    serve: bool,
    seed: int | None,
    games_per_pairing: int | None,
    console: Any,
    started: float,
) -> DemoResult:
    settings = Settings.from_env()
    size = arena_ruleset(ruleset).demo
    gpp = games_per_pairing or size.games_per_pairing
    how = (
        f"4 sample bots dialing out to a gateway ({dialout.gateway.url}, Redis {dialout.redis.url})"
        if dialout is not None
        else "4 sample bots over HTTP"
    )
    console.print(
        f"[bold]Daifugo Arena demo[/bold]: {ruleset}, {how}, "
        f"SQLite at {shown(out / 'arena.db')}, matches run in-process (eager mode)"
    )
    console.print(
        "tournament size (kept small for the demo): "
        f"{size.about if gpp == size.games_per_pairing else f'games_per_pairing {gpp}'}; "
        f"time bank {DEMO_TIME_RULES['initial']:g} s +{DEMO_TIME_RULES['increment']:g} s per action; "
        + (f"seed {seed} (chosen: not rated)" if seed is not None else "seed drawn when it starts")
    )

    with start_stage(settings, db_engine, port, ruleset, dialout, DEMO_BOTS, console) as stage:
        organizer, organizer_token, bots = stage.organizer, stage.tokens["organizer"], stage.bots
        t = organizer.create_tournament(
            name=f"demo {ruleset}",
            ruleset=ruleset,
            participants=list(bots),
            options=size.options,
            games_per_pairing=gpp,
            time_rules=DEMO_TIME_RULES,
            **({"seed": seed} if seed is not None else {}),
        )
        tid = t["id"]
        console.print(f"organizer: tournament {tid} created; starting it")

        _play_tournament(organizer, organizer_token, tid, console)

        seed = organizer.tournament(tid).get("seed")  # revealed now that it is over
        console.print(f"seed {seed} (revealed when the tournament finished)")
        standings = organizer.standings(tid)
        console.print(standings_table(standings, bots, title=f"Standings: {ruleset} tournament {tid}"))
        logs_dir = out / "logs"
        paths = download_logs(organizer, tid, logs_dir)
        verified, failures = verify_logs([logs_dir])
        console.print(
            f"logs: {len(paths)} match logs in {shown(logs_dir)}; replayed through the engine: "
            f"{verified} verified, {len(failures)} failed"
        )
        console.print(f"  check again with: arena logs verify {shown(logs_dir)}")
        for path, reason in failures:
            console.print(f"[red]FAILED {path}: {reason}[/red]")
        if serve and _tables_on(settings):
            stage.tokens["player"] = _offer_tables(stage.public, stage.tokens, bots)
        seconds = stage.finish(out, db_url, started, tournament_id=tid, ruleset=ruleset, seed=seed)
        result = DemoResult(stage.url, tid, organizer_token, standings, paths, verified, failures, seconds)
        if serve and "player" in stage.tokens:
            console.print(
                f"Play: {stage.url}/ui/play  (sign in at {stage.url}/ui/login with the token of "
                f"'player': {stage.tokens['player']})"
            )
        serve_or_hint(serve, stage.url, out, tid, console)
        return result


def _play_tournament(organizer: ApiClient, organizer_token: str, tid: int, console: Any) -> None:
    """Starts tournament ``tid`` and shows its progress until it ends; raises
    click.ClickException unless it finished."""
    outcome: dict[str, Any] = {}

    def start() -> None:
        try:
            with organizer.with_token(organizer_token) as c:
                outcome["started"] = c.start_tournament(tid, timeout_s=None)
        except BaseException as exc:  # reported by the main thread
            outcome["error"] = exc

    starter = threading.Thread(target=start, name="demo-start", daemon=True)
    starter.start()
    with progress_bar(console) as bar:
        task = bar.add_task("matches", total=None)
        while True:
            state = organizer.tournament(tid)
            p = state["progress"]
            bar.update(task, completed=p["finished"], total=p["total"] or None)
            if state["status"] in ("finished", "cancelled") or "error" in outcome:
                break
            if not starter.is_alive() and state["status"] != "running":
                break
            time.sleep(0.25)
    starter.join(timeout=30)
    if "error" in outcome:
        raise click.ClickException(f"starting tournament {tid} failed: {outcome['error']}")
    if state["status"] != "finished":
        raise click.ClickException(
            f"tournament {tid} ended {state['status']} "
            f"({state['progress']['finished']}/{state['progress']['total']} matches)"
        )


def _tables_on(settings: Settings) -> bool:
    """A table can be played: the broker is a Redis that answers."""
    if not settings.broker_url.startswith("redis"):
        return False
    try:
        return bool(redis.Redis.from_url(settings.broker_url, socket_connect_timeout=1, socket_timeout=1).ping())
    except redis.RedisError:
        return False


def _offer_tables(public: ApiClient, tokens: dict[str, str], bots: dict[int, str]) -> str:
    """Let people play the demo's bots (each owner's ``play_people``) and make the account
    ``player``; returns its token."""
    for (account, _name, _sample, _seed), bot_id in zip(DEMO_BOTS, bots):
        with public.with_token(tokens[account]) as owner:
            owner.request("PATCH", f"/bots/{bot_id}", json_body={"play_people": True})
    return str(public.create_account("player")["token"])


@click.command("demo")
@click.option("--ruleset", "-r", type=click.Choice(list(engine.RULESETS)), default="million_doubt", show_default=True)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo-output"),
    show_default=True,
    help="Folder for the SQLite database, the logs and demo.json (earlier demo files there are replaced).",
)
@click.option(
    "--serve", is_flag=True, help="Keep serving the API and the replay pages after the tournament (Ctrl-C stops)."
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Port of the API on 127.0.0.1 (default: 8000 with --serve, else a free port).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="Set the tournament seed (marked chosen, not rated; default: drawn when it starts, printed when revealed).",
)
@click.option(
    "--games-per-pairing",
    type=click.IntRange(min=1),
    default=None,
    help="Override the demo's size (million_doubt: even games per pairing; others: rounds of 4 rotations).",
)
@click.option(
    "--connect",
    "connect_bots",
    is_flag=True,
    help="The sample bots dial out to a gateway (through Redis: a throwaway redis-server, or --redis-url).",
)
@click.option(
    "--redis-url", default=None, metavar="URL", help="With --connect: a running Redis to use instead of starting one."
)
@click.option(
    "--ladder",
    "ladder",
    is_flag=True,
    help="A ladder instead: four sample bots of graded strength (search, heuristic, greedy, random) enter an "
    "open ladder and play it for --minutes; the demo itself drives the ladder's tick in a loop (a service runs it on "
    "Celery beat: arena beat), then prints the live and the official tables.",
)
@click.option(
    "--minutes",
    type=click.FloatRange(min=0, min_open=True),
    default=3.0,
    show_default=True,
    help="With --ladder: how long the ladder plays.",
)
@click.option(
    "--ticks", type=click.IntRange(min=1), default=None, help="With --ladder: this many ticks instead of --minutes."
)
def demo(
    ruleset: str,
    out_dir: Path,
    serve: bool,
    port: int | None,
    seed: int | None,
    games_per_pairing: int | None,
    connect_bots: bool,
    redis_url: str | None,
    ladder: bool,
    minutes: float,
    ticks: int | None,
) -> None:
    """Run a round-robin tournament of four sample bots end to end on embedded defaults.

    Real HTTP bots and API on 127.0.0.1, SQLite in --out, matches in-process; prints the
    standings, writes every match log to DIR/logs and says where the replay pages are. With
    --connect the bots dial out through a gateway instead (needs redis-server installed).

    With --ladder: a ladder of four sample bots of graded strength for a few minutes instead
    (the demo's loop calls the ladder's tick; each tick's sets are played in-process), then the
    live table and the official table; its page is /ui/ladders/1 (--serve keeps it up).
    """
    if redis_url is not None and not connect_bots:
        raise click.UsageError("--redis-url goes with --connect")
    if not ladder and ticks is not None:
        raise click.UsageError("--ticks goes with --ladder")
    if ladder and (seed is not None or games_per_pairing is not None):
        raise click.UsageError("--seed and --games-per-pairing are the tournament's: a ladder draws every set's seed")
    if port is None:
        port = 8000 if serve else 0
    run_demo(
        ruleset,
        out_dir,
        port=port,
        serve=serve,
        seed=seed,
        games_per_pairing=games_per_pairing,
        connect_bots=connect_bots,
        redis_url=redis_url,
        ladder=LadderRun(minutes, ticks) if ladder else None,
    )
