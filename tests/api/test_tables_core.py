"""Tables where people play (docs/tables.md), the core on SQLite without a worker: who may sit
against which bot, the start's match and seats, the limits, the class link, the access policy
(a person sees its own seat only while it plays, an organizer seated at a table included), the
people's own rating pool, and that tables stay out of the bots' ratings and tournament lists."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from arena import access
from arena.accounts import create_account
from arena.db.models import Bot, Match, MatchSeat, PersonRating, Rating, Table, Tournament
from arena.db.session import make_engine, make_sessionmaker
from arena.lifecycle import Conflict, NotFound, store_result
from arena.lifecycle.tables import TooManyTables
from arena.people import rebuild_people_ratings, tables_of
from arena.ratings import rebuild_ratings
from arena.runner.match import run_match
from arena.runner.players import LocalPlayer
from arena.sources import SOURCES, source_for
from arena.usecases import Forbidden, InvalidField
from arena.usecases import tables as cases
from bots_sdk.samples import SAMPLE_BOTS
from tests.helpers import migrated_sqlite_url


class Recording:
    """A dispatcher recording the tables it is sent."""

    def __init__(self) -> None:
        self.tables: list[int] = []

    def send_table(self, match_id: int) -> None:
        self.tables.append(match_id)


@pytest.fixture
def sm(tmp_path):
    engine = make_engine(migrated_sqlite_url(tmp_path / "arena.db"))
    yield make_sessionmaker(engine)
    engine.dispose()


def _people(s):
    ann, _ = create_account(s, "ann", "contestant")
    bob, _ = create_account(s, "bob", "contestant")
    olga, _ = create_account(s, "olga", "organizer")
    return ann, bob, olga


def _bot(s, owner, *, status="ready", play_people=False, rulesets=("million_doubt",)) -> int:
    b = Bot(owner_id=owner.id, name=f"b{owner.id}", url="http://x/", rulesets=list(rulesets), secret="s", status=status)
    b.play_people = play_people
    s.add(b)
    s.commit()
    return b.id


LIMITS = {"tables_per_account": 2, "tables_max": 16}


def test_who_may_sit_against_which_bot_and_what_the_start_stores(sm):
    with sm() as s:
        ann, bob, _olga = _people(s)
        own_unchecked = _bot(s, ann, status="unchecked")
        theirs_private = _bot(s, bob)
        theirs_open = _bot(s, bob, play_people=True)
        theirs_failed = _bot(s, bob, status="failed", play_people=True)
        d = Recording()
        body = {"ruleset": "million_doubt", "games": 2, **LIMITS}
        for refused in (
            [theirs_private],  # its owner does not let people play it
            [theirs_failed],  # not checked
            ["nobody"],
            ["greedy", "random"],  # one opponent in Million Doubt
        ):
            with pytest.raises(InvalidField):
                cases.open_solo_table(s, d, ann, opponents=refused, **body)
        with pytest.raises(InvalidField, match="from 1 to"):
            cases.open_solo_table(s, d, ann, opponents=["greedy"], person_time_rules={"initial": 0.5}, **body)
        table = cases.open_solo_table(s, d, ann, opponents=[own_unchecked], seat=1, **body)  # my bot, unchecked
        assert [p.id for p in cases.playable_bots(s, ann)] == [own_unchecked, theirs_open]
        t = s.get(Tournament, table.tournament_id)
        assert (t.format, t.status, t.public_when_finished, t.seed_chosen) == ("table", "running", False, False)
        assert t.seed is not None and t.commitment  # drawn at the start, as any tournament's
        m = s.scalar(select(Match).where(Match.tournament_id == t.id))
        assert m.status == "queued" and d.tables == [m.id]
        seats = sorted((x.seat, x.bot_id, x.house_bot, x.account_id) for x in m.seats)
        assert seats == [(0, own_unchecked, None, None), (1, None, None, ann.id)]
        assert [x.entrant for x in sorted(m.seats, key=lambda x: x.seat)] == [own_unchecked, f"person:{ann.id}"]
        # a second one, then the account's limit
        cases.open_solo_table(s, d, ann, opponents=[theirs_open], **body)
        with pytest.raises(TooManyTables):
            cases.open_solo_table(s, d, ann, opponents=["search"], **body)
        # the site's limit
        with pytest.raises(TooManyTables):
            cases.open_solo_table(s, d, bob, opponents=["search"], **{**body, "tables_max": 2})
    assert source_for("table") is SOURCES["table"] and SOURCES["table"].total(None) == 1  # type: ignore[arg-type]


def test_a_class_table_its_link_its_start_and_who_sees_what(sm):
    with sm() as s:
        ann, bob, olga = _people(s)
        ann_bot = _bot(s, ann, play_people=True)
        d = Recording()
        body = {"ruleset": "million_doubt", "games": 1, **LIMITS}
        with pytest.raises(Forbidden):
            cases.open_class_table(s, ann, seats=["person", "person"], **body)
        table = cases.open_class_table(s, olga, seats=["person", ann_bot], **body)
        assert table.join_key and s.get(Tournament, table.tournament_id).status == "created"
        with pytest.raises(NotFound):
            cases.join_table(s, bob, table.id, "wrong", tables_per_account=2)
        with pytest.raises(Conflict):  # a person's seat is free
            cases.start_class_table(s, d, olga, table.id)
        assert cases.join_table(s, bob, table.id, table.join_key, tables_per_account=2) == 0
        assert cases.join_table(s, bob, table.id, table.join_key, tables_per_account=2) == 0  # held already
        with pytest.raises(Conflict):
            cases.join_table(s, olga, table.id, table.join_key, tables_per_account=2)  # full
        with pytest.raises(Forbidden):
            cases.start_class_table(s, d, bob, table.id)
        cases.start_class_table(s, d, olga, table.id)
        t = s.get(Tournament, table.tournament_id)
        m = s.scalar(select(Match).where(Match.tournament_id == t.id))
        # while it plays: bob (seated) reads it, its bot's owner too, the organizer watches every hand
        assert access.can_view_tournament(s, bob, t) and access.can_view_tournament(s, ann, t)
        assert access.live_view_for(s, olga, m, t) == "full"
        assert access.live_view_for(s, bob, m, t) == "public"
        assert not access.can_read_log(s, bob, m, t)
        # ann, who owns the bot across the table, may watch her bot's seat (she does not play)
        assert access.live_players_for(s, ann, m, t) == [1]
        stranger, _ = create_account(s, "zed", "contestant")
        assert not access.can_view_tournament(s, stranger, t)
        assert not access.can_read_match(s, stranger, m, t)


def test_a_person_at_the_table_sees_its_own_seat_only_even_an_organizer_or_its_bots_owner(sm):
    with sm() as s:
        ann, _bob, olga = _people(s)
        olga_bot = _bot(s, olga)
        d = Recording()
        table = cases.open_solo_table(s, d, olga, opponents=[olga_bot], ruleset="million_doubt", games=1, **LIMITS)
        t = s.get(Tournament, table.tournament_id)
        m = s.scalar(select(Match).where(Match.tournament_id == t.id))
        # an organizer seated at a table is a person of it: no full view, no log, not its bot's hand
        assert not access.oversees(s, olga, t)
        assert access.live_view_for(s, olga, m, t) == "public"
        assert access.live_players_for(s, olga, m, t) == []
        assert not access.can_read_log(s, olga, m, t)
        # another organizer oversees it; a contestant who is not at it reads nothing
        other, _ = create_account(s, "otto", "organizer")
        assert access.live_view_for(s, other, m, t) == "full"
        assert not access.can_view_tournament(s, ann, t)


def test_people_are_rated_in_their_own_pool_and_never_in_the_bots(sm):
    with sm() as s:
        ann, bob, _olga = _people(s)
        bot = _bot(s, bob, play_people=True)
        d = Recording()
        table = cases.open_solo_table(s, d, ann, opponents=[bot], ruleset="million_doubt", games=2, **LIMITS)
        t = s.get(Tournament, table.tournament_id)
        m = s.scalar(select(Match).where(Match.tournament_id == t.id))
        log = run_match(
            [LocalPlayer(SAMPLE_BOTS["greedy"]()), LocalPlayer(SAMPLE_BOTS["random"](seed=1))],
            "million_doubt",
            seed=m.seed,
            games=2,
        )
        res = log["result"]
        games = [
            {"scores": [gm["result"]["scores"][str(gm["seats"].index(p))] for p in range(2)], "places": [1, 2]}
            for gm in log["games"]
        ]
        scores = [float(x) for x in res["scores"]]
        assert store_result(
            s,
            m.id,
            scores=scores,
            places=[1 if scores[0] >= scores[1] else 2, 1 if scores[1] >= scores[0] else 2],
            faults=[0, 0],
            games=games,
            timings={"answered": [5, 5]},
            log=log,
        )
        assert s.get(Tournament, t.id).status == "finished"
        assert rebuild_people_ratings(s, "million_doubt") == 1
        rebuild_ratings(s, "million_doubt")
        s.commit()
        rows = s.scalars(select(PersonRating)).all()
        assert [(r.account_id, r.games, r.matches) for r in rows] == [(ann.id, 2, 1)]
        assert s.scalars(select(Rating)).all() == []  # the bots' ratings never saw the table
        rebuild_ratings(s, "million_doubt", people=True)  # an operator's ARENA_PEOPLE_IN_BOT_RATINGS
        assert [r.bot_id for r in s.scalars(select(Rating))] == [bot]
        listed, total = tables_of(s, ann.id)
        assert total == 1 and listed[0].seat == 0 and listed[0].over
        assert s.scalar(select(Table.opened_by)) == ann.id
        assert s.scalar(select(MatchSeat.account_id).where(MatchSeat.account_id.is_not(None))) == ann.id
