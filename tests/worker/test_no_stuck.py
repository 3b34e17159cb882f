"""No stuck status (issue 13, items 1, 3, 4): a bot answering poison pills to a real worker; an
internal error while playing; a database error while storing (a real PostgreSQL trigger
refusing the insert), retried without playing the match again; when the retries are spent
the result waits in the Redis spool for the reaper (no spool: the match fails). Every match
ends finished or failed and its tournament finishes."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from sqlalchemy import text

from arena import lifecycle, spool, storing
from arena.db.models import Match
from arena.delivery import play_and_store
from arena.queue import PRIORITY_QUEUE
from arena.reaper import reap
from arena.runner.replay import replay
from bots_sdk.samples import SAMPLE_BOTS
from daifugo_arena.cli.servers import WsgiServer
from tests.worker.conftest import SwitchBot

pytestmark = pytest.mark.services
REPO = Path(__file__).resolve().parents[2]

POISON = [
    b"[" * 60000,  # RecursionError in the old parser
    b'{"type":"pass","comment":"\\ud800"}',  # a lone surrogate in a legal action
    b'{"type":"rate","rate":NaN}',  # not strict JSON
]


def _strict(data: bytes):
    def no_constant(name):
        raise ValueError(f"{name} in a stored log")

    return json.loads(data.decode("utf-8"), parse_constant=no_constant)


def _start_unqueued(arena, redis_url, tid) -> list[int]:
    """Start through the API, then drop the broker messages: the test plays in-process."""
    arena.start(tid)
    redis.Redis.from_url(redis_url).delete("arena")
    with arena.sessions() as s:
        return list(s.scalars(text("SELECT id FROM matches WHERE tournament_id = :t ORDER BY index"), {"t": tid}))


def _one_match(arena, bots, redis_url) -> tuple[int, int]:
    """Two greedy bots registered, a one-match tournament started with its match unqueued:
    ``(tournament id, match id)``."""
    bots.extend([SwitchBot(SAMPLE_BOTS["greedy"]()), SwitchBot(SAMPLE_BOTS["greedy"]())])
    ids = [arena.register(b, ["million_doubt"], f"b{i}") for i, b in enumerate(bots)]
    tid = arena.create("million_doubt", ids, games_per_pairing=2)
    [mid] = _start_unqueued(arena, redis_url, tid)
    return tid, mid


def test_poison_pill_bot_against_a_real_worker(arena, bots, celery_worker_factory):
    honest, poison = SwitchBot(SAMPLE_BOTS["greedy"]()), SwitchBot(SAMPLE_BOTS["greedy"]())
    bots.extend([honest, poison])
    ids = [arena.register(honest, ["million_doubt"], "honest"), arena.register(poison, ["million_doubt"], "poison")]
    poison.poison, poison.mode = POISON, "poison"
    tid = arena.create("million_doubt", ids, games_per_pairing=4, max_faults=3)
    worker = celery_worker_factory(concurrency=1, database_url=arena.database_url)
    arena.start(tid)
    t = arena.wait_finished(tid, workers=[worker])
    assert t["status"] == "finished", worker.log()[-3000:]
    [(m, res, log)] = arena.stored(tid)
    with arena.sessions() as s:
        data = s.execute(text("SELECT data FROM match_logs WHERE match_id = :m"), {"m": m.id}).scalar_one()
    from arena import matchlog

    assert _strict(matchlog.decompress(data)) == log  # strict JSON in UTF-8
    p = next(i for i, seat in enumerate(m.seats) if seat.bot_id == ids[1])
    kinds = [(f["kind"], f["detail"]) for f in log["faults"]]
    assert [f["player"] for f in log["faults"]] == [p, p, p]
    assert [k for k, _ in kinds] == ["invalid_json"] * 3, kinds
    details = " | ".join(d for _, d in kinds)  # three answers in a row: each pill once
    assert "deeper" in details and "surrogate" in details and "NaN" in details, details
    for f in log["faults"]:
        f["received"].encode("utf-8")
        assert len(f["received"]) <= 503
    assert res.faults[p] == 3 and res.faults[1 - p] == 0
    # the honest bot's games are kept: it won all four (three faults, then FAULT-3)
    assert log["result"]["wins"][1 - p] == 4 and len(log["games"]) == 4
    assert replay(log)["scores"] == [round(x) for x in res.scores]
    # the worker's log and the task result never hold a hand
    assert "Traceback" not in worker.log()


def test_internal_error_fails_the_match_and_the_tournament_finishes(arena, bots, redis_url):
    tid, mid = _one_match(arena, bots, redis_url)
    with arena.sessions() as s:  # data the engine refuses: playing raises (an internal error)
        s.execute(text("UPDATE tournaments SET options = '{\"no_such_option\": 1}' WHERE id = :t"), {"t": tid})
        s.commit()
    line = play_and_store(mid, arena.settings)
    assert line.startswith(f"failed match {mid}") and "OptionsError" in line
    t = arena.get(f"/tournaments/{tid}")
    assert t["status"] == "finished"
    [row] = arena.get(f"/tournaments/{tid}/matches")["items"]
    assert row["status"] == "failed" and row["failure"].startswith("internal error while preparing: OptionsError")
    assert len(row["failure"]) <= 500
    # the pages and the CLI show the reason too
    page = arena.client.get(f"/ui/tournaments/{tid}", headers=arena.org)
    assert page.status_code == 200 and "internal error while preparing: OptionsError" in page.text
    server = WsgiServer(arena.client.application)
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "daifugo_arena.cli",
                "tournament",
                "status",
                str(tid),
                "--api",
                server.url,
                "--token",
                arena.org["Authorization"].split()[1],
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
        )
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert f"match {mid} failed: internal error while preparing: OptionsError" in done.stdout
    assert f"arena tournament retry {tid}" in done.stdout
    # the organizer fixes nothing here but can retry: the match is queued again
    with arena.sessions() as s:
        s.execute(text("UPDATE tournaments SET options = '{}' WHERE id = :t"), {"t": tid})
        s.commit()
    r = arena.client.post(f"/api/v1/tournaments/{tid}/retry", headers=arena.org)
    assert r.status_code == 202, r.json
    redis.Redis.from_url(redis_url).delete("arena")
    assert play_and_store(mid, arena.settings).startswith(f"stored match {mid}")
    assert arena.get(f"/tournaments/{tid}")["status"] == "finished"


def _refuse_inserts(arena, times: int) -> None:
    """A trigger refusing the first ``times`` result inserts with a serialization failure
    (SQLSTATE 40001: a transient error). A sequence counts, as it is not rolled back."""
    with arena.sessions() as s:
        s.execute(text("CREATE SEQUENCE refused"))
        s.execute(
            text(f"""
            CREATE FUNCTION refuse_store() RETURNS trigger AS $$
            BEGIN
              IF nextval('refused') <= {int(times)} THEN
                RAISE EXCEPTION 'refused by the test' USING ERRCODE = '40001';
              END IF;
              RETURN NEW;
            END $$ LANGUAGE plpgsql""")
        )
        s.execute(
            text(
                "CREATE TRIGGER refuse_store BEFORE INSERT ON match_results "
                "FOR EACH ROW EXECUTE FUNCTION refuse_store()"
            )
        )
        s.commit()


def test_store_error_is_retried_without_replaying(arena, bots, redis_url, monkeypatch):
    monkeypatch.setattr(storing, "STORE_BACKOFF_S", 0.05)
    tid, mid = _one_match(arena, bots, redis_url)
    _refuse_inserts(arena, times=3)
    before = sum(b.decisions for b in bots)
    assert play_and_store(mid, arena.settings).startswith(f"stored match {mid} (attempt 1)")
    [(m, res, log)] = arena.stored(tid)
    played = sum(len(g["exchanges"]) for g in log["games"])
    assert sum(b.decisions for b in bots) - before == played  # played once
    assert m.attempts == 1 and m.status == "finished"
    with arena.sessions() as s:
        assert s.execute(text("SELECT last_value FROM refused")).scalar_one() == 4  # 3 refused + 1
    assert arena.get(f"/tournaments/{tid}")["status"] == "finished"


def test_store_retries_spent_without_a_spool_fail_the_match(arena, bots, redis_url, monkeypatch):
    """No Redis to spool to (eager mode): when the retries are spent the match fails."""
    monkeypatch.setattr(storing, "STORE_BACKOFF_S", 0.01)
    tid, mid = _one_match(arena, bots, redis_url)
    _refuse_inserts(arena, times=100000)
    line = play_and_store(mid, dataclasses.replace(arena.settings, celery_eager=True, store_retry_s=1))
    assert line.startswith(f"failed match {mid}") and "could not store the result in 1 s (" in line
    with arena.sessions() as s:
        m = s.get(Match, mid)
        assert m.status == "failed" and "could not store the result in 1 s (" in m.failure
        refused = s.execute(text("SELECT last_value FROM refused")).scalar_one()
        assert f"({refused} attempts): OperationalError (database unavailable)" in m.failure
    assert arena.get(f"/tournaments/{tid}")["status"] == "finished"
    assert not redis.Redis.from_url(redis_url).exists(spool.key(mid))


def _lease_expired(arena, mid: int) -> bool:
    with arena.sessions() as s:
        return bool(
            s.execute(text("SELECT lease_expires_at < now() FROM matches WHERE id = :m"), {"m": mid}).scalar_one()
        )


@pytest.mark.parametrize("stored_by", ["reaper", "delivery"])
def test_store_retries_spent_leave_the_result_in_the_spool(arena, bots, redis_url, monkeypatch, stored_by):
    """The database refuses the result longer than the worker retries: the result waits in
    the Redis spool, the match stays running (its tournament too) even once its lease has
    expired, and the reaper, or the next delivery of the match, stores it once: not played
    again."""
    monkeypatch.setattr(storing, "STORE_BACKOFF_S", 0.01)
    tid, mid = _one_match(arena, bots, redis_url)
    _refuse_inserts(arena, times=100000)
    settings = dataclasses.replace(arena.settings, store_retry_s=1, lease_s=1)
    client = redis.Redis.from_url(redis_url)
    before = sum(b.decisions for b in bots)
    line = play_and_store(mid, settings)
    assert line.startswith(f"spooled match {mid} (attempt 1): could not store the result in 1 s"), line
    assert line.endswith(f"the result waits in arena:spool:{mid} for the reaper")
    record = spool.get(client, mid)
    assert record is not None and record.attempt == 1 and record.tournament_id == tid
    assert 0 < client.ttl(spool.key(mid)) <= settings.spool_ttl_s
    decisions = sum(b.decisions for b in bots)
    assert decisions - before == sum(len(g["exchanges"]) for g in record.log["games"])
    deadline = time.monotonic() + 30
    while not _lease_expired(arena, mid):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # still refused: the reaper neither stores nor re-queues it, the tournament stays running
    report = reap(settings, sessions=arena.sessions, client=client)
    assert report.waiting == [mid] and report.expired == [] and report.spooled == []
    with arena.sessions() as s:
        assert s.get(Match, mid).status == "running"
    assert arena.get(f"/tournaments/{tid}")["status"] == "running"
    with arena.sessions() as s:
        s.execute(text("DROP TRIGGER refuse_store ON match_results"))
        s.commit()
    if stored_by == "reaper":
        report = reap(settings, sessions=arena.sessions, client=client)
        assert report.spooled == [mid] and report.expired == [] and report.waiting == []
    else:
        assert play_and_store(mid, settings) == f"stored match {mid} (attempt 1) from the spool"
    assert sum(b.decisions for b in bots) == decisions  # not played again
    [(m, res, log)] = arena.stored(tid)
    assert m.status == "finished" and m.attempts == 1 and res.timings["attempt"] == 1
    assert log == record.log and replay(log)["scores"] == [round(x) for x in res.scores]
    assert not client.exists(spool.key(mid))
    assert arena.get(f"/tournaments/{tid}")["status"] == "finished"
    # once more: nothing to do, nothing stored twice
    report = reap(settings, sessions=arena.sessions, client=client)
    assert report.spooled == report.expired == report.waiting == []
    assert play_and_store(mid, settings).startswith("skipped:")
    assert arena.counts(tid) == {"matches": 1, "results": 1, "logs": 1}


def test_a_spooled_result_of_another_database_is_left_alone(arena, bots, redis_url):
    """A spool entry whose tournament, index or commitment is not this database's match's
    (a Redis shared by mistake) is neither stored nor deleted, nor keeps the match from
    being reaped; an entry that cannot be read back is deleted."""
    tid, mid = _one_match(arena, bots, redis_url)
    client = redis.Redis.from_url(redis_url)
    foreign = spool.SpooledResult(
        match_id=mid,
        tournament_id=tid,
        match_index=0,
        commitment="0" * 64,
        ruleset="million_doubt",
        attempt=1,
        fields={},
        log={},
    )
    spool.put(client, foreign, 60)
    client.set(spool.key(mid + 1000), b"not a spooled result", ex=60)  # unreadable: deleted
    try:
        with arena.sessions() as s:
            assert lifecycle.claim_match(s, mid, owner="gone", lease_s=0.01).__class__ is lifecycle.Claimed
        deadline = time.monotonic() + 30
        while not _lease_expired(arena, mid):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        report = reap(arena.settings, sessions=arena.sessions, client=client)
        assert report.expired == [mid] and report.spooled == report.waiting == []
        assert spool.get(client, mid) == foreign
        assert not client.exists(spool.key(mid + 1000))
        assert arena.counts(tid)["results"] == 0
    finally:
        spool.drop(client, mid)
        spool.drop(client, mid + 1000)
        client.delete(PRIORITY_QUEUE)  # the reaped match's message: no other test's worker takes it
