"""The state machines under the arena's own failures and a stranger's flood, on SQLite and
PostgreSQL (arena.lifecycle, the functions the workers call):

* fencing: a delivery whose lease was taken over stores nothing, however late it comes back
  (before, the stale result was stored and the clean replay dropped as a duplicate);
* a match the arena could not finish goes back to the queue by itself (no Retry button), and
  only for the attempt that holds it;
* the check queue serves clients in turn: a flood of checks from one address does not make an
  honest contestant's check wait behind it (before: first come, first served);
* a deleted bot, and its owner's name, leave the public leaderboard.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from arena import lifecycle
from arena.db.models import Bot, BotCheck, Match, MatchResult, utcnow
from arena.leaderboard import leaderboard
from arena.ratings import rebuild_ratings
from arena.schedule import ScheduledMatch


def _bot(s, owner_id: int, name: str) -> int:
    b = Bot(owner_id=owner_id, name=name, url=f"http://127.0.0.1:9/{name}", rulesets=["million_doubt"])
    b.status, b.secret = "ready", "s"
    s.add(b)
    s.flush()
    return b.id


def _match(s, org_id: int, bot: int) -> tuple[int, int]:
    """A tournament of ``bot`` against one house seat, started: ``(tournament id, match id)``."""
    t = lifecycle.create_tournament(
        s,
        participants=[bot],
        name="fenced",
        organizer_id=org_id,
        ruleset="million_doubt",
        options={},
        time_rules={},
        games_per_pairing=1,
        max_faults=3,
        fill_with_house_bots=True,
        house_bot="random",
        public_when_finished=True,
    )
    tid = t.id
    (mid,) = lifecycle.start_tournament(s, tid, lambda seed: [ScheduledMatch(0, 0, (bot, "house-1"), seed)])
    return tid, mid


RESULT = {
    "scores": [1.0, -1.0],
    "places": [1, 2],
    "faults": [0, 0],
    "games": [{"scores": [1.0, -1.0], "places": [1, 2]}],
    "timings": {},
}


def _expire(s, mid: int) -> None:
    s.execute(update(Match).where(Match.id == mid).values(lease_expires_at=utcnow() - timedelta(seconds=1)))
    s.commit()


def _started(accounts, s, name: str) -> int:
    """A match of a new bot of ann's against the house, started by olga: its id."""
    accounts.organizer("olga")
    accounts.contestant("ann")
    bot = _bot(s, accounts.ids["ann"], name)
    s.commit()
    return _match(s, accounts.ids["olga"], bot)[1]


def test_only_the_current_lease_holder_stores_the_result(accounts, sessionmaker):
    with sessionmaker() as s:
        mid = _started(accounts, s, "fenced")
        first = lifecycle.claim_match(s, mid, owner="cut-off:1:a", lease_s=30)
        assert isinstance(first, lifecycle.Claimed) and first.plan.attempt == 1
        _expire(s, mid)  # the worker was cut off: its lease ran out
        assert lifecycle.reap_expired(s) == [mid]
        second = lifecycle.claim_match(s, mid, owner="other:2:b", lease_s=30)
        assert isinstance(second, lifecycle.Claimed) and second.plan.attempt == 2
        # the cut-off worker comes back and stores the result it played: refused, in the transaction
        stale = lifecycle.store_result(s, mid, log={"attempt": 1}, attempt=1, **RESULT)
        assert not stale and stale.stale
        assert s.get(MatchResult, mid) is None and s.get(Match, mid).status == "running"
        assert not lifecycle.requeue_match(s, mid, 1)  # nor can it put the match back in the queue
        stored = lifecycle.store_result(s, mid, log={"attempt": 2}, attempt=2, **RESULT)
        assert stored and not stored.stale
        assert s.get(Match, mid).status == "finished"


def test_a_match_the_arena_could_not_finish_is_queued_again_by_its_attempt(accounts, sessionmaker):
    with sessionmaker() as s:
        mid = _started(accounts, s, "replayed")
        assert isinstance(lifecycle.claim_match(s, mid, owner="w:1:a", lease_s=30), lifecycle.Claimed)
        assert lifecycle.requeue_match(s, mid, 1)
        m = s.get(Match, mid)
        assert (m.status, m.lease_owner, m.lease_expires_at) == ("queued", None, None)
        again = lifecycle.claim_match(s, mid, owner="w:2:b", lease_s=30)
        assert isinstance(again, lifecycle.Claimed) and again.plan.attempt == 2  # fresh deals
        assert lifecycle.store_result(s, mid, log={}, attempt=2, **RESULT)
        assert not lifecycle.requeue_match(s, mid, 2)  # finished: stays finished


def _checks(s, owner_id: int, bots: list[int], client: str) -> list[int]:
    ids = []
    for b in bots:
        ids.append(lifecycle.begin_check(s, b, client=client).id)
    return ids


def test_a_flood_of_checks_from_one_network_does_not_delay_another_clients_check(accounts, sessionmaker):
    """Three accounts, each on its own address of one /24 (one machine), queue two checks each
    (their cap); an honest contestant of another network asks one check after them. With one
    check running at a time, the honest check is the next to run, not the seventh."""
    for i in range(3):
        accounts.contestant(f"flood{i}")
    flooders = [accounts.ids[f"flood{i}"] for i in range(3)]
    accounts.contestant("honest")
    with sessionmaker() as s:
        flood: list[int] = []
        for n, owner in enumerate(flooders):
            bots = [_bot(s, owner, f"slow-{owner}-{k}") for k in range(2)]
            s.commit()
            flood += _checks(s, owner, bots, f"198.51.100.{n + 1}")
        honest_bot = _bot(s, accounts.ids["honest"], "honest")
        s.commit()
        (honest,) = _checks(s, accounts.ids["honest"], [honest_bot], "203.0.113.9")
        # the task messages come in order: flood[0]'s first
        first = lifecycle.claim_check(s, flood[0])
        assert first is not None and first.check_id == flood[0]
        assert first.name == f"slow-{flooders[0]}-0#{first.bot_id}"
        # flood[1]'s message: the honest check is run, its network runs none (the flood's second
        # address runs none either, but its network does)
        second = lifecycle.claim_check(s, flood[1])
        assert second is not None and second.check_id == honest, (second.check_id, honest)
        # flood[0]'s message delivered again (its worker died): its own run again, nothing else
        rerun = lifecycle.claim_check(s, flood[0])
        assert rerun is not None and rerun.check_id == flood[0] and rerun.attempt == 2
        # every message runs one queued check: each check runs once
        ran = {first.check_id, second.check_id}
        for message in [*flood[2:], honest]:
            plan = lifecycle.claim_check(s, message)
            assert plan is not None and plan.check_id not in ran
            ran.add(plan.check_id)
        assert ran == {*flood, honest}
        assert lifecycle.claim_check(s, 10_000) is None  # nothing queued any more
        assert all(s.get(BotCheck, c).status == "running" for c in ran)


def test_a_deleted_bot_and_its_owners_name_leave_the_public_leaderboard(accounts, sessionmaker):
    accounts.organizer("olga")
    accounts.contestant("gone-owner")
    accounts.contestant("stays")
    with sessionmaker() as s:
        gone = _bot(s, accounts.ids["gone-owner"], "gone")
        stays = _bot(s, accounts.ids["stays"], "stays")
        s.commit()
        for bot in (gone, stays):
            _, mid = _match(s, accounts.ids["olga"], bot)
            assert isinstance(lifecycle.claim_match(s, mid), lifecycle.Claimed)
            assert lifecycle.store_result(s, mid, log={"match": mid}, **RESULT)
        rebuild_ratings(s, "million_doubt")
        s.commit()
        rows, total = leaderboard(s, "million_doubt")
        assert {r.bot_id for r in rows} == {gone, stays} and total == 2
        s.execute(update(Bot).where(Bot.id == gone).values(status="deleted"))
        s.commit()
        rows, total = leaderboard(s, "million_doubt")
    assert [r.bot_id for r in rows] == [stays] and total == 1
    assert all("gone" not in (r.bot_name, r.owner) for r in rows), rows
