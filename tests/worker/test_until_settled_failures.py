"""A failing machine against play until settled (issue 28), on real PostgreSQL, Redis and Celery
workers: a worker that cannot decrypt the bots' secrets fails the first round's match.

The tournament then finishes without a verdict (a failed match may be retried: the test waits
for it), keeps its seed secret from everyone (the retried match's deals must stay unknown), and
after the organizer's retry on a worker with the right key plays its rounds to ``max_rounds``:
every round dealt afresh from positions that follow the first, every deal following from the
seed revealed at the end. And an organizer's cancel racing the store of a round's last match
leaves nothing to play.
"""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import select

from arena import access, crypto, lifecycle
from arena.db.models import Match, Tournament
from arena.runner.replay import check_fairness, replay
from bots_sdk.samples import SAMPLE_BOTS
from tests.worker.conftest import SwitchBot
from tests.worker.test_until_settled import GAMES, _first_round

pytestmark = pytest.mark.services
GUARD_S = 120.0


@pytest.fixture
def solo_bot(arena, bots) -> int:
    """A ready Million Doubt bot: with a house bot, the entrants of the rounds below."""
    bots.append(SwitchBot(SAMPLE_BOTS["greedy"]()))
    return arena.register(bots[-1], ["million_doubt"], "solo")


def test_a_failed_round_holds_the_test_and_the_seed_until_retried(arena, bots, celery_worker_factory, monkeypatch):
    good = crypto.new_key()
    monkeypatch.setenv(crypto.ENV_KEYS, good)
    bots.extend([SwitchBot(SAMPLE_BOTS["greedy"](seed=1)), SwitchBot(SAMPLE_BOTS["greedy"](seed=2))])
    ids = [arena.register(b, ["million_doubt"], f"even-{i}") for i, b in enumerate(bots)]
    tid = arena.create("million_doubt", ids, games_per_pairing=4, until_settled={"max_rounds": 3, "delta": 50.0})
    bad = celery_worker_factory(concurrency=1, database_url=arena.database_url, env={crypto.ENV_KEYS: crypto.new_key()})
    arena.start(tid)
    t = arena.wait_finished(tid, timeout_s=GUARD_S, workers=[bad])
    # the round's match failed: no verdict, no stop reason, no next round, and the seed secret
    assert (t["status"], t["rounds"], t["stop_reason"], t["settle"]) == ("finished", 1, None, None), t
    assert t["seed"] is None and t["salt"] is None and not t["seed_revealed"]
    contestant = arena.client.get(f"/api/v1/tournaments/{tid}", headers=arena.owner).json
    assert contestant["seed"] is None and not contestant["seed_revealed"]
    bad.stop()

    worker = celery_worker_factory(concurrency=1, database_url=arena.database_url)
    r = arena.client.post(f"/api/v1/tournaments/{tid}/retry", headers=arena.org)
    assert r.status_code == 202, r.json
    done = arena.wait_finished(tid, timeout_s=GUARD_S, workers=[worker])
    assert (done["status"], done["rounds"], done["stop_reason"]) == ("finished", 3, "max_rounds"), done
    assert done["settle"]["games"] == 12 and not done["settle"]["settled"]
    assert done["seed_revealed"] and done["seed"] is not None
    stored = arena.stored(tid)
    assert [m.index for m, _, _ in stored] == [0, 1, 2]
    for _m, _res, log in stored:
        replay(log)
        check_fairness(log, done["seed"], done["salt"], done)
        assert log["fairness"]["attempt"] == 1  # the failed delivery dealt nothing


def _store_and_cancel_at_once(arena, tid: int, mid: int) -> None:
    """Store match ``mid`` (its round's last) and cancel tournament ``tid``, each from its own
    connection, released at one barrier."""
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def store() -> None:
        try:
            with arena.sessions() as s:
                s.get(Match, mid)
                barrier.wait()
                lifecycle.store_result(
                    s, mid, scores=[0.0, 0.0], places=[1, 1], faults=[0, 0], games=GAMES, timings={}, log={}
                )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def cancel() -> None:
        try:
            with arena.sessions() as s:
                s.get(Tournament, tid)
                barrier.wait()
                lifecycle.cancel_tournament(s, tid)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=f) for f in (store, cancel)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not errors, errors


def test_a_cancel_racing_the_last_store_of_a_round_leaves_nothing_to_play(arena, solo_bot):
    """The organizer cancels at the moment a worker stores a round's last match (two
    connections released at one barrier, PostgreSQL): whichever takes the tournament's row
    lock first, the tournament ends cancelled with the result stored, no match left to play
    (a round added first is cancelled with it), and its seed revealed."""
    for _ in range(5):
        tid, (mid,) = _first_round(arena, solo_bot, 1)
        _store_and_cancel_at_once(arena, tid, mid)
        with arena.sessions() as s:
            t = s.get(Tournament, tid)
            statuses = sorted(s.scalars(select(Match.status).where(Match.tournament_id == tid)))
            assert t.status == "cancelled" and t.rounds in (1, 2)
            assert statuses in (["finished"], ["cancelled", "finished"]), statuses
            assert access.seed_revealed(s, t)
