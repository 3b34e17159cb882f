"""The ladder's core on SQLite and PostgreSQL, played in-process (docs/ladder.md): a tick forms
sets among the entries that can play now, once per tick; a set is one deal in every seat
rotation with its own seed commitment; a stored set is rated once."""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta

import pytest
from sqlalchemy import func, select, text

from arena import lifecycle, matchlog, matchmaking
from arena.db.models import (
    Account,
    Bot,
    LadderEntry,
    LadderPair,
    LadderRating,
    LadderSet,
    Match,
    MatchLog,
    MatchResult,
    Rating,
    utcnow,
)
from arena.inprocess import InProcessDispatcher
from arena.lifecycle import ladder_sets
from arena.lifecycle import ladders as states
from arena.runner.replay import check_fairness, replay
from arena.usecases import InvalidField, ladders
from bots_sdk.samples import SAMPLE_BOTS
from tests.api.conftest import eager_client, register_checked_bot, tiny_bot_server
from tests.fakes import FakeBot
from tests.helpers import mark_bot_checked

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
            assert ladder_sets.rate_set(s, match_id).changed is False
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


class Remembers(SAMPLE_BOTS["greedy"]):
    """The cheat of a duplicate set, played out: weak in a set's first game, strong once it
    has seen the deal (what a bot remembering the deal gains: it knows its opponent's hand)."""

    def __init__(self) -> None:
        super().__init__()
        self.weak = SAMPLE_BOTS["random"](seed=7)

    def decide(self, request):
        return super().decide(request) if int(request.get("game", 0)) > 0 else self.weak.decide(request)


@pytest.mark.slow  # 300 sets played through the API: by far the longest test of the fast lane
def test_a_bot_that_remembers_the_deal_stands_out_in_the_recall_view(client, accounts, sessionmaker, database_url):
    """The operators' recall view lists a bot that scores better in a set's last game than in
    its first; honest bots are not listed. Statistics over 300 sets (the deals are fresh draws:
    enough sets that the cheat stands out far past the bound); on SQLite only (the recall's
    sums are the same on either database: test_a_set_stored_or_rated_twice... covers both)."""
    if not database_url.startswith("sqlite"):
        pytest.skip("a statistic of 300 sets: once is enough, on SQLite")
    accounts.organizer("org")
    servers = [FakeBot(Remembers()), FakeBot()]
    try:
        bots = []
        for i, server in enumerate(servers):
            h = accounts.contestant(f"p{i}")
            bots.append(register_checked_bot(client, h, server.url, [RS], f"p{i}"))
        with sessionmaker() as s:
            ladder = ladders.create_ladder(
                s,
                _account(sessionmaker, accounts, "org"),
                name="recall",
                ruleset=RS,
                options={},
                time_rules={"initial": 5.0, "increment": 1.0, "cap": 5.0},
                config={"fill_with_house_bots": False, "pair_free_sets": 1000},
                open_ladder=True,
            ).id
        for i, bot in enumerate(bots):
            with sessionmaker() as s:
                ladders.enter_ladder(s, _account(sessionmaker, accounts, f"p{i}"), ladder, bot, max_sets_per_hour=120)
        now = utcnow()
        for k in range(300):  # a set per tick
            sent: list[int] = []
            _tick(sessionmaker, sent, now + timedelta(minutes=k), seed=k)
            _play(client, sent)
        with sessionmaker() as s:
            ladders.fit_ladder(s, ladder)
        with sessionmaker() as s:
            cheat = states.entry_of(s, ladder, bots[0]).id
            view = ladders.collusion_view(s, _account(sessionmaker, accounts, "org"), ladder)
            sums = [(e.id, e.recall_n, e.recall_sum, e.recall_sumsq) for e in s.scalars(select(LadderEntry))]
        assert [r["entry_id"] for r in view["recall"]] == [cheat], (view, sums)
        assert view["pairs"] == []  # nothing else stands out
    finally:
        for server in servers:
            server.close()


def test_a_sybil_deleted_before_the_start_hands_nobody_a_rated_win(client, accounts, sessionmaker, bot_server):
    """Tournaments follow the ladder's rule: a match where a bot seat never made a valid
    decision (the sybil's forfeits without a request) is left out of the ratings."""
    org = accounts.organizer("org")
    bots = {}
    for name in ("ann", "ben", "cat", "syb"):
        h = accounts.contestant(name)
        bots[name] = register_checked_bot(client, h, bot_server.url + "/", [RS], name)
    r = client.post(
        "/api/v1/tournaments",
        json={"ruleset": RS, "participants": list(bots.values()), "games_per_pairing": 2},
        headers=org,
    )
    tid = r.json["id"]
    assert client.delete(f"/api/v1/bots/{bots['syb']}", headers=accounts.headers("syb")).status_code == 204
    assert eager_client(client).post(f"/api/v1/tournaments/{tid}/start", headers=org).status_code == 202
    assert client.get(f"/api/v1/tournaments/{tid}", headers=org).json["status"] == "finished"
    with sessionmaker() as s:
        rated = {row.bot_id: row.matches for row in s.scalars(select(Rating).where(Rating.ruleset == RS))}
    assert rated == {bots["ann"]: 2, bots["ben"]: 2, bots["cat"]: 2}  # their matches with the sybil: unrated


def test_a_tick_forms_nothing_while_the_workers_are_behind(client, sessionmaker, field):
    sent: list[int] = []
    now = utcnow()
    _tick(sessionmaker, sent, now)
    with sessionmaker() as s:  # the sets wait in the queue, the workers busy elsewhere
        s.execute(Match.__table__.update().where(Match.id.in_(sent)).values(queued_at=now - timedelta(seconds=500)))
        s.commit()
    (report,) = _tick(sessionmaker, sent, now + timedelta(minutes=1))
    assert report.formed == [] and "the workers are behind" in report.skipped


class Dodger(SAMPLE_BOTS["greedy"]):
    """Plays its sets but one in three: there it never answers (it saw a hand or an opponent it
    did not like), hoping a set it never played in is never rated."""

    def __init__(self) -> None:
        super().__init__()
        self.matches: dict[str, int] = {}

    def decide(self, request):
        n = self.matches.setdefault(str(request.get("match_id")), len(self.matches))
        if n % 3 == 2:
            raise RuntimeError("dodged")  # the SDK answers 500: a fault
        return super().decide(request)


def test_a_bot_that_dodges_the_sets_it_dislikes_is_paused(client, accounts, sessionmaker):
    accounts.organizer("org")
    servers = [FakeBot(Dodger()), FakeBot()]
    try:
        bots = []
        for i, server in enumerate(servers):
            h = accounts.contestant(f"d{i}")
            bots.append(register_checked_bot(client, h, server.url, [RS], f"d{i}"))
        with sessionmaker() as s:
            ladder = ladders.create_ladder(
                s,
                _account(sessionmaker, accounts, "org"),
                name="dodge",
                ruleset=RS,
                options={},
                time_rules={"initial": 5.0, "increment": 1.0, "cap": 5.0},
                config={"fill_with_house_bots": False, "pair_free_sets": 1000},
                open_ladder=True,
            ).id
        for i, bot in enumerate(bots):
            with sessionmaker() as s:
                ladders.enter_ladder(s, _account(sessionmaker, accounts, f"d{i}"), ladder, bot, max_sets_per_hour=120)
        now = utcnow()
        for k in range(12):
            sent: list[int] = []
            _tick(sessionmaker, sent, now + timedelta(minutes=k), seed=k)
            _play(client, sent)
        with sessionmaker() as s:
            dodger = states.entry_of(s, ladder, bots[0])
            ratings = [r.rating for r in s.scalars(select(LadderSet).where(LadderSet.ladder_id == ladder))]
            assert dodger.status == "paused" and dodger.paused_by == "health", ratings
            assert "forfeited 2 of its last 6 sets" in dodger.paused_reason
            assert ratings.count("unrated") == 2 and len(ratings) == 6  # paused at its second dodge
    finally:
        for server in servers:
            server.close()


def test_a_bot_faulting_in_every_game_of_its_sets_is_paused(client, accounts, sessionmaker, field):
    """MD-17 and FAULT-2: a fault ends a Million Doubt game, so a set of 2 games holds 2 faults at
    most, fewer than the default max_faults (3): a bot that answers an illegal play to every
    decision is paused by the health rule all the same after ``fault_sets`` (2) such sets."""
    broken = tiny_bot_server()
    broken.mode = "illegal"
    try:
        h = accounts.contestant("eve")
        bot = register_checked_bot(client, h, broken.url + "/", [RS], "eve-bot")
        with sessionmaker() as s:
            ladders.enter_ladder(s, _account(sessionmaker, accounts, "eve"), field["ladder"], bot)
        now, played = utcnow(), 0
        for k in range(12):
            sent: list[int] = []
            _tick(sessionmaker, sent, now + timedelta(minutes=k), seed=k)
            _play(client, sent)
            with sessionmaker() as s:
                entry = states.entry_of(s, field["ladder"], bot)
                played = (
                    s.scalar(
                        select(func.count())
                        .select_from(LadderSet)
                        .where(LadderSet.match_id.in_(sent), LadderSet.rating == "unrated")
                    )
                    + played
                )
                if entry.status == "paused":
                    break
        assert (entry.status, entry.paused_by) == ("paused", "health"), (entry.status, entry.faults, played)
        assert entry.paused_reason.startswith("forfeited 2 of its last 6 sets")
        assert entry.faults == 4 and entry.sets == 0  # never rated: it never made a valid decision
    finally:
        broken.close()


def test_a_done_set_refills_its_entries_once(client, sessionmaker, field):
    """A stored set frees its entries: their next sets are formed at once (a refill, not the
    next tick), once per set, however often the store's after-steps run."""
    sent: list[int] = []
    _tick(sessionmaker, sent, seed=5)
    _play(client, sent[:1])  # one set done, the other still queued
    with sessionmaker() as s:
        freed = set(s.get(LadderSet, sent[0]).entries)
    again: list[int] = []
    kwargs = {"probe_s": 300, "online": lambda ids: set(), "rng": random.Random(2)}
    report = matchmaking.refill(sessionmaker, sent[0], again.extend, **kwargs)
    assert report is not None and len(report.formed) == 1 and again == report.formed
    with sessionmaker() as s:
        assert set(s.get(LadderSet, again[0]).entries) == freed  # the only two free: they meet again
        assert s.get(LadderSet, sent[0]).refilled
    assert matchmaking.refill(sessionmaker, sent[0], again.extend, **kwargs) is None  # once per set
    assert len(again) == 1


def test_the_pairs_sums_add_up_set_after_set(sessionmaker, field):
    """One statement adds a set to each pair's row, creating the rows it lacks."""
    with sessionmaker() as s:
        ids = sorted(s.scalars(select(LadderEntry.id).where(LadderEntry.bot_id.is_not(None))))[:3]
        now = utcnow()
        ladder_sets._add_pairs(s, field["ladder"], [ids[2], ids[0], ids[1]], [1, 3, 2], [0.5, -0.25, -0.25], now)
        ladder_sets._add_pairs(s, field["ladder"], [ids[0], ids[2]], [1, 2], [0.1, -0.1], now)
        s.commit()
        rows = {(p.a, p.b): p for p in s.scalars(select(LadderPair).where(LadderPair.ladder_id == field["ladder"]))}
        assert set(rows) == {(ids[0], ids[1]), (ids[0], ids[2]), (ids[1], ids[2])}
        both = rows[(ids[0], ids[2])]  # lost the first set to ids[2], won the second
        assert both.sets == 2 and both.a_wins == 1.0
        assert both.res_a_sum == pytest.approx(-0.15) and both.res_b_sumsq == pytest.approx(0.26)
        assert rows[(ids[0], ids[1])].sets == 1 and rows[(ids[0], ids[1])].a_wins == 0.0
        assert rows[(ids[1], ids[2])].a_wins == 0.0 and rows[(ids[1], ids[2])].res_b_sum == pytest.approx(0.5)


def test_a_refill_leaves_a_new_version_comparing_with_its_parent_to_the_tick(
    client, accounts, sessionmaker, field, bot_server
):
    """A refill never seats a new version that is still comparing with its parent: its twin
    sets need it free when the beat's tick comes (refilled after each of its sets, a busy
    ladder's version never met its parent)."""
    r = client.post(
        "/api/v1/bots",
        json={"name": "ann-v2", "url": bot_server.url + "/", "rulesets": [RS], "parent_id": field["bots"]["ann"]},
        headers=accounts.headers("ann"),
    )
    assert r.status_code == 201, r.json
    assert mark_bot_checked(sessionmaker, r.json["id"]) == "ready"
    with sessionmaker() as s:
        (child,) = states.promote_version(s, s.get(Bot, r.json["id"]))
        s.commit()
        child_id = child.id
    sent: list[int] = []
    _tick(sessionmaker, sent, seed=5)
    with sessionmaker() as s:
        mine = next(m for m in sent if child_id in s.get(LadderSet, m).entries)
    _play(client, [mine])
    again: list[int] = []
    kwargs = {"probe_s": 300, "online": lambda ids: set(), "rng": random.Random(2)}
    matchmaking.refill(sessionmaker, mine, again.extend, **kwargs)
    with sessionmaker() as s:
        assert all(child_id not in s.get(LadderSet, m).entries for m in again), again
        assert s.get(LadderEntry, child_id).compare["parent_entry"] is not None


def test_a_new_version_is_promoted_while_a_tick_holds_the_ladder(
    client, accounts, sessionmaker, field, bot_server, database_url
):
    """A passed check promotes a new version (its parent's entry updated, its own inserted)
    while a tick holds the ladder's lock: the insert does not wait for the tick (the tick locks
    ``FOR NO KEY UPDATE``), so the check cannot deadlock with a tick that goes on to update the
    parent's entry. Under load the suite saw that deadlock end a version's check with "database
    unavailable (OperationalError)". The lock timeout is a guard: a wait fails at once."""
    if database_url.startswith("sqlite"):
        pytest.skip("row locks: PostgreSQL")
    r = client.post(
        "/api/v1/bots",
        json={"name": "ann-v2", "url": bot_server.url + "/", "rulesets": [RS], "parent_id": field["bots"]["ann"]},
        headers=accounts.headers("ann"),
    )
    assert r.status_code == 201, r.json
    assert mark_bot_checked(sessionmaker, r.json["id"]) == "ready"
    with sessionmaker() as tick, sessionmaker() as check:
        assert ladder_sets.lock_ladder(tick, field["ladder"]) is not None
        check.execute(text("SET LOCAL lock_timeout = '1ms'"))
        (child,) = states.promote_version(check, check.get(Bot, r.json["id"]))
        child_id = child.id
        check.commit()
        parent = tick.scalar(select(LadderEntry).where(LadderEntry.bot_id == field["bots"]["ann"]))
        assert parent.status == "replaced"  # the tick reads the promotion once it is committed
        parent.last_set_at = utcnow()
        tick.commit()
    with sessionmaker() as s:
        assert s.get(LadderEntry, child_id).status == "active"
