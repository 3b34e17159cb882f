"""Clocks are public (issue 29, part A point 2): the live view of a match, which a contestant
watches for its own bot's match, shows every seat's time after each decision; a bot's decision
request must carry the same, so that a watcher feeding its bot from the live view gains nothing.

A real Celery worker plays a Million Doubt match of a tournament between two SDK bots over HTTP
(each records the requests it receives, in the order they arrive), publishing on real Redis;
the test listens to the public live channel as a contestant's browser does. Every request a bot
received carries in ``banks_ms``, for every seat, the bank the live channel showed last for that
seat in that game (the initial bank before its first answer)."""

from __future__ import annotations

import json
import random
import threading
import time
from typing import Any

import pytest
import redis

from arena import live
from bots_sdk.bot import Request
from bots_sdk.samples import SAMPLE_BOTS
from tests.worker.conftest import SwitchBot

INITIAL_MS = 5000


class RecordingBot(SAMPLE_BOTS["greedy"]):
    """The greedy sample bot that thinks 1-12 ms (the banks move: no increment) and records
    every decision request it receives in ``log`` (shared by both bots: the arrival order)."""

    def __init__(self, log: list[dict], lock: threading.Lock, seed: int):
        super().__init__()
        self.log, self.lock, self.rng = log, lock, random.Random(seed)

    def decide(self, request: Any) -> dict:
        raw = request.raw if isinstance(request, Request) else request
        with self.lock:
            self.log.append(dict(raw))
            think = self.rng.uniform(0.001, 0.012)
        time.sleep(think)
        return super().decide(request)


class Watcher:
    """Every message of the public live channels (a pattern subscription made before the
    match starts: the publisher sends to a channel as soon as it has a subscriber)."""

    def __init__(self, url: str):
        self.client = redis.Redis.from_url(url)
        self.pubsub = self.client.pubsub(ignore_subscribe_messages=True)
        self.pubsub.psubscribe(live.channel("*", full=False))
        self.messages: list[dict] = []
        self.ended = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            msg = self.pubsub.get_message(timeout=0.2)
            if msg is None:
                continue
            data = json.loads(msg["data"])
            self.messages.append(data)
            if data.get("type") == "end":
                self.ended.set()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.pubsub.close()
        self.client.close()


@pytest.mark.slow
def test_every_request_carries_the_clocks_the_live_view_shows(arena, bots, celery_worker_factory, redis_url):
    received: list[dict] = []
    lock = threading.Lock()
    ids = []
    for i in range(2):
        server = SwitchBot(RecordingBot(received, lock, seed=i))
        bots.append(server)
        ids.append(arena.register(server, ["million_doubt"], f"clock-{i}"))
    received.clear()  # the check's games
    tid = arena.create(
        "million_doubt",
        ids,
        games_per_pairing=3,
        time_rules={"initial": INITIAL_MS / 1000, "increment": 0.0, "cap": INITIAL_MS / 1000},
    )
    watcher = Watcher(redis_url)
    try:
        worker = celery_worker_factory(database_url=arena.database_url)
        arena.start(tid)
        t = arena.wait_finished(tid, workers=[worker])
        assert t["status"] == "finished"
        assert watcher.ended.wait(60)
    finally:
        watcher.close()
    [(m, _res, log)] = arena.stored(tid)
    steps = [s for s in watcher.messages if s.get("type") == "step" and s["match_id"] == m.id]
    requests = [r for r in received if r["match_id"] == f"arena-{m.id}"]
    assert len(requests) == len(steps) == sum(len(g["exchanges"]) for g in log["games"]) > 20

    checked = 0
    for game in range(3):
        game_steps = [s for s in steps if s["game"] == game]
        game_requests = [r for r in requests if r["game"] == game]
        assert [s["step"] for s in game_steps] == list(range(len(game_requests)))  # none missed
        shown = [INITIAL_MS, INITIAL_MS]  # what a watcher of the live view knows of each clock
        for n, req in enumerate(game_requests):
            assert req["banks_ms"] == shown, (game, n)
            assert req["banks_ms"][req["seat"]] == req["time"]["remaining_ms"]
            step = game_steps[n]
            assert step["seat"] == req["seat"]
            shown[step["seat"]] = step["bank_after_ms"]
            checked += 1
    assert checked == len(requests)
    # the clocks really moved: the requests told each bot its opponent's spent time
    assert min(min(r["banks_ms"]) for r in requests) < INITIAL_MS - 20
