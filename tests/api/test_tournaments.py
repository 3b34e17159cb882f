"""Tournaments, matches, logs, standings and leaderboard through the API.

Results are written with arena.lifecycle.store_result, the function the worker uses.
Starting enqueues into a real Redis (the ``redis_url`` fixture); tasks are counted there.
"""

from __future__ import annotations

import json

import pytest
import redis as redis_lib
from sqlalchemy import select

from arena.db.models import Rating, RatingHistory
from arena.fairness import commitment, match_seed
from arena.lifecycle import store_result
from arena.queue import RUN_MATCH_TASK
from arena.ratings import rebuild_ratings
from tests.api.conftest import register_checked_bot


@pytest.fixture
def league(client, accounts, bot_server):
    """An organizer, two contestants with 2 ready bots each (all rule sets), checked through the
    models (no check game: test_participants_must_be_checked_and_play_the_ruleset runs a real one)."""
    org = accounts.organizer("org")
    a = accounts.contestant("ann")
    b = accounts.contestant("ben")
    rs = ["million_doubt", "trump_millionaire", "jdf"]
    bots = {
        "a1": register_checked_bot(client, a, bot_server.url + "/", rs, "a1"),
        "a2": register_checked_bot(client, a, bot_server.url + "/", rs, "a2"),
        "b1": register_checked_bot(client, b, bot_server.url + "/", rs, "b1"),
        "b2": register_checked_bot(client, b, bot_server.url + "/", rs, "b2"),
    }
    return {"org": org, "a": a, "b": b, "bots": bots}


def _create(client, league, **overrides):
    body = {
        "name": "cup",
        "ruleset": "million_doubt",
        "participants": list(league["bots"].values()),
        "separate_owners": False,
        "games_per_pairing": 2,
    }
    body.update(overrides)
    return client.post("/api/v1/tournaments", json=body, headers=league["org"])


def test_create_and_read_tournament(client, league):
    r = _create(
        client, league, seed=7, options={"burst_score": 13}, time_rules={"initial": 1.0, "increment": 0.5, "cap": 2.0}
    )
    assert r.status_code == 201, r.json
    t = r.json
    assert t["status"] == "created" and t["progress"] == {"finished": 0, "total": 0, "queued": 0}
    assert t["options"] == {"burst_score": 13}
    assert t["time_rules"] == {"initial": 1.0, "increment": 0.5, "cap": 2.0}
    assert t["max_faults"] == 3 and t["seed"] is None and t["seed_chosen"]  # the organizer's seed: shown later
    assert t["until_settled"] is None and t["rounds"] == 1 and t["stop_reason"] is None and t["settle"] is None
    assert sorted(t["participants"]) == sorted(league["bots"].values())
    got = client.get(f"/api/v1/tournaments/{t['id']}", headers=league["a"])
    assert got.status_code == 200 and got.json["id"] == t["id"]
    assert client.get("/api/v1/tournaments", headers=league["b"]).json["total"] == 1
    default = _create(client, league).json
    assert default["seed"] is None and not default["seed_chosen"]  # drawn when it starts
    assert default["time_rules"] == {"initial": 60.0, "increment": 10.0, "cap": 60.0}


def test_create_requires_organizer(client, league):
    assert client.post("/api/v1/tournaments", json={}).status_code == 401
    r = client.post("/api/v1/tournaments", json={"ruleset": "jdf", "participants": [1]}, headers=league["a"])
    assert r.status_code == 403 and r.json["message"] == "organizer role required"


def test_bounds_at_the_limit_are_accepted(client, league):
    for ruleset, options in (("jdf", {"sets": 8, "games_per_set": 100}), ("trump_millionaire", {"target_score": 333})):
        r = _create(client, league, ruleset=ruleset, options=options, fill_with_house_bots=True)
        assert r.status_code in (201, 422), r.json
        assert "options" not in (r.json.get("errors") or {}).get("json", {}), r.json


@pytest.mark.parametrize(
    "overrides, field, words",
    [
        ({"options": {"five_skip": True}}, "options", "five_skip"),
        ({"ruleset": "jdf", "options": {"fiveskip": True}}, "options", "fiveskip"),
        ({"ruleset": "jdf", "options": {"sets": "3"}}, "options", "sets"),
        ({"games_per_pairing": 1001}, "games_per_pairing", ""),
        ({"games_per_pairing": 1.5}, "games_per_pairing", ""),
        ({"games_per_pairing": 0}, "games_per_pairing", ""),
        ({"participants": [999999]}, "participants", "999999"),
        ({"participants": []}, "participants", ""),
        ({"participants": [1.5]}, "participants", ""),
        ({"ruleset": "poker"}, "ruleset", ""),
        ({"time_rules": {"initial": 10, "cap": 5}}, "time_rules", "cap"),
        ({"time_rules": {"initial": -1}}, "time_rules", ""),
        ({"max_faults": 0}, "max_faults", ""),
        ({"colour": "red"}, "colour", "Unknown"),
        # options every match of which would exceed the runner's decision limit (issue 13)
        ({"ruleset": "jdf", "options": {"sets": 100, "games_per_set": 100}}, "options.games_per_set", "800"),
        ({"ruleset": "jdf", "options": {"sets": 9, "games_per_set": 100}}, "options.games_per_set", "900"),
        ({"ruleset": "trump_millionaire", "options": {"target_score": 10**18}}, "options.target_score", "at most"),
        ({"ruleset": "trump_millionaire", "options": {"target_score": 334}}, "options.target_score", "333"),
        ({"ruleset": "trump_millionaire", "options": {"rate_choices": [1, 10**9]}}, "options.rate_choices", ""),
        ({"options": {"burst_score": 10**18}}, "options.burst_score", "1000000"),
    ],
)
def test_create_errors_name_the_field(client, league, overrides, field, words):
    r = _create(client, league, **overrides)
    assert r.status_code == 422, r.json
    assert field in r.json["errors"]["json"]
    assert words in r.json["message"]


def test_participants_must_be_checked_and_play_the_ruleset(client, league, bot_server, accounts):
    h = league["a"]
    unchecked = client.post(
        "/api/v1/bots", json={"name": "u", "url": bot_server.url + "/", "rulesets": ["million_doubt"]}, headers=h
    ).json["id"]
    r = _create(client, league, participants=[league["bots"]["a1"], unchecked])
    assert r.status_code == 422 and f"bot {unchecked} has not passed" in r.json["message"]
    md_only = register_checked_bot(client, h, bot_server.url + "/", ["million_doubt"], "md")
    r = _create(client, league, ruleset="jdf", participants=[md_only] + list(league["bots"].values())[:3])
    assert r.status_code == 422 and "does not play jdf" in r.json["message"]
    r = _create(client, league, ruleset="jdf", participants=list(league["bots"].values())[:3])
    assert r.status_code == 422 and "at least 4" in r.json["message"]
    r = _create(
        client,
        league,
        ruleset="jdf",
        participants=list(league["bots"].values())[:3],
        fill_with_house_bots=True,
        games_per_pairing=1,
    )
    assert r.status_code == 201


def _queue_length(redis_url: str) -> int:
    return redis_lib.Redis.from_url(redis_url).llen("arena")


def test_start_builds_schedule_and_enqueues(make_app, league, redis_url):
    client = make_app(broker_url=redis_url).test_client()
    redis_lib.Redis.from_url(redis_url).delete("arena")
    t = _create(client, league).json
    r = client.post(f"/api/v1/tournaments/{t['id']}/start", headers=league["org"])
    assert r.status_code == 202, r.json
    assert r.json["status"] == "running" and r.json["progress"] == {"finished": 0, "total": 6, "queued": 6}
    assert _queue_length(redis_url) == 6
    bodies = [json.loads(m) for m in redis_lib.Redis.from_url(redis_url).lrange("arena", 0, -1)]
    assert {b["headers"]["task"] for b in bodies} == {RUN_MATCH_TASK}
    matches = client.get(f"/api/v1/tournaments/{t['id']}/matches?per_page=100", headers=league["org"]).json
    assert matches["total"] == 6
    pairs = {tuple(sorted(s["bot_id"] for s in m["seats"])) for m in matches["items"]}
    assert len(pairs) == 6 and all(m["status"] == "queued" for m in matches["items"])
    assert client.post(f"/api/v1/tournaments/{t['id']}/start", headers=league["org"]).status_code == 409
    assert client.post(f"/api/v1/tournaments/{t['id']}/start", headers=league["a"]).status_code == 403
    redis_lib.Redis.from_url(redis_url).delete("arena")


def test_start_with_broker_down_is_503_and_can_be_retried(client, make_app, league, redis_url):
    t = _create(client, league, ruleset="trump_millionaire", games_per_pairing=1).json
    r = client.post(f"/api/v1/tournaments/{t['id']}/start", headers=league["org"])
    assert r.status_code == 503 and "broker" in r.json["message"]
    pending = client.get(f"/api/v1/tournaments/{t['id']}/matches?status=pending", headers=league["org"]).json
    assert pending["total"] == 4  # one table of 4, 4 seat rotations
    seats = [[s["bot_id"] for s in m["seats"]] for m in pending["items"]]
    assert all(sorted(row) == sorted(seats[0]) for row in seats)
    assert [row[0] for row in seats] == [seats[0][k] for k in range(4)]  # each bot leads seat 0 once
    redis_lib.Redis.from_url(redis_url).delete("arena")
    up = make_app(broker_url=redis_url).test_client()
    r = up.post(f"/api/v1/tournaments/{t['id']}/start", headers=league["org"])
    assert r.status_code == 202 and _queue_length(redis_url) == 4
    redis_lib.Redis.from_url(redis_url).delete("arena")


def test_cancel(client, league):
    t = _create(client, league).json
    client.post(f"/api/v1/tournaments/{t['id']}/start", headers=league["org"])  # 503: matches stay pending
    assert client.post(f"/api/v1/tournaments/{t['id']}/cancel", headers=league["a"]).status_code == 403
    r = client.post(f"/api/v1/tournaments/{t['id']}/cancel", headers=league["org"])
    assert r.status_code == 200 and r.json["status"] == "cancelled"
    ms = client.get(f"/api/v1/tournaments/{t['id']}/matches", headers=league["org"]).json["items"]
    assert ms and all(m["status"] == "cancelled" for m in ms)
    assert client.post(f"/api/v1/tournaments/{t['id']}/cancel", headers=league["org"]).status_code == 409
    assert client.post(f"/api/v1/tournaments/{t['id']}/start", headers=league["org"]).status_code == 409


def test_unknown_tournament_and_match_are_404(client, league):
    for path in (
        "/api/v1/tournaments/424242",
        "/api/v1/tournaments/424242/standings",
        "/api/v1/tournaments/424242/matches",
        "/api/v1/tournaments/424242/logs",
        "/api/v1/matches/424242",
        "/api/v1/matches/424242/log",
    ):
        assert client.get(path, headers=league["org"]).status_code == 404, path
        assert client.get(path).status_code == 401, path  # anonymous: nothing says whether it exists


def _finish_all(sessionmaker, client, league, tid):
    """Store a result and log for every match: the lower bot id wins every game 5-(-5)."""
    ms = client.get(f"/api/v1/tournaments/{tid}/matches?per_page=100", headers=league["org"]).json["items"]
    with sessionmaker() as s:
        for m in ms:
            ids = [seat["bot_id"] for seat in m["seats"]]
            win = 0 if ids[0] < ids[1] else 1
            scores = [10, -10] if win == 0 else [-10, 10]
            places = [1, 2] if win == 0 else [2, 1]
            games = [{"scores": [s_ // 2 for s_ in scores], "places": places}] * 2
            assert store_result(
                s,
                m["id"],
                scores=scores,
                places=places,
                faults=[0, 1],
                games=games,
                timings={"wall_s": 0.5},
                log={"match": m["id"], "seats": ids, "events": ["x"] * 3},
            )
    return ms


def test_results_logs_standings_and_access(client, league, sessionmaker, accounts):
    t = _create(client, league, public_when_finished=False).json
    client.post(f"/api/v1/tournaments/{t['id']}/start", headers=league["org"])  # 503; schedule stored
    ms = client.get(f"/api/v1/tournaments/{t['id']}/matches?per_page=100", headers=league["org"]).json["items"]
    bots = league["bots"]
    # A match between ann's a1 and ben's b1: both may read it; before the end, ann cannot read b1-b2.
    ab = next(m for m in ms if {s["bot_id"] for s in m["seats"]} == {bots["a1"], bots["b1"]})
    bb = next(m for m in ms if {s["bot_id"] for s in m["seats"]} == {bots["b1"], bots["b2"]})
    outsider = accounts.contestant("zed")
    assert client.get(f"/api/v1/matches/{ab['id']}", headers=league["a"]).status_code == 200
    assert client.get(f"/api/v1/matches/{bb['id']}", headers=league["a"]).status_code == 403
    embargo = client.get(f"/api/v1/matches/{ab['id']}/log", headers=league["a"])  # running: log embargo
    assert embargo.status_code == 403 and "embargoed" in embargo.json["message"]
    assert client.get(f"/api/v1/matches/{ab['id']}/log", headers=league["org"]).status_code == 404  # no log yet
    assert client.get(f"/api/v1/tournaments/{t['id']}/matches", headers=league["a"]).json["total"] == 5
    assert client.get(f"/api/v1/tournaments/{t['id']}/logs", headers=outsider).status_code == 403
    embargo = client.get(f"/api/v1/tournaments/{t['id']}/logs", headers=league["a"])
    assert embargo.status_code == 403 and "embargoed" in embargo.json["message"]
    # Seeds: nobody sees them before the end, organizers included; everyone sees the commitment.
    seen = client.get(f"/api/v1/tournaments/{t['id']}", headers=league["a"]).json
    assert seen["seed"] is None and seen["salt"] is None and not seen["seed_revealed"]
    assert len(seen["commitment"]) == 64
    org_view = client.get(f"/api/v1/tournaments/{t['id']}", headers=league["org"]).json
    assert org_view["seed"] is None and org_view["salt"] is None and org_view["commitment"] == seen["commitment"]
    assert client.get(f"/api/v1/matches/{ab['id']}", headers=league["a"]).json["seed"] is None
    assert all(
        m["seed"] is None
        for m in client.get(f"/api/v1/tournaments/{t['id']}/matches", headers=league["a"]).json["items"]
    )
    assert all(m["seed"] is None for m in ms)  # the organizer's list

    _finish_all(sessionmaker, client, league, t["id"])
    with sessionmaker() as s:  # a second write of the same result is refused
        assert not store_result(s, ab["id"], scores=[0, 0], places=[1, 1], faults=[0, 0], games=[], timings={}, log={})
    t2 = client.get(f"/api/v1/tournaments/{t['id']}", headers=league["org"]).json
    assert t2["status"] == "finished" and t2["progress"] == {"finished": 6, "total": 6, "queued": 6}
    revealed = client.get(f"/api/v1/tournaments/{t['id']}", headers=league["a"]).json
    seed = revealed["seed"]
    assert revealed["seed_revealed"] and isinstance(seed, int) and not revealed["seed_chosen"]
    assert revealed["commitment"] == commitment(seed, revealed["salt"])
    assert client.get(f"/api/v1/matches/{ab['id']}", headers=league["a"]).json["seed"] == match_seed(
        seed, t["id"], ab["index"]
    )

    m = client.get(f"/api/v1/matches/{ab['id']}", headers=league["a"]).json
    assert m["status"] == "finished" and m["result"]["faults"] == [0, 1]
    assert sorted(m["result"]["scores"]) == [-10, 10]
    log = client.get(f"/api/v1/matches/{ab['id']}/log", headers=league["b"])
    assert log.status_code == 200 and log.mimetype == "application/json"
    assert log.headers["Content-Disposition"] == f'attachment; filename="match-{ab["id"]}.json"'
    assert log.json == {"match": ab["id"], "seats": [s["bot_id"] for s in ab["seats"]], "events": ["x", "x", "x"]}
    # Finished tournament: every participant's owner reads every log; outsiders still cannot.
    assert client.get(f"/api/v1/matches/{bb['id']}/log", headers=league["a"]).status_code == 200
    assert client.get(f"/api/v1/matches/{bb['id']}", headers=outsider).status_code == 403
    assert client.get(f"/api/v1/matches/{bb['id']}").status_code == 401  # not public: no anonymous read
    stream = client.get(f"/api/v1/tournaments/{t['id']}/logs", headers=league["a"])
    assert stream.status_code == 200 and stream.mimetype == "application/x-ndjson"
    head, *lines = [json.loads(line) for line in stream.data.decode().splitlines()]
    assert head["tournament"]["id"] == t["id"] and head["tournament"]["commitment"] == seen["commitment"]
    assert sorted(line["match_id"] for line in lines) == sorted(m["id"] for m in ms)
    assert all(line["log"]["match"] == line["match_id"] for line in lines)

    st = client.get(f"/api/v1/tournaments/{t['id']}/standings", headers=league["b"]).json
    rows = {r["bot_id"]: r for r in st["rows"]}
    order = sorted(bots.values())  # lower id wins every game: 3, 2, 1, 0 match wins
    assert [r["bot_id"] for r in st["rows"]] == order
    best, worst = rows[order[0]], rows[order[-1]]
    assert best["games"] == 6 and best["wins"] == 6 and best["total_score"] == 30.0 and best["mean_score"] == 5.0
    assert best["ci95"] == 0.0 and best["rank"] == 1
    for bot_id, row in rows.items():  # the stored faults were [0, 1]: one per match in seat 1
        assert row["faults"] == sum(1 for m in ms if m["seats"][1]["bot_id"] == bot_id)
    assert worst["wins"] == 0 and worst["mean_score"] == -5.0
    second = rows[order[1]]  # 2 match wins, 1 loss: scores 5,5,5,5,-5,-5
    sd = (sum((x - 5 / 3) ** 2 for x in [5, 5, 5, 5, -5, -5]) / 5) ** 0.5
    assert second["mean_score"] == pytest.approx(5 / 3)
    assert second["ci95"] == pytest.approx(2.571 * sd / 6**0.5)
    assert best["mu"] > second["mu"] > worst["mu"] and best["ordinal"] == pytest.approx(best["mu"] - 3 * best["sigma"])

    # Leaderboard: empty until the ratings are rebuilt (the worker's job), then by ordinal.
    board = client.get("/api/v1/leaderboard?ruleset=million_doubt").json
    assert board["total"] == 0
    with sessionmaker() as s:
        assert rebuild_ratings(s, "million_doubt") == 4
        s.commit()
        # the history after each finished tournament (one here): equal to the ratings, and
        # rewritten, not added to, by another rebuild
        assert rebuild_ratings(s, "million_doubt") == 4
        s.commit()
        ratings = {r.bot_id: (r.mu, r.sigma, r.games) for r in s.scalars(select(Rating))}
        history = s.scalars(select(RatingHistory)).all()
        assert sorted(h.bot_id for h in history) == sorted(ratings)
        assert all((h.tournament_id, h.position, h.ruleset) == (t["id"], 0, "million_doubt") for h in history)
        assert {h.bot_id: (h.mu, h.sigma, h.games) for h in history} == ratings
    board = client.get("/api/v1/leaderboard?ruleset=million_doubt").json
    assert [r["bot_id"] for r in board["items"]] == order
    assert board["items"][0]["games"] == 6 and board["items"][0]["matches"] == 3  # 3 matches of 2 games
    assert board["items"][0]["mu"] == pytest.approx(best["mu"])
    assert client.get("/api/v1/leaderboard?ruleset=go").status_code == 422
    assert client.get("/api/v1/leaderboard").status_code == 422


def test_match_list_filters_and_pagination_bounds(client, league):
    t = _create(client, league).json
    client.post(f"/api/v1/tournaments/{t['id']}/start", headers=league["org"])
    a1 = league["bots"]["a1"]
    r = client.get(f"/api/v1/tournaments/{t['id']}/matches?bot_id={a1}", headers=league["org"]).json
    assert r["total"] == 3 and all(a1 in [s["bot_id"] for s in m["seats"]] for m in r["items"])
    r = client.get(f"/api/v1/tournaments/{t['id']}/matches?per_page=2&page=2", headers=league["org"]).json
    assert [m["index"] for m in r["items"]] == [2, 3] and r["total"] == 6
    for bad in ("per_page=101", "per_page=0", "page=0", "status=done", "per_page=1.5"):
        r = client.get(f"/api/v1/tournaments/{t['id']}/matches?{bad}", headers=league["org"])
        assert r.status_code == 422, bad


@pytest.mark.slow  # plays a whole tournament before the anonymous reads (about 4 s)
def test_public_when_finished_opens_the_rest_api_to_anonymous_readers(client, league, sessionmaker, accounts):
    """arena.access: a finished public tournament is readable without a token, through the
    REST API as through the pages; before it finishes, or when not public, it is not."""
    pub = _create(client, league).json
    private = _create(client, league, public_when_finished=False).json
    for t in (pub, private):
        client.post(f"/api/v1/tournaments/{t['id']}/start", headers=league["org"])  # 503; schedule stored
    ms = client.get(f"/api/v1/tournaments/{pub['id']}/matches?per_page=100", headers=league["org"]).json["items"]
    assert client.get(f"/api/v1/tournaments/{pub['id']}").status_code == 401  # running: not public yet
    assert client.get(f"/api/v1/matches/{ms[0]['id']}").status_code == 401
    assert client.get("/api/v1/tournaments").json["total"] == 0
    for t in (pub, private):
        _finish_all(sessionmaker, client, league, t["id"])
    assert client.get(f"/api/v1/tournaments/{pub['id']}").json["status"] == "finished"
    assert client.get(f"/api/v1/tournaments/{pub['id']}/standings").status_code == 200
    assert client.get(f"/api/v1/tournaments/{pub['id']}/matches?per_page=100").json["total"] == len(ms)
    assert client.get(f"/api/v1/matches/{ms[0]['id']}/log").status_code == 200
    lines = client.get(f"/api/v1/tournaments/{pub['id']}/logs").data.decode().splitlines()
    assert len(lines) == 1 + len(ms)  # the tournament, then each log
    listed = client.get("/api/v1/tournaments").json
    assert [t["id"] for t in listed["items"]] == [pub["id"]]
    assert client.get(f"/api/v1/tournaments/{private['id']}").status_code == 401
    assert client.get(f"/api/v1/tournaments/{private['id']}/logs").status_code == 401
    # a wrong token is still refused, public or not
    assert client.get(f"/api/v1/tournaments/{pub['id']}", headers={"Authorization": "Bearer nope"}).status_code == 401
