"""Attacks on the tables where people play (docs/tables.md): a contestant who sends its opens
at once to get more tables (more worker threads) than ``ARENA_TABLES_PER_ACCOUNT`` allows
(against the real PostgreSQL)."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import text

from arena.accounts import create_account
from arena.db.models import Account
from arena.db.session import make_sessionmaker
from arena.lifecycle import tables as table_states
from arena.usecases import tables as cases


class Recording:
    """A dispatcher recording the tables it is sent (no worker: the limit is the point)."""

    def __init__(self) -> None:
        self.tables: list[int] = []

    def send_table(self, match_id: int) -> None:
        self.tables.append(match_id)


def _blocked_on_a_lock(sm) -> bool:
    with sm() as s:
        return bool(
            s.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'"
                )
            )
        )


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_two_opens_at_once_get_no_more_tables_than_the_account_may_hold(engine, monkeypatch):
    """Two opens by one account, the second counting while the first has counted but not yet
    stored its table: the second must wait for the first (and be refused), not count the same
    zero and get a second table past a limit of one."""
    sm = make_sessionmaker(engine)
    with sm() as s:
        ann, _ = create_account(s, "ann", "contestant")
        ann_id = ann.id
    counted = {"first": threading.Event(), "second": threading.Event()}
    go = threading.Event()
    real_count = table_states.open_tables

    def count(session, account_id):
        n = real_count(session, account_id)
        name = threading.current_thread().name
        if name in counted:
            counted[name].set()
        if name == "first":
            go.wait()
        return n

    monkeypatch.setattr(table_states, "open_tables", count)
    outcomes: dict[str, str] = {}

    def open_one() -> None:
        name = threading.current_thread().name
        with sm() as s:
            account = s.get(Account, ann_id)
            try:
                cases.open_solo_table(
                    s,
                    Recording(),
                    account,
                    ruleset="million_doubt",
                    opponents=["random"],
                    games=1,
                    tables_per_account=1,
                    tables_max=16,
                )
                outcomes[name] = "opened"
            except table_states.TooManyTables:
                outcomes[name] = "refused"
            finally:
                go.set()

    first = threading.Thread(target=open_one, name="first")
    second = threading.Thread(target=open_one, name="second")
    first.start()
    try:
        assert counted["first"].wait(120)
        second.start()
        # the second either counts too (the race) or waits on the first's lock (held)
        while not counted["second"].is_set() and not _blocked_on_a_lock(sm) and second.is_alive():
            counted["second"].wait(0.05)
    finally:
        go.set()
        first.join()
        if second.ident is not None:
            second.join()
    with sm() as s:
        assert table_states.open_tables(s, ann_id) == 1
    assert sorted(outcomes.values()) == ["opened", "refused"]
