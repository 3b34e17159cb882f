"""Issue 42, point 2, through the API (SQLite and PostgreSQL; no worker): a start tells the
organizer which entrants are offline and offers to wait or to start anyway.

Bots are real HTTP servers on 127.0.0.1 (tests.fakes.FakeBot); one is closed to be offline
(its health check finds no server). The broker is unreachable here, so the tests stop where
work would be sent (a 503 says so); the waits played by real workers are
tests/worker/test_entrants_wait.py's."""

from __future__ import annotations

import pytest

from arena.db.models import Tournament
from arena.roll_call import HEALTH_FAILED, Entrant, roll_call
from tests.api.conftest import register_checked_bot, tiny_bot_server


@pytest.fixture
def field(client, accounts):
    """An organizer, a contestant with three bots on servers of their own; ``servers[i]`` serves bot i."""
    org = accounts.organizer("olga")
    ann = accounts.contestant("ann")
    servers = [tiny_bot_server() for _ in range(3)]
    bots = [register_checked_bot(client, ann, s.url + "/", ["million_doubt"], f"b{i}") for i, s in enumerate(servers)]
    r = client.post(
        "/api/v1/tournaments",
        json={"ruleset": "million_doubt", "participants": bots, "separate_owners": False},
        headers=org,
    )
    assert r.status_code == 201, r.json
    yield {"org": org, "ann": ann, "bots": bots, "servers": servers, "tid": r.json["id"]}
    for s in servers:
        s.close()


def test_a_start_with_an_offline_entrant_says_who_and_changes_nothing(client, field, sessionmaker):
    field["servers"][1].close()
    r = client.post(f"/api/v1/tournaments/{field['tid']}/start", headers=field["org"])
    assert r.status_code == 409, r.json
    offline = r.json["details"]["offline"]
    assert [(a["bot_id"], a["reason"]) for a in offline] == [(field["bots"][1], HEALTH_FAILED)]
    assert offline[0]["name"] == "b1" and offline[0]["detail"]  # the health check's error
    assert "if_offline=wait" in r.json["message"] and "if_offline=start" in r.json["message"]
    assert r.json["details"]["waiting_until"] is None
    t = client.get(f"/api/v1/tournaments/{field['tid']}", headers=field["org"]).json
    assert t["status"] == "created" and t["waiting_until"] is None
    with sessionmaker() as s:
        assert s.get(Tournament, field["tid"]).seed is None  # not started: no seed drawn


def test_start_anyway_keeps_the_roll_call(client, field):
    field["servers"][2].close()
    r = client.post(f"/api/v1/tournaments/{field['tid']}/start?if_offline=start", headers=field["org"])
    assert r.status_code == 503, r.json  # the broker is unreachable here: started, nothing sent
    t = client.get(f"/api/v1/tournaments/{field['tid']}", headers=field["org"]).json
    assert t["status"] == "running"
    assert [a["bot_id"] for a in t["roll_call"]["offline"]] == [field["bots"][2]]


def test_a_wait_keeps_the_tournament_created_until_its_deadline(client, field):
    field["servers"][0].close()
    r = client.post(f"/api/v1/tournaments/{field['tid']}/start?if_offline=wait&wait_s=120", headers=field["org"])
    assert r.status_code == 503 and "waits for its entrants" in r.json["message"]  # its first poll: no broker
    t = client.get(f"/api/v1/tournaments/{field['tid']}", headers=field["org"]).json
    assert t["status"] == "created" and t["waiting_until"] is not None
    assert [a["bot_id"] for a in t["roll_call"]["offline"]] == [field["bots"][0]]
    # asked again while it waits: the list, and when the wait ends
    again = client.post(f"/api/v1/tournaments/{field['tid']}/start", headers=field["org"])
    assert again.status_code == 409 and again.json["details"]["waiting_until"] is not None


@pytest.mark.parametrize(
    ("query", "field_name"),
    [("if_offline=later", "if_offline"), ("if_offline=wait&wait_s=0", "wait_s"), ("wait_s=99999", "wait_s")],
)
def test_bad_start_options_are_422_naming_the_field(client, field, query, field_name):
    r = client.post(f"/api/v1/tournaments/{field['tid']}/start?{query}", headers=field["org"])
    assert r.status_code == 422 and field_name in r.json["errors"]["query"], r.json


def test_only_organizers_start(client, field):
    r = client.post(f"/api/v1/tournaments/{field['tid']}/start?if_offline=start", headers=field["ann"])
    assert r.status_code == 403


def test_the_roll_call_checks_each_url_once_and_reports_in_order():
    """Two bots behind one URL are checked once; a bot that dials out is not reported without
    Redis (its presence cannot be read: the start itself needs the broker)."""
    up, down = tiny_bot_server(), tiny_bot_server()
    down.close()
    try:
        entrants = [
            Entrant(1, "a", 7, "http", up.url + "/"),
            Entrant(2, "b", 7, "http", down.url + "/"),
            Entrant(3, "c", 8, "http", up.url + "/"),
            Entrant(4, "d", 8, "connect", None),
        ]
        got = roll_call(entrants, client=None, allow_private=True)
        assert [(a.bot_id, a.reason) for a in got] == [(2, HEALTH_FAILED)]
        assert up.hits.count("/") == 1
        refused = roll_call(entrants[:1], client=None, allow_private=False)  # the URL policy holds
        assert refused and "policy" in refused[0].detail
    finally:
        up.close()
