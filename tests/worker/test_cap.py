"""The per-endpoint cap (arena.runner.semaphore) with real Redis, real HTTP bots and a
real worker: registrations of one endpoint share the cap, a request is capped (not a match),
a match waiting for a busy bot holds none of its other bots, and a request that gets no slot
in time is sent and recorded, never silently."""

from __future__ import annotations

import threading
import uuid

import pytest
import redis

from arena.config import Settings
from arena.lifecycle import MatchPlan, SeatPlan
from arena.playing import play_plan, result_fields
from arena.runner.semaphore import BotSemaphore, endpoint_key, normalize_endpoint
from bots_sdk.samples import SAMPLE_BOTS
from bots_sdk.server import make_app as sdk_app
from engine.timebank import TimeRules
from tests.helpers import wait_until
from tests.worker.conftest import SwitchBot


def test_endpoint_normalization_folds_spellings_of_one_endpoint():
    """One server's port is one endpoint whatever the path (the attacker review registered
    /, /v1 of one server to get two caps), scheme, query or spelling of the host."""
    same = [
        "http://127.0.0.1:8000/bot",
        "HTTP://127.0.0.1:8000/bot/",
        "http://127.0.0.1:8000//bot?x=1#f",
        "http://127.0.0.1:8000/a/../bot",
        "http://127.0.0.1:8000/",
        "http://127.0.0.1:8000/v1",
        "https://127.0.0.1:8000/other",
    ]
    assert {normalize_endpoint(u) for u in same} == {"127.0.0.1:8000"}
    assert len({endpoint_key(u) for u in same}) == 1
    assert normalize_endpoint("https://Bot.Example.org") == normalize_endpoint("https://bot.example.org:443/x")
    assert normalize_endpoint("http://bücher.example/") == "xn--bcher-kva.example:80"
    assert normalize_endpoint("http://[::1]:9000/") == "[::1]:9000"
    # other ports or host names are other endpoints (no folding by address: shared proxies)
    others = [
        "http://127.0.0.1:8000/bot",
        "http://127.0.0.1:8001/bot",
        "http://localhost:8000/bot",
        "https://bot.example.org/",
        "https://other.example.org/",
    ]
    assert len({endpoint_key(u) for u in others}) == 5


@pytest.mark.services
def test_registrations_of_one_endpoint_share_its_cap(arena, bots, celery_worker_factory):
    """One server registered twice (two spellings of its URL) plays against two other bots
    on a worker running 4 matches at once, with a cap of 1: the server never has more than
    one decision request in flight, and it was asked by several matches at once (waits)."""
    shared = SwitchBot(SAMPLE_BOTS["greedy"](), mode="slow", sleep_s=0.03)
    others = [SwitchBot(SAMPLE_BOTS["greedy"](), mode="slow", sleep_s=0.03) for _ in range(2)]
    bots.extend([shared, *others])
    first = arena.register(shared, ["million_doubt"], "shared-a")
    second_url = shared.url.rstrip("/")  # the same endpoint, spelled without the slash
    r = arena.client.post(
        "/api/v1/bots", json={"name": "shared-b", "url": second_url, "rulesets": ["million_doubt"]}, headers=arena.owner
    )
    assert r.status_code == 201, r.json
    second = r.json["id"]
    shared.set_secret(r.json["secret"])
    assert arena.check(second)["status"] == "passed"
    shared.inner = sdk_app(shared.bot)  # answers both registrations (each signs with its own secret)
    ids = [first, second] + [arena.register(b, ["million_doubt"], f"o{i}") for i, b in enumerate(others)]
    bot = arena.get(f"/bots/{first}")
    assert bot["max_concurrency"] == arena.settings.bot_max_concurrency  # the cap is visible
    for b in bots:
        b.max_in_flight = 0
    tid = arena.create("million_doubt", ids, games_per_pairing=2)
    worker = celery_worker_factory(
        concurrency=4, pool="threads", database_url=arena.database_url, env={"ARENA_BOT_MAX_CONCURRENCY": "1"}
    )
    arena.start(tid)
    arena.wait_finished(tid, workers=[worker])
    stored = arena.stored(tid)
    assert len(stored) == 6
    assert shared.max_in_flight == 1  # 5 of the 6 matches seat it, 4 run at once
    shared_waits = 0.0
    for m, res, log in stored:
        assert res.faults == [0, 0] and res.timings["semaphore_bypassed"] == [0, 0]
        for seat, s in enumerate(sorted(m.seats, key=lambda x: x.seat)):
            if s.bot_id in (first, second):
                shared_waits += res.timings["semaphore_wait_ms"][seat]
        waited = [ex for g in log["games"] for ex in g["exchanges"] if "slot_wait_ms" in ex]
        assert all(ex["slot_wait_ms"] >= 1 and not ex.get("slot_bypassed") for ex in waited)
    assert shared_waits > 0  # matches did ask the shared endpoint at once, and waited
    assert all(b.max_in_flight == 1 for b in others)


def _plan(match_id: int, servers: list[SwitchBot], ruleset: str = "million_doubt", games: int = 2) -> MatchPlan:
    seats = tuple(SeatPlan(i, 1000 + i, None, f"b{i}", s.url, s.secret) for i, s in enumerate(servers))
    return MatchPlan(
        match_id=match_id,
        tournament_id=1,
        ruleset=ruleset,
        options={},
        time_rules=TimeRules.from_seconds(5, 1, 5),
        games=games,
        seed=match_id,
        max_faults=3,
        attempt=1,
        seats=seats,
    )


def _settings(redis_url: str, tmp_path, **kw) -> Settings:
    return Settings(
        data_dir=tmp_path, database_url="sqlite://", broker_url=redis_url, allow_private_bot_urls=True, **kw
    )


def _evalsha_calls(client: redis.Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


@pytest.mark.services
def test_a_match_waiting_for_a_busy_bot_idles_none_of_its_other_bots(redis_url, tmp_path, bots):
    """Match 1 (B, A) waits for A, whose only slot another holder keeps; meanwhile match 2
    (B, C) plays to its end without waiting for B: match 1 holds no slot of B while it waits.
    Each request costs one script call."""
    a, b, c = (SwitchBot(SAMPLE_BOTS["greedy"]()) for _ in range(3))
    bots.extend([a, b, c])
    for i, s in enumerate((a, b, c)):
        s.set_secret(f"secret-{i}")
    client = redis.Redis.from_url(redis_url)
    settings = _settings(redis_url, tmp_path, bot_max_concurrency=1)
    sem_a = BotSemaphore.for_endpoint(client, a.url, 1)
    sem_b = BotSemaphore.for_endpoint(client, b.url, 1)
    blocker = sem_a.try_acquire(600)  # another match holds A's only slot
    assert blocker is not None
    out: dict = {}
    first = threading.Thread(target=lambda: out.update(zip(("log", "totals"), play_plan(_plan(1, [b, a]), settings))))
    first.start()
    try:
        # match 1 has sent B its start notice and waits for A's slot
        wait_until(lambda: b.posts >= 1 and sem_a.waiting() >= 1, "match 1 waiting for A's slot")
        assert sem_b.holders() == 0 and first.is_alive()
        log2, totals2 = play_plan(_plan(2, [b, c]), settings)
        fields2 = result_fields(_plan(2, [b, c]), log2, totals2)
        assert fields2["timings"]["semaphore_wait_ms"] == [0.0, 0.0] and fields2["faults"] == [0, 0]
        assert fields2["timings"]["semaphore_bypassed"] == [0, 0]
        assert first.is_alive()  # match 2 ran to its end while match 1 was still waiting for A
    finally:
        sem_a.release(blocker)
        first.join(60)
    fields1 = result_fields(_plan(1, [b, a]), out["log"], out["totals"])
    assert fields1["faults"] == [0, 0] and fields1["timings"]["semaphore_bypassed"] == [0, 0]
    assert fields1["timings"]["semaphore_max_wait_ms"][1] > 0  # A's start notice waited (for the blocker)
    # alone on Redis now: each request costs one script call (the release rides on the
    # next), plus one for the last slot given back when the match ends
    from arena.runner.semaphore import EXTENDER

    assert EXTENDER.drain(30)  # match 1's hand-overs lengthened: none of their calls counted here
    before = _evalsha_calls(client)
    log3, _ = play_plan(_plan(4, [b, c]), settings)
    requests = sum(len(g["exchanges"]) for g in log3["games"]) + 4  # decisions + 2 notices per seat
    assert _evalsha_calls(client) - before == requests + 1
    assert sem_a.holders() == 0 and sem_b.holders() == 0  # every slot given back


@pytest.mark.services
def test_a_request_without_a_slot_in_time_is_sent_and_recorded(redis_url, tmp_path, bots):
    """A's only slot is held elsewhere until A has been sent three requests, and a request
    waits at most 1 s: A's first requests are sent without a slot, each recorded on its
    exchange and counted in the result; the wait is not charged to A's bank; once the slot is
    free the requests hold it again."""
    a = SwitchBot(SAMPLE_BOTS["greedy"]())
    b = SwitchBot(SAMPLE_BOTS["greedy"]())
    bots.extend([a, b])
    a.set_secret("sa")
    b.set_secret("sb")
    client = redis.Redis.from_url(redis_url)
    settings = _settings(redis_url, tmp_path, bot_max_concurrency=1, bot_slot_wait_s=1)
    sem_a = BotSemaphore.for_endpoint(client, a.url, 1)
    blocker = sem_a.try_acquire(600)
    done = threading.Event()

    def release_after_three_requests() -> None:
        # the start notice and two decisions went out without a slot: then the slot is free
        while not done.is_set() and a.posts < 3:
            done.wait(0.01)
        sem_a.release(blocker)

    releaser = threading.Thread(target=release_after_three_requests, daemon=True)
    releaser.start()
    try:
        plan = _plan(3, [a, b], games=2)
        log, totals = play_plan(plan, settings)
    finally:
        done.set()
        releaser.join(10)
    fields = result_fields(plan, log, totals)
    assert fields["faults"] == [0, 0]  # the bot is never blamed for the arena's congestion
    a_exchanges = [ex for g in log["games"] for ex in g["exchanges"] if ex["player"] == 0]
    bypassed = [ex for ex in a_exchanges if ex.get("slot_bypassed")]
    assert 1 <= len(bypassed) < len(a_exchanges)  # the first ones; later ones got a slot
    assert all(ex["slot_wait_ms"] >= 1000 and ex["elapsed_ms"] < ex["slot_wait_ms"] for ex in bypassed)
    assert all(ex["bank_before_ms"] - ex["bank_after_ms"] <= ex["elapsed_ms"] for ex in bypassed)
    # the start notice was bypassed too; the result counts every request sent without a slot
    assert fields["timings"]["semaphore_bypassed"][0] == len(bypassed) + 1
    assert fields["timings"]["semaphore_bypassed"][1] == 0
    assert not a_exchanges[-1].get("slot_bypassed")
    assert sem_a.holders() == 0


@pytest.mark.services
def test_semaphore_shared_by_name_counts_across_clients(redis_url):
    """Two semaphores built for one endpoint (two worker processes) are one cap."""
    url = f"http://127.0.0.1:9/{uuid.uuid4().hex}"
    one = BotSemaphore.for_endpoint(redis.Redis.from_url(redis_url), url, 2, max_wait_s=0.2)
    two = BotSemaphore.for_endpoint(redis.Redis.from_url(redis_url), url + "/", 2, max_wait_s=0.2)
    t1, t2 = one.try_acquire(10), two.try_acquire(10)
    assert t1 and t2 and one.holders() == two.holders() == 2
    token, waited = two.acquire(10)
    assert token is None and waited >= 0.2
    one.release(t1)
    two.release(t2)
    assert one.holders() == 0
