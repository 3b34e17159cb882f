"""Attacks on the tables where people play (docs/tables.md): a contestant who sends its opens
at once to get more tables (more worker threads) than ``ARENA_TABLES_PER_ACCOUNT`` allows
(against the real PostgreSQL), and one who farms a rating by playing its own bot."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import select, text

from arena.accounts import create_account
from arena.db.models import Account, Bot, Match, PersonRating, Rating, Tournament
from arena.db.session import make_engine, make_sessionmaker
from arena.lifecycle import store_result
from arena.lifecycle import tables as table_states
from arena.people import rebuild_people_ratings
from arena.ratings import rebuild_ratings
from arena.runner.match import run_match
from arena.runner.players import LocalPlayer
from arena.usecases import tables as cases
from bots_sdk.samples import SAMPLE_BOTS
from tests.helpers import migrated_sqlite_url


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


@pytest.fixture
def sm_sqlite(tmp_path):
    eng = make_engine(migrated_sqlite_url(tmp_path / "arena.db"))
    yield make_sessionmaker(eng)
    eng.dispose()


def _play_and_store(s, table, winner: int, answered: list[int]) -> None:
    """Store the table's match as played: seat ``winner`` took both games."""
    t = s.get(Tournament, table.tournament_id)
    m = s.scalar(select(Match).where(Match.tournament_id == t.id))
    log = run_match(
        [LocalPlayer(SAMPLE_BOTS["greedy"]()), LocalPlayer(SAMPLE_BOTS["random"](seed=1))],
        "million_doubt",
        seed=m.seed,
        games=2,
    )
    scores = [0.0, 0.0]
    scores[winner] = 2.0
    places = [2, 2]
    places[winner] = 1
    game = {"scores": scores, "places": places}
    assert store_result(
        s,
        m.id,
        scores=scores,
        places=places,
        faults=[0, 0],
        games=[game, game],
        timings={"answered": answered},
        log=log,
    )


def test_a_person_farms_no_rating_by_playing_its_own_bot(sm_sqlite):
    """Ann opens tables against her own bot (allowed whatever its check: "play against my bot"):
    her bot throws every game (or tells her its hand), or she closes the tab and her bot wins.
    Neither her people's rating nor, with ``ARENA_PEOPLE_IN_BOT_RATINGS``, her bot's rating
    may move: a table where a person sits against a bot it owns is rated in no pool."""
    with sm_sqlite() as s:
        ann, _ = create_account(s, "ann", "contestant")
        bob, _ = create_account(s, "bob", "contestant")
        mine = Bot(
            owner_id=ann.id, name="mine", url="http://x/", rulesets=["million_doubt"], secret="s", status="ready"
        )
        theirs = Bot(owner_id=bob.id, name="theirs", url="http://x/", rulesets=["million_doubt"], secret="s")
        theirs.status = "ready"
        theirs.play_people = True
        s.add_all([mine, theirs])
        s.commit()
        limits = {"tables_per_account": 8, "tables_max": 16}
        for _ in range(3):  # her bot throws: ann (seat 0) wins
            table = cases.open_solo_table(s, Recording(), ann, opponents=[mine.id], ruleset="million_doubt", **limits)
            _play_and_store(s, table, winner=0, answered=[5, 5])
        for _ in range(3):  # she closes the tab: her bot (seat 1) wins
            table = cases.open_solo_table(s, Recording(), ann, opponents=[mine.id], ruleset="million_doubt", **limits)
            _play_and_store(s, table, winner=1, answered=[0, 5])
        rebuild_people_ratings(s, "million_doubt")
        rebuild_ratings(s, "million_doubt", people=True)
        s.commit()
        assert s.scalars(select(PersonRating)).all() == []
        assert s.scalars(select(Rating)).all() == []
        # a table against another owner's bot is rated as before, in both pools
        table = cases.open_solo_table(s, Recording(), ann, opponents=[theirs.id], ruleset="million_doubt", **limits)
        _play_and_store(s, table, winner=0, answered=[5, 5])
        rebuild_people_ratings(s, "million_doubt")
        rebuild_ratings(s, "million_doubt", people=True)
        s.commit()
        assert [(r.account_id, r.matches) for r in s.scalars(select(PersonRating))] == [(ann.id, 1)]
        assert [(r.bot_id, r.matches) for r in s.scalars(select(Rating))] == [(theirs.id, 1)]


def test_a_wrong_class_link_key_shows_a_stranger_nothing_of_the_table(client, accounts):
    """A class table's page opens to a signed-in stranger only with the table's link key (it
    offers the seat): a made-up ``?key=`` showed the page all the same, with the names of the
    students seated and, once over, their scores. A wrong key is refused as no key is."""
    org = accounts.organizer("teacher")
    accounts.contestant("student")
    accounts.contestant("stranger")
    r = client.post("/api/v1/tables", json={"ruleset": "million_doubt", "seats": ["person", "random"]}, headers=org)
    assert r.status_code == 201, r.json
    tid, key = r.json["id"], r.json["join_key"]
    assert (
        client.post(f"/api/v1/tables/{tid}/join", json={"key": key}, headers=accounts.headers("student")).json["seats"][
            0
        ]["name"]
        == "student"
    )
    stranger = client.application.test_client()
    assert stranger.post("/ui/login", data={"token": accounts.tokens["stranger"]}).status_code in (302, 303)
    assert stranger.get(f"/ui/tables/{tid}").status_code == 403
    wrong = stranger.get(f"/ui/tables/{tid}?key=guess")
    assert wrong.status_code == 403, wrong.status_code
    assert b"student" not in wrong.data
    assert stranger.get(f"/ui/tables/{tid}?key={key}").status_code == 200  # the link itself opens it


@pytest.mark.parametrize("spec", [1.9, True, "²", 2**31])
def test_an_opponent_that_is_not_a_bot_id_seats_no_bot(sm_sqlite, spec):
    """``opponents`` takes a house bot's name or a bot id: ``1.9`` or ``true`` seated bot 1
    (``int()`` of them), whoever's bot it was, and an id past the database's integer failed in
    the database, naming no field. Each is refused naming the opponent's field; nothing is
    opened."""
    with sm_sqlite() as s:
        ann, _ = create_account(s, "ann", "contestant")
        bob, _ = create_account(s, "bob", "contestant")
        bot = Bot(owner_id=bob.id, name="bobs", url="http://x/", rulesets=["million_doubt"], secret="s", status="ready")
        bot.play_people = True  # bob lets people play it, by its id
        s.add(bot)
        s.commit()
        assert s.scalar(select(Bot.id).where(Bot.owner_id == bob.id)) == 1
        with pytest.raises(cases.InvalidField) as refused:
            cases.open_solo_table(
                s,
                Recording(),
                ann,
                ruleset="million_doubt",
                opponents=[spec],
                tables_per_account=2,
                tables_max=16,
            )
        assert refused.value.field == "opponents.0"
        assert table_states.open_tables(s, ann.id) == 0


def test_one_client_with_many_accounts_cannot_take_the_sites_tables(sm_sqlite):
    """The site's tables (``ARENA_TABLES_MAX``, each holding a worker thread for up to its
    people's banks) are a shared pool: one client signing up account after account (two tables
    each) took all of them, and nobody else could sit down for hours. A client holds at most
    ``ARENA_TABLES_PER_CLIENT`` open tables, whatever its accounts; another client still opens."""
    with sm_sqlite() as s:
        sybils = [create_account(s, f"sybil{i}", "contestant")[0] for i in range(4)]
        ann, _ = create_account(s, "ann", "contestant")
        d = Recording()
        limits = {"tables_per_account": 2, "tables_max": 16, "tables_per_client": 4}
        opened = refused = 0
        for account in sybils:
            for _ in range(2):
                try:
                    cases.open_solo_table(
                        s, d, account, ruleset="million_doubt", opponents=["random"], client="203.0.113.7", **limits
                    )
                    opened += 1
                except table_states.TooManyTables as exc:
                    refused += 1
                    assert "this address" in str(exc)
        assert (opened, refused) == (4, 4)
        table = cases.open_solo_table(
            s, d, ann, ruleset="million_doubt", opponents=["random"], client="198.51.100.2", **limits
        )
        assert table.client == "198.51.100.2"
        assert table_states.site_open_tables(s) == 5
