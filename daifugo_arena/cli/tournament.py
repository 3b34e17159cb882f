"""``arena tournament create|start|resume|retry|status|standings`` and ``arena leaderboard``:
an organizer's commands, talking to a running API over HTTP (:mod:`daifugo_arena.cli.remote`; what they
print: :mod:`daifugo_arena.cli.display`).

Every command takes ``--api URL`` (env ``ARENA_API_URL``, default ``http://127.0.0.1:8000``)
and ``--token TOKEN`` (env ``ARENA_TOKEN``; an organizer's token for create/start). Errors
are one line (``Error: HTTP 422 on POST /api/v1/tournaments: invalid request: json.participants:
bot 9 does not exist``) and exit status 1.

Output for scripts: stdout carries only the value asked for (``create``: the bare tournament
id; ``status``: its summary line; ``standings``: the table, whose caption says whether the
ranking is settled; ``leaderboard``: the table, no token needed), or the API's JSON answer with
``--json`` (``create``, ``start``, ``resume``, ``status``, ``standings``, ``leaderboard``); summaries of
actions, progress bars and hints go to stderr.

A contestant's commands (``arena bots register|list|show|check``, ``arena logs download``):
:mod:`daifugo_arena.cli.bots`.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from typing import Any

import click

import engine
from arena.schedule import DEFAULT_HOUSE_BOT, HOUSE_BOTS
from daifugo_arena.cli import parse_options_json
from daifugo_arena.cli.client import ApiClient, ApiError
from daifugo_arena.cli.display import (
    DEFAULT_WORKER_HINT_S,
    echo_json,
    leaderboard_table,
    settling_text,
    standings_table,
    table_console,
    watch_progress,
)
from daifugo_arena.cli.remote import api_client, api_options, call


def _echo_tournament(t: dict, *, err: bool = False) -> None:
    """One summary line of a tournament (on stderr with ``err``: a message, not the output)."""
    p = t["progress"]
    name = f" {t['name']!r}" if t.get("name") else ""
    settling = settling_text(t)
    click.echo(
        f"tournament {t['id']}{name}: {t['ruleset']}, {t['status']}, "
        f"{p['finished']}/{p['total']} matches finished, participants {t['participants']}, "
        + (f"house seats {t['house_bot']}, " if t.get("fill_with_house_bots") and t.get("house_bot") else "")
        + (f"play until settled: {settling}, " if settling else "")
        + (f"seed {t['seed']}" if t.get("seed") is not None else "seed secret")
        + (" (chosen by the organizer: not rated)" if t.get("seed_chosen") else "")
        + (f", commitment {t['commitment']}" if t.get("commitment") else ""),
        err=err,
    )


def _echo_result(t: dict, as_json: bool) -> None:
    """A command's tournament answer: JSON on stdout with ``--json``, else the summary on stderr."""
    if as_json:
        echo_json(t)
    else:
        _echo_tournament(t, err=True)


@click.group("tournament")
def tournament() -> None:
    """Organize round-robin tournaments through the API (create, start, status, standings)."""


@tournament.command("create")
@api_options
@click.option("--ruleset", "-r", type=click.Choice(list(engine.RULESETS)), required=True)
@click.option(
    "--bot",
    "bots",
    type=click.IntRange(min=1),
    multiple=True,
    required=True,
    help="Participant bot id (repeat; the bots must be 'ready').",
)
@click.option("--name", default="", help="Tournament name.")
@click.option(
    "--games-per-pairing",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="million_doubt: games per match (even); 4-player rule sets: rounds of 4 seat rotations per table.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="Set the seed, for a reproducible test: the tournament is marked 'seed chosen' and not rated "
    "(default: drawn when it starts, secret from everyone until it is over).",
)
@click.option(
    "--until-settled",
    "max_rounds",
    type=click.IntRange(min=1),
    default=None,
    metavar="MAX_ROUNDS",
    help="Play until settled: add rounds (fresh deals) until the top two are settled, at most MAX_ROUNDS rounds.",
)
@click.option(
    "--settle-delta",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="With --until-settled: points per game the test looks for between the top two (default: the rule set's).",
)
@click.option(
    "--options", "options_json", default=None, help="Rule-set options as JSON, e.g. '{\"target_score\": 50}'."
)
@click.option("--time-bank", type=float, default=60.0, show_default=True, help="TIME-1 initial bank, seconds.")
@click.option("--increment", type=float, default=10.0, show_default=True, help="Added per action, seconds.")
@click.option("--cap", type=float, default=None, help="Largest bank, seconds (default: the time bank).")
@click.option("--max-faults", type=click.IntRange(min=1), default=3, show_default=True, help="FAULT-3 limit per match.")
@click.option("--fill-with-house-bots", is_flag=True, help="Fill missing seats with house sample bots.")
@click.option(
    "--house-bot",
    type=click.Choice(HOUSE_BOTS),
    default=DEFAULT_HOUSE_BOT,
    show_default=True,
    help="The sample bot of the house seats (search: about 100 ms a decision).",
)
@click.option(
    "--separate-owners/--mix-owners",
    default=True,
    show_default=True,
    help="Never two bots of one owner at one table (the schedule leaves such pairings and tables out).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def tournament_create(
    api_url: str,
    token: str | None,
    ruleset: str,
    bots: tuple[int, ...],
    name: str,
    games_per_pairing: int,
    seed: int | None,
    max_rounds: int | None,
    settle_delta: float | None,
    options_json: str | None,
    time_bank: float,
    increment: float,
    cap: float | None,
    max_faults: int,
    fill_with_house_bots: bool,
    house_bot: str,
    separate_owners: bool,
    as_json: bool,
) -> None:
    """Create a round-robin tournament (organizers).

    Prints the bare tournament id on stdout (``id=$(arena tournament create ...)``) and a
    summary line on stderr; with --json, the API's JSON answer on stdout instead.
    """
    options = parse_options_json(options_json)
    body: dict[str, Any] = {
        "name": name,
        "ruleset": ruleset,
        "participants": list(bots),
        "options": options,
        "games_per_pairing": games_per_pairing,
        "max_faults": max_faults,
        "fill_with_house_bots": fill_with_house_bots,
        "house_bot": house_bot,
        "separate_owners": separate_owners,
        "time_rules": {"initial": time_bank, "increment": increment, "cap": time_bank if cap is None else cap},
    }
    if seed is not None:
        body["seed"] = seed
    if max_rounds is not None:
        body["until_settled"] = {"max_rounds": max_rounds}
        if settle_delta is not None:
            body["until_settled"]["delta"] = settle_delta
    elif settle_delta is not None:
        raise click.UsageError("--settle-delta needs --until-settled")
    with api_client(api_url, token) as client:
        t = call(client.create_tournament, **body)
    if as_json:
        echo_json(t)
        return
    _echo_tournament(t, err=True)
    click.echo(t["id"])


#: What ``start --if-offline`` may say (the API's ``if_offline``).
IF_OFFLINE = ("ask", "wait", "start")


def offline_lines(offline: list[dict]) -> list[str]:
    """One line per offline entrant of a roll call (``details.offline`` or ``roll_call.offline``)."""
    lines = []
    for a in offline:
        why = "not connected" if a.get("reason") == "not_connected" else f"health check failed: {a.get('detail')}"
        lines.append(f"  {a.get('name')} #{a.get('bot_id')}: {why}")
    return lines


def _start_asking(
    client: ApiClient, tournament_id: int, if_offline: str, max_wait_s: int, *, interactive: bool
) -> dict:
    """Start (``if_offline``); when the API says entrants are offline (409 with the list), print
    them and, on a terminal, ask whether to wait for them or start without them; elsewhere
    stop with an ``Error:`` naming the options."""
    try:
        return client.start_tournament(tournament_id, timeout_s=None, if_offline=if_offline, wait_s=max_wait_s)
    except ApiError as exc:
        offline = exc.details.get("offline") if exc.status == 409 else None
        if not offline:
            raise click.ClickException(str(exc)) from None
    click.echo(f"tournament {tournament_id} was not started: {len(offline)} entrant(s) offline:", err=True)
    for line in offline_lines(offline):
        click.echo(line, err=True)
    if not interactive:
        raise click.ClickException(
            f"not started: start it with --if-offline wait (waits up to --max-wait {max_wait_s} s for them) "
            "or --if-offline start (without them)"
        )
    choice = click.prompt(
        f"wait for them (up to {max_wait_s} s), start without them, or leave it",
        type=click.Choice(["wait", "start", "leave"]),
        default="wait",
        err=True,
    )
    if choice == "leave":
        raise click.ClickException("not started")
    return call(client.start_tournament, tournament_id, timeout_s=None, if_offline=choice, wait_s=max_wait_s)


def waiting_line(t: dict, now: float | None = None) -> str:
    """What a start waiting for offline entrants says while it waits (``start``, ``status --watch``)."""
    offline = ((t.get("roll_call") or {}).get("offline")) or []
    until = t.get("waiting_until") or ""
    left = ""
    try:
        end = datetime.fromisoformat(until)
        seconds = max(0, int(end.timestamp() - (time.time() if now is None else now)))
        left = f" ({seconds // 60} min {seconds % 60} s left)" if seconds >= 60 else f" ({seconds} s left)"
    except ValueError:
        pass
    names = "; ".join(line.strip() for line in offline_lines(offline)) or "checking"
    return f"tournament {t['id']}: waiting for {len(offline)} offline entrant(s) ({names}) until {until}{left}"


def watch_waiting(client: ApiClient, tournament_id: int, console=None, *, poll_s: float = 1.0) -> dict:
    """Show, on one line updated live, who a start still waits for, until it starts (or is
    cancelled); returns the tournament's last state."""
    from rich.console import Console

    console = console or Console(stderr=True)
    with console.status("") as status:
        while True:
            t = call(client.tournament, tournament_id)
            if t["status"] != "created" or not t.get("waiting_until"):
                return t
            status.update(waiting_line(t))
            time.sleep(poll_s)


@tournament.command("start")
@api_options
@click.argument("tournament_id", type=click.IntRange(min=1))
@click.option(
    "--if-offline",
    type=click.Choice(IF_OFFLINE),
    default="ask",
    show_default=True,
    help="Entrants offline (a bot that dials out and is not connected, a bot whose health check fails): "
    "ask (on a terminal; elsewhere Error: listing them), wait for them (--max-wait), or start without them.",
)
@click.option(
    "--max-wait",
    "max_wait_s",
    type=click.IntRange(min=1, max=3600),
    default=300,
    show_default=True,
    help="Seconds a start waits for offline entrants at most (then it starts without them).",
)
@click.option("--wait", is_flag=True, help="Show a progress bar until every match is finished.")
@click.option(
    "--poll", type=click.FloatRange(min=0.05), default=1.0, show_default=True, help="Seconds between polls (--wait)."
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds to --wait at most (then Error:, exit status 1; default: no limit).",
)
@click.option(
    "--worker-hint-after",
    "hint_after_s",
    type=click.FloatRange(min=0),
    envvar="ARENA_WORKER_HINT_S",
    default=DEFAULT_WORKER_HINT_S,
    show_default=True,
    show_envvar=True,
    help="Seconds without progress and no running match before --wait says that no worker takes "
    "the matches (0: never).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer (with --wait: the final state).")
def tournament_start(
    api_url: str,
    token: str | None,
    tournament_id: int,
    if_offline: str,
    max_wait_s: int,
    wait: bool,
    poll: float,
    timeout_s: float | None,
    hint_after_s: float,
    as_json: bool,
) -> None:
    """Start a tournament (organizers): its schedule is stored and its matches are queued.

    The summary line, the progress bar (--wait) and hints go to stderr; stdout gets nothing,
    or the JSON answer with --json. With --wait, a hint names `arena worker` when no match
    has been taken for --worker-hint-after seconds.

    First the entrants' roll call: with some offline, --if-offline ask lists them and, on a
    terminal, asks whether to wait for them or start without them (elsewhere: Error:, exit
    status 1, nothing started); a start that waits shows who it still waits for, live, until
    it starts.
    """
    from rich.console import Console

    with api_client(api_url, token) as client:
        interactive = sys.stdin.isatty() and not as_json
        t = _start_asking(client, tournament_id, if_offline, max_wait_s, interactive=interactive)
        if t["status"] == "created" and t.get("waiting_until"):
            t = watch_waiting(client, tournament_id, Console(stderr=True), poll_s=poll)
        _echo_tournament(t, err=True)
        offline = (t.get("roll_call") or {}).get("offline") or []
        if t["status"] == "running" and offline:
            click.echo(f"started without {len(offline)} offline entrant(s):", err=True)
            for line in offline_lines(offline):
                click.echo(line, err=True)
        if wait:
            t = watch_progress(
                client, tournament_id, Console(stderr=True), poll_s=poll, timeout_s=timeout_s, hint_after_s=hint_after_s
            )
            _echo_tournament(t, err=True)
    if as_json:
        echo_json(t)


@tournament.command("resume")
@api_options
@click.argument("tournament_id", type=click.IntRange(min=1))
@click.option(
    "--include-running", is_flag=True, help="Also re-enqueue matches marked running (their worker may be gone)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def tournament_resume(
    api_url: str, token: str | None, tournament_id: int, include_running: bool, as_json: bool
) -> None:
    """Re-enqueue the matches of a running tournament that have no result (organizers). Not
    needed after a crash when ``arena beat`` runs: its reaper does this by itself. Summary on
    stderr (--json: JSON on stdout)."""
    with api_client(api_url, token) as client:
        t = call(client.resume_tournament, tournament_id, include_running=include_running)
    _echo_result(t, as_json)


@tournament.command("retry")
@api_options
@click.argument("tournament_id", type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def tournament_retry(api_url: str, token: str | None, tournament_id: int, as_json: bool) -> None:
    """Play the failed matches of a tournament again (organizers); ``status`` lists them.
    Summary on stderr (--json: JSON on stdout)."""
    with api_client(api_url, token) as client:
        t = call(client.retry_tournament, tournament_id)
    _echo_result(t, as_json)


@tournament.command("status")
@api_options
@click.argument("tournament_id", type=click.IntRange(min=1))
@click.option("--watch", is_flag=True, help="Show a progress bar until the tournament is finished or cancelled.")
@click.option(
    "--poll", type=click.FloatRange(min=0.05), default=1.0, show_default=True, help="Seconds between polls (--watch)."
)
@click.option(
    "--worker-hint-after",
    "hint_after_s",
    type=click.FloatRange(min=0),
    envvar="ARENA_WORKER_HINT_S",
    default=DEFAULT_WORKER_HINT_S,
    show_default=True,
    show_envvar=True,
    help="Seconds without progress and no running match before --watch says that no worker takes "
    "the matches (0: never).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def tournament_status(
    api_url: str, token: str | None, tournament_id: int, watch: bool, poll: float, hint_after_s: float, as_json: bool
) -> None:
    """Status and progress (finished/total matches) of a tournament: one summary line on
    stdout (--json: the API's JSON answer); the --watch progress bar and hints on stderr.
    A public tournament (finished, public once finished) needs no token."""
    from rich.console import Console

    with api_client(api_url, token, public_read=True) as client:
        t = (
            watch_progress(client, tournament_id, Console(stderr=True), poll_s=poll, hint_after_s=hint_after_s)
            if watch
            else call(client.tournament, tournament_id)
        )
        failed = (
            []
            if as_json or t["status"] not in ("running", "finished")
            else [m for m in call(client.matches, tournament_id) if m.get("status") == "failed"]
        )
    if as_json:
        echo_json(t)
    else:
        _echo_tournament(t)
        if t["status"] == "created" and t.get("waiting_until"):
            click.echo(waiting_line(t))
        for m in failed:  # not a bot's fault: the organizer may retry them
            click.echo(f"match {m['id']} failed: {m.get('failure') or 'no reason recorded'}")
        if failed:
            click.echo(f"{len(failed)} failed match(es): arena tournament retry {tournament_id}")


@tournament.command("standings")
@api_options
@click.argument("tournament_id", type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def tournament_standings(api_url: str, token: str | None, tournament_id: int, as_json: bool) -> None:
    """Standings of a tournament and whether they are settled: games, wins, raw and adjusted
    mean ±95%, the gap to the next entrant and its significance, faults, rating. A public
    tournament needs no token."""

    with api_client(api_url, token, public_read=True) as client:
        s = call(client.standings, tournament_id)
    if as_json:
        echo_json(s)
        return
    table_console().print(standings_table(s))


@click.command("leaderboard")
@api_options
@click.option(
    "--ruleset", "-r", required=True, type=click.Choice(list(engine.RULESETS)), help="The rule set's ratings."
)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer (every page).")
def leaderboard(api_url: str, token: str | None, ruleset: str, as_json: bool) -> None:
    """Ratings across tournaments of a rule set: conservative rating (mu - 3 sigma), mu ± sigma,
    games, matches, last played (public: no token needed)."""

    try:
        client = ApiClient(api_url, token)
    except ApiError as exc:
        raise click.BadParameter(str(exc), param_hint="--api") from None
    with client:
        board = call(client.leaderboard, ruleset)
    if as_json:
        echo_json(board)
        return
    table_console().print(leaderboard_table(board))


# ---------------------------------------------------------------------------- arena logs
