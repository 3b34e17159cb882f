"""What follows a match's end (:func:`arena.followups.follow`): one step, fed by what the
lifecycle returned (:class:`arena.followups.Ending`), each kind of work sent through the
dispatcher the delivery was composed with; eager mode is the in-process dispatcher's choice,
never asked here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from arena.config import Settings
from arena.db.session import make_engine, make_sessionmaker
from arena.followups import Ending, follow
from arena.inprocess import InProcessDispatcher
from arena.lifecycle import Stored
from tests.helpers import migrated_sqlite_url


class Recorder:
    """A :class:`arena.dispatch.Dispatcher` that records what it is sent, in order."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []

    def send_matches(self, match_ids: Sequence[int], *, priority: bool = False) -> int:
        self.sent.append(("matches", list(match_ids), priority))
        return len(match_ids)

    def send_pars(self, match_ids: Sequence[int]) -> int:
        self.sent.append(("pars", list(match_ids)))
        return len(match_ids)

    def refill_ladder(self, match_id: int) -> None:
        self.sent.append(("refill", match_id))

    def send_check(self, check_id: int) -> None:
        raise AssertionError("not what follows a store")

    def launch_tournament(self, tournament_id: int, *, priority: bool = False) -> None:
        raise AssertionError("not what follows a store")

    def await_entrants(self, tournament_id: int, countdown_s: float) -> None:
        raise AssertionError("not what follows a store")

    def send_webhook(self, account_id: int, message: dict[str, Any]) -> None:
        raise AssertionError("not what follows a store")


@pytest.fixture
def world(tmp_path: Path):
    path = tmp_path / "arena.db"
    migrated_sqlite_url(path)
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    settings = Settings(data_dir=tmp_path, database_url=url, broker_url="memory://", celery_eager=True)
    yield settings, make_sessionmaker(engine)
    engine.dispose()


def test_a_store_sends_its_round_then_the_ladder_refill_then_the_pars(world) -> None:
    settings, factory = world
    got = Recorder()
    ending = Ending.stored(7, 3, "million_doubt", Stored(True, added=(8, 9)), pars=True, ladder=True)
    follow(settings, factory, got, ending)
    assert got.sent == [("matches", [8, 9], False), ("refill", 7), ("pars", [7])]


def test_a_duplicate_sends_nothing_and_a_tournament_match_no_refill(world) -> None:
    settings, factory = world
    got = Recorder()
    follow(settings, factory, got, Ending.stored(7, 3, "jdf", Stored(False), pars=True, ladder=True))
    assert got.sent == []
    follow(settings, factory, got, Ending.stored(7, 3, "jdf", Stored(True), pars=False, ladder=False))
    assert got.sent == []


def test_a_failure_refills_a_ladder_set_whether_or_not_it_failed_it_now(world) -> None:
    settings, factory = world
    for now in (True, False):
        got = Recorder()
        ending = Ending.failed(7, 3, "million_doubt", now=now, ladder=True)
        assert ending.event == ("failed" if now else "")
        follow(settings, factory, got, ending)
        assert got.sent == [("refill", 7)]


def test_eager_mode_is_the_in_process_dispatchers_choice(world) -> None:
    """The in-process dispatcher refills nothing (the caller drives the ladder's ticks); the
    broker's sends ``arena.refill_ladder`` (played by the worker tests, tests/worker/test_ladder_live.py)."""
    settings, _ = world
    InProcessDispatcher(settings).refill_ladder(7)  # no set formed, no task: nothing to play here
