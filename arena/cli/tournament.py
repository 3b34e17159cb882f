"""``arena tournament create|start|status|standings`` and ``arena logs download``: an
organizer's commands, talking to a running API over HTTP (:class:`arena.cli.client.ApiClient`).

Every command takes ``--api URL`` (env ``ARENA_API_URL``, default ``http://127.0.0.1:8000``)
and ``--token TOKEN`` (env ``ARENA_TOKEN``; an organizer's token for create/start). Errors
are one line (``Error: HTTP 422 on POST /api/v1/tournaments: invalid request: json.participants:
bot 9 does not exist``) and exit status 1.

``arena logs`` is the group of :mod:`arena.cli.play` (``verify``) with ``download`` added.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

import engine
from arena.cli import parse_options_json
from arena.cli.client import ApiClient, ApiError, download_logs
from arena.cli.play import logs as play_logs

DEFAULT_API_URL = "http://127.0.0.1:8000"


def _api_options(fn: Callable) -> Callable:
    fn = click.option("--token", envvar="ARENA_TOKEN", default=None, show_envvar=True,
                      help="Bearer token of your account.")(fn)
    fn = click.option("--api", "api_url", envvar="ARENA_API_URL", default=DEFAULT_API_URL,
                      show_default=True, show_envvar=True, help="Base URL of the Arena API.")(fn)
    return fn


def _client(api_url: str, token: str | None) -> ApiClient:
    if not token:
        raise click.UsageError("no token: pass --token or set ARENA_TOKEN")
    try:
        return ApiClient(api_url, token)
    except ApiError as exc:
        raise click.BadParameter(str(exc), param_hint="--api") from None


def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run an API call; an :class:`ApiError` becomes one ``Error:`` line (exit status 1)."""
    try:
        return fn(*args, **kwargs)
    except ApiError as exc:
        raise click.ClickException(str(exc)) from None


def progress_bar(console=None, *, transient: bool = False):
    """The rich progress bar used by long operations (matches, downloads)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=transient)


def watch_progress(client: ApiClient, tournament_id: int, console=None, *, poll_s: float = 0.5,
                   timeout_s: float | None = None) -> dict:
    """Show a progress bar of finished matches until the tournament is finished or cancelled;
    returns the tournament's last state."""
    with progress_bar(console) as bar:
        task = bar.add_task(f"tournament {tournament_id}", total=None)

        def update(t: dict) -> None:
            p = t["progress"]
            bar.update(task, completed=p["finished"], total=p["total"] or None,
                       description=f"tournament {tournament_id} ({t['status']})")

        return _call(client.wait_finished, tournament_id, poll_s=poll_s, timeout_s=timeout_s,
                     on_progress=update)


def standings_table(standings: dict, names: dict[int, str] | None = None, title: str | None = None):
    """A rich Table of ``GET /tournaments/{id}/standings`` (``names``: bot id -> label)."""
    from rich import box
    from rich.table import Table

    names = names or {}
    table = Table(title=title or f"standings of tournament {standings['tournament_id']} ({standings['ruleset']})",
                  caption=f"wins: games finished first; rating: openskill Plackett-Luce, ordinal = mu - 3 sigma; "
                          f"order: {standings['tie_break']}", caption_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    for col in ("#", "bot", "games", "wins", "mean ±95%", "faults", "mu ± sigma", "ordinal"):
        table.add_column(col, justify="left" if col == "bot" else "right", no_wrap=True)
    for r in standings["rows"]:
        who = r["house_bot"] if r.get("bot_id") is None else names.get(r["bot_id"], f"bot {r['bot_id']}")
        mean = "-" if r["mean_score"] is None else f"{r['mean_score']:+.2f}"
        if r["ci95"] is not None:
            mean += f" ± {r['ci95']:.2f}"
        table.add_row(str(r["rank"]), str(who), str(r["games"]), str(r["wins"]), mean,
                      str(r["faults"]), f"{r['mu']:.2f} ± {r['sigma']:.2f}", f"{r['ordinal']:.2f}")
    return table


def _echo_tournament(t: dict) -> None:
    p = t["progress"]
    click.echo(f"tournament {t['id']} {t['name']!r}: {t['ruleset']}, {t['status']}, "
               f"{p['finished']}/{p['total']} matches finished, participants {t['participants']}, "
               + (f"seed {t['seed']}" if t.get("seed") is not None else "seed secret")
               + (f", commitment {t['commitment']}" if t.get("commitment") else ""))


@click.group("tournament")
def tournament() -> None:
    """Organize round-robin tournaments through the API (create, start, status, standings)."""


@tournament.command("create")
@_api_options
@click.option("--ruleset", "-r", type=click.Choice(list(engine.RULESETS)), required=True)
@click.option("--bot", "bots", type=click.IntRange(min=1), multiple=True, required=True,
              help="Participant bot id (repeat; the bots must be 'ready').")
@click.option("--name", default="", help="Tournament name.")
@click.option("--games-per-pairing", type=click.IntRange(min=1), default=2, show_default=True,
              help="million_doubt: games per match (even); 4-player rule sets: rounds of 4 seat rotations per table.")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Tournament seed (default: random).")
@click.option("--options", "options_json", default=None, help='Rule-set options as JSON, e.g. \'{"target_score": 50}\'.')
@click.option("--time-bank", type=float, default=60.0, show_default=True, help="TIME-1 initial bank, seconds.")
@click.option("--increment", type=float, default=10.0, show_default=True, help="Added per action, seconds.")
@click.option("--cap", type=float, default=None, help="Largest bank, seconds (default: the time bank).")
@click.option("--max-faults", type=click.IntRange(min=1), default=3, show_default=True, help="FAULT-3 limit per match.")
@click.option("--fill-with-house-bots", is_flag=True, help="Fill missing seats with house sample bots.")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def tournament_create(api_url: str, token: str | None, ruleset: str, bots: tuple[int, ...], name: str,
                      games_per_pairing: int, seed: int | None, options_json: str | None, time_bank: float,
                      increment: float, cap: float | None, max_faults: int, fill_with_house_bots: bool,
                      as_json: bool) -> None:
    """Create a round-robin tournament (organizers); prints its id."""
    options = parse_options_json(options_json)
    body: dict[str, Any] = {
        "name": name, "ruleset": ruleset, "participants": list(bots), "options": options,
        "games_per_pairing": games_per_pairing, "max_faults": max_faults,
        "fill_with_house_bots": fill_with_house_bots,
        "time_rules": {"initial": time_bank, "increment": increment, "cap": time_bank if cap is None else cap},
    }
    if seed is not None:
        body["seed"] = seed
    with _client(api_url, token) as client:
        t = _call(client.create_tournament, **body)
    if as_json:
        click.echo(json.dumps(t, indent=2))
        return
    _echo_tournament(t)
    click.echo(t["id"])


@tournament.command("start")
@_api_options
@click.argument("tournament_id", type=click.IntRange(min=1))
@click.option("--wait", is_flag=True, help="Show a progress bar until every match is finished.")
@click.option("--poll", type=click.FloatRange(min=0.05), default=1.0, show_default=True, help="Seconds between polls (--wait).")
def tournament_start(api_url: str, token: str | None, tournament_id: int, wait: bool, poll: float) -> None:
    """Start a tournament (organizers): its schedule is stored and its matches are queued."""
    from rich.console import Console

    with _client(api_url, token) as client:
        t = _call(client.start_tournament, tournament_id, timeout_s=None)
        _echo_tournament(t)
        if wait:
            t = watch_progress(client, tournament_id, Console(), poll_s=poll)
            _echo_tournament(t)


@tournament.command("resume")
@_api_options
@click.argument("tournament_id", type=click.IntRange(min=1))
@click.option("--include-running", is_flag=True, help="Also re-enqueue matches marked running (their worker may be gone).")
def tournament_resume(api_url: str, token: str | None, tournament_id: int, include_running: bool) -> None:
    """Re-enqueue the matches of a running tournament that have no result (organizers), e.g.
    after Redis was restarted without persistence."""
    with _client(api_url, token) as client:
        t = _call(client.resume_tournament, tournament_id, include_running=include_running)
        _echo_tournament(t)


@tournament.command("status")
@_api_options
@click.argument("tournament_id", type=click.IntRange(min=1))
@click.option("--watch", is_flag=True, help="Show a progress bar until the tournament is finished or cancelled.")
@click.option("--poll", type=click.FloatRange(min=0.05), default=1.0, show_default=True, help="Seconds between polls (--watch).")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def tournament_status(api_url: str, token: str | None, tournament_id: int, watch: bool, poll: float, as_json: bool) -> None:
    """Status and progress (finished/total matches) of a tournament."""
    from rich.console import Console

    with _client(api_url, token) as client:
        t = watch_progress(client, tournament_id, Console(stderr=True), poll_s=poll) if watch else \
            _call(client.tournament, tournament_id)
    if as_json:
        click.echo(json.dumps(t, indent=2))
    else:
        _echo_tournament(t)


@tournament.command("standings")
@_api_options
@click.argument("tournament_id", type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def tournament_standings(api_url: str, token: str | None, tournament_id: int, as_json: bool) -> None:
    """Standings of a tournament: games, wins, mean score ±95%, faults, rating."""
    from rich.console import Console

    with _client(api_url, token) as client:
        s = _call(client.standings, tournament_id)
        names = _bot_names(client)
    if as_json:
        click.echo(json.dumps(s, indent=2))
        return
    Console().print(standings_table(s, names))


def _bot_names(client: ApiClient) -> dict[int, str]:
    """Bot id -> name of the bots this account may list (organizers: all); {} on error."""
    try:
        names: dict[int, str] = {}
        page = 1
        while True:
            body = client.request("GET", "/bots", params={"page": page, "per_page": 100})
            names.update({b["id"]: b["name"] for b in body["items"]})
            if len(names) >= body["total"] or not body["items"]:
                return names
            page += 1
    except ApiError:
        return {}


# ---------------------------------------------------------------------------- arena logs


@click.command("download")
@_api_options
@click.argument("tournament_id", type=click.IntRange(min=1))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder to write match-<id>.json.gz files into (created).")
def logs_download(api_url: str, token: str | None, tournament_id: int, out_dir: Path) -> None:
    """Download every match log of a tournament you may read (verify with `arena logs verify DIR`)."""
    from rich.console import Console

    console = Console(stderr=True)
    with _client(api_url, token) as client:
        t = _call(client.tournament, tournament_id)
        with progress_bar(console) as bar:
            task = bar.add_task("logs", total=t["progress"]["finished"] or None)
            paths = _call(download_logs, client, tournament_id, out_dir,
                          on_log=lambda _mid, _p: bar.advance(task))
    click.echo(f"{len(paths)} log(s) of tournament {tournament_id} written to {out_dir}")


def _logs_group() -> click.Group:

    group = click.Group("logs", help="Match logs: verify (replay through the engine), download (from the API).")
    for name, cmd in play_logs.commands.items():
        group.add_command(cmd, name)
    group.add_command(logs_download, "download")
    return group


logs = _logs_group()
