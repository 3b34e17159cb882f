"""A worker process opens its connections before its first matches (issue 15): the database
pool sized to the threads and that many connections open, Redis connections for the matches'
semaphore calls, and no ceiling below the matches one process runs at once (redis-py's
default pool of 100 connections made the 101st concurrent match send every request without
a slot, "Too many connections"). Real PostgreSQL and Redis."""

from __future__ import annotations

import dataclasses

import pytest
from sqlalchemy import text

from arena import playing
from arena.config import Settings
from arena.db import session as db_session
from arena.runner.semaphore import BotSemaphore

pytestmark = pytest.mark.services


def test_prewarm_opens_the_pools_connections_and_one_redis_connection_per_thread(pg_database, redis_url, tmp_path):
    # a URL of its own (the engine is built once per URL and process), so the pool is new here
    url = pg_database + "?application_name=arena-prewarm-test"
    settings = Settings(data_dir=tmp_path, database_url=url, broker_url=redis_url, celery_eager=False)
    pool_before = dataclasses.replace(db_session.POOL)
    try:
        opened = playing.prewarm(settings, 32)
        engine = db_session.shared_sessions(url).kw["bind"]
        # at most POOL_SIZE kept open whatever the threads (an idle worker of 4 processes x 32
        # threads must not take PostgreSQL's 100 connections)
        assert db_session.POOL_SIZE == 10
        assert opened == {"database": 10, "redis": 32}
        assert engine.pool.size() == 10
        assert engine.pool.checkedin() == 10  # open and given back: the pool keeps them
        assert engine.pool.checkedout() == 0
        # a claim's session takes a connection the pool already has
        with db_session.shared_sessions(url)() as s:
            assert s.connection().scalar(text("select 1")) == 1
            assert engine.pool.checkedin() == 9
        assert engine.pool.checkedin() == 10
    finally:
        vars(db_session.POOL).update(vars(pool_before))
        db_session.shared_sessions(url).kw["bind"].dispose()


def test_prewarm_with_databases_down_opens_nothing_and_does_not_raise(redis_url, free_port, tmp_path):
    port = free_port()
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"postgresql+psycopg://arena@127.0.0.1:{port}/none?connect_timeout=2",
        broker_url=f"redis://127.0.0.1:{free_port()}/0",
        celery_eager=False,
    )
    pool_before = dataclasses.replace(db_session.POOL)
    try:
        assert playing.prewarm(settings, 3) == {"database": 0, "redis": 0}
    finally:
        vars(db_session.POOL).update(vars(pool_before))


def test_more_matches_at_once_than_redis_pys_default_pool_all_get_their_slot_calls(redis_url, tmp_path):
    """150 matches at once on one process, each holding its Redis connection (match_redis):
    every one can still call the semaphore (no "Too many connections" bypass)."""
    settings = Settings(data_dir=tmp_path, database_url="sqlite://", broker_url=redis_url, celery_eager=False)
    clients = [playing.match_redis(settings) for _ in range(150)]
    try:
        assert all(c is not None for c in clients)
        tokens = []
        for i, c in enumerate(clients):
            sem = BotSemaphore(c, f"prewarm-test-{i % 5}", limit=200)
            token = sem.try_acquire(5.0)
            assert token is not None, f"match {i} got no slot call"
            tokens.append((sem, token))
        for sem, token in tokens:
            sem.release(token)
    finally:
        for c in clients:
            if c is not None:
                c.close()


def test_prewarm_gives_up_on_a_database_that_accepts_and_never_answers(redis_url, tmp_path, monkeypatch):
    """A server that accepts connections and never speaks (a hung PostgreSQL, a blackhole
    proxy) must not hang a worker's start-up: the connect times out, prewarm opens nothing."""
    import socket
    import threading
    import time

    monkeypatch.setattr(db_session, "DB_CONNECT_TIMEOUT_S", 1)
    mute = socket.socket()
    mute.bind(("127.0.0.1", 0))
    mute.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        mute.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(mute.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    url = f"postgresql+psycopg://arena@127.0.0.1:{mute.getsockname()[1]}/arena"
    settings = Settings(data_dir=tmp_path, database_url=url, broker_url=redis_url, celery_eager=False)
    pool_before = dataclasses.replace(db_session.POOL)
    try:
        t0 = time.monotonic()
        opened = playing.prewarm(settings, 4)
        took = time.monotonic() - t0
        assert opened["database"] == 0
        assert took < 60  # a hang guard, not a speed goal: without the timeout it never returns
    finally:
        stop.set()
        t.join(5)
        for c in held:
            c.close()
        mute.close()
        vars(db_session.POOL).update(vars(pool_before))
        db_session.shared_sessions(url).kw["bind"].dispose()
