"""The house bot of a tournament (``house_bot``): the organizer picks the sample bot its house
seats play; the API validates, stores and shows it, and the worker seats that bot."""

from __future__ import annotations

import pytest

from arena.accounts import create_account
from arena.db.models import Tournament
from arena.schedule import DEFAULT_HOUSE_BOT, HOUSE_BOTS
from arena.usecases import InvalidField
from arena.usecases.tournaments import create_tournament
from bots_sdk.samples import SAMPLE_BOTS
from tests.api.conftest import eager_client, register_checked_bot


@pytest.fixture
def field(client, accounts, bot_server):
    """An organizer and one contestant with one ready bot of every rule set."""
    org = accounts.organizer("org")
    ann = accounts.contestant("ann")
    rs = ["million_doubt", "trump_millionaire", "jdf"]
    bot = register_checked_bot(client, ann, bot_server.url + "/", rs, "a1")
    return {"org": org, "ann": ann, "bot": bot}


def _create(client, field, **overrides):
    body = {"ruleset": "million_doubt", "participants": [field["bot"]], "fill_with_house_bots": True, "seed": 7}
    body.update(overrides)
    return client.post("/api/v1/tournaments", json=body, headers=field["org"])


def test_the_house_bot_names_are_the_sample_bots():
    assert HOUSE_BOTS == tuple(SAMPLE_BOTS)
    assert DEFAULT_HOUSE_BOT == "heuristic" and "search" in HOUSE_BOTS


def test_house_bot_is_stored_and_read_back(client, field, sessionmaker):
    r = _create(client, field, house_bot="search")
    assert r.status_code == 201, r.json
    assert r.json["house_bot"] == "search"
    got = client.get(f"/api/v1/tournaments/{r.json['id']}", headers=field["ann"])
    assert got.status_code == 200 and got.json["house_bot"] == "search"
    listed = client.get("/api/v1/tournaments", headers=field["ann"]).json["items"]
    assert [t["house_bot"] for t in listed] == ["search"]
    default = _create(client, field)
    assert default.status_code == 201 and default.json["house_bot"] == "heuristic"
    # accepted and stored without house seats too (a 2-seat field needs none)
    other = register_checked_bot(client, field["ann"], "http://127.0.0.1:9/", ["million_doubt"], "a2")
    plain = _create(client, field, participants=[field["bot"], other], fill_with_house_bots=False, house_bot="random")
    assert plain.status_code == 201 and plain.json["house_bot"] == "random"
    with sessionmaker() as s:
        assert s.get(Tournament, plain.json["id"]).house_bot == "random"


@pytest.mark.parametrize("value", ["alphazero", "", "Search", 1, None])
def test_an_unknown_house_bot_is_a_422_naming_the_field(client, field, value):
    r = _create(client, field, house_bot=value)
    assert r.status_code == 422, r.json
    assert list(r.json["errors"]["json"]) == ["house_bot"]
    assert "house_bot" in r.json["message"]


def test_the_use_case_refuses_an_unknown_house_bot(sessionmaker, field):
    with sessionmaker() as s:
        organizer, _ = create_account(s, "org2", "organizer")
        with pytest.raises(InvalidField) as refused:
            create_tournament(
                s,
                organizer,
                ruleset="million_doubt",
                participants=[field["bot"]],
                options={},
                time_rules={"initial": 60.0, "increment": 10.0, "cap": 60.0},
                games_per_pairing=2,
                max_faults=3,
                fill_with_house_bots=True,
                public_when_finished=True,
                house_bot="alphazero",
            )
    assert refused.value.field == "house_bot" and "search" in str(refused.value)


def test_a_search_house_seat_plays_its_matches_in_eager_mode(client, field):
    """Million Doubt, the contestant's bot against one house seat of ``search`` (100 ms a
    decision within the default 60 s bank): the match is played in-process and stored, the
    log names the house seat's bot, and neither seat faulted."""
    t = _create(client, field, house_bot="search", games_per_pairing=2).json
    started = eager_client(client).post(f"/api/v1/tournaments/{t['id']}/start", headers=field["org"])
    assert started.status_code == 202, started.json
    assert started.json["status"] == "finished", started.json
    (m,) = client.get(f"/api/v1/tournaments/{t['id']}/matches", headers=field["org"]).json["items"]
    assert m["status"] == "finished" and m["result"]["faults"] == [0, 0]
    house_seat = next(s["seat"] for s in m["seats"] if s["bot_id"] is None)
    assert m["seats"][house_seat]["house_bot"] == "house-1"
    log = client.get(f"/api/v1/matches/{m['id']}/log", headers=field["org"]).json
    names = {p["index"]: (p["name"], p["kind"]) for p in log["players"]}
    assert names[house_seat] == ("house-1 (search)", "local")
    assert log["faults"] == []
    answered = [ex for g in log["games"] for ex in g["exchanges"] if ex["player"] == house_seat]
    assert len(log["games"]) == 2 and answered
    # eager mode computed the pars after the match: in the result (per seat) and in the log
    assert m["result"]["par_status"] == "done" and log["par"]["rollouts"] == 16
    assert [len(g["par"]) for g in m["result"]["games"]] == [2, 2]
    assert [abs(sum(g["par"])) < 1e-3 for g in m["result"]["games"]] == [True, True]
    assert [g["par"] for g in m["result"]["games"]][1] == log["games"][1]["par"][::-1]  # seats swapped
    rows = client.get(f"/api/v1/tournaments/{t['id']}/standings", headers=field["org"]).json["rows"]
    assert sorted(str(r["bot_id"] or r["house_bot"]) for r in rows) == sorted([str(field["bot"]), "house-1"])
    assert [r["bot_name"] for r in rows if r["bot_id"] is None] == [None]  # a house seat has no bot name
    # the pages name the house seat's bot (finished and public: anyone reads them)
    page = client.get(f"/ui/tournaments/{t['id']}").get_data(as_text=True)
    assert "house-1 (house: search)" in page
    match_page = client.get(f"/ui/matches/{m['id']}").get_data(as_text=True)
    assert "house-1 (house: search)" in match_page
