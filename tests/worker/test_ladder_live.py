"""A ladder through real processes (docs/ladder.md): Celery beat ticking every second, a real
worker, PostgreSQL, Redis and HTTP bots on 127.0.0.1. It runs unattended through many
ticks; two bots of one owner never share a table; a new bot is placed; a bot killed mid-ladder
is paused by the health rule while the others keep playing, and the sets it forfeited
without a valid decision are never rated; a new version takes its parent's place and plays
it on identical deals; a set delivered twice is rated once."""

from __future__ import annotations

import random
import uuid
from collections import Counter

import pytest
from sqlalchemy import func, select

from arena.db.models import LadderEntry, LadderRating, LadderSet, Match, utcnow
from arena.queue import LADDER_QUEUE, PRIORITY_QUEUE, QUEUE, RUN_MATCH_TASK
from arena.usecases import ladders
from tests.helpers import wait_until
from tests.worker.conftest import SwitchBot

pytestmark = [pytest.mark.services, pytest.mark.slow]

RS = "million_doubt"
#: What the beat is told: a tick a second, probes every 2 s, the reaper every second.
BEAT_ENV = {
    "ARENA_LADDER_TICK_S": "1",
    "ARENA_LADDER_PROBE_S": "2",
    "ARENA_LADDER_FIT_S": "2",
    "ARENA_REAPER_INTERVAL_S": "1",
    "ARENA_LOST_AFTER_S": "5",
}
QUEUES = (PRIORITY_QUEUE, "arena.checks", QUEUE, LADDER_QUEUE)
#: Guard against a hung ladder (never a timed assertion).
LADDER_TIMEOUT_S = 180.0


def _contestant(arena) -> dict[str, str]:
    r = arena.client.post("/api/v1/accounts", json={"name": "c-" + uuid.uuid4().hex[:6]})
    assert r.status_code == 201, r.json
    return {"Authorization": f"Bearer {r.json['token']}"}


def _bot(arena, bots: list[SwitchBot], owner: dict[str, str], name: str, parent: int | None = None) -> int:
    server = SwitchBot()
    bots.append(server)
    body = {"name": name, "url": server.url, "rulesets": [RS]}
    if parent is not None:
        body["parent_id"] = parent
    r = arena.client.post("/api/v1/bots", json=body, headers=owner)
    assert r.status_code == 201, r.json
    server.set_secret(r.json["secret"])
    check = arena.eager_client.post(f"/api/v1/bots/{r.json['id']}/check", headers=owner)
    assert check.json["status"] == "passed", check.json
    return r.json["id"]


def _ladder(arena, **config) -> int:
    r = arena.client.post(
        "/api/v1/ladders",
        json={
            "name": "live",
            "ruleset": RS,
            "open": True,
            "time_rules": {"initial": 1.0, "increment": 0.1, "cap": 1.0},
            # an hour's limit high enough for quick bots on 1 s ticks: with 120 an hour the
            # opponents of a new version used theirs up in the earlier phases (0 sets formed)
            "config": {
                "fill_with_house_bots": False,
                "placement_sets": 3,
                "pair_free_sets": 1000,
                "max_sets_per_hour": 3600,
                **config,
            },
        },
        headers=arena.org,
    )
    assert r.status_code == 201, r.json
    return r.json["id"]


def _enter(arena, ladder: int, bot: int, owner: dict[str, str]) -> None:
    r = arena.client.post(
        f"/api/v1/ladders/{ladder}/entries", json={"bot_id": bot, "max_sets_per_hour": 3600}, headers=owner
    )
    assert r.status_code == 201, r.json


def _entry(arena, ladder: int, bot: int) -> dict:
    return arena.get(f"/ladders/{ladder}/entries/{bot}")


def _sets(arena, ladder_id: int) -> list[LadderSet]:
    with arena.sessions() as s:
        return list(s.scalars(select(LadderSet).where(LadderSet.ladder_id == ladder_id).order_by(LadderSet.match_id)))


def test_a_ladder_runs_unattended_and_keeps_its_rules(arena, bots, celery_worker_factory, beat_factory):
    ann, ben, cat, dan = (_contestant(arena) for _ in range(4))
    ladder = _ladder(arena)
    a1, a2 = _bot(arena, bots, ann, "ann-1"), _bot(arena, bots, ann, "ann-2")
    b, c = _bot(arena, bots, ben, "ben"), _bot(arena, bots, cat, "cat")
    for bot, owner in ((a1, ann), (a2, ann), (b, ben), (c, cat)):
        _enter(arena, ladder, bot, owner)
    workers = [celery_worker_factory(pool="threads", concurrency=8, queues=QUEUES, database_url=arena.database_url)]
    beat = beat_factory(database_url=arena.database_url, env=BEAT_ENV)

    def sets_of(bot: int) -> int:
        return _entry(arena, ladder, bot)["sets"]

    def wait(condition, what: str) -> None:
        try:
            wait_until(condition, what, LADDER_TIMEOUT_S)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nbeat:\n{beat.log()[-4000:]}\nworker:\n{workers[0].log()[-4000:]}") from None

    # unattended through many ticks: every entry rated in several sets
    wait(lambda: all(sets_of(x) >= 4 for x in (a1, a2, b, c)), "every bot rated in 4 sets")
    rows = _sets(arena, ladder)
    # formed in several rounds: by the beat's ticks, or by the refills of done sets (a refill
    # forms its sets under the last tick's number, so quick bots may keep every tick idle)
    assert len({r.tick for r in rows}) >= 3 or sum(r.refilled for r in rows) >= 3, [(r.tick, r.refilled) for r in rows]
    with arena.sessions() as s:
        owner_of = {e.id: e.owner_id for e in s.scalars(select(LadderEntry))}
    for r in rows:  # never two bots of one owner at one table
        owners = [owner_of[e] for e in r.entries]
        assert len(owners) == len(set(owners)), r.entries
    # a new bot is placed: provisional, seated at once
    d = _bot(arena, bots, dan, "dan")
    _enter(arena, ladder, d, dan)
    assert next(r for r in arena.get(f"/ladders/{ladder}")["rows"] if r["bot_id"] == d)["provisional"]
    wait(lambda: sets_of(d) >= 3, "the new bot placed")
    # a bot killed mid-ladder: paused by the ladder, why and since when; the others play on
    server_b = bots[2]
    server_b.down()
    wait(lambda: _entry(arena, ladder, b)["status"] == "paused", "the dead bot paused")
    paused = _entry(arena, ladder, b)
    assert paused["paused_by"] == "health" and paused["paused_at"] and paused["paused_reason"], paused
    before = {x: sets_of(x) for x in (a1, c, d)}
    wait(lambda: sum(sets_of(x) for x in before) >= sum(before.values()) + 3, "the others play on")
    # what the dead bot forfeited without a valid decision moved no rating
    with arena.sessions() as s:
        entry_b = s.scalar(select(LadderEntry).where(LadderEntry.bot_id == b))
        dead = [r for r in s.scalars(select(LadderSet).where(LadderSet.ladder_id == ladder)) if entry_b.id in r.entries]
        unrated = [r for r in dead if r.rating == "unrated"]
        assert unrated, [r.rating for r in dead]
        for r in unrated:
            assert (
                s.scalar(select(func.count()).select_from(LadderRating).where(LadderRating.match_id == r.match_id)) == 0
            )
    # a new version takes its parent's place from its mean, and meets it on identical deals
    v2 = _bot(arena, bots, ann, "ann-1-v2", parent=a1)
    child = _entry(arena, ladder, v2)
    assert child["status"] == "active" and child["sigma"] > 8
    assert _entry(arena, ladder, a1)["status"] == "replaced"
    with arena.sessions() as s:  # the parent's mean when it was replaced: one of its ratings
        parent_entry = s.scalar(select(LadderEntry).where(LadderEntry.bot_id == a1, LadderEntry.ladder_id == ladder))
        means = [r.mu for r in s.scalars(select(LadderRating).where(LadderRating.entry_id == parent_entry.id))]
    assert any(child["mu"] == pytest.approx(mu) for mu in means), (child["mu"], means)
    wait(lambda: (_entry(arena, ladder, v2)["compare"] or {}).get("sets", 0) >= 1, "a comparison on one deal")
    with arena.sessions() as s:
        twins = list(s.scalars(select(LadderSet).where(LadderSet.ladder_id == ladder, LadderSet.kind == "comparison")))
        seeds = Counter(s.get(Match, t.match_id).seed for t in twins)
        assert twins and all(n == 2 for n in seeds.values())  # each deal played by both versions
    assert beat.alive() and all(w.alive() for w in workers)


def test_a_set_delivered_twice_is_rated_once(arena, bots, celery_worker_factory):
    owners = [_contestant(arena) for _ in range(2)]
    ladder = _ladder(arena)
    ids = [_bot(arena, bots, o, f"b{i}") for i, o in enumerate(owners)]
    for bot, owner in zip(ids, owners):
        _enter(arena, ladder, bot, owner)
    sent: list[int] = []
    ladders.tick(
        arena.sessions, sent.extend, tick_s=60, probe_s=300, online=lambda x: set(), now=utcnow(), rng=random.Random(1)
    )
    (match_id,) = sent
    worker = celery_worker_factory(pool="threads", concurrency=4, queues=QUEUES, database_url=arena.database_url)
    for _ in range(2):  # the broker delivers the set twice
        worker.app.send_task(RUN_MATCH_TASK, args=[match_id], queue=LADDER_QUEUE)
    wait_until(lambda: _sets(arena, ladder)[0].rating == "rated", "the set rated", LADDER_TIMEOUT_S)
    wait_until(lambda: "duplicate match" in worker.log() or "skipped" in worker.log(), "the second delivery done")
    with arena.sessions() as s:
        assert s.scalar(select(func.count()).select_from(LadderRating).where(LadderRating.match_id == match_id)) == 2
        assert sorted(e.sets for e in s.scalars(select(LadderEntry).where(LadderEntry.bot_id.in_(ids)))) == [1, 1]
