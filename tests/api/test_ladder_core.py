"""The ladder's core on SQLite and PostgreSQL, played in-process (docs/ladder.md): a tick forms
sets among the entries that can play now, once per tick; a set is one deal in every seat
rotation with its own seed commitment; a stored set is rated once."""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from arena import lifecycle, matchlog
from arena.db.models import (
    Account,
    LadderEntry,
    LadderPair,
    LadderRating,
    LadderSet,
    Match,
    MatchLog,
    MatchResult,
    utcnow,
)
from arena.inprocess import InProcessDispatcher
from arena.lifecycle import ladders as states
from arena.runner.replay import check_fairness, replay
from arena.usecases import InvalidField, ladders
from tests.api.conftest import register_checked_bot

RS = "million_doubt"
NAMES = ("ann", "ben", "cat", "dan")


def _account(sessionmaker, accounts, name: str):
    with sessionmaker() as s:
        account = s.get(Account, accounts.ids[name])
        s.expunge(account)
    return account


@pytest.fixture
def field(client, accounts, sessionmaker, bot_server):
    """An organizer's open Million Doubt ladder (no house fill) and four contestants, each with
    one ready bot entered."""
    accounts.organizer("org")
    bots = {}
    for name in NAMES:
        h = accounts.contestant(name)
        bots[name] = register_checked_bot(client, h, bot_server.url + "/", [RS], f"{name}-bot")
    with sessionmaker() as s:
        ladder = ladders.create_ladder(
            s,
            _account(sessionmaker, accounts, "org"),
            name="open md",
            ruleset=RS,
            options={},
            time_rules={"initial": 5.0, "increment": 1.0, "cap": 5.0},
            config={"fill_with_house_bots": False},
            open_ladder=True,
        )
        ladder_id = ladder.id
    for name, bot_id in bots.items():
        with sessionmaker() as s:
            ladders.enter_ladder(s, _account(sessionmaker, accounts, name), ladder_id, bot_id)
    return {"ladder": ladder_id, "bots": bots}


def _tick(sessionmaker, sent: list[int], now=None, seed: int = 1):
    return ladders.tick(
        sessionmaker,
        sent.extend,
        tick_s=60,
        probe_s=300,
        online=lambda ids: set(),
        now=now or utcnow(),
        rng=random.Random(seed),
    )


def _play(client, ids: list[int]) -> None:
    settings = dataclasses.replace(client.application.extensions["arena"]["settings"], celery_eager=True)
    InProcessDispatcher(settings).send_matches(ids)


def test_a_tick_forms_each_set_once_and_a_set_is_one_deal_in_both_seats(client, sessionmaker, field):
    sent: list[int] = []
    now = utcnow()
    (report,) = _tick(sessionmaker, sent, now)
    assert report.candidates == 4 and len(report.formed) == 2 and sent == report.formed
    (again,) = _tick(sessionmaker, sent, now + timedelta(seconds=1))  # the same tick, run twice
    assert again.formed == [] and len(sent) == 2
    with sessionmaker() as s:
        rows = s.scalars(select(LadderSet).where(LadderSet.match_id.in_(sent))).all()
        seated = [e for r in rows for e in r.entries]
        assert sorted(seated) == sorted(set(seated)) and len(seated) == 4  # each entry once
        assert all(r.rating == "pending" and len(r.commitment) == 64 for r in rows)
    _play(client, sent)
    with sessionmaker() as s:
        for r in s.scalars(select(LadderSet).where(LadderSet.match_id.in_(sent))):
            assert r.rating == "rated" and r.placement is not None
            m = s.get(Match, r.match_id)
            log = matchlog.decode(s.scalar(select(MatchLog.data).where(MatchLog.match_id == m.id)))
            # MD-?: one deal, both seats: the two games share their seed, the seats swapped
            assert [g["seed"] for g in log["games"]][0] == log["games"][1]["seed"]
            assert [g["seats"] for g in log["games"]] == [[0, 1], [1, 0]]
            assert log["fairness"]["scheme"] == "set" and log["fairness"]["commitment"] == r.commitment
            replay(log)
            check_fairness(log, int(m.seed), r.salt)  # the set's own seed opens its commitment
        entries = s.scalars(select(LadderEntry).where(LadderEntry.bot_id.is_not(None))).all()
        assert all(e.sets == 1 and e.games == 2 for e in entries)
        assert s.scalar(select(func.count()).select_from(LadderRating)) == 4
        assert s.scalar(select(func.count()).select_from(LadderPair)) == 2


def test_a_set_stored_or_rated_twice_moves_every_rating_once(client, sessionmaker, field):
    sent: list[int] = []
    _tick(sessionmaker, sent)
    _play(client, sent[:1])
    match_id = sent[0]
    with sessionmaker() as s:
        before = {e.id: (e.mu, e.sigma, e.sets) for e in s.scalars(select(LadderEntry))}
        result = s.get(MatchResult, match_id)
        fields = {k: getattr(result, k) for k in ("scores", "places", "faults", "games", "timings")}
    for _ in range(2):
        with sessionmaker() as s:
            assert states.rate_set(s, match_id).changed is False
        with sessionmaker() as s:
            assert not lifecycle.store_result(s, match_id, log={"again": 1}, **fields)
    with sessionmaker() as s:
        after = {e.id: (e.mu, e.sigma, e.sets) for e in s.scalars(select(LadderEntry))}
        assert after == before
        assert s.scalar(select(func.count()).select_from(LadderRating).where(LadderRating.match_id == match_id)) == 2


def test_a_set_no_card_was_played_in_is_never_rated(client, sessionmaker, field):
    """A bot deleted after its set was formed forfeits without a request: nobody gains."""
    sent: list[int] = []
    _tick(sessionmaker, sent)
    match_id = sent[0]
    with sessionmaker() as s:
        entries = s.get(LadderSet, match_id).entries
        victim = s.get(LadderEntry, entries[0]).bot_id
        lifecycle.delete_bot(s, victim)
    _play(client, [match_id])
    with sessionmaker() as s:
        row = s.get(LadderSet, match_id)
        assert row.rating == "unrated"
        assert all(s.get(LadderEntry, e).sets == 0 for e in entries)
        assert s.get(LadderEntry, entries[0]).status == "withdrawn"


def test_entering_checks_the_bot_and_the_per_account_cap(client, accounts, sessionmaker, field, bot_server):
    h = accounts.headers("ann")
    extra = [register_checked_bot(client, h, bot_server.url + "/", [RS], f"ann-{i}") for i in range(3)]
    ann = _account(sessionmaker, accounts, "ann")
    with sessionmaker() as s:
        ladders.enter_ladder(s, ann, field["ladder"], extra[0])
    with sessionmaker() as s:
        ladders.enter_ladder(s, ann, field["ladder"], extra[1])
    with sessionmaker() as s, pytest.raises(lifecycle.Conflict, match="at most 3 entries"):
        ladders.enter_ladder(s, ann, field["ladder"], extra[2])
    with sessionmaker() as s, pytest.raises(lifecycle.Conflict, match="already entered"):
        ladders.enter_ladder(s, ann, field["ladder"], extra[0])
    other = register_checked_bot(client, h, bot_server.url + "/", ["jdf"], "ann-jdf")
    with sessionmaker() as s, pytest.raises(InvalidField, match="does not play"):
        ladders.enter_ladder(s, ann, field["ladder"], other)


def test_two_bots_of_one_owner_never_share_a_table(client, accounts, sessionmaker, field, bot_server):
    h = accounts.headers("ann")
    ann = _account(sessionmaker, accounts, "ann")
    extra = register_checked_bot(client, h, bot_server.url + "/", [RS], "ann-2")
    with sessionmaker() as s:
        ladders.enter_ladder(s, ann, field["ladder"], extra)
    now = utcnow()
    for k in range(30):  # many ticks, each forming every set it can
        sent: list[int] = []
        _tick(sessionmaker, sent, now + timedelta(minutes=k), seed=k)
        with sessionmaker() as s:
            for r in s.scalars(select(LadderSet).where(LadderSet.match_id.in_(sent))):
                owners = [s.get(LadderEntry, e).owner_id for e in r.entries]
                assert len(set(owners)) == len(owners)
            s.execute(Match.__table__.update().where(Match.id.in_(sent)).values(status="cancelled"))  # free the seats
            s.commit()


def test_the_pairs_sums_add_up_set_after_set(sessionmaker, field):
    """One statement adds a set to each pair's row, creating the rows it lacks."""
    with sessionmaker() as s:
        ids = sorted(s.scalars(select(LadderEntry.id).where(LadderEntry.bot_id.is_not(None))))[:3]
        now = utcnow()
        states._add_pairs(s, field["ladder"], [ids[2], ids[0], ids[1]], [1, 3, 2], [0.5, -0.25, -0.25], now)
        states._add_pairs(s, field["ladder"], [ids[0], ids[2]], [1, 2], [0.1, -0.1], now)
        s.commit()
        rows = {(p.a, p.b): p for p in s.scalars(select(LadderPair).where(LadderPair.ladder_id == field["ladder"]))}
        assert set(rows) == {(ids[0], ids[1]), (ids[0], ids[2]), (ids[1], ids[2])}
        both = rows[(ids[0], ids[2])]  # lost the first set to ids[2], won the second
        assert both.sets == 2 and both.a_wins == 1.0
        assert both.res_a_sum == pytest.approx(-0.15) and both.res_b_sumsq == pytest.approx(0.26)
        assert rows[(ids[0], ids[1])].sets == 1 and rows[(ids[0], ids[1])].a_wins == 0.0
        assert rows[(ids[1], ids[2])].a_wins == 0.0 and rows[(ids[1], ids[2])].res_b_sum == pytest.approx(0.5)
