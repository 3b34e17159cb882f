"""Tables where people play, through the REST API, against a REAL Celery worker, PostgreSQL
and Redis (docs/tables.md): a person plays whole games from its seat's frames; the worker's
engine refuses a wrong try and names the rule; the log verifies; the people's pool rates it
and the bots' leaderboard does not; a person who stops answering forfeits within its bank and
the worker plays the next table; a class table's students take their seats by its link; limits
and access."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from arena.db.models import PersonRating, Rating
from bots_sdk.samples import SAMPLE_BOTS
from daifugo_arena.cli import main
from tests.helpers import wait_until
from tests.tables_play import check_frames, play_through_api
from tests.worker.conftest import FINISH_TIMEOUT_S, Arena, SwitchBot

pytestmark = [pytest.mark.services]

#: Seconds a test waits for the worker (a guard against a hang, never a timing).
WAIT_S = FINISH_TIMEOUT_S


def _account(arena: Arena, name: str | None = None) -> dict[str, str]:
    r = arena.client.post("/api/v1/accounts", json={"name": name or "p-" + uuid.uuid4().hex[:6]})
    assert r.status_code == 201, r.json
    return {"Authorization": f"Bearer {r.json['token']}"}


def _table(arena: Arena, headers: dict[str, str], table_id: int) -> dict[str, Any]:
    r = arena.client.get(f"/api/v1/tables/{table_id}", headers=headers)
    assert r.status_code == 200, r.json
    return r.json


def play_out(arena: Arena, headers: dict[str, str], table_id: int, *, try_first=None, workers=()) -> list[dict]:
    """:func:`tests.tables_play.play_through_api` through the app's test client."""

    def get(path):
        r = arena.client.get(path, headers=headers)
        return r.status_code, r.json

    def post(path, body):
        r = arena.client.post(path, json=body, headers=headers)
        return r.status_code, r.json

    return play_through_api(get, post, table_id, timeout_s=WAIT_S, try_first=try_first)


def _logs(arena: Arena, headers: dict[str, str], tournament_id: int, tmp_path) -> tuple[dict, Any]:
    r = arena.client.get(f"/api/v1/tournaments/{tournament_id}/logs", headers=headers)
    assert r.status_code == 200, r.json
    path = tmp_path / f"table-{tournament_id}.jsonl"
    path.write_bytes(r.data)
    lines = [json.loads(x) for x in r.data.splitlines() if x.strip()]
    return lines[1]["log"], path


def test_a_person_plays_a_whole_match_and_a_wrong_try_names_its_rule(arena, bots, celery_worker_factory, tmp_path):
    opponent = SwitchBot(SAMPLE_BOTS["greedy"](seed=3))
    bots.append(opponent)
    bot_id = arena.register(opponent, ["million_doubt"], "People-Player")
    # its owner lets people play it
    r = arena.client.patch(f"/api/v1/bots/{bot_id}", json={"play_people": True}, headers=arena.owner)
    assert r.status_code == 200 and r.json["play_people"] is True, r.json
    person = _account(arena)
    worker = celery_worker_factory(database_url=arena.database_url)
    r = arena.client.post(
        "/api/v1/tables",
        json={"ruleset": "million_doubt", "opponents": [bot_id], "games": 2, "person_time_rules": {"initial": 120}},
        headers=person,
    )
    assert r.status_code == 201, r.json
    table = r.json
    assert table["status"] == "running" and table["seats"][0]["kind"] == "person"
    assert table["person_time_rules"] == {"initial": 120.0, "increment": 30.0, "cap": 300.0}

    refusals: list[dict] = []

    def wrong(req):  # a single card onto a pair, or a pass when leading: the engine says why
        if req["decision"]["kind"] != "play":
            return None
        return {"type": "pass"} if req["decision"]["info"].get("lead") else None

    frames = play_out(arena, person, table["id"], try_first=wrong, workers=[worker])
    done = _table(arena, person, table["id"])
    assert done["status"] == "finished" and done["match_status"] == "finished"
    assert len(done["scores"]) == 2 and sorted(done["places"]) in ([1, 2], [1, 1])
    refusals = [f for f in frames if f["type"] == "refused"]
    if refusals:  # the try came when the person led (a pass is no lead, C-6)
        assert refusals[0]["rule"] == "C-6" or refusals[0]["rule"].startswith("MD")
    # the log: downloaded by the person once over, verified with its revealed seed
    log, path = _logs(arena, person, done["tournament_id"], tmp_path)
    assert log["players"][0]["kind"] == "person" and log["player_time_rules"]["0"]["initial_ms"] == 120_000
    assert log["time_rules"]["initial_ms"] == 60_000  # the bot's bank is the usual one
    verified = CliRunner().invoke(main, ["logs", "verify", str(path)])
    assert verified.exit_code == 0 and "1 verified" in verified.output.replace("\n", " "), verified.output
    counts = check_frames(frames, log, 0)
    assert counts["request"] >= 3

    # the people's pool has the person (rated by the follow-up of the stored result, which
    # may land after the table reads finished); the bots' leaderboard never saw the table
    def people_rated() -> list[int]:
        with arena.sessions() as s:
            return list(s.scalars(select(PersonRating.account_id)).all())

    wait_until(lambda: people_rated(), "the person rated", FINISH_TIMEOUT_S)
    with arena.sessions() as s:
        assert s.scalar(select(Rating).where(Rating.bot_id == bot_id)) is None


def test_the_engine_refuses_a_wrong_try_and_the_person_is_asked_on(arena, celery_worker_factory):
    person = _account(arena)
    worker = celery_worker_factory(database_url=arena.database_url)
    r = arena.client.post(
        "/api/v1/tables",
        json={
            "ruleset": "jdf",
            "opponents": ["random", "random", "random"],
            "options": {"sets": 1, "games_per_set": 1},
        },
        headers=person,
    )
    assert r.status_code == 201, r.json
    tid = r.json["id"]
    seen: list[dict] = []

    def wrong(req):  # cards the person does not hold
        held = set(req["observation"]["hand"])
        missing = next(c for c in ("3S", "4S", "5S", "6S", "7S", "3H", "4H") if c not in held)
        return {"type": "play", "cards": [missing]} if req["decision"]["kind"] == "play" else None

    frames = play_out(arena, person, tid, try_first=wrong, workers=[worker])
    refused = [f for f in frames if f["type"] == "refused"]
    assert refused and refused[0]["rule"] and refused[0]["reason"], frames[:5]
    assert _table(arena, person, tid)["status"] == "finished"
    seen += frames


def test_a_closed_tab_forfeits_within_its_bank_and_the_worker_plays_on(arena, celery_worker_factory):
    person = _account(arena)
    worker = celery_worker_factory(database_url=arena.database_url)  # one match at a time
    r = arena.client.post(
        "/api/v1/tables",
        json={
            "ruleset": "million_doubt",
            "opponents": ["random"],
            "games": 1,
            "person_time_rules": {"initial": 1, "increment": 0, "cap": 1},
        },
        headers=person,
    )
    assert r.status_code == 201, r.json
    tid = r.json["id"]
    # nobody answers: each decision is a time-out at the bank's end, the third forfeits the match
    deadline = time.monotonic() + WAIT_S
    while _table(arena, person, tid)["status"] == "running":
        assert time.monotonic() < deadline, worker.log()[-3000:]
        time.sleep(0.1)
    done = _table(arena, person, tid)
    assert done["status"] == "finished"
    log, _path = _logs(arena, person, done["tournament_id"], arena.settings.data_dir)
    faults = [f["kind"] for f in log["faults"] if f["player"] == 0]
    assert faults and set(faults) == {"timeout"} and len(faults) <= 3
    # the worker is free: the next table is played to its end by the same single worker
    r = arena.client.post(
        "/api/v1/tables", json={"ruleset": "million_doubt", "opponents": ["greedy"], "games": 1}, headers=person
    )
    assert r.status_code == 201, r.json
    play_out(arena, person, r.json["id"], workers=[worker])
    assert _table(arena, person, r.json["id"])["status"] == "finished"


def test_a_class_table_seats_students_by_its_link_and_the_organizer_starts_it(arena, celery_worker_factory):
    a, b, stranger = _account(arena), _account(arena), _account(arena)
    r = arena.client.post(
        "/api/v1/tables",
        json={
            "ruleset": "trump_millionaire",
            "seats": ["person", "random", "person", "greedy"],
            "options": {"target_score": 10},
        },
        headers=a,
    )
    assert r.status_code == 403, r.json  # a class table is an organizer's
    r = arena.client.post(
        "/api/v1/tables",
        json={
            "ruleset": "trump_millionaire",
            "seats": ["person", "random", "person", "greedy"],
            "options": {"target_score": 10},
        },
        headers=arena.org,
    )
    assert r.status_code == 201, r.json
    table = r.json
    key = table["join_key"]
    assert key and table["status"] == "created"
    tid = table["id"]
    assert arena.client.get(f"/api/v1/tables/{tid}", headers=a).status_code == 404  # not at it yet
    assert arena.client.post(f"/api/v1/tables/{tid}/join", json={"key": "x" * 20}, headers=a).status_code == 404
    assert arena.client.post(f"/api/v1/tables/{tid}/start", headers=arena.org).status_code == 409  # seats free
    ja = arena.client.post(f"/api/v1/tables/{tid}/join", json={"key": key}, headers=a)
    assert ja.status_code == 200 and ja.json["join_key"] is None, ja.json  # a student never sees the key
    assert arena.client.post(f"/api/v1/tables/{tid}/join", json={"key": key}, headers=b).status_code == 200
    assert arena.client.post(f"/api/v1/tables/{tid}/join", json={"key": key}, headers=stranger).status_code == 409
    assert arena.client.post(f"/api/v1/tables/{tid}/start", headers=a).status_code == 403
    worker = celery_worker_factory(database_url=arena.database_url)
    r = arena.client.post(f"/api/v1/tables/{tid}/start", headers=arena.org)
    assert r.status_code == 202 and r.json["status"] == "running", r.json
    assert arena.client.get(f"/api/v1/tables/{tid}/seat", headers=stranger).status_code == 404
    # the two students play together (one poll loop each, in turn)
    import threading

    errors: list[BaseException] = []

    def student(h):
        try:
            play_out(arena, h, tid, workers=[worker])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=student, args=(h,)) for h in (a, b)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(WAIT_S + 30)
    assert not errors, errors
    done = _table(arena, a, tid)
    assert done["status"] == "finished" and [s["kind"] for s in done["seats"]] == ["person", "house", "person", "house"]


def test_limits_and_access(arena, bots):
    person, other = _account(arena), _account(arena)
    body = {"ruleset": "million_doubt", "opponents": ["greedy"], "games": 1}
    # another owner's bot that people may not play is refused; so is an unknown house bot
    opponent = SwitchBot(SAMPLE_BOTS["random"](seed=1))
    bots.append(opponent)
    bot_id = arena.register(opponent, ["million_doubt"], "Private-Bot")
    r = arena.client.post("/api/v1/tables", json={**body, "opponents": [bot_id]}, headers=person)
    assert r.status_code == 422 and "opponents.0" in r.json["errors"]["json"], r.json
    r = arena.client.post("/api/v1/tables", json={**body, "opponents": ["nobody"]}, headers=person)
    assert r.status_code == 422, r.json
    r = arena.client.post("/api/v1/tables", json={**body, "opponents": ["greedy", "random"]}, headers=person)
    assert r.status_code == 422, r.json
    # its owner may play it, checked or not (no worker here: the tables wait, queued)
    ids = []
    for _ in range(2):
        r = arena.client.post("/api/v1/tables", json={**body, "opponents": [bot_id]}, headers=arena.owner)
        assert r.status_code == 201, r.json
        ids.append(r.json["id"])
    r = arena.client.post("/api/v1/tables", json=body, headers=arena.owner)
    assert r.status_code == 429 and r.headers.get("Retry-After"), r.json  # ARENA_TABLES_PER_ACCOUNT (2)
    # nobody else reads them, or answers for their seat
    assert arena.client.get(f"/api/v1/tables/{ids[0]}", headers=other).status_code == 404
    r = arena.client.post(
        f"/api/v1/tables/{ids[0]}/answer", json={"rid": "x", "action": {"type": "pass"}}, headers=other
    )
    assert r.status_code == 404
    # tables are never listed with the tournaments
    listed = arena.client.get("/api/v1/tournaments", headers=arena.org).json["items"]
    assert all(t["format"] != "table" for t in listed)
    mine = arena.client.get("/api/v1/tables", headers=arena.owner).json
    assert mine["total"] == 2
    # cancelling gives the place back
    assert arena.client.post(f"/api/v1/tables/{ids[0]}/cancel", headers=arena.owner).status_code == 200
    r = arena.client.post("/api/v1/tables", json=body, headers=arena.owner)
    assert r.status_code == 201, r.json
