"""``arena tournament create|start|status|standings``, ``arena leaderboard`` and ``arena logs
download``: an organizer's commands, talking to a running API over HTTP
(:class:`cli.client.ApiClient`).

Every command takes ``--api URL`` (env ``ARENA_API_URL``, default ``http://127.0.0.1:8000``)
and ``--token TOKEN`` (env ``ARENA_TOKEN``; an organizer's token for create/start). Errors
are one line (``Error: HTTP 422 on POST /api/v1/tournaments: invalid request: json.participants:
bot 9 does not exist``) and exit status 1.

Output for scripts: stdout carries only the value asked for (``create``: the bare tournament
id; ``status``: its summary line; ``standings``: the table, whose caption says whether the
ranking is settled; ``leaderboard``: the table, no token needed), or the API's JSON answer with
``--json`` (``create``, ``start``, ``resume``, ``status``, ``standings``, ``leaderboard``); summaries of
actions, progress bars and hints go to stderr.

``arena logs`` is the group of :mod:`cli.play` (``verify``) with ``download`` added;
``arena bots`` is :mod:`cli.play`'s (``serve``) with ``register``, ``list`` and ``show``
added (a contestant's token): a bot registered with ``--url`` (the arena calls it) or
``--connect`` (it dials out to the arena's gateway; no URL), listed with its transport and,
for a bot that connects, whether it is connected, how many connections and since when.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import click

import engine
from arena.schedule import DEFAULT_HOUSE_BOT, HOUSE_BOTS
from cli import parse_options_json
from cli.api_commands import api_client, api_options, call_api, echo_json, table_console
from cli.client import ApiClient, ApiError, download_logs
from cli.play import bots as play_bots
from cli.play import logs as play_logs


def progress_bar(console=None, *, transient: bool = False):
    """The rich progress bar used by long operations (matches, downloads)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=transient,
    )


#: Seconds without progress and without a running match before ``--wait``/``--watch`` say
#: that no worker takes the matches (``--worker-hint-after``, env ``ARENA_WORKER_HINT_S``).
DEFAULT_WORKER_HINT_S = 15.0


def no_worker_hint(tournament_id: int, stalled_s: float, queued: int, finished: int) -> str:
    """The message shown when no match of a running tournament has been taken for a while."""
    taken = "no worker has taken a match" if finished == 0 else "no worker has taken another match"
    return (
        f"Hint: {taken} of tournament {tournament_id} for {stalled_s:.0f} s ({queued} queued, "
        f"0 running). Start one with `arena worker`, on a machine that reaches the API's "
        f"broker and database (the same ARENA_BROKER_URL and ARENA_DATABASE_URL). "
        f"If workers are running, the broker may have lost the queue (a Redis restart "
        f"without persistence): `arena tournament resume {tournament_id}`."
    )


class StallWatch:
    """Notices a running tournament whose matches no worker takes.

    ``check(t)`` is given each polled tournament body. Once ``hint_after_s`` seconds have
    passed without a newly finished match, it asks the API for the tournament's ``running``
    matches; if there are none it returns :func:`no_worker_hint` (once per stall: progress
    re-arms it), else None. Checks the API at most once per ``hint_after_s`` seconds.
    ``hint_after_s`` None or 0: never.
    """

    def __init__(self, client: ApiClient, tournament_id: int, hint_after_s: float | None):
        self.client, self.tournament_id, self.hint_after_s = client, tournament_id, hint_after_s
        self._finished: int | None = None
        self._since = self._checked = time.monotonic()
        self._hinted = False

    def _count(self, status: str) -> int:
        body = self.client.request(
            "GET", f"/tournaments/{self.tournament_id}/matches", params={"status": status, "per_page": 1}
        )
        return int(body["total"])

    def check(self, t: dict) -> str | None:
        now = time.monotonic()
        finished = t["progress"]["finished"]
        if finished != self._finished:
            self._finished, self._since, self._checked, self._hinted = finished, now, now, False
        if not self.hint_after_s or self._hinted or t["status"] != "running" or now - self._checked < self.hint_after_s:
            return None
        self._checked = now
        try:  # the hint is a courtesy: an API hiccup here must not end the wait
            if self._count("running"):
                return None
            queued = self._count("queued")
        except ApiError:
            return None
        self._hinted = True
        return no_worker_hint(self.tournament_id, now - self._since, queued, finished)


def watch_progress(
    client: ApiClient,
    tournament_id: int,
    console=None,
    *,
    poll_s: float = 0.5,
    timeout_s: float | None = None,
    hint_after_s: float | None = None,
) -> dict:
    """Show a progress bar of finished matches until the tournament is finished or cancelled;
    returns the tournament's last state.

    ``timeout_s``: give up after that many seconds (one ``Error:`` line). ``hint_after_s``:
    print :func:`no_worker_hint` on ``console`` when no match has been taken for that many
    seconds (see :class:`StallWatch`; None: never).
    """
    from rich.text import Text

    stall = StallWatch(client, tournament_id, hint_after_s)
    with progress_bar(console) as bar:
        task = bar.add_task(f"tournament {tournament_id}", total=None)

        def update(t: dict) -> None:
            p = t["progress"]
            bar.update(
                task,
                completed=p["finished"],
                total=p["total"] or None,
                description=f"tournament {tournament_id} ({t['status']})",
            )
            hint = stall.check(t)
            if hint:
                bar.console.print(Text(hint, style="yellow"))

        return call_api(client.wait_finished, tournament_id, poll_s=poll_s, timeout_s=timeout_s, on_progress=update)


def _signed(value: float | None, half: float | None = None) -> str:
    """``+1.23±0.45`` (compact: the standings table fits 80 columns); ``-`` for None."""
    if value is None:
        return "-"
    return f"{value:+.2f}" + (f"±{half:.2f}" if half is not None else "")


def settled_lines(standings: dict) -> list[str]:
    """The standings' verdict in words: settled or not (and why not), first place, which mean
    orders and how many games have a par (``GET /tournaments/{id}/standings``)."""
    rows, neighbours = standings["rows"], standings["neighbours"]
    if standings["settled"]:
        verdict = "ranking settled: every difference between neighbours is significant at 95%"
    elif not standings["games"]:
        verdict = "ranking not yet settled: no game played yet"
    elif any(not r["rank"] for r in rows):
        verdict = "ranking not yet settled: not every entrant has played yet"
    else:
        open_pairs = [f"{n['upper_rank']}-{n['lower_rank']}" for n in neighbours if not n["significant"]]
        verdict = (
            f"ranking not yet settled: {len(open_pairs)} of {len(neighbours)} differences between "
            f"neighbours are not significant at 95% (ranks {', '.join(open_pairs)})"
        )
    top = "first place settled" if standings["top_settled"] else "first place not yet settled"
    if standings["order_by"] == "adjusted":
        order = "order by adjusted mean (score minus par): every game has a par"
    else:
        order = f"order by raw mean: {standings['games_with_par']} of {standings['games']} games have a par"
    return [f"{verdict}; {top}", order]


def standings_table(standings: dict, names: dict[int, str] | None = None, title: str | None = None):
    """``GET /tournaments/{id}/standings`` for a rich console (``names``: bot id -> label): the
    verdict (:func:`settled_lines`, whole lines), then the table: raw and adjusted means with
    their 95% intervals, the gap to the next entrant and whether it is significant."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    names = names or {}
    below = {n["upper_rank"]: n for n in standings.get("neighbours", [])}
    with_par = standings.get("games_with_par", 0) > 0
    table = Table(
        title=title or f"standings of tournament {standings['tournament_id']} ({standings['ruleset']})",
        caption="\n".join(
            [
                "mean ±95%: per game, 95% interval (Student t); "
                + ("adj.: adjusted, score minus par, over the games with a par; " if with_par else "")
                + "gap: difference to the next entrant ±95% (the games both played compared "
                "pairwise), * significant; rating: openskill Plackett-Luce, one update a game, "
                "mu - 3 sigma (mu and sigma: --json)",
                f"order: {standings['tie_break']}",
            ]
        ),
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    columns = ["#", "bot", "games", "wins", "mean ±95%"]
    columns += ["adj. ±95%"] if with_par else []
    columns += ["gap", "faults", "rating"]
    for col in columns:
        table.add_column(col, justify="left" if col == "bot" else "right", no_wrap=True)
    for r in standings["rows"]:
        who = (
            r["house_bot"]
            if r.get("bot_id") is None
            else r.get("bot_name") or names.get(r["bot_id"], f"bot {r['bot_id']}")
        )
        gap = "-"
        n = below.get(r["rank"]) if r["rank"] else None
        if n is not None:
            gap = _signed(n["difference"], n["ci95"]) + ("*" if n["significant"] else " ")
        cells = [str(r["rank"]), str(who), str(r["games"]), str(r["wins"]), _signed(r["mean_score"], r["ci95"])]
        if with_par:
            cells.append(_signed(r["adjusted_mean"], r["adjusted_ci95"]))
        cells += [gap, str(r["faults"]), f"{r['ordinal']:.2f}"]
        table.add_row(*cells)
    return Group(table, *(Text(line) for line in settled_lines(standings)))


def leaderboard_table(board: dict):
    """A rich Table of ``GET /leaderboard`` (every page): the page ``/ui/leaderboard`` shows the same."""
    from rich import box
    from rich.table import Table

    table = Table(
        title=f"leaderboard: {board['ruleset']} ({board['total']} bots)",
        caption="openskill Plackett-Luce across tournaments, one update per game (ranked by adjusted score "
        "where the game has a par); order: conservative rating μ−3σ; last played in UTC",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for col in ("#", "bot", "owner", "μ−3σ", "μ±σ", "games", "matches", "last played"):
        table.add_column(col, justify="left" if col in ("bot", "owner", "last played") else "right", no_wrap=True)
    for r in board["items"]:
        table.add_row(
            str(r["rank"]),
            f"{r['bot_name']} #{r['bot_id']}",
            r["owner"],
            f"{r['ordinal']:.2f}",
            f"{r['mu']:.2f}±{r['sigma']:.2f}",
            str(r["games"]),
            str(r["matches"]),
            (r["last_played"] or "-").replace("T", " ")[:16],
        )
    return table


def settling_text(t: dict) -> str | None:
    """What a tournament played until settled says of it (None without ``until_settled``):
    ``settled after round N: bot A ahead of bot B by D ± SE points per game``, ``max rounds (N)
    reached: the sequential test did not settle the top two``, ``round R of at most N``, ``cancelled during round R``,
    or ``stopped with failed matches``."""
    rule = t.get("until_settled")
    if not rule:
        return None
    v = t.get("settle") or {}
    rounds, reason = t.get("rounds") or 1, t.get("stop_reason")
    if reason == "settled":
        text = f"settled after round {rounds}"
        if v.get("difference") is not None:
            text += (
                f": {_entrant(v.get('leader'))} ahead of {_entrant(v.get('runner_up'))} by "
                f"{v['difference']:.2f} ± {v.get('se') or 0:.2f} points per game"
            )
        return text
    if reason == "max_rounds":
        return f"max rounds ({rule['max_rounds']}) reached: the sequential test did not settle the top two"
    if t.get("status") in ("created", "running"):
        text = f"round {rounds} of at most {rule['max_rounds']}"
        if v:
            text += f", not settled yet (test {v['llr']:.2f}, settled at {v['upper']:.2f})"
        return text
    if t.get("status") == "cancelled":
        return f"cancelled during round {rounds}"
    return "stopped with failed matches (retry them to play on)"


def _entrant(e: Any) -> str:
    return f"bot {e}" if isinstance(e, int) else str(e)


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
        t = call_api(client.create_tournament, **body)
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
    return call_api(client.start_tournament, tournament_id, timeout_s=None, if_offline=choice, wait_s=max_wait_s)


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
            t = call_api(client.tournament, tournament_id)
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
        t = call_api(client.resume_tournament, tournament_id, include_running=include_running)
    _echo_result(t, as_json)


@tournament.command("retry")
@api_options
@click.argument("tournament_id", type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def tournament_retry(api_url: str, token: str | None, tournament_id: int, as_json: bool) -> None:
    """Play the failed matches of a tournament again (organizers); ``status`` lists them.
    Summary on stderr (--json: JSON on stdout)."""
    with api_client(api_url, token) as client:
        t = call_api(client.retry_tournament, tournament_id)
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
            else call_api(client.tournament, tournament_id)
        )
        failed = (
            []
            if as_json or t["status"] not in ("running", "finished")
            else [m for m in call_api(client.matches, tournament_id) if m.get("status") == "failed"]
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
        s = call_api(client.standings, tournament_id)
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
        board = call_api(client.leaderboard, ruleset)
    if as_json:
        echo_json(board)
        return
    table_console().print(leaderboard_table(board))


# ---------------------------------------------------------------------------- arena logs


@click.command("download")
@api_options
@click.argument("tournament_id", type=click.IntRange(min=1))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder to write match-<id>.json.gz files into (created).",
)
def logs_download(api_url: str, token: str | None, tournament_id: int, out_dir: Path) -> None:
    """Download every match log of a tournament you may read (verify with `arena logs verify DIR`).
    A public tournament's logs need no token, as on its page."""
    from rich.console import Console

    console = Console(stderr=True)
    with api_client(api_url, token, public_read=True) as client:
        t = call_api(client.tournament, tournament_id)
        with progress_bar(console) as bar:
            task = bar.add_task("logs", total=t["progress"]["finished"] or None)
            paths = call_api(download_logs, client, tournament_id, out_dir, on_log=lambda _mid, _p: bar.advance(task))
    click.echo(f"{len(paths)} log(s) of tournament {tournament_id} written to {out_dir}", err=True)


def _logs_group() -> click.Group:

    group = click.Group("logs", help="Match logs: verify (replay through the engine), download (from the API).")
    for name, cmd in play_logs.commands.items():
        group.add_command(cmd, name)
    group.add_command(logs_download, "download")
    return group


logs = _logs_group()


def reach_text(bot: dict) -> str:
    """How the arena reaches ``bot`` (an API bot), in one phrase: its URL; or, for a bot that
    connects, ``connected, 2 connections since 2026-12-02T10:00:00+00:00``, ``not connected``,
    or ``presence unknown`` (the API could not read it)."""
    if bot.get("transport", "http") != "connect":
        return str(bot.get("url"))
    presence = bot.get("presence")
    if presence is None:
        return "connects; presence unknown"
    if not presence["connected"]:
        return "connects; not connected"
    n = presence["connections"]
    return f"connects; connected, {n} connection{'s' if n != 1 else ''} since {presence['since']}"


@click.command("register")
@api_options
@click.argument("name")
@click.option(
    "--ruleset",
    "rulesets",
    multiple=True,
    required=True,
    type=click.Choice(list(engine.RULESETS)),
    help="A rule set the bot plays (repeat for several).",
)
@click.option("--url", default=None, help="The bot's http(s) URL: the arena calls it.")
@click.option("--connect", is_flag=True, help="The bot dials out to the arena's gateway (no URL; works behind NAT).")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer (with the secret).")
def bots_register(
    api_url: str, token: str | None, name: str, rulesets: tuple[str, ...], url: str | None, connect: bool, as_json: bool
) -> None:
    """Register bot NAME with --url URL (the arena calls it) or --connect (it dials out).

    Prints the bot id on stdout and its signing secret, shown this once, on stderr (with
    --json: the API's answer, secret included, on stdout). Check it next: ``arena bots check ID``.
    """
    if connect == (url is not None):
        raise click.UsageError("give exactly one of --url URL (the arena calls your bot) and --connect (it dials out)")
    with api_client(api_url, token) as client:
        bot = call_api(client.register_bot, name, url, list(rulesets), transport="connect" if connect else "http")
    if as_json:
        click.echo(json.dumps(bot, indent=2))
        return
    click.echo(bot["id"])
    click.echo(f"bot {bot['id']} {bot['name']!r} registered ({reach_text(bot)}), status {bot['status']}", err=True)
    click.echo(f"signing secret (shown once; give it to the bot as ARENA_BOT_SECRET): {bot['secret']}", err=True)
    click.echo(f"next: run the bot, then arena bots check {bot['id']}", err=True)


@click.command("list")
@api_options
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def bots_list(api_url: str, token: str | None, as_json: bool) -> None:
    """Your bots (an organizer's: every bot): id, name, status, rule sets, transport and how
    the arena reaches it (URL; or connected, connections, since)."""
    with api_client(api_url, token) as client:
        page = call_api(client.bots)
    if as_json:
        click.echo(json.dumps(page, indent=2))
        return
    for b in page["items"]:
        click.echo(
            f"{b['id']}\t{b['name']}\t{b['status']}\t{','.join(b['rulesets'])}\t{b.get('transport', 'http')}"
            f"\t{reach_text(b)}"
        )
    if page["total"] > len(page["items"]):
        click.echo(f"({len(page['items'])} of {page['total']} shown)", err=True)


@click.command("show")
@api_options
@click.argument("bot_id", type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def bots_show(api_url: str, token: str | None, bot_id: int, as_json: bool) -> None:
    """One bot: ``field: value`` lines (transport, URL, presence of a bot that connects)."""
    with api_client(api_url, token) as client:
        b = call_api(client.bot, bot_id)
    if as_json:
        click.echo(json.dumps(b, indent=2))
        return
    lines = [
        ("id", b["id"]),
        ("name", b["name"]),
        ("status", b["status"]),
        ("rulesets", ", ".join(b["rulesets"])),
        ("transport", b.get("transport", "http")),
    ]
    if b.get("transport") == "connect":
        p = b.get("presence")
        if p is None:
            lines.append(("connected", "unknown (the API could not read it)"))
        else:
            lines += [("connected", "yes" if p["connected"] else "no"), ("connections", p["connections"])]
            lines.append(("since", p["since"] or "-"))
    else:
        lines.append(("url", b["url"]))
    for key, value in lines:
        click.echo(f"{key}: {value}")


#: Faults listed per rule set, and warnings, by ``arena bots check`` (the arena keeps 5).
MAX_CHECK_FAULTS = 5


def check_lines(result: dict | None) -> list[str]:
    """What a check's ``result`` (``last_check``, :mod:`arena.conformance`'s shape) found wrong,
    one line each: the URL, the health answer, the bad-signature (or bad-authentication)
    probe, each rule set's conformance games (their error, or their faults, at most
    :data:`MAX_CHECK_FAULTS`), then the warnings (as many). Empty when nothing was wrong."""
    if not result:
        return []
    out = []
    for part in ("url", "health", "signature"):
        r = result.get(part)
        if isinstance(r, dict) and not r.get("ok", True):
            why = r.get("error") or r.get("warning") or (f"HTTP {r['status']}" if r.get("status") else "failed")
            out.append(f"{part}: {why}")
    for game in result.get("conformance") or []:
        if game.get("ok"):
            continue
        if game.get("error"):
            out.append(f"{game.get('ruleset')}: {game['error']}")
        missing = [k for k, v in (game.get("kinds") or {}).items() if not v.get("asked")]
        faults = game.get("faults") or []
        for f in faults[:MAX_CHECK_FAULTS]:
            out.append(f"{game.get('ruleset')}: {f.get('kind')} fault at {f.get('decision')}: {f.get('detail')}")
        if len(faults) > MAX_CHECK_FAULTS:
            out.append(f"{game.get('ruleset')}: ... and {len(faults) - MAX_CHECK_FAULTS} more faults")
        if missing and not game.get("faults") and not game.get("error"):
            out.append(f"{game.get('ruleset')}: never asked {', '.join(missing)}")
    warnings = result.get("warnings") or []
    out += [f"warning: {w}" for w in warnings[:MAX_CHECK_FAULTS]]
    if len(warnings) > MAX_CHECK_FAULTS:
        out.append(f"... and {len(warnings) - MAX_CHECK_FAULTS} more warnings")
    return out


@click.command("check")
@api_options
@click.argument("bot_id", type=click.IntRange(min=1))
@click.option(
    "--wait-s",
    default=600.0,
    show_default=True,
    type=click.FloatRange(min=1),
    help="Longest wait for the check, seconds.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the bot as the API answers it after the check.")
def bots_check(api_url: str, token: str | None, bot_id: int, wait_s: float, as_json: bool) -> None:
    """Check bot BOT_ID (POST /api/v1/bots/{id}/check) and wait for it: health, the
    bad-signature or bad-authentication probe, conformance games asking every decision kind.

    Prints ``bot N 'name': ready`` or ``... failed`` and what the check found, one line each;
    exits 1 when the bot failed, or with an ``Error:`` line when the check could not be run
    or did not finish within --wait-s.
    """
    with api_client(api_url, token) as client:
        b = call_api(client.check_bot, bot_id, wait_s=wait_s)
    if as_json:
        click.echo(json.dumps(b, indent=2))
    else:
        click.echo(f"bot {b['id']} {b['name']!r}: {b['status']}")
        for line in check_lines(b.get("last_check")):
            click.echo(f"  {line}")
    if b["status"] != "ready":
        raise SystemExit(1)


def _bots_group() -> click.Group:
    group = click.Group(
        "bots",
        help="Bots: serve one over HTTP, register yours with the API (--url or --connect), check, list, show.",
    )
    for name, cmd in play_bots.commands.items():
        group.add_command(cmd, name)
    for cmd in (bots_register, bots_check, bots_list, bots_show):
        group.add_command(cmd)
    return group


bots = _bots_group()
