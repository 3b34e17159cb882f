"""``arena play``, ``arena bots serve``/``connect`` and ``arena logs verify``: the local runner and friends.

``arena play`` runs matches with :class:`arena.runner.match.Match`, the same code the service's
workers run, so rules, time accounting and faults are identical; it only adds seat rotation
across matches and a summary table.

Bots are named by a sample name (``random``, ``greedy``, ``heuristic``, ``search``), ``module:Class`` (a
:class:`bots_sdk.Bot` subclass importable from the current directory), or an ``http(s)://``
URL of a running bot.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import random
import sys
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import engine
from arena.faults import FaultCode
from arena.matchlog import MatchLog, is_lines_file, lines_tournament, log_files, write_log
from arena.runner.match import Match, MatchConfig, Observers
from arena.runner.players import ArenaFailure, HttpPlayer, LocalPlayer, Player
from arena.runner.replay import verify_logs
from arena.seeds import derive_seed
from bots_sdk.bot import Bot
from bots_sdk.connect import ConnectError
from bots_sdk.connect import connect as connect_bot
from bots_sdk.protocol import PROTOCOL_VERSION
from bots_sdk.samples import SAMPLE_BOTS
from bots_sdk.server import serve
from daifugo_arena.cli import parse_options_json
from daifugo_arena.cli.dialed import DEFAULT_PORT, DialedSeats, dial_id
from engine.timebank import TimeRules

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def resolve_bot(spec: str, seed: int | None = None) -> Any:
    """A Bot instance for a sample name or ``module:Class``, or the URL itself for a URL.

    Raises:
        click.BadParameter: unknown name, module or class, or not a Bot.
    """
    if spec.startswith(("http://", "https://")):
        return spec
    if spec in SAMPLE_BOTS:
        return SAMPLE_BOTS[spec](seed=seed)
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise click.BadParameter(
            f"{spec!r} is not a sample bot ({', '.join(SAMPLE_BOTS)}), module:Class or http:// URL"
        )
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise click.BadParameter(f"cannot load {spec!r}: {e}") from None
    bot = cls() if isinstance(cls, type) else cls
    if not isinstance(bot, Bot):
        raise click.BadParameter(f"{spec!r} is not a bots_sdk.Bot subclass")
    return bot


def seat_plan(ruleset: str, specs: list[str]) -> tuple[list[str], str | None]:
    """The bot specs of the match's players: 4-player rule sets repeat the given bots in
    rotation up to 4 seats. Returns ``(specs, note)`` where ``note`` says what was filled."""
    n = engine.SEATS[ruleset]
    if len(specs) > n:
        raise click.UsageError(f"{ruleset} seats {n} players; {len(specs)} bots given")
    if len(specs) == n:
        return list(specs), None
    filled = [specs[i % len(specs)] for i in range(n)]
    return (
        filled,
        f"{ruleset} needs {n} bots: seats filled by repeating the given bots in rotation ({', '.join(filled)})",
    )


@click.command("play")
@click.argument("bots", nargs=-1, required=True)
@click.option("--ruleset", "-r", type=click.Choice(list(engine.RULESETS)), default="million_doubt", show_default=True)
@click.option(
    "--games",
    "-n",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Million Doubt: games in all; trump_millionaire/jdf: matches (one engine game each).",
)
@click.option(
    "--games-per-match",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Million Doubt games per match (each dealt afresh, seats swapped every game).",
)
@click.option("--seed", type=int, default=None, help="Seed of everything (default: random, printed).")
@click.option("--options", "options_json", default=None, help="Rule-set options as a JSON object.")
@click.option(
    "--time-bank",
    type=click.FloatRange(min=0.001),
    default=60.0,
    show_default=True,
    help="Initial bank, seconds (TIME-1).",
)
@click.option(
    "--increment", type=click.FloatRange(min=0), default=10.0, show_default=True, help="Added per action, seconds."
)
@click.option(
    "--cap", type=click.FloatRange(min=0.001), default=None, help="Bank cap, seconds (default: the time bank)."
)
@click.option("--max-faults", type=click.IntRange(min=1), default=3, show_default=True, help="FAULT-3 limit per match.")
@click.option(
    "--secret",
    default=None,
    envvar="ARENA_BOT_SECRET",
    help="Signing secret of http:// bots, and of bots that dial out (env ARENA_BOT_SECRET; for those, a random"
    " one when unset).",
)
@click.option(
    "--logs",
    "logs_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write each match log here (match-NNNN.json.gz, the service's format).",
)
@click.option("--log-requests", is_flag=True, help="Store every request body in the logs (large).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option(
    "--run",
    "run_commands",
    multiple=True,
    metavar="CMD",
    help="Start CMD as the bot of a dial-out seat (connect, connect:ID; repeat for the next), with"
    " ARENA_GATEWAY_URL, ARENA_BOT_ID and ARENA_BOT_SECRET set; stopped at the end.",
)
@click.option(
    "--gateway-host",
    default="127.0.0.1",
    show_default=True,
    help="Where the gateway of the dial-out seats listens.",
)
@click.option(
    "--gateway-port",
    type=click.IntRange(0, 65535),
    default=None,
    help=f"Its port (default {DEFAULT_PORT}; any free port when every dial-out bot is a --run program; 0: any).",
)
@click.option(
    "--connect-wait",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    help="Seconds to wait for each dial-out bot's connection before the first match.",
)
def play(
    bots: tuple[str, ...],
    ruleset: str,
    games: int,
    games_per_match: int,
    seed: int | None,
    options_json: str | None,
    time_bank: float,
    increment: float,
    cap: float | None,
    max_faults: int,
    secret: str | None,
    logs_dir: Path | None,
    log_requests: bool,
    quiet: bool,
    run_commands: tuple[str, ...],
    gateway_host: str,
    gateway_port: int | None,
    connect_wait: float,
) -> None:
    """Play BOTS against each other locally, under the service's rules and time accounting.

    BOTS are sample names (random, greedy, heuristic, search), module:Class, http:// URLs, or
    connect (connect:ID): a bot that dials out, in any language, to the gateway arena play
    runs for it (the arena's protocol and authentication; --run starts the program).
    Seats are alternated (Million Doubt: swapped every game) or rotated (4-player) across
    matches. Prints per-bot games, wins (firsts), mean score and faults.
    """
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=False, soft_wrap=True)  # a line is never cut at 80 columns in a file or pipe
    options = parse_options_json(options_json)
    try:
        engine.make_options(ruleset, options)
        rules = TimeRules.from_seconds(time_bank, increment, cap if cap is not None else max(time_bank, 0.001))
    except (engine.OptionsError, ValueError) as e:
        raise click.UsageError(str(e)) from None
    specs, note = seat_plan(ruleset, list(bots))
    if seed is None:
        seed = random.randrange(2**31)
    if logs_dir is not None:
        logs_dir.mkdir(parents=True, exist_ok=True)
    console.print(
        f"{ruleset}: {' vs '.join(specs)} | seed {seed} | time bank {rules.initial_ms / 1000:g} s "
        f"+{rules.increment_ms / 1000:g} s, cap {rules.cap_ms / 1000:g} s"
    )
    if note:
        console.print(f"[yellow]{note}[/yellow]")

    dial_specs = [spec for spec in dict.fromkeys(specs) if dial_id(spec) is not None]
    if run_commands and not dial_specs:
        raise click.UsageError("--run starts the bot of a dial-out seat: name one among BOTS (connect)")
    seats = (
        DialedSeats(
            dial_specs,
            secret=secret,
            host=gateway_host,
            port=gateway_port,
            commands=list(run_commands),
            wait_s=connect_wait,
            echo=lambda line: console.print(line, markup=False, highlight=False),
        )
        if dial_specs
        else nullcontext(None)
    )
    with seats as dialed:
        many_games = engine.get_ruleset(ruleset).games_per_match_option  # MD: a match is many engine games
        plan = _games_by_match(games, games_per_match if many_games else 1)
        stats, first_faults = _play_matches(
            console,
            plan,
            specs,
            MatchConfig(
                ruleset, options, seed=seed, time_rules=rules, max_faults=max_faults, log_requests=log_requests
            ),
            many_games=many_games,
            secret=secret,
            dialed=dialed,
            logs_dir=logs_dir,
            quiet=quiet,
        )
        notes = dialed.warnings() + dialed.stopped() if dialed is not None else []

    console.print(_results_table(Table(title=f"{ruleset}: {sum(plan)} game(s)"), stats))
    for spec, text in first_faults.items():
        console.print(f"first fault of {spec}: {text}", markup=False, highlight=False)
    for note in notes:
        console.print(f"warning: {note}", markup=False, highlight=False)
    if logs_dir is not None:
        console.print(f"logs: {len(plan)} match log(s) in {logs_dir}")


def _play_matches(
    console: Console,
    plan: list[int],
    specs: list[str],
    base: MatchConfig,
    *,
    many_games: bool,
    secret: str | None,
    dialed: DialedSeats | None,
    logs_dir: Path | None,
    quiet: bool,
) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """Play the matches of ``plan`` (games per match) from ``base`` (its rule set, options, time
    rules, fault limit and seed, from which each match's is derived); each bot's line of the
    table and its first fault."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    stats = {s: {"games": 0.0, "wins": 0.0, "score": 0.0, "faults": 0.0} for s in dict.fromkeys(specs)}
    first_faults: dict[str, str] = {}
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=quiet,
        transient=False,
    )
    with progress:
        task = progress.add_task("games", total=sum(plan))
        for mi, count in enumerate(plan):
            order = _seat_order(specs, mi, many_games)
            wrapped = _players(order, base.seed, mi, secret, dialed)
            try:
                config = replace(
                    base, seed=derive_seed(base.seed, mi), games=count, match_id=f"local-{base.seed}-{mi:04d}"
                )
                log = Match(wrapped, config, Observers(on_game_end=lambda rec: progress.advance(task))).play()
            except ArenaFailure as e:  # this machine's own network failed, not a bot
                raise click.ClickException(f"match {mi + 1} stopped: {e}") from None
            finally:
                for w in wrapped:
                    w.close()
            _tally(stats, log, order, first_faults)
            if logs_dir is not None:
                write_log(log, logs_dir / f"match-{mi:04d}.json.gz")
    return stats, first_faults


def _games_by_match(games: int, per_match: int) -> list[int]:
    """The number of games of each match: ``games`` in matches of ``per_match`` (the last shorter)."""
    return [min(per_match, games - start) for start in range(0, games, per_match)]


def _seat_order(specs: list[str], mi: int, many_games: bool) -> list[str]:
    """Seats of match ``mi``: rotated (4-player: each bot sits in each seat in turn), or swapped
    every other match (Million Doubt, whose matches already alternate seats per game)."""
    if many_games:
        return specs if mi % 2 == 0 else specs[::-1]
    n = len(specs)
    return [specs[(i + mi) % n] for i in range(n)]


def _players(order: list[str], seed: int, mi: int, secret: str | None, dialed: DialedSeats | None) -> list[Player]:
    """One player per seat; the operator's own machine and URLs: loopback/private bots are fine here."""
    players: list[Player] = []
    for i, spec in enumerate(order):
        if dialed is not None and spec in dialed.ids:
            players.append(dialed.player(spec))
            continue
        bot = resolve_bot(spec, seed=derive_seed(seed, 10_000 + mi * 8 + i))
        if isinstance(bot, str):
            players.append(HttpPlayer(bot, secret, name=spec, allow_private=True))
        else:
            players.append(LocalPlayer(bot, spec))
    return players


def _tally(stats: dict[str, dict[str, float]], log: MatchLog, order: list[str], first_faults: dict[str, str]) -> None:
    """Adds a match's seat-games, wins (firsts), scores and faults to each bot's line, and each
    bot's first fault (``kind: detail``, FAULT-1) to ``first_faults``."""
    for gm in log["games"]:
        res = gm["result"]
        for seat, p in enumerate(gm["seats"]):
            st = stats[order[p]]
            st["games"] += 1
            st["score"] += int(res["scores"][str(seat)])
            st["wins"] += 1 if int(res["ranks"][str(seat)]) == 1 else 0
    for f in log["faults"]:
        stats[order[f["player"]]]["faults"] += 1
        hint = (
            " (the bot refused the signature: give arena play its secret, ARENA_BOT_SECRET)"
            if f.get("code") == FaultCode.HTTP_STATUS and f.get("params", {}).get("status") == 401
            else ""
        )
        first_faults.setdefault(order[f["player"]], f"{f['kind']}: {f['detail']}{hint}")


def _results_table(table: Table, stats: dict[str, dict[str, float]]) -> Table:
    for col in ("bot", "seat-games", "wins", "win rate", "mean score", "faults"):
        table.add_column(col, justify="left" if col == "bot" else "right")
    for spec, st in stats.items():
        g = st["games"] or 1
        table.add_row(
            spec,
            str(int(st["games"])),
            str(int(st["wins"])),
            f"{st['wins'] / g:.3f}",
            f"{st['score'] / g:+.2f}",
            str(int(st["faults"])),
        )
    return table


@click.group("bots")
def bots() -> None:
    """Sample bots and your own bots: as HTTP servers, or dialing out to a gateway."""


@bots.command("serve")
@click.argument("name")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--secret", default=None, envvar="ARENA_BOT_SECRET", help="Signing secret to verify (env ARENA_BOT_SECRET)."
)
@click.option("--seed", type=int, default=None, help="Seed of a sample bot.")
def bots_serve(name: str, host: str, port: int, secret: str | None, seed: int | None) -> None:
    """Serve bot NAME (a sample name or module:Class) over HTTP until Ctrl-C."""

    given = secret if secret is not None else os.environ.get("ARENA_BOT_SECRET")  # click reads "" as unset
    if given is not None and not given.strip():
        # an empty ARENA_BOT_SECRET (set from an unset variable) would serve, verifying nothing
        raise click.BadParameter("the signing secret is empty: set it, or leave it out", param_hint="--secret")
    bot = resolve_bot(name, seed=seed)
    if isinstance(bot, str):
        raise click.BadParameter("serve a sample name or module:Class, not a URL")
    serve(bot, host, port, secret)


@bots.command("connect")
@click.argument("name")
@click.option(
    "--bot-id",
    type=click.IntRange(min=1),
    required=True,
    envvar="ARENA_BOT_ID",
    help="The bot's id at the arena (env ARENA_BOT_ID).",
)
@click.option(
    "--gateway",
    multiple=True,
    envvar="ARENA_GATEWAY_URL",
    help=(
        "The gateway, ws:// or wss:// (a bare host:port gets /v1/bots; env ARENA_GATEWAY_URL). Repeat it"
        " (or separate them by spaces in the variable) for several gateways: tried in turn on reconnection."
    ),
)
@click.option("--pool", type=click.IntRange(1, 64), default=1, show_default=True, help="Connections to keep open.")
@click.option("--threads", type=click.IntRange(min=1), default=8, show_default=True, help="Decisions run at once.")
@click.option("--seed", type=int, default=None, help="Seed of a sample bot.")
def bots_connect(name: str, bot_id: int, gateway: tuple[str, ...], pool: int, threads: int, seed: int | None) -> None:
    """Run bot NAME (a sample name or module:Class) over WebSocket connections it opens to an
    arena gateway, until Ctrl-C; reconnects with backoff after any drop. The signing secret
    comes from the environment, ARENA_BOT_SECRET (never the command line). Opens no port."""

    secret = os.environ.get("ARENA_BOT_SECRET", "")
    if not secret.strip():
        raise click.UsageError(
            "no signing secret: export ARENA_BOT_SECRET (the secret the arena gave when the bot was"
            " registered); it proves the bot to the gateway and never travels"
        )
    urls = [u.strip() for u in gateway if u.strip()]
    if not urls:
        raise click.BadParameter("give the gateway URL, or set ARENA_GATEWAY_URL", param_hint="--gateway")
    for url in urls:
        if not url.startswith(("ws://", "wss://")):
            raise click.BadParameter(f"{url!r} is not a ws:// or wss:// URL", param_hint="--gateway")
    bot = resolve_bot(name, seed=seed)
    if isinstance(bot, str):
        raise click.BadParameter("connect a sample name or module:Class, not a URL")
    # the connections' story (welcomed, dropped, reconnecting in N s) on stderr
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("bots_sdk").setLevel(logging.INFO)
    try:
        conn = connect_bot(bot, urls, bot_id=bot_id, secret=secret, pool=pool, threads=threads, background=True)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--gateway") from None
    click.echo(
        f"bot {bot.name!r} (id {bot_id}) connecting to {' '.join(conn.urls)} with {pool} connection{'s' * (pool > 1)}"
        f" (protocol {PROTOCOL_VERSION}; no listening socket); Ctrl-C stops",
        err=True,
    )
    try:
        if conn.wait_authenticated(1):
            click.echo(f"connected: the gateway welcomed the bot as {(conn.welcome or {}).get('name')!r}", err=True)
        conn.join()
    except ConnectError as e:
        raise click.ClickException(str(e)) from None
    except KeyboardInterrupt:
        conn.stop()
        conn.join(timeout=10)


@click.group("logs")
def logs() -> None:
    """Match logs."""


#: The tournament object ``arena logs download`` writes next to the logs (never read as a log).
TOURNAMENT_FILE = "tournament.json"


def _load_tournament(path: Path, data: Any = None) -> dict:
    """The tournament object of ``path`` (a tournament.json), or ``data`` (read from ``path``,
    the first line of a JSON Lines download), once its seed is revealed.

    Raises:
        click.BadParameter: not a tournament object; click.UsageError: its seed is secret still.
    """
    if data is None:
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise click.BadParameter(f"{path}: not a tournament JSON file ({exc})", param_hint="--tournament") from None
    if not isinstance(data, dict) or "commitment" not in data:
        raise click.BadParameter(f"{path}: not a tournament object of the API", param_hint="--tournament")
    if data.get("seed") is None or data.get("salt") is None:
        raise click.UsageError(
            f"{path}: tournament {data.get('id')} has not revealed its seed yet (download again once it is finished)"
        )
    return data


@logs.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--skip-requests", is_flag=True, help="Do not rebuild requests to check their digests (faster).")
@click.option("--skip-pars", is_flag=True, help="Do not recompute the pars the logs record (faster).")
@click.option(
    "--seed",
    type=click.IntRange(0, 2**63 - 1),
    default=None,
    help="The tournament's revealed seed: also check that every deal follows from it.",
)
@click.option("--salt", default=None, help="The tournament's revealed salt (hex), with --seed.")
@click.option(
    "--tournament",
    "tournament_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The tournament JSON of the API (seed, salt, commitment, rules); default: "
    f"a {TOURNAMENT_FILE} in a PATHS folder (written by `arena logs download`), or the first "
    "line of a JSON Lines download (the pages' 'Download all logs').",
)
def logs_verify(
    paths: tuple[Path, ...],
    skip_requests: bool,
    skip_pars: bool,
    seed: int | None,
    salt: str | None,
    tournament_file: Path | None,
) -> None:
    """Replay every match log in PATHS (files or folders; *.json, *.json.gz, and *.jsonl
    downloads of a whole tournament) through the engine, recompute the pars a log records
    (docs/ranking.md) and, with the revealed seed (--seed/--salt, --tournament, or the
    tournament line of a .jsonl download), check the seed commitment and that every deal
    follows from the seed (docs/fairness.md).

    Prints one line per failure and 'N verified, N failed'; exit status 1 on any failure.
    """
    if (seed is None) != (salt is None):
        raise click.UsageError("give both --seed and --salt")
    tournament = _load_tournament(tournament_file) if tournament_file is not None else None
    if tournament_file is None and seed is None:
        found: list[tuple[Path, Any]] = [
            (p / TOURNAMENT_FILE, None) for p in paths if p.is_dir() and (p / TOURNAMENT_FILE).is_file()
        ]
        # a JSON Lines download (the pages' "Download all logs") carries its tournament first
        found += [(f, t) for f in log_files(paths) if is_lines_file(f) and (t := lines_tournament(f)) is not None]
        one = {str(f) if t is None else json.dumps(t, sort_keys=True) for f, t in found}  # the same one twice: one
        if len(one) == 1:
            try:
                tournament = _load_tournament(*found[0])
            except click.UsageError as exc:  # not revealed yet: replay only
                click.echo(f"{exc.message}; replaying only", err=True)
    if tournament is not None:
        seed, salt = int(tournament["seed"]), str(tournament["salt"])
    ok, failures = verify_logs(
        paths, check_requests=not skip_requests, check_pars=not skip_pars, seed=seed, salt=salt, tournament=tournament
    )
    if seed is not None:
        click.echo(
            f"deals checked against the revealed seed {seed} "
            f"(commitment {tournament['commitment'] if tournament else 'from the logs'})"
        )
        if tournament is not None and tournament.get("seed_chosen"):
            click.echo(
                "note: the organizer chose this seed (a reproducible test): the deals follow from it, "
                "but were not drawn at the start (docs/fairness.md)"
            )
    for path, reason in failures:
        click.echo(f"FAILED {path}: {reason}")
    click.echo(f"{ok} verified, {len(failures)} failed")
    if failures or ok == 0:
        if ok == 0 and not failures:
            click.echo("no log files found", err=True)
        sys.exit(1)
