"""Migrations on empty databases, data constraints, the CLI, schedules and URL checks."""

from __future__ import annotations

import collections
import itertools
import math

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from click.testing import CliRunner
from sqlalchemy import inspect, select
from sqlalchemy.exc import IntegrityError

from arena.cli import main
from arena.core.db.migrate import alembic_config, current, upgrade
from arena.core.db.models import Account, Base, Bot, Match, MatchSeat, Tournament
from arena.core.db.session import make_engine
from arena.core.schedule import ScheduleError, build_schedule
from arena.core.security import hash_token
from arena.core.url_policy import BotUrlError, check_bot_url


def _head() -> str:
    """The newest migration revision (the file with no successor in versions/)."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_migration_chain_is_linear_and_numbered():
    revs = list(ScriptDirectory.from_config(alembic_config()).walk_revisions())
    assert [r.revision for r in reversed(revs)] == [f"{i:04d}" for i in range(1, len(revs) + 1)]
    assert _head() == revs[0].revision and len(revs) >= 3


def test_migrations_upgrade_an_empty_database_to_the_models(database_url):
    engine = make_engine(database_url)
    try:
        assert current(engine) is None
        assert inspect(engine).get_table_names() == []
        upgrade(engine=engine)
        assert current(engine) == _head()
        assert set(inspect(engine).get_table_names()) == set(Base.metadata.tables) | {"alembic_version"}
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
        assert diff == []
        upgrade(engine=engine)  # idempotent
        assert current(engine) == _head()
    finally:
        engine.dispose()


def test_constraints_protect_the_data(engine, sessionmaker):
    with sessionmaker() as s:
        s.add(Account(name="x", role="contestant", token_hash="a" * 64))
        s.commit()
        s.add(Account(name="y", role="emperor", token_hash="b" * 64))
        with pytest.raises(IntegrityError):
            s.commit()
        s.rollback()
        s.add(Bot(owner_id=999, name="b", url="http://x/", rulesets=["jdf"], secret="s"))
        with pytest.raises(IntegrityError):  # foreign key
            s.commit()
        s.rollback()
        org = s.scalar(select(Account))
        t = Tournament(name="t", organizer_id=org.id, ruleset="jdf", options={}, time_rules={},
                       games_per_pairing=1, seed=1)
        s.add(t)
        s.commit()
        s.add(Match(tournament_id=t.id, index=0, seed=1, seats=[MatchSeat(seat=0)]))
        with pytest.raises(IntegrityError):  # a seat needs a bot or a house bot
            s.commit()
        s.rollback()
        s.add(Match(tournament_id=t.id, index=0, seed=1))
        s.add(Match(tournament_id=t.id, index=0, seed=2))
        with pytest.raises(IntegrityError):  # schedule positions are unique
            s.commit()


def test_cli_db_upgrade_and_accounts_create(database_url, monkeypatch):
    monkeypatch.setenv("ARENA_DATABASE_URL", database_url)
    runner = CliRunner()
    r = runner.invoke(main, ["db", "upgrade"])
    assert r.exit_code == 0, r.output
    assert f"revision {_head()}" in r.output
    r = runner.invoke(main, ["accounts", "create", "--organizer", "boss"])
    assert r.exit_code == 0, r.output
    token = r.stdout.strip().splitlines()[-1]
    engine = make_engine(database_url)
    with engine.connect() as conn:
        row = conn.execute(select(Account.role, Account.token_hash).where(Account.name == "boss")).one()
    engine.dispose()
    assert row.role == "organizer" and row.token_hash == hash_token(token) and token not in row.token_hash
    r = runner.invoke(main, ["accounts", "create", "boss"])
    assert r.exit_code == 1 and "taken" in r.output


@pytest.mark.parametrize("url", ["http://127.0.0.1/", "http://10.0.0.5/", "http://169.254.169.254/",
                                 "http://localhost/", "http://[::ffff:127.0.0.1]/", "http://0.0.0.0/",
                                 "http://metadata.google.internal/", "http://100.64.0.1/"])
def test_ssrf_refused_by_default(url):
    with pytest.raises(BotUrlError):
        check_bot_url(url)


@pytest.mark.parametrize("url", ["http://xn--ls8h.la/bot", "http://xn--a.example/", "http://a..b/",
                                 "http://[::1/", "ftp://bot.example/"])
def test_urls_the_worker_could_not_call_are_refused(url):
    with pytest.raises(BotUrlError):
        check_bot_url(url, allow_private=True, resolve=False)


def test_private_setting_allows_loopback_and_private_but_never_metadata():
    assert check_bot_url("http://127.0.0.1:8000/", allow_private=True)
    assert check_bot_url("http://localhost:8000/", allow_private=True)
    assert check_bot_url("http://10.0.0.5/", allow_private=True)
    for url in ("http://169.254.169.254/", "http://[fe80::1]/", "http://224.0.0.1/", "http://0.0.0.0/"):
        with pytest.raises(BotUrlError):
            check_bot_url(url, allow_private=True)
    assert check_bot_url("https://93.184.215.14/decide")  # a public address


def test_two_player_schedule_pairs_everyone_once_reproducibly():
    plan = build_schedule(2, [4, 8, 15, 16, 23], 4, seed=99)
    pairs = [tuple(sorted(m.seats)) for m in plan]
    assert sorted(pairs) == sorted(itertools.combinations([4, 8, 15, 16, 23], 2))
    assert [m.index for m in plan] == list(range(10))
    assert len({m.seed for m in plan}) == 10
    assert plan == build_schedule(2, [23, 16, 15, 8, 4], 4, seed=99)
    assert plan != build_schedule(2, [4, 8, 15, 16, 23], 4, seed=100)
    assert len(build_schedule(2, [1, 2], 3, seed=1)) == 1  # any game count: every game dealt afresh
    assert plan != build_schedule(2, [4, 8, 15, 16, 23], 4, seed=99, tournament_id=2)
    with pytest.raises(ScheduleError, match="at least 2"):
        build_schedule(2, [1], 2, seed=1)


def test_four_player_schedule_rotates_seats_and_fills_with_house_bots():
    plan = build_schedule(4, [1, 2, 3, 4, 5], 2, seed=5)
    assert len(plan) == 5 * 4 * 2  # 5 tables x 4 rotations x 2 rounds
    seat_count = collections.Counter((e, seat) for m in plan for seat, e in enumerate(m.seats))
    assert set(seat_count.values()) == {2 * 4}  # each bot sits in each seat equally often
    per_table_seed = collections.defaultdict(set)
    for m in plan:
        per_table_seed[(m.table, m.index // 20)].add(m.seed)
    assert all(len(s) == 4 for s in per_table_seed.values())  # each rotation is dealt afresh
    assert len({m.seed for m in plan}) == len(plan)
    filled = build_schedule(4, [7, 9], 1, seed=1, fill_with_house_bots=True)
    assert sorted(map(str, filled[0].seats)) == ["7", "9", "house-1", "house-2"]
    with pytest.raises(ScheduleError, match="fill_with_house_bots"):
        build_schedule(4, [7, 9, 11], 1, seed=1)


def _spread_within(positions: list[int], total: int, count: int) -> int:
    """Largest gap between an entrant's consecutive matches, measured in matches."""
    marks = [-1, *positions, total]
    return max(b - a for a, b in zip(marks, marks[1:]))


@pytest.mark.parametrize("n", range(4, 129))
def test_four_player_schedule_for_every_field_size(n):
    """Issue 15: every bot seated equally often (and in each seat equally often), pairs meeting
    evenly, each bot's matches spread over the queue; built quickly for 4..128 bots."""
    plan = build_schedule(4, list(range(1000, 1000 + n)), 1, seed=n)
    seats = collections.Counter(e for m in plan for e in m.seats)
    assert len(seats) == n and len(set(seats.values())) == 1  # every bot plays as many matches
    by_seat = collections.Counter((e, i) for m in plan for i, e in enumerate(m.seats))
    assert len(set(by_seat.values())) == 1  # ... and sits in each seat as often
    assert all(len(set(m.seats)) == 4 for m in plan)
    tables = {m.table: tuple(sorted(m.seats)) for m in plan}
    meets = collections.Counter(p for t in tables.values() for p in itertools.combinations(t, 2))
    counts = [meets[p] for p in itertools.combinations(range(1000, 1000 + n), 2)]
    if n <= 8:  # every 4-subset: every pair meets exactly C(n-2, 2) times
        assert set(counts) == {math.comb(n - 2, 2)}
    else:
        assert max(counts) <= 3  # nobody meets the same bot more than 3 times
        assert sum(1 for c in counts if c >= 1) >= 0.85 * len(counts)  # nearly every pair meets
    # spread: no bot waits more than a fifth of the queue (plus one table round) between matches
    positions = collections.defaultdict(list)
    for m in plan:
        for e in m.seats:
            positions[e].append(m.index)
    per_bot = len(plan) * 4 // n
    worst = max(_spread_within(p, len(plan), per_bot) for p in positions.values())
    assert worst <= max(len(plan) // 5, 4 * n), (worst, len(plan))


def test_two_player_schedule_rounds_for_every_field_size():
    for n in range(2, 129):
        plan = build_schedule(2, list(range(n)), 2, seed=1)
        assert sorted(tuple(sorted(m.seats)) for m in plan) == list(itertools.combinations(range(n), 2))
        # circle method: in each block of n // 2 matches (a round) every bot plays at most once
        for r in range(0, len(plan), max(1, n // 2)):
            block = [e for m in plan[r:r + n // 2] for e in m.seats]
            assert len(block) == len(set(block))


def test_concurrent_upgrades_of_one_postgresql_database_take_turns(pg_url):
    """`arena api` starting while `arena db upgrade` runs: both migrate the same empty
    database; the advisory lock makes one migrate and the other find it at the head."""
    import threading

    from tests.helpers import create_pg_database

    url = create_pg_database(pg_url, "race")
    errors: list[str] = []

    def go() -> None:
        try:
            upgrade(url)
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            errors.append(repr(exc))

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    engine = make_engine(url)
    try:
        assert errors == [] and current(engine) == _head()
    finally:
        engine.dispose()


@pytest.mark.parametrize("n", [5, 6, 7, 8])
def test_every_subset_tables_are_queued_spread_over_the_bots(n):
    """Issue 15 item 2: with every 4-subset as tables (n <= 8), the queue does not start
    with all the tables of one bot (a lexicographic order would: 35 of 70 seat bot 0 for
    n = 8): at every point the tables queued so far seat any two bots at most 2 apart, and
    for n = 8 every two consecutive tables of a rotation seat every bot once."""
    entrants = list(range(100, 100 + n))
    matches = build_schedule(4, entrants, 1, seed=3)
    first_rotation = matches[: math.comb(n, 4)]
    seated = dict.fromkeys(entrants, 0)
    for m in first_rotation:
        for e in m.seats:
            seated[e] += 1
        assert max(seated.values()) - min(seated.values()) <= 2
    assert set(seated.values()) == {math.comb(n - 1, 3)}
    if n == 8:
        for a, b in zip(first_rotation[::2], first_rotation[1::2]):
            assert sorted(a.seats + b.seats) == entrants
