"""Play until settled on real PostgreSQL, Redis and Celery workers (issue 28, item 3).

* Two connections storing a round's last two matches at the same moment add one round, not
  two; two deliveries storing the same last match at once add one round, and a redelivery
  after that adds none.
* End to end on a real worker, against sample bots over HTTP: heuristic against random stops
  "settled" before its maximum of rounds; greedy against greedy plays every round and stops
  at the maximum. Both set their seed (reproducible deals: the bots are seeded too).
"""

from __future__ import annotations

import threading
import uuid

import pytest
from sqlalchemy import func, select

from arena import lifecycle
from arena.accounts import create_account
from arena.db.models import Match, MatchResult
from arena.schedule import ScheduledMatch
from arena.sequential import MIN_GAMES
from bots_sdk.samples import SAMPLE_BOTS
from daifugo_arena.cli.display import settling_text
from tests.worker.conftest import SwitchBot

pytestmark = pytest.mark.services

GAMES = [{"scores": [1.0, -1.0], "places": [1, 2]}, {"scores": [-1.0, 1.0], "places": [2, 1]}]


@pytest.fixture
def solo(arena, bots) -> int:
    """A ready Million Doubt bot: with a house bot, the entrants of the rounds added below."""
    bots.append(SwitchBot(SAMPLE_BOTS["greedy"]()))
    return arena.register(bots[-1], ["million_doubt"], "solo")


def _first_round(arena, bot: int, n_matches: int) -> tuple[int, list[int]]:
    """A running tournament of ``bot`` and a house bot played until settled (at most 3 rounds),
    its first round ``n_matches`` matches of two house seats, every one claimed (running)."""
    with arena.sessions() as s:
        org, _ = create_account(s, "o-" + uuid.uuid4().hex[:12], "organizer")
        t = lifecycle.create_tournament(
            s,
            participants=[bot],
            name="race",
            organizer_id=org.id,
            ruleset="million_doubt",
            options={},
            time_rules={},
            games_per_pairing=2,
            max_faults=3,
            fill_with_house_bots=True,
            public_when_finished=True,
            until_settled={"max_rounds": 3, "delta": 1.0, "alpha": 0.05, "beta": 0.05},
        )
        tid = t.id
    with arena.sessions() as s:
        ids = lifecycle.start_tournament(
            s, tid, lambda _seed: [ScheduledMatch(i, 0, ("house-1", "house-2"), 1000 + i) for i in range(n_matches)]
        )
    for mid in ids:
        with arena.sessions() as s:
            assert isinstance(lifecycle.claim_match(s, mid, owner="t", lease_s=60), lifecycle.Claimed)
    return tid, ids


def _store_at_once(arena, match_ids: list[int]) -> list[lifecycle.Stored]:
    """Store every match of ``match_ids`` (repeats allowed), each from its own connection, all
    released at one barrier; the outcomes in order."""
    barrier = threading.Barrier(len(match_ids))
    out: list[lifecycle.Stored | BaseException] = [RuntimeError("not run")] * len(match_ids)

    def store(k: int, mid: int) -> None:
        try:
            with arena.sessions() as s:
                s.get(Match, mid)  # connected before the barrier
                barrier.wait()
                out[k] = lifecycle.store_result(
                    s, mid, scores=[0.0, 0.0], places=[1, 1], faults=[0, 0], games=GAMES, timings={}, log={"m": mid}
                )
        except BaseException as exc:  # noqa: BLE001 - reported below
            out[k] = exc

    threads = [threading.Thread(target=store, args=(k, mid)) for k, mid in enumerate(match_ids)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    errors = [o for o in out if isinstance(o, BaseException)]
    assert not errors, errors
    return [o for o in out if isinstance(o, lifecycle.Stored)]


def _matches(arena, tid: int) -> int:
    with arena.sessions() as s:
        return int(s.scalar(select(func.count()).select_from(Match).where(Match.tournament_id == tid)))


def test_the_last_two_matches_stored_at_once_add_one_round(arena, solo):
    for _ in range(5):
        tid, ids = _first_round(arena, solo, 2)
        outcomes = _store_at_once(arena, ids)
        assert all(outcomes)  # both stored
        added = [o.added for o in outcomes if o.added]
        assert len(added) == 1 and len(added[0]) == 1  # one round (of the real schedule: one match)
        t = arena.tournament(tid)
        assert (t.status, t.rounds, _matches(arena, tid)) == ("running", 2, 3)
        with arena.sessions() as s:
            (new,) = s.scalars(select(Match).where(Match.id == added[0][0]))
            assert (new.index, new.status) == (2, "queued")


def test_one_match_stored_twice_at_once_adds_one_round_and_a_redelivery_none(arena, solo):
    for _ in range(5):
        tid, (mid,) = _first_round(arena, solo, 1)
        outcomes = _store_at_once(arena, [mid, mid])
        assert sorted(bool(o) for o in outcomes) == [False, True]
        assert [len(o.added) for o in outcomes if o] == [1] and [o.added for o in outcomes if not o] == [()]
        again = _store_at_once(arena, [mid])  # a redelivered task, later
        assert not again[0] and again[0].added == ()
        t = arena.tournament(tid)
        assert (t.rounds, _matches(arena, tid)) == (2, 2)
        with arena.sessions() as s:
            assert s.scalar(select(func.count()).select_from(MatchResult).where(MatchResult.match_id == mid)) == 1


def _duel(arena, bots, kinds: tuple[str, str], **kw) -> int:
    for i, kind in enumerate(kinds):
        bots.append(SwitchBot(SAMPLE_BOTS[kind](seed=i)))
    ids = [arena.register(b, ["million_doubt"], f"{kind}-{i}") for i, (b, kind) in enumerate(zip(bots, kinds))]
    return arena.create("million_doubt", ids, **kw), ids


def test_on_a_worker_a_strong_bot_settles_early_and_even_bots_play_every_round(arena, bots, celery_worker_factory):
    strong, (heuristic, _random) = _duel(
        arena, bots, ("heuristic", "random"), seed=28, games_per_pairing=10, until_settled={"max_rounds": 6}
    )
    even_bots: list[SwitchBot] = []
    even, _ids = _duel(
        arena, even_bots, ("greedy", "greedy"), seed=29, games_per_pairing=6, until_settled={"max_rounds": 4}
    )
    bots.extend(even_bots)
    worker = celery_worker_factory(concurrency=2, database_url=arena.database_url)
    arena.start(strong)
    arena.start(even)
    done = arena.wait_finished(strong, workers=[worker])
    assert done["status"] == "finished" and done["stop_reason"] == "settled", done
    assert MIN_GAMES // 10 <= done["rounds"] < 6  # after the games the test waits for, before max
    assert done["settle"]["settled"] and done["settle"]["leader"] == heuristic
    assert done["settle"]["games"] == 10 * done["rounds"] and done["progress"]["finished"] == done["rounds"]
    assert settling_text(done).startswith(f"settled after round {done['rounds']}: bot {heuristic} ahead of")
    flat = arena.wait_finished(even, workers=[worker])
    assert flat["status"] == "finished" and flat["stop_reason"] == "max_rounds", flat
    assert flat["rounds"] == 4 and flat["progress"] == {"finished": 4, "total": 4, "queued": 4}
    assert not flat["settle"]["settled"] and flat["settle"]["games"] == 24
    assert settling_text(flat) == "max rounds (4) reached: the sequential test did not settle the top two"
    for tid in (strong, even):  # every round dealt afresh: one match a round, each its own seed
        stored = arena.stored(tid)
        assert [m.index for m, _, _ in stored] == list(range(len(stored)))
        assert len({log["seed"] for _, _, log in stored}) == len(stored)
        assert len({g["seed"] for _, _, log in stored for g in log["games"]}) == sum(
            len(log["games"]) for _, _, log in stored
        )
