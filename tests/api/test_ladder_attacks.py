"""Attacks on the ladder (docs/ladder.md) by a contestant who cheats if it can: a bot paused by
the health rule that its owner brings back without a passing check (a withdrawal and a new
entry), to go on dodging the sets it dislikes; and a new version left comparing with a parent
that could no longer play."""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta

from sqlalchemy import select

from arena import matchmaking
from arena.db.models import Account, Bot, LadderEntry, LadderSet, utcnow
from arena.inprocess import InProcessDispatcher
from arena.lifecycle import ladders as states
from arena.usecases import ladders
from bots_sdk.samples import SAMPLE_BOTS
from tests.api.conftest import register_checked_bot
from tests.fakes import FakeBot
from tests.helpers import mark_bot_checked

RS = "million_doubt"


class Dodger(SAMPLE_BOTS["greedy"]):
    """Never answers in one set of three (it saw a hand or an opponent it did not like)."""

    def __init__(self) -> None:
        super().__init__()
        self.matches: dict[str, int] = {}

    def decide(self, request):
        n = self.matches.setdefault(str(request.get("match_id")), len(self.matches))
        if n % 3 == 2:
            raise RuntimeError("dodged")  # the SDK answers 500: a fault
        return super().decide(request)


def _play(client, ids: list[int]) -> None:
    settings = dataclasses.replace(client.application.extensions["arena"]["settings"], celery_eager=True)
    InProcessDispatcher(settings).send_matches(ids)


def test_a_bot_paused_by_the_ladder_is_not_brought_back_by_a_withdrawal_and_a_new_entry(client, accounts, sessionmaker):
    """The health rule pauses the dodger; its owner withdraws it and enters it again at once,
    which would bring it back active without the passing check the rule asks for (and dodge
    on, one set in three). Refused (409, the reason said) until a check passes."""
    org = accounts.organizer("org")
    servers = [FakeBot(Dodger()), FakeBot()]
    try:
        heads = [accounts.contestant(f"d{i}") for i in range(2)]
        bots = [register_checked_bot(client, h, s.url, [RS], f"d{i}") for i, (h, s) in enumerate(zip(heads, servers))]
        with sessionmaker() as s:
            ladder = ladders.create_ladder(
                s,
                s.get(Account, accounts.ids["org"]),
                name="dodge",
                ruleset=RS,
                options={},
                time_rules={"initial": 5.0, "increment": 1.0, "cap": 5.0},
                config={"fill_with_house_bots": False, "pair_free_sets": 1000},
                open_ladder=True,
            ).id
        for h, bot in zip(heads, bots):
            r = client.post(
                f"/api/v1/ladders/{ladder}/entries", json={"bot_id": bot, "max_sets_per_hour": 120}, headers=h
            )
            assert r.status_code == 201, r.json
        now = utcnow()
        for k in range(12):
            sent: list[int] = []
            ladders.tick(
                sessionmaker,
                sent.extend,
                tick_s=60,
                probe_s=300,
                online=lambda ids: set(),
                now=now + timedelta(minutes=k),
                rng=random.Random(k),
            )
            _play(client, sent)
            with sessionmaker() as s:
                if states.entry_of(s, ladder, bots[0]).status == "paused":
                    break
        with sessionmaker() as s:
            entry = states.entry_of(s, ladder, bots[0])
            assert (entry.status, entry.paused_by) == ("paused", "health")
        dodger = heads[0]
        base = f"/api/v1/ladders/{ladder}/entries"
        assert client.post(f"{base}/{bots[0]}/resume", headers=dodger).status_code == 409
        assert client.post(f"{base}/{bots[0]}/withdraw", headers=dodger).json["status"] == "withdrawn"
        r = client.post(base, json={"bot_id": bots[0], "max_sets_per_hour": 120}, headers=dodger)
        assert r.status_code == 409, r.json
        assert "passes a check" in r.json["message"]
        with sessionmaker() as s:
            assert states.entry_of(s, ladder, bots[0]).status == "withdrawn"
            formed = len(s.scalars(select(LadderSet).where(LadderSet.ladder_id == ladder)).all())
        sent = []
        ladders.tick(
            sessionmaker,
            sent.extend,
            tick_s=60,
            probe_s=300,
            online=lambda ids: set(),
            now=now + timedelta(minutes=20),
            rng=random.Random(99),
        )
        assert sent == []  # the dodger's rival has nobody to play: the dodger is not seated
        with sessionmaker() as s:
            assert len(s.scalars(select(LadderSet).where(LadderSet.ladder_id == ladder)).all()) == formed
        assert mark_bot_checked(sessionmaker, bots[0]) == "ready"  # its owner fixed it: a check passed
        r = client.post(base, json={"bot_id": bots[0], "max_sets_per_hour": 120}, headers=dodger)
        assert r.status_code == 201, r.json
        assert (r.json["status"], r.json["paused_by"]) == ("active", None)
        assert org  # the organizer's account made the ladder
    finally:
        for server in servers:
            server.close()


def test_a_replaced_parent_is_probed_while_its_new_version_compares_with_it(client, accounts, sessionmaker, bot_server):
    """A new version plays its comparison sets with its parent (the ticks seat both on one deal)
    for COMPARE_SETS deals; a refill never seats it meanwhile. An HTTP parent can play only with
    a probe passed within twice ARENA_LADDER_PROBE_S, but only active entries were probed: ten
    minutes after the promotion the parent could no longer play, the version never finished its
    comparison and stayed out of every refill for good (a set a minute, where the others play
    back to back). The parent is probed while its version compares with it, not after."""
    accounts.organizer("org")
    ann = accounts.contestant("ann")
    parent_bot = register_checked_bot(client, ann, bot_server.url + "/", [RS], "ann-v1")
    with sessionmaker() as s:
        ladder = ladders.create_ladder(
            s,
            s.get(Account, accounts.ids["org"]),
            name="versions",
            ruleset=RS,
            options={},
            time_rules={"initial": 5.0, "increment": 1.0, "cap": 5.0},
            open_ladder=True,
        ).id
    assert client.post(f"/api/v1/ladders/{ladder}/entries", json={"bot_id": parent_bot}, headers=ann).status_code == 201
    with sessionmaker() as s:
        parent = states.entry_of(s, ladder, parent_bot).id
        states.record_probe(s, parent, True)  # the beat probed it as it probes every entry
    r = client.post(
        "/api/v1/bots",
        json={"name": "ann-v2", "url": bot_server.url + "/", "rulesets": [RS], "parent_id": parent_bot},
        headers=ann,
    )
    assert r.status_code == 201, r.json
    assert mark_bot_checked(sessionmaker, r.json["id"]) == "ready"
    with sessionmaker() as s:
        (child,) = states.promote_version(s, s.get(Bot, r.json["id"]))
        s.commit()
        child_id = child.id
    later = utcnow() + timedelta(seconds=301)
    with sessionmaker() as s:
        assert s.get(LadderEntry, parent).status == "replaced"
        due = matchmaking.probes_due(s, probe_s=300, now=later)
        assert parent in due and child_id in due, due
        entry = s.get(LadderEntry, child_id)
        entry.compare = {**entry.compare, "sets": matchmaking.COMPARE_SETS}  # its comparison is done
        s.commit()
    with sessionmaker() as s:
        assert parent not in matchmaking.probes_due(s, probe_s=300, now=later)  # no probe beyond it


def test_a_new_version_whose_parent_is_gone_is_refilled_like_any_entry(client, accounts, sessionmaker, bot_server):
    """A refill leaves a new version still comparing with its parent to the beat's tick (its twin
    sets need it free there). Once its parent can no longer play (its owner deleted it, as the
    version replaced it), no twin set can come: the version was left out of every refill all
    the same, for good (a set a tick). It is refilled as any entry then."""
    accounts.organizer("org")
    ann, ben = accounts.contestant("ann"), accounts.contestant("ben")
    parent_bot = register_checked_bot(client, ann, bot_server.url + "/", [RS], "ann-v1")
    rival = register_checked_bot(client, ben, bot_server.url + "/", [RS], "ben-bot")
    with sessionmaker() as s:
        ladder = ladders.create_ladder(
            s,
            s.get(Account, accounts.ids["org"]),
            name="versions",
            ruleset=RS,
            options={},
            time_rules={"initial": 5.0, "increment": 1.0, "cap": 5.0},
            config={"fill_with_house_bots": False},
            open_ladder=True,
        ).id
    for h, bot in ((ann, parent_bot), (ben, rival)):
        assert client.post(f"/api/v1/ladders/{ladder}/entries", json={"bot_id": bot}, headers=h).status_code == 201
    r = client.post(
        "/api/v1/bots",
        json={"name": "ann-v2", "url": bot_server.url + "/", "rulesets": [RS], "parent_id": parent_bot},
        headers=ann,
    )
    assert r.status_code == 201, r.json
    assert mark_bot_checked(sessionmaker, r.json["id"]) == "ready"
    with sessionmaker() as s:
        (child,) = states.promote_version(s, s.get(Bot, r.json["id"]))
        s.commit()
        child_id = child.id
    assert client.delete(f"/api/v1/bots/{parent_bot}", headers=ann).status_code == 204
    sent: list[int] = []
    ladders.tick(
        sessionmaker, sent.extend, tick_s=60, probe_s=300, online=lambda ids: set(), now=utcnow(), rng=random.Random(3)
    )
    assert len(sent) == 1  # the version and ben's bot
    _play(client, sent)
    again: list[int] = []
    matchmaking.refill(sessionmaker, sent[0], again.extend, probe_s=300, online=lambda ids: set(), rng=random.Random(4))
    with sessionmaker() as s:
        assert s.get(LadderEntry, child_id).compare["sets"] == 0  # it never compared
        assert [sorted(s.get(LadderSet, m).entries) for m in again] == [sorted(s.get(LadderSet, sent[0]).entries)]
