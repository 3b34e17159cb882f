"""The ladders' REST API (docs/ladder.md): create (organizers), read (open ones by anyone,
private ones by their members only), enter, pause, resume, withdraw; a new version."""

from __future__ import annotations

import dataclasses
import random

import pytest

from arena.db.models import utcnow
from arena.inprocess import InProcessDispatcher
from arena.usecases import ladders
from tests.api.conftest import register_checked_bot

RS = "million_doubt"


@pytest.fixture
def open_ladder(client, accounts):
    org = accounts.organizer("org")
    r = client.post(
        "/api/v1/ladders",
        json={"name": "Open MD", "ruleset": RS, "open": True, "time_rules": {"initial": 5, "increment": 1, "cap": 5}},
        headers=org,
    )
    assert r.status_code == 201, r.json
    return r.json


def test_organizers_create_ladders_and_anyone_reads_an_open_one(client, accounts, open_ladder):
    assert open_ladder["open"] and open_ladder["status"] == "active" and open_ladder["config"]["placement_sets"] == 10
    ann = accounts.contestant("ann")
    r = client.post("/api/v1/ladders", json={"name": "x", "ruleset": RS}, headers=ann)
    assert r.status_code == 403
    again = client.post(
        "/api/v1/ladders", json={"name": "y", "ruleset": RS, "open": True}, headers=accounts.headers("org")
    )
    assert again.status_code == 409 and "open ladder" in again.json["message"]
    bad = client.post(
        "/api/v1/ladders", json={"name": "z", "ruleset": RS, "config": {"jitter": -1}}, headers=accounts.headers("org")
    )
    assert bad.status_code == 422 and "config.jitter" in bad.json["errors"]["json"]
    listed = client.get("/api/v1/ladders").json
    assert [ld["id"] for ld in listed] == [open_ladder["id"]]
    table = client.get(f"/api/v1/ladders/{open_ladder['id']}").json
    assert [r["name"] for r in table["rows"]] == ["house: heuristic", "house: greedy", "house: random"]
    assert all(r["online"] and not r["provisional"] for r in table["rows"])


def test_a_private_ladder_exists_for_its_members_only(client, accounts):
    org = accounts.organizer("org")
    accounts.contestant("ann")
    accounts.contestant("ben")
    r = client.post(
        "/api/v1/ladders",
        json={"name": "Class 2B", "ruleset": RS, "members": [accounts.ids["ann"]]},
        headers=org,
    )
    lid = r.json["id"]
    assert client.get(f"/api/v1/ladders/{lid}").status_code == 404
    assert client.get(f"/api/v1/ladders/{lid}", headers=accounts.headers("ben")).status_code == 404
    assert client.get(f"/api/v1/ladders/{lid}", headers=accounts.headers("ann")).status_code == 200
    assert [ld["id"] for ld in client.get("/api/v1/ladders", headers=accounts.headers("ben")).json] == []
    r = client.post(f"/api/v1/ladders/{lid}/members", json={"account_id": accounts.ids["ben"]}, headers=org)
    assert r.status_code == 204
    assert client.get(f"/api/v1/ladders/{lid}", headers=accounts.headers("ben")).status_code == 200


def test_enter_pause_resume_withdraw_and_the_entry_page(client, accounts, open_ladder, bot_server):
    lid = open_ladder["id"]
    ann = accounts.contestant("ann")
    bot = register_checked_bot(client, ann, bot_server.url + "/", [RS], "annbot")
    r = client.post(f"/api/v1/ladders/{lid}/entries", json={"bot_id": bot, "max_concurrent": 2}, headers=ann)
    assert r.status_code == 201, r.json
    assert r.json["status"] == "active" and r.json["max_concurrent"] == 2 and r.json["history"] == []
    ben = accounts.contestant("ben")
    assert client.post(f"/api/v1/ladders/{lid}/entries", json={"bot_id": bot}, headers=ben).status_code == 403
    assert client.post(f"/api/v1/ladders/{lid}/entries/{bot}/pause", headers=ben).status_code == 403
    r = client.post(f"/api/v1/ladders/{lid}/entries/{bot}/pause", headers=ann)
    assert r.json["status"] == "paused" and r.json["paused_by"] == "owner" and r.json["paused_at"]
    assert client.post(f"/api/v1/ladders/{lid}/entries/{bot}/pause", headers=ann).status_code == 409
    assert client.post(f"/api/v1/ladders/{lid}/entries/{bot}/resume", headers=ann).json["status"] == "active"
    public = client.get(f"/api/v1/ladders/{lid}/entries/{bot}")
    assert public.status_code == 200 and public.json["bot_id"] == bot
    row = next(r for r in client.get(f"/api/v1/ladders/{lid}").json["rows"] if r["bot_id"] == bot)
    assert row["provisional"] and row["online"] and row["owner"] == "ann"
    assert client.post(f"/api/v1/ladders/{lid}/entries/{bot}/withdraw", headers=ann).json["status"] == "withdrawn"
    assert all(r["bot_id"] != bot for r in client.get(f"/api/v1/ladders/{lid}").json["rows"])


def test_sets_show_their_seed_only_once_stored(client, accounts, open_ladder, bot_server, sessionmaker):
    lid = open_ladder["id"]
    for name in ("ann", "ben"):
        h = accounts.contestant(name)
        bot = register_checked_bot(client, h, bot_server.url + "/", [RS], name)
        assert client.post(f"/api/v1/ladders/{lid}/entries", json={"bot_id": bot}, headers=h).status_code == 201
    sent: list[int] = []
    ladders.tick(
        sessionmaker, sent.extend, tick_s=60, probe_s=300, online=lambda ids: set(), now=utcnow(), rng=random.Random(3)
    )
    playing = client.get(f"/api/v1/ladders/{lid}/sets?playing=true").json
    assert {s["match_id"] for s in playing} == set(sent) and all(s["seed"] is None for s in playing)
    one = sent[0]
    assert client.get(f"/api/v1/matches/{one}").json["seed"] is None  # anyone reads the set, not its seed
    assert client.get(f"/api/v1/matches/{one}/log").status_code == 403  # no log before it is stored
    settings = dataclasses.replace(client.application.extensions["arena"]["settings"], celery_eager=True)
    InProcessDispatcher(settings).send_matches(sent)
    done = client.get(f"/api/v1/ladders/{lid}/sets").json
    assert {s["match_id"] for s in done} == set(sent)
    assert all(s["seed"] is not None and s["salt"] and s["rating"] == "rated" for s in done)
    assert client.get(f"/api/v1/matches/{one}").json["seed"] == next(s["seed"] for s in done if s["match_id"] == one)
    log = client.get(f"/api/v1/matches/{one}/log")
    assert log.status_code == 200 and log.json["fairness"]["scheme"] == "set"
    assert client.get(f"/api/v1/ladders/{lid}/sets?playing=true").json == []
    collusion = client.get(f"/api/v1/ladders/{lid}/collusion", headers=accounts.headers("ann"))
    assert collusion.status_code == 403
    assert client.get(f"/api/v1/ladders/{lid}/collusion", headers=accounts.headers("org")).json == {
        "pairs": [],
        "recall": [],
    }


def test_a_new_version_is_one_of_the_owners_bots(client, accounts, bot_server):
    ann = accounts.contestant("ann")
    ben = accounts.contestant("ben")
    parent = register_checked_bot(client, ann, bot_server.url + "/", [RS], "v1")
    r = client.post(
        "/api/v1/bots",
        json={"name": "v2", "url": bot_server.url + "/", "rulesets": [RS], "parent_id": parent},
        headers=ann,
    )
    assert r.status_code == 201 and r.json["parent_id"] == parent
    r = client.post(
        "/api/v1/bots",
        json={"name": "x", "url": bot_server.url + "/", "rulesets": [RS], "parent_id": parent},
        headers=ben,
    )
    assert r.status_code == 422 and "parent_id" in r.json["errors"]["json"]


def test_a_ladders_tournament_is_not_a_tournament_to_its_readers(client, accounts, open_ladder):
    """The ladder's sets are read through the ladder: its tournament is not listed, not read,
    not acted on as a tournament (a cancel would end the ladder's sets)."""
    tid = open_ladder["tournament_id"]
    org = accounts.headers("org")
    assert all(t["id"] != tid for t in client.get("/api/v1/tournaments", headers=org).json["items"])
    assert client.get(f"/api/v1/tournaments/{tid}", headers=org).status_code == 404
    assert client.post(f"/api/v1/tournaments/{tid}/cancel", headers=org).status_code == 404
    page = client.get(f"/ui/tournaments/{tid}")
    assert page.status_code == 303 and page.headers["Location"].endswith(f"/ui/ladders/{open_ladder['id']}")
