"""What both demos (``arena demo``, ``arena demo --ladder``) start from: their sizes and bots,
the database migrated, the API served, the accounts signed up and the sample bots registered,
served or dialing out (``--connect``: :mod:`daifugo_arena.cli.demo_services`) and checked (:func:`start_stage`);
then ``demo.json`` and ``--serve``."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.session import make_sessionmaker
from arena.usecases.bots import Credentials, credentials
from bots_sdk import Connection, connect
from bots_sdk.samples import SAMPLE_BOTS
from bots_sdk.server import BotServer
from bots_sdk.server import start as start_bot
from daifugo_arena.cli.client import ApiClient, ApiError
from daifugo_arena.cli.compose import make_app
from daifugo_arena.cli.demo_services import DemoGateway, DemoRedis
from daifugo_arena.cli.servers import WsgiServer

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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fresh_out_dir(out: Path) -> None:
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


def stop_on_signals() -> None:
    """Ctrl-C (SIGINT, even when inherited as ignored) and SIGTERM stop ``--serve``."""
    import signal

    def stop(_signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop)


class DialOut:
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
class Stage:
    """What both demos start from (:func:`start_stage`): the API's URL, its clients (anonymous and
    the organizer's), every account's token, the bots (id -> name), the dial-out set-up."""

    url: str
    public: ApiClient
    organizer: ApiClient
    tokens: dict[str, str]
    bots: dict[int, str]
    dialout: DialOut | None
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
def start_stage(
    settings: Settings,
    db_engine: Any,
    port: int,
    ruleset: str,
    dialout: DialOut | None,
    demo_bots: tuple[tuple[str, str, str, int], ...],
    console: Any,
) -> Iterator[Stage]:
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
            bots = register_bots(public, ruleset, tokens, bot_servers, dialout, console, demo_bots)
            yield Stage(api_server.url, public, organizer, tokens, bots, dialout, console)
    except ApiError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        for server in bot_servers:
            server.close()
        api_server.close()


def register_bots(
    public: ApiClient,
    ruleset: str,
    tokens: dict[str, str],
    bot_servers: list[BotServer],
    dialout: DialOut | None,
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
            bot_port = free_port()
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


def nobody(bot_ids: list[int]) -> set[int]:
    """No bot that dials out is connected (the demo's bots are served over HTTP)."""
    return set()


def serve_or_hint(serve: bool, api_url: str, out: Path, page: int | str, console: Any) -> None:
    """With ``serve``: keeps the API up until Ctrl-C; else says how to see the pages: ``--serve``.
    ``page``: the page to open under ``/ui/``, or a tournament id."""
    page = f"tournaments/{page}" if isinstance(page, int) else page
    if serve:
        console.print(f"Open: {api_url}/ui/{page}")
        console.print(f"API: {api_url}/api/v1 (organizer token in {shown(out / 'demo.json')}); serving until Ctrl-C")
        stop_on_signals()
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
