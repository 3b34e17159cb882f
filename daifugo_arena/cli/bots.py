"""``arena bots register|list|show|check`` and ``arena logs download``: a contestant's
commands, talking to a running API over HTTP (:mod:`daifugo_arena.cli.remote`). ``arena bots`` is
:mod:`daifugo_arena.cli.play`'s group (``serve``, ``connect``) with these added: a bot registered with
``--url`` (the arena calls it) or ``--connect`` (it dials out to the arena's gateway; no URL),
listed with its transport and, for a bot that connects, whether it is connected, how many
connections and since when. ``arena logs`` is :mod:`daifugo_arena.cli.play`'s (``verify``) with
``download`` added.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

import engine
from daifugo_arena.cli.client import download_logs
from daifugo_arena.cli.display import progress_bar
from daifugo_arena.cli.play import bots as play_bots
from daifugo_arena.cli.play import logs as play_logs
from daifugo_arena.cli.remote import api_client, api_options, call


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
        t = call(client.tournament, tournament_id)
        with progress_bar(console) as bar:
            task = bar.add_task("logs", total=t["progress"]["finished"] or None)
            paths = call(download_logs, client, tournament_id, out_dir, on_log=lambda _mid, _p: bar.advance(task))
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
        bot = call(client.register_bot, name, url, list(rulesets), transport="connect" if connect else "http")
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
        page = call(client.bots)
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
        b = call(client.bot, bot_id)
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
        b = call(client.check_bot, bot_id, wait_s=wait_s)
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
