"""What the commands that talk to a running API print: progress bars and the no-worker hint,
the standings and leaderboard tables, what a tournament played until settled says of
itself, JSON answers."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from daifugo_arena.cli.client import ApiClient, ApiError
from daifugo_arena.cli.remote import call


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

        return call(client.wait_finished, tournament_id, poll_s=poll_s, timeout_s=timeout_s, on_progress=update)


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
        cells = [str(r["rank"] or "-"), str(who), str(r["games"]), str(r["wins"]), _signed(r["mean_score"], r["ci95"])]
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


def table_console():
    """A console for a wide table: the terminal's width, or 200 columns when stdout is not a
    terminal (a pipe or a file gets whole rows, not columns cut to 80)."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=200)


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
                f": {entrant_text(v.get('leader'))} ahead of {entrant_text(v.get('runner_up'))} by "
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


def echo_json(body: Any) -> None:
    click.echo(json.dumps(body, indent=2))


def entrant_text(e: Any) -> str:
    return f"bot {e}" if isinstance(e, int) else str(e)
