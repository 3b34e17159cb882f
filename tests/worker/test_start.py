"""Starting a tournament off the request path (arena.usecases.tournaments.send_tournament): the start
only marks it running and sends one task; the schedule is stored once and every match is
sent once, even by two senders at the same time; ``progress.queued`` shows the sending."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import threading
import time
import uuid

import pytest
import redis
from sqlalchemy import select, text

from api.resources.tournaments import INLINE_SEND_MATCHES
from arena import lifecycle
from arena.accounts import create_account
from arena.config import Settings
from arena.db.models import Bot, Match
from arena.db.session import make_engine, make_sessionmaker
from arena.queue import ENQUEUE_TOURNAMENT_TASK, PRIORITY_QUEUE, RUN_MATCH_TASK, CeleryDispatcher
from arena.reaper import UNACKED_INDEX_KEY, UNACKED_KEY, reap
from arena.usecases import tournaments as usecases
from arena.usecases.tournaments import FIRST_SEND_BATCH, SEND_BATCH
from tests.worker.conftest import Arena


@functools.lru_cache(maxsize=4)
def _sessions(database_url: str):
    return make_sessionmaker(make_engine(database_url))


def send_tournament(settings: Settings, tournament_id: int, **batches: int) -> int:
    """What the worker's ``arena.enqueue_tournament`` runs, with ``settings``."""
    dispatcher = CeleryDispatcher(settings.broker_url)
    return usecases.send_tournament(_sessions(settings.database_url), tournament_id, dispatcher, **batches)


def _messages(client: redis.Redis) -> list[tuple[str, list]]:
    out = []
    for raw in client.lrange("arena", 0, -1):
        headers = json.loads(raw)["headers"]
        out.append(
            (headers["task"], json.loads(headers["argsrepr"].replace("(", "[").replace(",)", "]").replace(")", "]")))
        )
    return out


def _ready_bots(arena: Arena, ruleset: str, count: int) -> list[int]:
    """``count`` bots stored as ``ready`` for ``ruleset`` (never called: no worker plays)."""
    with arena.sessions() as s:
        owner, _ = create_account(s, "own-" + uuid.uuid4().hex[:6], "contestant")
        bots = [
            Bot(
                owner_id=owner.id,
                name=f"b{i}",
                url=f"http://127.0.0.1:9/{i}",
                secret="x",
                rulesets=[ruleset],
                status="ready",
            )
            for i in range(count)
        ]
        s.add_all(bots)
        s.commit()
        return [b.id for b in bots]


@pytest.mark.services
def test_start_sends_one_task_and_two_senders_send_each_match_once(pg_database, redis_url, tmp_path):
    # a Redis database no worker consumes: the messages stay there to be counted
    broker = redis_url.rsplit("/", 1)[0] + "/7"
    client = redis.Redis.from_url(broker)
    client.delete("arena")
    arena = Arena(pg_database, broker, tmp_path=tmp_path)
    try:
        ids = _ready_bots(arena, "million_doubt", 20)
        tid = arena.create("million_doubt", ids, games_per_pairing=2)
        started = arena.start(tid)
        # the answer comes before any match is stored: one task, no match message yet
        assert started["status"] == "running" and started["progress"] == {"finished": 0, "total": 0, "queued": 0}
        assert _messages(client) == [(ENQUEUE_TOURNAMENT_TASK, [tid])]
        client.delete("arena")
        # a start clicked twice, or a redelivered task: two senders at once
        sent: list[int] = []
        senders = [
            threading.Thread(target=lambda: sent.append(send_tournament(arena.settings, tid, batch=7)))
            for _ in range(2)
        ]
        for t in senders:
            t.start()
        for t in senders:
            t.join(60)
        assert sum(sent) == 190  # 20 bots: 190 pairs, each stored once and sent once
        messages = _messages(client)
        assert [task for task, _ in messages] == [RUN_MATCH_TASK] * 190
        assert len({args[0] for _, args in messages}) == 190
        got = arena.get(f"/tournaments/{tid}")
        assert got["progress"] == {"finished": 0, "total": 190, "queued": 190}
        assert arena.counts(tid)["matches"] == 190
        # nothing left to send: a new start is a conflict, a new sender sends nothing
        r = arena.client.post(f"/api/v1/tournaments/{tid}/start", headers=arena.org)
        assert r.status_code == 409
        assert send_tournament(arena.settings, tid) == 0 and client.llen("arena") == 190
        # a cancelled tournament gets nothing sent (a start task that arrives late)
        other = arena.create("million_doubt", ids, games_per_pairing=2)
        arena.start(other)
        assert arena.client.post(f"/api/v1/tournaments/{other}/cancel", headers=arena.org).status_code == 200
        assert send_tournament(arena.settings, other) == 0 and arena.counts(other)["matches"] == 0
    finally:
        client.delete("arena")
        arena.close()


@pytest.mark.services
def test_small_field_with_many_matches_has_every_match_sent(pg_database, redis_url, tmp_path):
    """8 bots at Trump Millionaire: the schedule (280 matches, over the inline send limit)
    is stored in the request, which sends the first 200 matches (so the workers start at
    once, not after a busy worker sent them); the worker's task sends the other 80. Every
    match must reach the broker once (a regression: the start left them marked ``queued``
    but unsent, so the sender found nothing ``pending`` and they waited for the reaper)."""
    broker = redis_url.rsplit("/", 1)[0] + "/6"
    client = redis.Redis.from_url(broker)
    client.delete("arena")
    arena = Arena(pg_database, broker, tmp_path=tmp_path)
    try:
        ids = _ready_bots(arena, "trump_millionaire", 8)
        tid = arena.create("trump_millionaire", ids, games_per_pairing=1)
        started = arena.start(tid)
        assert started["progress"] == {"finished": 0, "total": 280, "queued": INLINE_SEND_MATCHES}
        with arena.sessions() as s:
            order = list(s.scalars(select(Match.id).where(Match.tournament_id == tid).order_by(Match.index)))
        # LPUSH: the list's tail is the oldest message; the first matches of the schedule
        # went first, then the task that sends the rest
        sent = list(reversed(_messages(client)))
        assert sent == [(RUN_MATCH_TASK, [m]) for m in order[:INLINE_SEND_MATCHES]] + [(ENQUEUE_TOURNAMENT_TASK, [tid])]
        client.delete("arena")
        assert send_tournament(arena.settings, tid) == 280 - INLINE_SEND_MATCHES  # what the task runs
        assert list(reversed(_messages(client))) == [(RUN_MATCH_TASK, [m]) for m in order[INLINE_SEND_MATCHES:]]
        assert arena.get(f"/tournaments/{tid}")["progress"] == {"finished": 0, "total": 280, "queued": 280}
        assert send_tournament(arena.settings, tid) == 0
    finally:
        client.delete("arena")
        arena.close()


@pytest.mark.services
def test_the_task_sends_small_batches_first(pg_database, redis_url, tmp_path):
    """A worker's claim of a match waits while the batch holding its row is being sent, so
    the task's batches start small and double (FIRST_SEND_BATCH up to SEND_BATCH): the first
    matches are claimable after 4 sends, not after 200. Each batch is marked ``queued`` in
    one transaction (one ``queued_at``), in schedule order."""
    broker = redis_url.rsplit("/", 1)[0] + "/5"
    client = redis.Redis.from_url(broker)
    client.delete("arena")
    arena = Arena(pg_database, broker, tmp_path=tmp_path)
    try:
        ids = _ready_bots(arena, "million_doubt", 20)  # over the inline field: the task stores and sends
        tid = arena.create("million_doubt", ids, games_per_pairing=2)
        arena.start(tid)
        assert _messages(client) == [(ENQUEUE_TOURNAMENT_TASK, [tid])]
        client.delete("arena")
        assert send_tournament(arena.settings, tid) == 190
        with arena.sessions() as s:
            rows = s.execute(
                select(Match.id, Match.queued_at).where(Match.tournament_id == tid).order_by(Match.index)
            ).all()
        sizes: list[int] = []
        for i, (_index, at) in enumerate(rows):
            if i == 0 or at != rows[i - 1][1]:
                sizes.append(0)
            sizes[-1] += 1
        assert FIRST_SEND_BATCH == 4 and SEND_BATCH == 200
        assert sizes == [4, 8, 16, 32, 64, 66]
        assert [queued for _, queued in rows] == sorted(queued for _, queued in rows)
        # the messages went out in the same order
        assert list(reversed(_messages(client))) == [(RUN_MATCH_TASK, [m]) for m, _ in rows]
    finally:
        client.delete("arena")
        arena.close()


@contextlib.contextmanager
def _reaper_arena(pg_database, redis_url, tmp_path, db: int):
    """``(arena, broker client, settings with lost_after_s 60)`` on broker database ``db``
    (no worker reads it), emptied before and after."""
    broker = redis_url.rsplit("/", 1)[0] + f"/{db}"
    client = redis.Redis.from_url(broker)
    client.flushdb()
    arena = Arena(pg_database, broker, tmp_path=tmp_path)
    try:
        yield arena, client, dataclasses.replace(arena.settings, lost_after_s=60)
    finally:
        client.flushdb()
        arena.close()


def _backdate_start(arena: Arena, tid: int, seconds: float) -> None:
    with arena.sessions() as s:
        s.execute(
            text("UPDATE tournaments SET started_at = started_at - make_interval(secs => :s) WHERE id = :t"),
            {"s": seconds, "t": tid},
        )
        s.commit()


@pytest.mark.services
def test_reaper_resends_a_start_whose_sender_the_broker_lost(pg_database, redis_url, tmp_path):
    """The attacker's Redis restart without persistence right after a start: the 200 matches
    the request sent and its ``arena.enqueue_tournament`` task (for the other 80) are gone.
    The reaper re-sends the queued matches (lost messages) and the task (a stalled start),
    once: a second run finds the task's message and sends nothing. The task then sends the
    80 still pending and the tournament has every match in the broker, no operator action."""
    with _reaper_arena(pg_database, redis_url, tmp_path, 4) as (arena, client, settings):
        ids = _ready_bots(arena, "trump_millionaire", 8)
        tid = arena.create("trump_millionaire", ids, games_per_pairing=1)
        arena.start(tid)
        client.flushdb()  # Redis restarted without its data
        # nothing to do while the start is recent: its sender may still be on its way
        assert reap(settings, arena.sessions, client).stalled == []
        _backdate_start(arena, tid, 120)
        with arena.sessions() as s:
            s.execute(
                text("UPDATE matches SET queued_at = queued_at - interval '120 seconds' WHERE tournament_id = :t"),
                {"t": tid},
            )
            s.commit()
        report = reap(settings, arena.sessions, client)
        assert len(report.lost) == INLINE_SEND_MATCHES and report.stalled == [tid]
        assert (ENQUEUE_TOURNAMENT_TASK, [tid]) in [
            (headers["task"], args) for headers, args in _priority_messages(client)
        ]
        again = reap(settings, arena.sessions, client)
        assert again.stalled == [] and again.lost == []
        assert send_tournament(settings, tid) == 280 - INLINE_SEND_MATCHES  # what the task runs
        with arena.sessions() as s:
            assert lifecycle.stalled_tournaments(s, older_than_s=60) == []
        assert arena.get(f"/tournaments/{tid}")["progress"] == {"finished": 0, "total": 280, "queued": 280}


@pytest.mark.services
def test_reaper_restarts_a_large_start_whose_worker_died_before_storing(pg_database, redis_url, tmp_path):
    """A field over the inline size: the worker holding ``arena.enqueue_tournament`` died
    (its message delivered and never acknowledged, older than ``lost_after_s``) before the
    schedule was stored. The running tournament has no match: the reaper sends the task
    again, which stores the schedule and sends every match."""
    with _reaper_arena(pg_database, redis_url, tmp_path, 3) as (arena, client, settings):
        ids = _ready_bots(arena, "million_doubt", 20)
        tid = arena.create("million_doubt", ids, games_per_pairing=2)
        arena.start(tid)
        # a worker took the task and died: the message sits in kombu's unacked hash
        raw = client.rpop("arena")
        client.hset(UNACKED_KEY, "tag-dead", json.dumps([json.loads(raw), "", "arena"]))
        client.zadd(UNACKED_INDEX_KEY, {"tag-dead": time.time() - 30})
        _backdate_start(arena, tid, 120)
        # delivered 30 s ago: its worker may still be storing the schedule
        assert reap(settings, arena.sessions, client).stalled == []
        client.zadd(UNACKED_INDEX_KEY, {"tag-dead": time.time() - 120})
        assert reap(settings, arena.sessions, client).stalled == [tid]
        assert send_tournament(settings, tid) == 190
        with arena.sessions() as s:
            assert lifecycle.stalled_tournaments(s, older_than_s=60) == []
        assert arena.counts(tid)["matches"] == 190


def _priority_messages(client: redis.Redis) -> list[tuple[dict, list]]:
    out = []
    for raw in client.lrange(PRIORITY_QUEUE, 0, -1):
        headers = json.loads(raw)["headers"]
        out.append((headers, json.loads(headers["argsrepr"].replace("(", "[").replace(",)", "]").replace(")", "]"))))
    return out
