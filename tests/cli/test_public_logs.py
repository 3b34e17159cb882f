"""A tournament's JSON Lines download verifies on its own (issue 29, B1), and the public reads
of the CLI need no token where the pages need none (B7).

A real API server on 127.0.0.1 (SQLite, matches played in-process as ``arena demo`` plays
them) with two sample bots served over HTTP plays a public and a private Million Doubt
tournament. ``arena logs verify`` takes the download of the pages (``logs.jsonl``) and of the
API as they come: it replays every log and checks the seed commitment from the file's first
line; a file whose commitment was changed fails. Without a token, ``arena logs download``,
``tournament status`` and ``standings`` read the public tournament and are refused the
private one, with a line saying how to give a token.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from arena.accounts import create_account
from arena.db.session import make_sessionmaker
from bots_sdk.samples import SAMPLE_BOTS
from bots_sdk.server import start as start_bot
from daifugo_arena.cli import main
from daifugo_arena.cli.client import ApiClient
from daifugo_arena.cli.servers import WsgiServer
from tests.helpers import eager_app, mark_bot_checked

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    data = tmp_path_factory.mktemp("public-logs")
    app, engine = eager_app(data, rate_limits=False)
    sm = make_sessionmaker(engine)
    server = WsgiServer(app)
    with sm() as s:
        _, organizer = create_account(s, "olga", "organizer")
        _, alice = create_account(s, "alice")
    bots, ids = [], []
    with ApiClient(server.url, alice) as contestant:
        for i, kind in enumerate(("greedy", "heuristic")):
            served = start_bot(SAMPLE_BOTS[kind](seed=i))  # checks no signature: its secret does not matter
            bots.append(served)
            bot = contestant.register_bot(f"{kind}-{i}", served.url, ["million_doubt"])
            assert mark_bot_checked(sm, bot["id"]) == "ready"
            ids.append(bot["id"])
    tournaments = {}
    with ApiClient(server.url, organizer, timeout_s=None) as org:
        for name, public in (("public", True), ("private", False)):
            t = org.create_tournament(
                name=name,
                ruleset="million_doubt",
                participants=ids,
                games_per_pairing=2,
                public_when_finished=public,
                separate_owners=False,  # the two bots are one contestant's
            )
            org.start_tournament(t["id"], timeout_s=None)  # eager: played within the request
            assert org.tournament(t["id"])["status"] == "finished"
            tournaments[name] = t["id"]
    yield {"url": server.url, "organizer": organizer, "tournaments": tournaments, "data": data}
    for b in bots:
        b.close()
    server.close()
    engine.dispose()


def _verify(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    return subprocess.run(
        [sys.executable, "-m", "daifugo_arena.cli", "logs", "verify", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )


def test_the_pages_download_verifies_alone_seed_commitment_included(arena, tmp_path):
    tid = arena["tournaments"]["public"]
    page = httpx.get(f"{arena['url']}/ui/tournaments/{tid}/logs.jsonl")  # anyone: the tournament is public
    assert page.status_code == 200
    assert page.headers["content-disposition"] == f'attachment; filename="tournament-{tid}-logs.jsonl"'
    path = tmp_path / f"tournament-{tid}-logs.jsonl"
    path.write_bytes(page.content)
    head = json.loads(page.content.splitlines()[0])["tournament"]
    assert head["id"] == tid and head["seed_revealed"] and head["seed"] is not None and len(head["salt"]) == 64
    done = _verify(str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"deals checked against the revealed seed {head['seed']} (commitment {head['commitment']})"
    assert lines[-1] == "1 verified, 0 failed"  # two bots: one match
    # the API's download is the same file
    api = httpx.get(f"{arena['url']}/api/v1/tournaments/{tid}/logs")
    assert api.status_code == 200 and api.content == page.content
    # a changed commitment (or seed) in the tournament line is caught
    forged = dict(head, commitment="0" * 64)
    bad = tmp_path / "forged.jsonl"
    bad.write_bytes(b"\n".join([json.dumps({"tournament": forged}).encode(), *page.content.splitlines()[1:]]) + b"\n")
    done = _verify(str(bad))
    assert done.returncode == 1 and "0 verified, 1 failed" in done.stdout
    assert "commitment" in done.stdout.lower()


def test_a_download_without_its_tournament_line_still_replays(arena, tmp_path):
    tid = arena["tournaments"]["public"]
    body = httpx.get(f"{arena['url']}/ui/tournaments/{tid}/logs.jsonl").content
    old = tmp_path / "old.jsonl"  # as downloads were before the tournament line
    old.write_bytes(b"\n".join(body.splitlines()[1:]) + b"\n")
    done = _verify(str(old))
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "1 verified, 0 failed"
    assert "deals checked" not in done.stdout  # no seed to check against: replay only
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(body + b"{not json\n")
    done = _verify(str(broken))
    assert done.returncode == 1 and "line 3: not JSON" in done.stdout


def test_public_reads_need_no_token(arena, tmp_path):
    tid, private = arena["tournaments"]["public"], arena["tournaments"]["private"]
    env = {"ARENA_API_URL": arena["url"]}  # and no ARENA_TOKEN
    out = tmp_path / "logs"
    done = CliRunner().invoke(main, ["logs", "download", str(tid), "--out", str(out)], env=env)
    assert done.exit_code == 0, done.output
    assert len(list(out.glob("match-*.json.gz"))) == 1 and (out / "tournament.json").is_file()
    verify = _verify(str(out))
    assert verify.returncode == 0 and "deals checked against the revealed seed" in verify.stdout
    status = CliRunner().invoke(main, ["tournament", "status", str(tid)], env=env)
    assert status.exit_code == 0 and "finished" in status.stdout
    standings = CliRunner().invoke(main, ["tournament", "standings", str(tid)], env=env)
    assert standings.exit_code == 0 and "greedy" not in standings.stderr
    # the bots by name, as the public page shows them, though no token lists bots
    assert "greedy-0" in standings.stdout and "heuristic-1" in standings.stdout
    assert "bot 1" not in standings.stdout and "bot 2" not in standings.stdout
    # a tournament that is not public: the API's 401, and how to give a token
    refused = CliRunner().invoke(main, ["logs", "download", str(private), "--out", str(tmp_path / "p")], env=env)
    assert refused.exit_code == 1
    assert "HTTP 401" in refused.output and "(pass --token or set ARENA_TOKEN)" in refused.output
    with_token = CliRunner().invoke(
        main,
        ["logs", "download", str(private), "--out", str(tmp_path / "p")],
        env={**env, "ARENA_TOKEN": arena["organizer"]},
    )
    assert with_token.exit_code == 0, with_token.output
    # writing still needs a token
    start = CliRunner().invoke(main, ["tournament", "start", str(tid)], env=env)
    assert start.exit_code == 2 and "no token" in start.output
