"""Bot checks (issue 16 item 1, issue 14 items 6-7): run as tasks on a real worker, every
decision kind asked from fixed positions, one badly signed request, URLs frozen while entered,
deleted bots forfeiting without a request. Real HTTP bots on 127.0.0.1 throughout."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import select

from arena import lifecycle
from arena.db.migrate import upgrade
from arena.db.models import Bot as BotRow
from arena.db.models import BotCheck
from arena.runner.replay import replay
from bots_sdk.samples import SAMPLE_BOTS
from tests.worker.conftest import Arena, SwitchBot

#: Guard against a hung check (never a timed assertion).
CHECK_TIMEOUT_S = 120.0

GreedyBot = type(SAMPLE_BOTS["greedy"]())


class IllegalExchangeBot(GreedyBot):  # type: ignore[misc, valid-type]
    """Plays well, but answers the Millionaire's exchange (TM-3) without ``accept``."""

    def exchange(self, req):
        return {"type": "exchange"}


@pytest.fixture
def sqlite_arena(tmp_path):
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    upgrade(url)
    a = Arena(url, "redis://127.0.0.1:1/0", eager=True, tmp_path=tmp_path)
    yield a
    a.close()


def _post_bot(arena: Arena, server: SwitchBot, rulesets: list[str], name: str, *, sign: bool = True) -> int:
    r = arena.client.post(
        "/api/v1/bots", json={"name": name, "url": server.url, "rulesets": rulesets}, headers=arena.owner
    )
    assert r.status_code == 201, r.json
    if sign:
        server.set_secret(r.json["secret"])
    return r.json["id"]


def test_the_check_asks_every_decision_kind_of_each_rule_set(sqlite_arena, bots):
    bots.append(SwitchBot(SAMPLE_BOTS["greedy"]()))
    bot_id = sqlite_arena.register(bots[0], ["million_doubt", "trump_millionaire", "jdf"], "all")
    check = sqlite_arena.get(f"/bots/{bot_id}/check")
    assert check["status"] == "passed" and check["progress"]["stage"] == "done"
    kinds = {c["ruleset"]: c["kinds"] for c in check["result"]["conformance"]}
    asked = {rs: {k for k, v in table.items() if v["asked"]} for rs, table in kinds.items()}
    assert asked["trump_millionaire"] == {"play", "exchange", "rate", "give", "discard"}
    assert asked["jdf"] == {"play", "give", "discard"}
    assert asked["million_doubt"] == {"play", "doubt", "penalty"}  # penalty from its position
    assert all(v["faults"] == 0 for table in kinds.values() for v in table.values())
    assert check["progress"]["rulesets"] == kinds
    probes = [g["probe"] for c in check["result"]["conformance"] for g in c["games"]]
    assert probes == [
        "random",
        "doubt",
        "penalty",
        "random",
        "exchange-rate",
        "give",
        "discard",
        "random",
        "exchange-give",
        "give",
        "discard",
    ]
    # The SDK server checks signatures: the badly signed request got 401, no warning about it.
    assert check["result"]["signature"] == {"ok": True, "status": 401, "warning": None}
    assert check["warnings"] == [] and check["result"]["warning_codes"] == []


def test_a_bot_answering_exchange_illegally_fails_its_check(sqlite_arena, bots):
    bots.append(SwitchBot(IllegalExchangeBot()))
    bot_id = _post_bot(sqlite_arena, bots[0], ["trump_millionaire"], "bad-exchange")
    check = sqlite_arena.check(bot_id)
    assert check["status"] == "failed"
    conf = check["result"]["conformance"][0]
    assert conf["ok"] is False and conf["kinds"]["exchange"] == {"asked": 1, "faults": 1}
    assert conf["faults"][0]["kind"] == "invalid_action" and conf["faults"][0]["decision"] == "exchange"
    assert "exchange" in conf["error"]
    bot = sqlite_arena.get(f"/bots/{bot_id}")
    assert bot["status"] == "failed" and bot["last_check"] == check["result"]
    r = sqlite_arena.client.post(
        "/api/v1/tournaments",
        headers=sqlite_arena.org,
        json={"ruleset": "trump_millionaire", "participants": [bot_id], "fill_with_house_bots": True},
    )
    assert r.status_code == 422 and "has not passed its check" in r.json["message"]


def test_a_bot_ignoring_signatures_passes_with_a_warning(sqlite_arena, bots):
    bots.append(SwitchBot(SAMPLE_BOTS["greedy"]()))
    bot_id = _post_bot(sqlite_arena, bots[0], ["jdf"], "lax", sign=False)  # checks no signature
    check = sqlite_arena.check(bot_id)
    assert check["status"] == "passed"
    assert check["result"]["signature"]["ok"] is False and check["result"]["signature"]["status"] == 200
    warning = check["result"]["signature"]["warning"]
    assert "not 401" in warning and warning in check["warnings"]
    bot = sqlite_arena.get(f"/bots/{bot_id}")
    assert bot["status"] == "ready" and warning in bot["warnings"]


@pytest.mark.slow
def test_url_frozen_while_entered_and_a_deleted_bot_forfeits_without_a_request(sqlite_arena, bots):
    arena = sqlite_arena
    bots.extend(SwitchBot(SAMPLE_BOTS["greedy"]()) for _ in range(3))
    ids = [arena.register(b, ["million_doubt"], f"d{i}") for i, b in enumerate(bots)]
    tid = arena.create("million_doubt", ids, games_per_pairing=2)
    gone = ids[2]
    r = arena.client.patch(f"/api/v1/bots/{gone}", json={"url": bots[0].url}, headers=arena.owner)
    assert r.status_code == 409 and f"entered in tournament(s) {tid}" in r.json["message"]
    r = arena.client.patch(f"/api/v1/bots/{gone}", json={"name": "renamed"}, headers=arena.owner)
    assert r.status_code == 200 and r.json["status"] == "ready" and r.json["url"] == bots[2].url
    assert arena.client.delete(f"/api/v1/bots/{gone}", headers=arena.owner).status_code == 204
    posts = bots[2].posts
    assert arena.start(tid)["status"] == "finished"  # eager: every match played now
    assert bots[2].posts == posts  # no decision, no notice: the deleted bot's URL is never called
    stored = arena.stored(tid)
    with_gone = [(m, res, log) for m, res, log in stored if gone in [s.bot_id for s in m.seats]]
    assert len(with_gone) == 2
    for m, res, log in with_gone:
        seat = [s.bot_id for s in m.seats].index(gone)
        assert log["players"][seat]["kind"] == "withdrawn" and log["players"][seat]["url"] is None
        for gm in log["games"]:
            engine_seat = gm["seats"].index(seat)
            assert {"seat": engine_seat, "forfeit": "withdrawn"} in gm["engine_log"]["actions"]
            assert all(ex["player"] != seat for ex in gm["exchanges"])
        assert res.scores[seat] == -22.0  # both games lost with the burst score (FAULT-2, MD-17)
        assert replay(log)["scores"] == [round(x) for x in res.scores]
    # a bot that is not entered may change its URL (and must be checked again)
    arena.wait_finished(tid)
    r = arena.client.patch(f"/api/v1/bots/{ids[0]}", json={"url": bots[1].url}, headers=arena.owner)
    assert r.status_code == 200 and r.json["status"] == "unchecked"


def _wait_check(arena: Arena, bot_id: int, check_id: int, worker) -> dict:
    deadline = time.monotonic() + CHECK_TIMEOUT_S
    while True:
        check = arena.get(f"/bots/{bot_id}/checks/{check_id}")
        if check["status"] not in ("queued", "running"):
            return check
        if time.monotonic() > deadline:
            pytest.fail(f"check {check_id} still {check['status']}:\n{worker.log()[-3000:]}")
        time.sleep(0.1)


def test_the_check_runs_on_a_worker_one_per_bot_two_per_account(arena, bots, celery_worker_factory):
    bots.extend(SwitchBot(SAMPLE_BOTS["greedy"](), mode="gate") for _ in range(3))
    ids = [_post_bot(arena, b, ["trump_millionaire"], f"g{i}") for i, b in enumerate(bots)]
    worker = celery_worker_factory(concurrency=2, database_url=arena.database_url)
    r = arena.client.post(f"/api/v1/bots/{ids[0]}/check", headers=arena.owner)
    # the answer is the check as stored after the send: the worker may have claimed it already
    assert r.status_code == 202 and r.json["status"] in ("queued", "running")
    url = r.headers["Location"]
    assert url == r.json["check_url"] == f"/api/v1/bots/{ids[0]}/checks/{r.json['id']}"
    # the gated bot holds its first decision: the check cannot be done yet
    assert arena.get(f"/bots/{ids[0]}")["status"] == "checking"
    again = arena.client.post(f"/api/v1/bots/{ids[0]}/check", headers=arena.owner)
    assert again.status_code == 409 and again.headers["Location"] == url
    r = arena.client.patch(f"/api/v1/bots/{ids[0]}", json={"rulesets": ["jdf"]}, headers=arena.owner)
    assert r.status_code == 409 and "being checked" in r.json["message"]
    second = arena.client.post(f"/api/v1/bots/{ids[1]}/check", headers=arena.owner)
    assert second.status_code == 202
    third = arena.client.post(f"/api/v1/bots/{ids[2]}/check", headers=arena.owner)
    assert third.status_code == 429 and third.headers["Retry-After"] == "30"
    assert arena.get(f"/bots/{ids[2]}")["status"] == "unchecked"
    for b in bots:
        b.gate.set()
    done = _wait_check(arena, ids[0], int(url.rsplit("/", 1)[1]), worker)
    assert done["status"] == "passed" and done["attempts"] == 1
    assert done["progress"]["stage"] == "done"
    assert done["progress"]["rulesets"]["trump_millionaire"]["exchange"]["asked"] == 1
    assert arena.get(f"/bots/{ids[0]}")["status"] == "ready"
    _wait_check(arena, ids[1], second.json["id"], worker)
    # both done: the third bot's check may start now
    assert arena.client.post(f"/api/v1/bots/{ids[2]}/check", headers=arena.owner).status_code == 202


def test_a_check_whose_worker_was_killed_is_abandoned(arena, bots, celery_worker_factory):
    bots.append(SwitchBot(SAMPLE_BOTS["greedy"](), mode="gate"))
    bot_id = _post_bot(arena, bots[0], ["jdf"], "orphan")
    worker = celery_worker_factory(concurrency=1, database_url=arena.database_url)
    r = arena.client.post(f"/api/v1/bots/{bot_id}/check", headers=arena.owner)
    assert r.status_code == 202
    deadline = time.monotonic() + CHECK_TIMEOUT_S
    while bots[0].decisions == 0:  # the worker is inside the check, held by the gate
        assert time.monotonic() < deadline, worker.log()[-3000:]
        time.sleep(0.05)
    worker.kill()
    assert arena.get(f"/bots/{bot_id}")["status"] == "checking"
    assert arena.client.post(f"/api/v1/bots/{bot_id}/check", headers=arena.owner).status_code == 409
    with arena.sessions() as s:  # what a new POST does once the heartbeat is CHECK_STALE_S old
        fresh = lifecycle.begin_check(s, bot_id, stale_after_s=0)
        old = s.get(BotCheck, r.json["id"])
        assert old.status == "error" and "abandoned" in old.error
        assert fresh.status == "queued" and fresh.previous_status == "unchecked"
        assert s.scalar(select(BotRow.status).where(BotRow.id == bot_id)) == "checking"
