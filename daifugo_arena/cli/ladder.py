"""``arena ladder list|show|create|enter|pause|resume|withdraw|sets|official``: ladders that never
close (docs/ladder.md), through a running API over HTTP (:class:`daifugo_arena.cli.client.ApiClient`), as
``arena tournament`` does.

Every command takes ``--api URL`` (env ``ARENA_API_URL``) and ``--token TOKEN`` (env
``ARENA_TOKEN``). An open ladder is read without a token (``list``, ``show``, ``sets``,
``official``); a private one by its members. ``create`` is an organizer's; ``enter``, ``pause``,
``resume`` and ``withdraw`` act on the caller's own bot. Errors are one ``Error:`` line (exit
status 1), the API's message naming the field (``Error: HTTP 422 on POST
/api/v1/ladders/1/entries: invalid request: json.bot_id: bot 9 has not passed its check``).

Output for scripts: stdout carries the value asked for (``create``: the bare ladder id;
``list``: one line per ladder; ``show``, ``sets``, ``official``: a table), or the API's JSON
answer with ``--json``; summaries of actions go to stderr.
"""

from __future__ import annotations

import json
from typing import Any

import click

import engine
from daifugo_arena.cli import parse_options_json
from daifugo_arena.cli.display import echo_json, table_console
from daifugo_arena.cli.remote import api_client, api_options, call


def _bool(value: bool | None, yes: str, no: str, none: str = "-") -> str:
    return none if value is None else (yes if value else no)


def ladder_line(ld: dict) -> str:
    """One ladder as ``list`` prints it: id, name, rule set, open or private, status, last tick."""
    return "\t".join(
        [
            str(ld["id"]),
            ld["name"],
            ld["ruleset"],
            "open" if ld["open"] else "private",
            ld["status"],
            f"last tick {(ld.get('last_tick_at') or '-').replace('T', ' ')[:16]}",
        ]
    )


def live_table(body: dict):
    """``GET /ladders/{id}`` for a rich console: the live table (the page ``/ui/ladders/{id}``
    shows the same)."""
    from rich import box
    from rich.table import Table

    ld = body["ladder"]
    cfg = ld.get("config") or {}
    kind = "open" if ld["open"] else "private"
    table = Table(
        title=f"ladder {ld['id']} {ld['name']!r}: {ld['ruleset']}, {kind}, {ld['status']}",
        caption=f"order: conservative rating μ−3σ (openskill, one update per rated set); prov.: fewer than "
        f"{cfg.get('placement_sets', 10)} rated sets; ahead: above the next row with 95% confidence",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for col in ("#", "bot", "owner", "μ", "σ", "μ−3σ", "sets", "ahead", "online", "state"):
        table.add_column(col, justify="left" if col in ("bot", "owner", "ahead", "online", "state") else "right")
    for r in body["rows"]:
        name = r["name"] if r["bot_id"] is None else f"{r['name']} #{r['bot_id']}"
        if r["provisional"]:
            name += " (prov.)"
        state = r["status"]
        if r["status"] == "paused":
            state = f"paused by {'its owner' if r['paused_by'] == 'owner' else 'the ladder'}: {r['paused_reason']}"
        table.add_row(
            str(r["rank"]),
            name,
            r["owner"] or "-",
            f"{r['mu']:.2f}",
            f"{r['sigma']:.2f}",
            f"{r['conservative']:.2f}",
            str(r["sets"]),
            _bool(r["ahead"], "yes", "no"),
            "house" if r["house_bot"] else _bool(r["online"], "online", "offline", "?"),
            state,
        )
    return table


def sets_table(rows: list[dict], title: str):
    """``GET /ladders/{id}/sets`` for a rich console: set (match id), status, rating, seats with
    their scores, places, faults, finished."""
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for col in ("set", "status", "rating", "seats", "places", "faults", "finished"):
        table.add_column(col, justify="right" if col in ("set", "faults") else "left")
    for s in rows:
        scores = s.get("scores")
        seats = " vs ".join(f"{name} {scores[i]:+g}" if scores else name for i, name in enumerate(s["names"]))
        table.add_row(
            str(s["match_id"]),
            s["status"],
            s["rating"] + (" (adjusted)" if s.get("adjusted") else ""),
            seats,
            "/".join(str(p) for p in s["placement"]) if s.get("placement") else "-",
            str(sum(s["faults"])) if s.get("faults") else "0",
            (s.get("finished_at") or "-").replace("T", " ")[:16],
        )
    return table


def official_tables(body: dict, names: dict[int, str]):
    """``GET /ladders/{id}/official`` for a rich console: the batch fit's table (strength with
    its 95% interval) and the significance matrix of its top (``*``: significant at 95%)."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if not body["table"]:
        return Text(
            "not fitted yet: the official table is refitted every ARENA_LADDER_FIT_S seconds once sets are rated"
        )
    table = Table(
        title=f"official table ({body['sets']} pairwise results, computed {(body['computed_at'] or '-')[:16]})",
        caption="Bradley-Terry maximum likelihood over every rated set; strength: log-odds, mean 0",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for col in ("#", "entrant", "strength", "95% interval", "results"):
        table.add_column(col, justify="left" if col == "entrant" else "right")
    rank = {}
    for r in body["table"]:
        rank[r["entry_id"]] = r["rank"]
        lo, hi = r["strength"] - 1.96 * r["se"], r["strength"] + 1.96 * r["se"]
        table.add_row(
            str(r["rank"]),
            names.get(r["entry_id"], f"entry {r['entry_id']}"),
            f"{r['strength']:+.2f}",
            f"[{lo:+.2f}, {hi:+.2f}]",
            str(r["sets"]),
        )
    m = body["matrix"]
    matrix = Table(
        title="significance matrix: z of row minus column, * significant at 95%",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    matrix.add_column("", justify="left")
    for e in m["entries"]:
        matrix.add_column(str(rank.get(e, "?")), justify="right")
    for i, e in enumerate(m["entries"]):
        cells = [
            "" if i == j else f"{round(m['z'][i][j], 1) + 0.0:+.1f}" + ("*" if m["significant"][i][j] else " ")
            for j in range(len(m["entries"]))
        ]
        matrix.add_row(f"{rank.get(e, '?')} {names.get(e, f'entry {e}')}", *cells)
    return Group(table, matrix)


def _entry_line(e: dict) -> str:
    text = f"bot {e['bot_id']} in ladder {e['ladder_id']}: {e['status']}"
    if e["status"] == "paused":
        text += f" (by {e['paused_by']}: {e['paused_reason']}, since {e['paused_at']})"
    return text + f"; mu {e['mu']:.2f} sigma {e['sigma']:.2f}, {e['sets']} rated sets"


@click.group("ladder")
def ladder() -> None:
    """Ladders that never close: list, show (the live table), create (organizers), enter,
    pause, resume, withdraw your bot, sets, official (the batch-fit table)."""


@ladder.command("list")
@api_options
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def ladder_list(api_url: str, token: str | None, as_json: bool) -> None:
    """The ladders you may read: id, name, rule set, open or private, status, last tick (open
    ladders need no token)."""
    with api_client(api_url, token, public_read=True) as client:
        found = call(client.ladders)
    if as_json:
        echo_json(found)
        return
    for ld in found:
        click.echo(ladder_line(ld))


@ladder.command("show")
@api_options
@click.argument("ladder_id", type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def ladder_show(api_url: str, token: str | None, ladder_id: int, as_json: bool) -> None:
    """The live table of a ladder: rank, bot, owner, μ, σ, μ−3σ, sets, ahead of the next at
    95%, online, paused and why."""
    with api_client(api_url, token, public_read=True) as client:
        body = call(client.ladder, ladder_id)
    if as_json:
        echo_json(body)
        return
    table_console().print(live_table(body))


@ladder.command("create")
@api_options
@click.option("--ruleset", "-r", type=click.Choice(list(engine.RULESETS)), required=True)
@click.option("--name", required=True, help="The ladder's name.")
@click.option("--open", "open_ladder", is_flag=True, help="The rule set's one open ladder (any ready bot; public).")
@click.option(
    "--member",
    "members",
    type=click.IntRange(min=1),
    multiple=True,
    help="Account id of a member of a private ladder (repeat).",
)
@click.option("--description", default="", help="What the ladder is for.")
@click.option(
    "--options", "options_json", default=None, help="Rule-set options as JSON, e.g. '{\"target_score\": 50}'."
)
@click.option(
    "--config",
    "config_json",
    default=None,
    help="Matchmaking and health knobs as JSON, e.g. '{\"placement_sets\": 6}' (docs/ladder.md).",
)
@click.option("--time-bank", type=float, default=60.0, show_default=True, help="TIME-1 initial bank, seconds.")
@click.option("--increment", type=float, default=10.0, show_default=True, help="Added per action, seconds.")
@click.option("--cap", type=float, default=None, help="Largest bank, seconds (default: the time bank).")
@click.option("--max-faults", type=click.IntRange(min=1), default=3, show_default=True, help="FAULT-3 limit per set.")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def ladder_create(
    api_url: str,
    token: str | None,
    ruleset: str,
    name: str,
    open_ladder: bool,
    members: tuple[int, ...],
    description: str,
    options_json: str | None,
    config_json: str | None,
    time_bank: float,
    increment: float,
    cap: float | None,
    max_faults: int,
    as_json: bool,
) -> None:
    """Create a ladder (organizers): open (--open, one per rule set) or private (--member).

    Prints the bare ladder id on stdout (``id=$(arena ladder create ...)``) and a summary on
    stderr; with --json, the API's JSON answer on stdout instead.
    """
    if open_ladder and members:
        raise click.UsageError("an open ladder has no members: give --open or --member, not both")
    try:
        config = parse_options_json(config_json)
    except click.BadParameter as exc:
        raise click.BadParameter(exc.message, param_hint="--config") from None
    body: dict[str, Any] = {
        "name": name,
        "ruleset": ruleset,
        "open": open_ladder,
        "members": list(members),
        "description": description,
        "options": parse_options_json(options_json),
        "config": config,
        "max_faults": max_faults,
        "time_rules": {"initial": time_bank, "increment": increment, "cap": time_bank if cap is None else cap},
    }
    with api_client(api_url, token) as client:
        ld = call(client.create_ladder, **body)
    if as_json:
        echo_json(ld)
        return
    click.echo(f"ladder {ld['id']} {ld['name']!r}: {ld['ruleset']}, {'open' if ld['open'] else 'private'}", err=True)
    click.echo(ld["id"])


@ladder.command("enter")
@api_options
@click.argument("ladder_id", type=click.IntRange(min=1))
@click.option("--bot", "bot_id", type=click.IntRange(min=1), required=True, help="Your ready bot's id.")
@click.option(
    "--max-concurrent", type=click.IntRange(min=1), default=1, show_default=True, help="Most sets of the bot at once."
)
@click.option(
    "--max-sets-per-hour", type=click.IntRange(min=1), default=30, show_default=True, help="Most sets of it an hour."
)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def ladder_enter(
    api_url: str,
    token: str | None,
    ladder_id: int,
    bot_id: int,
    max_concurrent: int,
    max_sets_per_hour: int,
    as_json: bool,
) -> None:
    """Enter your ready bot in a ladder (a withdrawn bot comes back with its rating). The entry
    on stdout (one line; --json: the API's answer)."""
    with api_client(api_url, token) as client:
        e = call(
            client.enter_ladder, ladder_id, bot_id, max_concurrent=max_concurrent, max_sets_per_hour=max_sets_per_hour
        )
    click.echo(json.dumps(e, indent=2) if as_json else _entry_line(e))


def _entry_command(action: str, summary: str) -> click.Command:
    @api_options
    @click.argument("ladder_id", type=click.IntRange(min=1))
    @click.option("--bot", "bot_id", type=click.IntRange(min=1), required=True, help="Your bot's id.")
    @click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
    def command(api_url: str, token: str | None, ladder_id: int, bot_id: int, as_json: bool) -> None:
        with api_client(api_url, token) as client:
            e = call(client.ladder_entry, ladder_id, bot_id, action)
        click.echo(json.dumps(e, indent=2) if as_json else _entry_line(e))

    command.__doc__ = summary
    return ladder.command(action)(command)


ladder_pause = _entry_command("pause", "Pause your bot's entry: never seated until resumed.")
ladder_resume = _entry_command(
    "resume", "Resume a paused entry (one paused by the ladder comes back by itself after a passing check)."
)
ladder_withdraw = _entry_command("withdraw", "Withdraw your bot from the ladder (its rating and history stay).")


@ladder.command("sets")
@api_options
@click.argument("ladder_id", type=click.IntRange(min=1))
@click.option("--playing", is_flag=True, help="The sets queued or playing now (default: the sets done).")
@click.option("--bot", "bot_id", type=click.IntRange(min=1), default=None, help="One bot's sets.")
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True, help="How many, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def ladder_sets(
    api_url: str, token: str | None, ladder_id: int, playing: bool, bot_id: int | None, limit: int, as_json: bool
) -> None:
    """A ladder's sets, newest first: playing now (--playing) or done, with their scores,
    places and rating. A set's log (GET /api/v1/matches/ID/log) verifies with its seed and
    salt once stored (--json shows them)."""
    with api_client(api_url, token, public_read=True) as client:
        rows = call(client.ladder_sets, ladder_id, playing=playing, bot_id=bot_id, limit=limit)
    if as_json:
        echo_json(rows)
        return
    what = "playing now" if playing else "done"
    table_console().print(
        sets_table(rows, f"ladder {ladder_id}: sets {what}" + (f" of bot {bot_id}" if bot_id else ""))
    )


@ladder.command("official")
@api_options
@click.argument("ladder_id", type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def ladder_official(api_url: str, token: str | None, ladder_id: int, as_json: bool) -> None:
    """The official table: the last batch fit over every rated set (Bradley-Terry), with the
    significance matrix of its top."""
    with api_client(api_url, token, public_read=True) as client:
        body = call(client.ladder_official, ladder_id)
        names = {} if as_json else {r["entry_id"]: r["name"] for r in call(client.ladder, ladder_id)["rows"]}
    if as_json:
        echo_json(body)
        return
    table_console().print(official_tables(body, names))
