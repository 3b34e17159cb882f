"""``arena demo``: the whole service on embedded defaults, in one process, in a minute.

Everything over real HTTP on 127.0.0.1: a fresh SQLite database ``DIR/arena.db`` (``--out
DIR``, default ``./demo-output``) with ``ARENA_CELERY_EAGER=1`` and
``ARENA_ALLOW_PRIVATE_BOT_URLS=1`` set; the REST API (:func:`cli.compose.make_app`) served by
:class:`cli.servers.WsgiServer` (``--port``, or a free port) and an organizer account; four
sample bots (:data:`bots_sdk.samples.SAMPLE_BOTS`, :func:`bots_sdk.server.start`) registered
and checked by four contestant accounts; a round-robin tournament created and started, a
progress bar polling ``GET /tournaments/{id}``; then the standings, every match log in
``DIR/logs`` (replayed through the engine), ``DIR/demo.json`` (API URL, tokens, tournament
id) and where to open the replay pages. ``--serve`` keeps the API and the pages up until
Ctrl-C. Sizes: each rule set's ``arena.rulesets.ArenaRuleSet.demo``. Step by step: docs/design-notes.md, "The demo".

``--connect``: the sample bots are registered as bots that connect and dial out
(:func:`bots_sdk.connect`) to a gateway run in this process, through a Redis
(``ARENA_BROKER_URL``): a throwaway ``redis-server`` the demo starts and stops, or
``--redis-url`` (:mod:`cli.demo_services`); ``ARENA_ALLOW_PRIVATE_BOT_URLS`` is ``0`` then.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import redis

import engine
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.session import make_engine, make_sessionmaker
from arena.inprocess import InProcessDispatcher
from arena.rulesets import arena_ruleset
from arena.runner.replay import verify_logs
from arena.usecases import ladders
from arena.usecases.bots import Credentials, credentials
from bots_sdk import Connection, connect
from bots_sdk.samples import SAMPLE_BOTS
from bots_sdk.server import BotServer
from bots_sdk.server import start as start_bot
from cli import ladder as ladder_cli
from cli.client import ApiClient, ApiError, download_logs
from cli.compose import make_app
from cli.demo_ladder import ENTRY_LIMITS, LADDER_BOTS, LADDER_CONFIG, TickCount, drive_ticks
from cli.demo_services import DemoGateway, DemoRedis
from cli.servers import WsgiServer
from cli.tournament import progress_bar, standings_table

#: Bots of the demo: (account name, bot name, sample bot, seed).
DEMO_BOTS = (
    ("alice", "heuristic", "heuristic", 1),
    ("bob", "greedy", "greedy", 2),
    ("carol", "random-1", "random", 3),
    ("dave", "random-2", "random", 4),
)
#: Seconds a demo bot that dials out may take to be welcomed by the gateway.
CONNECT_WAIT_S = 30.0
#: TIME-1 rules of the demo tournament, seconds (the service's defaults).
DEMO_TIME_RULES = {"initial": 60.0, "increment": 10.0, "cap": 60.0}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fresh_out_dir(out: Path) -> None:
    """Create ``out`` and remove what an earlier demo left there (its database and logs only)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("arena.db", "arena.db-journal", "arena.db-wal", "arena.db-shm", "demo.json"):
        (out / name).unlink(missing_ok=True)
    logs = out / "logs"
    if logs.is_dir():
        for f in logs.glob("match-*.json*"):
            f.unlink()


def shown(path: Path) -> str:
    """``path`` as the demo prints it: relative to the current directory when it lies below it
    (``demo-output/logs``, what one types next), else absolute."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _stop_on_signals() -> None:
    """Ctrl-C (SIGINT, even when inherited as ignored) and SIGTERM stop ``--serve``."""
    import signal

    def stop(_signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop)


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


@dataclass
class LadderRun:
    """How long ``arena demo --ladder`` plays: ``ticks`` ticks, or else ``minutes`` minutes."""

    minutes: float = 3.0
    ticks: int | None = None


@dataclass
class LadderDemoResult:
    """What the ladder demo produced (:func:`_run_ladder`): the API, the ladder, its live table
    (``GET /ladders/{id}``), the ticks and sets played."""

    api_url: str
    ladder_id: int
    table: dict
    ticks: int
    sets: int
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
    (:func:`_run_ladder`).

    Raises:
        click.ClickException: a step failed (the message says which), e.g. the port is taken.
    """
    from rich.console import Console

    # soft_wrap: a line is never cut by rich. Written to a file or a pipe, rich would wrap at
    # 80 columns and split the database path, the URLs and the commands to copy.
    console = console or Console(soft_wrap=True)
    started = time.monotonic()
    out = out.expanduser().resolve()
    _fresh_out_dir(out)
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
    dialout = _DialOut(db_engine, redis_url) if connect_bots else None
    try:
        if ladder is not None:
            return _run_ladder(ruleset, out, db_url, db_engine, dialout, port, serve, ladder, console, started)
        return _run(ruleset, out, db_url, db_engine, dialout, port, serve, seed, games_per_pairing, console, started)
    finally:
        if dialout is not None:
            dialout.close()
        db_engine.dispose()


class _DialOut:
    """The demo's Redis and gateway (``--connect``), and the bots' connections to close."""

    def __init__(self, db_engine: Any, redis_url: str | None):
        self.redis = DemoRedis(redis_url)
        sessions = make_sessionmaker(db_engine)

        def read(bot_id: int) -> Credentials | None:
            with sessions() as session:
                return credentials(session, bot_id)

        try:
            self.gateway = DemoGateway(self.redis.url, read)
        except BaseException:
            self.redis.close()
            raise
        os.environ.update({"ARENA_BROKER_URL": self.redis.url, "ARENA_GATEWAY_URL": self.gateway.url})
        self.connections: list[Connection] = []

    def close(self) -> None:
        for conn in self.connections:
            conn.stop()
        for conn in self.connections:
            try:
                conn.join(timeout=10)
            except Exception:  # a connection's own failure: the demo is over anyway
                pass
        self.gateway.close()
        self.redis.close()


@dataclass
class _Stage:
    """What both demos start from (:func:`_stage`): the API's URL, its clients (anonymous and
    the organizer's), every account's token, the bots (id -> name), the dial-out set-up."""

    url: str
    public: ApiClient
    organizer: ApiClient
    tokens: dict[str, str]
    bots: dict[int, str]
    dialout: _DialOut | None
    console: Any

    def finish(self, out: Path, db_url: str, started: float, **info: Any) -> float:
        """Write ``out/demo.json`` (the API, the database, ``info``, the tokens, the bots, the
        transport) and say it; returns the demo's seconds."""
        (out / "demo.json").write_text(
            json.dumps(
                {
                    "api_url": self.url,
                    "database_url": db_url,
                    **info,
                    "tokens": self.tokens,
                    "bots": {str(k): v for k, v in self.bots.items()},
                    "transport": "connect" if self.dialout is not None else "http",
                    "gateway_url": self.dialout.gateway.url if self.dialout is not None else None,
                },
                indent=2,
            )
        )
        seconds = time.monotonic() - started
        self.console.print(f"demo finished in {seconds:.1f} s; accounts' tokens in {shown(out / 'demo.json')}")
        return seconds


@contextmanager
def _stage(
    settings: Settings,
    db_engine: Any,
    port: int,
    ruleset: str,
    dialout: _DialOut | None,
    demo_bots: tuple[tuple[str, str, str, int], ...],
    console: Any,
) -> Iterator[_Stage]:
    """The database migrated, an organizer, the API served on ``port``, ``demo_bots`` signed up,
    registered, served (or dialing out) and checked; everything closed again on the way out,
    an API error made one ``Error:`` line."""
    upgrade(engine=db_engine)
    with make_sessionmaker(db_engine)() as session:
        _, organizer_token = create_account(session, "organizer", "organizer")
    try:
        api_server = WsgiServer(make_app(settings, engine=db_engine), port=port)
    except OSError as exc:
        raise click.ClickException(f"cannot serve the API on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    bot_servers: list[BotServer] = []
    try:
        console.print(f"API on {api_server.url}/api/v1 (OpenAPI at {api_server.url}/openapi.json)")
        with ApiClient(api_server.url, timeout_s=120.0) as public, public.with_token(organizer_token) as organizer:
            tokens = {"organizer": organizer_token}
            bots = _register_bots(public, ruleset, tokens, bot_servers, dialout, console, demo_bots)
            yield _Stage(api_server.url, public, organizer, tokens, bots, dialout, console)
    except ApiError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        for server in bot_servers:
            server.close()
        api_server.close()


def _run(
    ruleset: str,
    out: Path,
    db_url: str,
    db_engine: Any,
    dialout: _DialOut | None,
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

    with _stage(settings, db_engine, port, ruleset, dialout, DEMO_BOTS, console) as stage:
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
        seconds = stage.finish(out, db_url, started, tournament_id=tid, ruleset=ruleset, seed=seed)
        result = DemoResult(stage.url, tid, organizer_token, standings, paths, verified, failures, seconds)
        _serve_or_hint(serve, stage.url, out, tid, console)
        return result


def _run_ladder(
    ruleset: str,
    out: Path,
    db_url: str,
    db_engine: Any,
    dialout: _DialOut | None,
    port: int,
    serve: bool,
    run: LadderRun,
    console: Any,
    started: float,
) -> LadderDemoResult:
    """The ladder demo (:mod:`cli.demo_ladder`): four sample bots of graded strength enter an
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
    with _stage(settings, db_engine, port, ruleset, dialout, LADDER_BOTS, console) as stage:
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
        online = ladders.redis_online(redis.Redis.from_url(dialout.redis.url)) if dialout is not None else _nobody
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
        _serve_or_hint(serve, stage.url, out, f"ladders/{lid}", console)
        return result


def _nobody(bot_ids: list[int]) -> set[int]:
    """No bot that dials out is connected (the demo's bots are served over HTTP)."""
    return set()


def _register_bots(
    public: ApiClient,
    ruleset: str,
    tokens: dict[str, str],
    bot_servers: list[BotServer],
    dialout: _DialOut | None,
    console: Any,
    demo_bots: tuple[tuple[str, str, str, int], ...] = DEMO_BOTS,
) -> dict[int, str]:
    """Signs up each demo contestant of ``demo_bots``, registers its bot and serves it (or, with
    ``dialout``, registers it as a bot that connects and starts it dialing out), and waits for
    its check; returns bot id -> name. Raises click.ClickException when a bot fails to connect
    or a check fails."""
    bots: dict[int, str] = {}
    for account, bot_name, sample, bot_seed in demo_bots:
        acc = public.create_account(account)
        tokens[account] = acc["token"]
        contestant = public.with_token(acc["token"])
        if dialout is None:
            bot_port = _free_port()
            bot = contestant.register_bot(bot_name, f"http://127.0.0.1:{bot_port}/", [ruleset])
            server = start_bot(SAMPLE_BOTS[sample](seed=bot_seed), "127.0.0.1", bot_port, bot["secret"])
            bot_servers.append(server)
            where = f"at {server.url}"
        else:
            bot = contestant.register_bot(bot_name, None, [ruleset], transport="connect")
            conn = connect(
                SAMPLE_BOTS[sample](seed=bot_seed),
                dialout.gateway.url,
                bot_id=bot["id"],
                secret=bot["secret"],
                background=True,
            )
            dialout.connections.append(conn)
            if not conn.wait_authenticated(timeout=CONNECT_WAIT_S):
                raise click.ClickException(f"bot {bot_name} did not connect to {dialout.gateway.url}")
            where = "dialing out"
        checked = contestant.check_bot(bot["id"])
        if checked["status"] != "ready":
            raise click.ClickException(f"bot {bot_name} failed its check: {json.dumps(checked['last_check'])[:300]}")
        contestant.close()
        bots[bot["id"]] = bot_name
        console.print(f"  account {account}: bot {bot_name!r} ({sample}) {where} -> id {bot['id']}, check passed")

    return bots


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


def _serve_or_hint(serve: bool, api_url: str, out: Path, page: int | str, console: Any) -> None:
    """With ``serve``: keeps the API up until Ctrl-C; else says how to see the pages: ``--serve``.
    ``page``: the page to open under ``/ui/``, or a tournament id."""
    page = f"tournaments/{page}" if isinstance(page, int) else page
    if serve:
        console.print(f"Open: {api_url}/ui/{page}")
        console.print(f"API: {api_url}/api/v1 (organizer token in {shown(out / 'demo.json')}); serving until Ctrl-C")
        _stop_on_signals()
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            console.print("stopped")
    else:
        console.print(
            "The replay pages and standings in the browser: the demo again with --serve "
            "(bash infra/demo.sh --serve, or arena demo --serve) keeps them up until Ctrl-C and prints "
            f"Open: http://127.0.0.1:8000/ui/{page}"
        )


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
