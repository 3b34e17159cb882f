"""The test infrastructure itself: real PostgreSQL, real Redis, a real Celery worker."""

from __future__ import annotations

import socket
import uuid

import psycopg
import pytest
import redis

from arena.queue import PING_TASK, QUEUE

pytestmark = pytest.mark.services


def _libpq_url(sqlalchemy_url: str) -> str:
    return sqlalchemy_url.replace("postgresql+psycopg://", "postgresql://", 1)


def test_pg_url_shape(pg_url):
    assert pg_url.startswith("postgresql+psycopg://postgres@127.0.0.1:")
    assert pg_url.endswith("/arena")


def test_postgres_answers_select_1(pg_url):
    with psycopg.connect(_libpq_url(pg_url), connect_timeout=10) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
        assert conn.execute("select current_database()").fetchone() == ("arena",)
        major = conn.execute("show server_version_num").fetchone()[0]
        assert int(major) // 10000 == 15


def test_postgres_keeps_written_rows(pg_url):
    table = f"t_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_libpq_url(pg_url)) as conn:
        conn.execute(f"create table {table} (seat int primary key, name text)")
        conn.execute(f"insert into {table} values (0, 'north'), (1, 'east')")
    with psycopg.connect(_libpq_url(pg_url)) as conn:
        rows = conn.execute(f"select seat, name from {table} order by seat").fetchall()
        conn.execute(f"drop table {table}")
    assert rows == [(0, "north"), (1, "east")]


def test_redis_answers_ping(redis_url):
    client = redis.Redis.from_url(redis_url, socket_timeout=10)
    try:
        assert client.ping() is True
        key = f"arena-test:{uuid.uuid4().hex}"
        client.set(key, "trick", ex=60)
        assert client.get(key) == b"trick"
        client.delete(key)
    finally:
        client.close()


def test_free_port_is_bindable(free_port):
    port = free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_celery_worker_round_trips_ping(celery_worker_factory):
    worker = celery_worker_factory()
    assert worker.alive()
    # Through the shared queue, like the API will send match tasks.
    result = worker.app.send_task(PING_TASK, queue=QUEUE)
    assert result.get(timeout=30) == "pong"
    assert result.successful()


def test_celery_worker_is_a_separate_process_that_can_be_killed(celery_worker_factory):
    import os

    worker = celery_worker_factory()
    assert worker.pid != os.getpid()
    assert worker.kill() == -9
    assert not worker.alive()


def test_celery_worker_warm_shutdown_on_sigterm(celery_worker_factory):
    worker = celery_worker_factory()
    assert worker.terminate() == 0
    assert "Warm shutdown" in worker.log() or "warm shutdown" in worker.log().lower()
