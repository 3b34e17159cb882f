"""A worker whose ARENA_ENCRYPTION_KEYS cannot decrypt the bots' signing secrets (issue 24,
point 6): another key, or none (so its own key file). A real worker gets a match and a bot
check: the match ends ``failed`` at once with a reason naming the key problem and the
worker, unplayed (no request to any bot, ``attempts`` 0), its tournament finishes; the check
ends ``error`` with the same problem and the bot keeps its status. Once a worker with the
right key runs, the organizer's retry plays the match."""

from __future__ import annotations

import socket
import time

import pytest

from arena import crypto
from bots_sdk.samples import SAMPLE_BOTS
from tests.worker.conftest import SwitchBot

pytestmark = pytest.mark.services
#: Guard of every wait on observable state (never a timed assertion).
GUARD_S = 120.0


@pytest.mark.parametrize("key", ["wrong", "missing"])
def test_a_worker_without_the_key_fails_the_match_and_the_check_saying_why(
    arena, bots, celery_worker_factory, monkeypatch, tmp_path, key
):
    good = crypto.new_key()
    monkeypatch.setenv(crypto.ENV_KEYS, good)  # the API's key (and the good worker's, inherited)
    bots.extend([SwitchBot(SAMPLE_BOTS["greedy"]()), SwitchBot(SAMPLE_BOTS["greedy"]())])
    ids = [arena.register(b, ["million_doubt"], f"k{i}") for i, b in enumerate(bots)]
    tid = arena.create("million_doubt", ids, games_per_pairing=2)
    bad_env = (
        {crypto.ENV_KEYS: crypto.new_key()}
        if key == "wrong"
        else {crypto.ENV_KEYS: "", "ARENA_DATA_DIR": str(tmp_path / "worker-data")}
    )
    bad = celery_worker_factory(concurrency=1, database_url=arena.database_url, env=bad_env)
    posts = sum(b.posts for b in bots)
    arena.start(tid)
    t = arena.wait_finished(tid, timeout_s=GUARD_S, workers=[bad])
    assert t["status"] == "finished" and t["progress"]["finished"] == 0
    [row] = arena.get(f"/tournaments/{tid}/matches")["items"]
    problem = f"{crypto.KEY_PROBLEM}: ARENA_ENCRYPTION_KEYS is {key}"
    assert row["status"] == "failed" and row["failure"].startswith(problem), row
    assert f", on worker {socket.gethostname()[:64]}:" in row["failure"]  # host:pid of the worker
    assert "the match was not played" in row["failure"]
    assert row["attempts"] == 0 and sum(b.posts for b in bots) == posts  # no bot was called
    assert arena.counts(tid) == {"matches": 1, "results": 0, "logs": 0}

    # the bot check, on the same worker
    r = arena.client.post(f"/api/v1/bots/{ids[0]}/check", headers=arena.owner)
    assert r.status_code == 202, r.json
    deadline = time.monotonic() + GUARD_S
    while (check := arena.get(f"/bots/{ids[0]}/check"))["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, bad.log()[-3000:]
        time.sleep(0.1)
    assert check["status"] == "error" and check["error"].startswith(problem), check
    assert "the check could not run" in check["error"] and check["result"] is None
    assert arena.get(f"/bots/{ids[0]}")["status"] == "ready"  # its status before the check
    assert sum(b.posts for b in bots) == posts

    # the key fixed (a worker with the API's key), the organizer retries: the match is played
    bad.stop()
    good_worker = celery_worker_factory(concurrency=1, database_url=arena.database_url)
    r = arena.client.post(f"/api/v1/tournaments/{tid}/retry", headers=arena.org)
    assert r.status_code == 202, r.json
    t = arena.wait_finished(tid, timeout_s=GUARD_S, workers=[good_worker])
    assert t["status"] == "finished" and t["progress"]["finished"] == 1
    [(m, res, _log)] = arena.stored(tid)
    assert m.status == "finished" and m.attempts == 1 and m.failure is None
