"""arena.live against a real Redis: a viewer who subscribes while the publisher skips its
channel (the last message on it reached nobody: ``QUIET_S``) still receives every decision
made since, at the latest with the end of the game or of the match, before the match's end
(the flaky organizer's live view of a class table ended with no step: it opened within a
second of a decision nobody watched, and the table was over within that second); a
:class:`arena.live.Subscription` is in effect once constructed."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import redis

from arena import live
from arena.runner.match import run_match
from arena.runner.players import LocalPlayer
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules

pytestmark = pytest.mark.services


def _received(sub: live.Subscription) -> list[dict[str, Any]]:
    """Every message of ``sub`` up to the match's end (all were published before it is read)."""
    out, idle = [], 0
    for text in sub.messages(idle_s=10):
        if text is None:  # nothing came: the end is missing (a guard, never a timing)
            idle += 1
            assert idle < 3, f"no end after {out}"
            continue
        out.append(json.loads(text))
    return out


def _play(seed: int, games: int, on_step: Any) -> None:
    """A Million Doubt match of ``games`` games between two random sample bots."""
    players = [LocalPlayer(SAMPLE_BOTS["random"](seed=i), f"p{i}") for i in range(2)]
    run_match(
        players,
        "million_doubt",
        {},
        seed=seed,
        games=games,
        time_rules=TimeRules(60000, 10000, 60000),
        max_faults=3,
        on_step=on_step,
    )


@pytest.mark.parametrize("games", [1, 2])
def test_a_viewer_who_subscribes_while_its_channel_is_skipped_sees_every_decision_since(redis_url, monkeypatch, games):
    monkeypatch.setattr(live, "QUIET_S", 3600.0)  # the skip lasts the whole match: never waited out
    mid = f"quiet-{uuid.uuid4().hex[:8]}"
    pub = live.LivePublisher(redis_url, mid)
    played: dict[int, Any] = {}
    seen_before: list[int] = []  # events of game 0 sent before the viewer subscribed
    subs: list[live.Subscription] = []

    def on_step(gi, g, ex):
        pub.step(gi, g, ex)  # the first: to nobody, so the channel is skipped from now on
        played[gi] = g
        if not subs:
            seen_before.append(len(g.events))
            subs.append(live.Subscription(redis_url, live.channel(mid, True)))

    try:
        _play(4, games, on_step)
        pub.end()
        got = _received(subs[0])
    finally:
        for s in subs:
            s.close()
    assert got[-1] == {"type": "end", "match_id": mid}
    steps = got[:-1]
    assert steps and all(m["type"] == "step" for m in steps)
    for gi, g in played.items():
        mine = [m for m in steps if m["game"] == gi]
        assert mine[-1]["over"] is True  # the game's last state, every hand as it ended
        assert mine[-1]["hands"] == json.loads(json.dumps(live.full_view(g, 0)["hands"]))
        events = [e for m in mine for e in m["events"]]
        since = seen_before[0] if gi == 0 else 0
        assert events == json.loads(json.dumps(g.history(None, since)))  # none missed, none twice


def test_a_subscription_is_in_effect_once_constructed(redis_url):
    name = f"arena:live:test:{uuid.uuid4().hex[:8]}"
    sub = live.Subscription(redis_url, name)
    client = redis.Redis.from_url(redis_url)
    try:
        assert dict(client.pubsub_numsub(name))[name.encode()] == 1
        assert client.publish(name, '{"type":"step"}') == 1
        assert client.publish(name, '{"type":"end"}') == 1
        assert list(sub.messages(idle_s=30)) == ['{"type":"step"}', '{"type":"end"}']  # no confirmation among them
    finally:
        client.close()
        sub.close()


def test_the_flush_of_a_skipped_seat_channel_carries_that_seats_view_only(redis_url, monkeypatch):
    """C-11 through the flush: players' channels skipped all match (seats swapped in game 1)
    get, at each game's end and the match's, the view of the seat their player held in that
    game: its own hand only, the events shown to that seat, never another seat's cards."""
    monkeypatch.setattr(live, "QUIET_S", 3600.0)
    mid = f"quiet-seat-{uuid.uuid4().hex[:8]}"
    seats = [[0, 1], [1, 0]]
    pub = live.LivePublisher(redis_url, mid, seats=seats)
    played: dict[int, Any] = {}
    subs: dict[int, live.Subscription] = {}

    def on_step(gi, g, ex):
        pub.step(gi, g, ex)  # the first: to nobody, every channel skipped from now on
        played[gi] = g
        if not subs:
            subs.update({p: live.Subscription(redis_url, live.player_channel(mid, p)) for p in (0, 1)})

    try:
        _play(7, 2, on_step)
        pub.end()
        got = {p: _received(s) for p, s in subs.items()}
    finally:
        for s in subs.values():
            s.close()
    for p, messages in got.items():
        assert messages[-1]["type"] == "end"
        steps = messages[:-1]
        assert {m["game"] for m in steps} == {0, 1}  # each game's end came through the flush
        for m in steps:
            seat = seats[m["game"]].index(p)
            assert m["own_seat"] == seat
            assert [h is None for h in m["hands"]] == [i != seat for i in range(2)]
            assert all("hands" not in e for e in m["events"])
        for gi, g in played.items():
            last = [m for m in steps if m["game"] == gi][-1]
            seat = seats[gi].index(p)
            assert last["over"] is True
            view = json.loads(json.dumps(live.seat_view(g, seat, 0)))
            assert {k: last[k] for k in view if k != "events"} == {k: v for k, v in view.items() if k != "events"}
