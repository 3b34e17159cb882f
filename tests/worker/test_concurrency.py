"""Concurrency on a real PostgreSQL (issue 13, item 3): the last matches of a tournament stored
at the same moment by different connections finish it exactly once; ten concurrent ``start``
requests give one 202 and enqueue every match once; leases: a delivery finding a live lease
skips the match, the reaper takes back only expired leases, and two reapers never return the
same match."""

from __future__ import annotations

import json
import threading
import time
import uuid
from datetime import timedelta

import pytest
import redis
from sqlalchemy import text

from arena import lifecycle
from arena.accounts import create_account
from arena.db.models import Match, utcnow
from arena.queue import RUN_MATCH_TASK
from arena.schedule import ScheduledMatch
from bots_sdk.samples import SAMPLE_BOTS
from tests.worker.conftest import SwitchBot

pytestmark = pytest.mark.services


def _tournament(arena, n_matches: int) -> tuple[int, list[int]]:
    """A running 2-seat tournament of house-bot matches, every match claimed (running)."""
    with arena.sessions() as s:
        org, _ = create_account(s, "o-" + uuid.uuid4().hex[:12], "organizer")
        t = lifecycle.create_tournament(
            s,
            participants=[],
            name="c",
            organizer_id=org.id,
            ruleset="million_doubt",
            options={},
            time_rules={},
            games_per_pairing=2,
            seed=1,
            max_faults=3,
            fill_with_house_bots=True,
            public_when_finished=True,
        )
        tid = t.id
    with arena.sessions() as s:
        ids = lifecycle.start_tournament(
            s, tid, lambda _seed: [ScheduledMatch(i, 0, ("house-1", "house-2"), i) for i in range(n_matches)]
        )
    with arena.sessions() as s:
        lifecycle.mark_queued(s, ids)
    for mid in ids:
        with arena.sessions() as s:
            assert isinstance(lifecycle.claim_match(s, mid, owner="t", lease_s=60), lifecycle.Claimed)
    return tid, ids


def _count_finishes(arena) -> None:
    """A trigger counting the transitions of a tournament to ``finished`` (a sequence: not
    rolled back, seen across connections)."""
    with arena.sessions() as s:
        s.execute(text("CREATE SEQUENCE finishes"))
        s.execute(
            text("""
            CREATE FUNCTION count_finish() RETURNS trigger AS $$
            BEGIN PERFORM nextval('finishes'); RETURN NEW; END $$ LANGUAGE plpgsql""")
        )
        s.execute(
            text("""CREATE TRIGGER count_finish AFTER UPDATE ON tournaments FOR EACH ROW
                          WHEN (NEW.status = 'finished' AND OLD.status <> 'finished')
                          EXECUTE FUNCTION count_finish()""")
        )
        s.commit()


def _finishes(arena) -> int:
    with arena.sessions() as s:
        last, called = s.execute(text("SELECT last_value, is_called FROM finishes")).one()
        return int(last) if called else 0


@pytest.mark.parametrize("n", [2, 8])
def test_last_matches_stored_at_once_finish_the_tournament_exactly_once(arena, n):
    _count_finishes(arena)
    for round_ in range(5):
        tid, ids = _tournament(arena, n)
        barrier = threading.Barrier(n)
        errors: list[BaseException] = []

        def store(mid: int, barrier: threading.Barrier = barrier, errors: list = errors) -> None:
            try:
                with arena.sessions() as s:
                    s.get(Match, mid)  # the session is connected before the barrier
                    barrier.wait()
                    assert lifecycle.store_result(
                        s,
                        mid,
                        scores=[1.0, 0.0],
                        places=[1, 2],
                        faults=[0, 0],
                        games=[],
                        timings={},
                        log={"match": mid},
                    )
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=store, args=(mid,)) for mid in ids]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        assert not errors, errors
        assert arena.tournament(tid).status == "finished"
        assert _finishes(arena) == round_ + 1  # one transition per tournament, never two or none


def test_ten_concurrent_starts_one_202_and_each_match_enqueued_once(arena, bots, redis_url):
    for _ in range(4):
        bots.append(SwitchBot(SAMPLE_BOTS["greedy"]()))
    ids = [arena.register(b, ["million_doubt"], f"s{i}") for i, b in enumerate(bots)]
    tid = arena.create("million_doubt", ids, games_per_pairing=2)
    rc = redis.Redis.from_url(redis_url)
    rc.delete("arena")
    app = arena.client.application
    barrier = threading.Barrier(10)
    statuses: list[int] = []

    def start() -> None:
        client = app.test_client()
        barrier.wait()
        statuses.append(client.post(f"/api/v1/tournaments/{tid}/start", headers=arena.org).status_code)

    threads = [threading.Thread(target=start) for _ in range(10)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert sorted(statuses) == [202] + [409] * 9, statuses
    sent = []
    for raw in rc.lrange("arena", 0, -1):
        msg = json.loads(raw)
        if msg["headers"]["task"] == RUN_MATCH_TASK:
            sent.append(int(msg["headers"]["argsrepr"].strip("[]()").split(",")[0]))
    rc.delete("arena")
    with arena.sessions() as s:
        matches = list(s.scalars(text("SELECT id FROM matches WHERE tournament_id = :t"), {"t": tid}))
    assert len(matches) == 6 and sorted(sent) == sorted(matches)  # each match sent exactly once


def test_ten_concurrent_resumes_one_wins(arena, redis_url):
    with arena.sessions() as s:
        org, _ = create_account(s, "resume-org", "organizer")
        t = lifecycle.create_tournament(
            s,
            participants=[],
            name="r",
            organizer_id=org.id,
            ruleset="million_doubt",
            options={},
            time_rules={},
            games_per_pairing=2,
            seed=1,
            max_faults=3,
            fill_with_house_bots=True,
            public_when_finished=True,
        )
        tid = t.id
    with arena.sessions() as s:
        ids = lifecycle.start_tournament(
            s, tid, lambda _seed: [ScheduledMatch(i, 0, ("house-1", "house-2"), i) for i in range(4)]
        )
    with arena.sessions() as s:  # sent a while ago, and the broker lost them
        s.execute(text("UPDATE matches SET queued_at = :t"), {"t": utcnow() - timedelta(seconds=120)})
        s.commit()
    barrier = threading.Barrier(10)
    got: list = []

    def resume() -> None:
        with arena.sessions() as s:
            s.execute(text("SELECT 1"))
            barrier.wait()
            try:
                got.append(lifecycle.resumable_matches(s, tid))
            except lifecycle.Conflict:
                got.append(None)

    threads = [threading.Thread(target=resume) for _ in range(10)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    winners = [g for g in got if g is not None]
    assert winners == [ids] and got.count(None) == 9


def test_live_lease_is_skipped_expired_lease_is_reaped(arena):
    tid, [a, b] = _tournament(arena, 2)
    with arena.sessions() as s:  # a second delivery while the first plays: skipped
        got = lifecycle.claim_match(s, a, owner="other", lease_s=60)
    assert isinstance(got, lifecycle.Skipped) and got.reason is lifecycle.SkipReason.LEASED
    with arena.sessions() as s:  # b's worker died: its lease ran out
        s.execute(
            text("UPDATE matches SET lease_expires_at = :t WHERE id = :m"),
            {"t": utcnow() - timedelta(seconds=1), "m": b},
        )
        s.commit()
    with arena.sessions() as s:
        assert lifecycle.renew_lease(s, a, "t", 60) and not lifecycle.renew_lease(s, a, "other", 60)
    with arena.sessions() as s:
        assert lifecycle.reap_expired(s) == [b]
    with arena.sessions() as s:
        m = s.get(Match, b)
        assert m.status == "queued" and m.lease_owner is None and m.queued_at is not None
        assert lifecycle.reap_expired(s) == []
    with arena.sessions() as s:  # the old owner's renewal fails: it lost the match
        assert not lifecycle.renew_lease(s, b, "t", 60)
    with arena.sessions() as s:  # the re-sent delivery claims it (attempt 2)
        got = lifecycle.claim_match(s, b, owner="new", lease_s=60)
    assert isinstance(got, lifecycle.Claimed) and got.plan.attempt == 2


def test_lost_queued_only_what_the_broker_does_not_hold(arena):
    with arena.sessions() as s:
        org, _ = create_account(s, "lost-org", "organizer")
        t = lifecycle.create_tournament(
            s,
            participants=[],
            name="q",
            organizer_id=org.id,
            ruleset="million_doubt",
            options={},
            time_rules={},
            games_per_pairing=2,
            seed=1,
            max_faults=3,
            fill_with_house_bots=True,
            public_when_finished=True,
        )
        tid = t.id
    with arena.sessions() as s:
        ids = lifecycle.start_tournament(
            s, tid, lambda _seed: [ScheduledMatch(i, 0, ("house-1", "house-2"), i) for i in range(3)]
        )
    with arena.sessions() as s:
        lifecycle.mark_queued(s, ids)
    with arena.sessions() as s:  # just queued: not lost yet, whatever the broker says
        assert lifecycle.lost_queued(s, [], older_than_s=60) == []
    with arena.sessions() as s:
        s.execute(text("UPDATE matches SET queued_at = :t"), {"t": utcnow() - timedelta(seconds=120)})
        s.commit()
    with arena.sessions() as s:
        assert lifecycle.lost_queued(s, [ids[0]], older_than_s=60) == ids[1:]
    with arena.sessions() as s:  # re-sent just now: not again before another 60 s; the first
        # one is still old, so once the broker no longer holds it, it is re-sent too
        assert lifecycle.lost_queued(s, [ids[0]], older_than_s=60) == []
        assert lifecycle.lost_queued(s, [], older_than_s=60) == [ids[0]]


def test_two_reapers_never_take_the_same_match(arena):
    tid, ids = _tournament(arena, 40)
    with arena.sessions() as s:
        s.execute(text("UPDATE matches SET lease_expires_at = :t"), {"t": utcnow() - timedelta(seconds=1)})
        s.commit()
    barrier = threading.Barrier(4)
    taken: list[list[int]] = []

    def reaper() -> None:
        with arena.sessions() as s:
            s.execute(text("SELECT 1"))
            barrier.wait()
            taken.append(lifecycle.reap_expired(s))

    threads = [threading.Thread(target=reaper) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    flat = [m for part in taken for m in part]
    assert sorted(flat) == sorted(ids)  # every expired match once, none twice


def test_broker_match_ids_reads_waiting_and_recent_deliveries(arena, redis_url):
    from arena.queue import PRIORITY_QUEUE, CeleryDispatcher
    from arena.reaper import UNACKED_INDEX_KEY, UNACKED_KEY, _task_id, broker_match_ids

    rc = redis.Redis.from_url(redis_url)
    queue = f"arena.test.ids-{id(rc)}"
    rc.delete(queue)
    CeleryDispatcher(arena.settings.broker_url, queue=queue).send_matches([987650, 987651])
    CeleryDispatcher(arena.settings.broker_url).send_matches([9], priority=True)
    raw = rc.lrange(queue, 0, 0)[0]
    try:
        assert {987650, 987651} <= broker_match_ids(rc, queues=(queue,))
        assert 9 in broker_match_ids(rc, queues=(PRIORITY_QUEUE,))
        # a delivery held by a worker: seen while recent, left out once old (its worker died)
        rc.hset(UNACKED_KEY, "tag-old", json.dumps([json.loads(raw), "", queue]))
        rc.zadd(UNACKED_INDEX_KEY, {"tag-old": time.time() - 120})
        held = _task_id(json.loads(raw))[1]
        assert held in (987650, 987651) and held in broker_match_ids(rc, queues=())
        assert held not in broker_match_ids(rc, queues=(), unacked_max_age_s=60)
    finally:
        rc.delete(queue)
        rc.lrem(PRIORITY_QUEUE, 0, rc.lrange(PRIORITY_QUEUE, 0, -1)[-1])
        rc.hdel(UNACKED_KEY, "tag-old")
        rc.zrem(UNACKED_INDEX_KEY, "tag-old")
