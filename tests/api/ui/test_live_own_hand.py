"""The owner of a seated bot watches its bot's own view live (its hand, what the bot sees),
never another seat's: the attacker is alice, owner of bot A, in a match with bob's bots.

Matches of Million Doubt and Trump Millionaire are played in-process with the worker's
publisher (``arena.live.LivePublisher.step`` as ``on_step``, real Redis) while alice reads
``GET /ui/matches/<id>/live`` over HTTP, asking for bob's seat too. Every message must carry
her seat's hand as the engine holds it at that step, ``null`` for every other seat, and name
no card of another hand that her seat has not seen (computed independently from the engine:
the cards shown to her seat, ``Game.history(seat)``, her hand and the field). The API and
the pages give her no log, replay or hand while the tournament runs.
"""

from __future__ import annotations

import json
import threading

import httpx
import pytest
import redis
from werkzeug.serving import make_server

from api import create_app
from arena import live
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.session import make_engine, make_sessionmaker
from arena.runner.match import default_game_specs, run_match
from arena.runner.players import LocalPlayer
from bots_sdk.samples import SAMPLE_BOTS
from engine.cards import format_cards, sort_key
from engine.timebank import TimeRules

from .conftest import _QuietHandler, wait_streams_released
from .test_live_public import SseReader, _cards_in, _subscribers, _wait_subscribed, add_running_match

pytestmark = pytest.mark.services

RULESETS = {"million_doubt": (2, {}, 2), "trump_millionaire": (4, {"target_score": 10}, 1)}


@pytest.fixture
def site(tmp_path, redis_url):
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    upgrade(url)
    engine = make_engine(url)
    sm = make_sessionmaker(engine)
    app = create_app(
        Settings(
            data_dir=tmp_path,
            database_url=url,
            broker_url=redis_url,
            allow_private_bot_urls=True,
            rate_limits=False,
            cookie_secure=False,
        ),
        engine=engine,
    )
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    st: dict = {"url": f"http://127.0.0.1:{server.server_port}", "redis": redis_url, "matches": {}, "tokens": {}}
    with sm() as s:
        olga, _ = create_account(s, "olga", "organizer")
        alice, st["tokens"]["alice"] = create_account(s, "alice", "contestant")
        bob, st["tokens"]["bob"] = create_account(s, "bob", "contestant")
        for ruleset, (n, options, games) in RULESETS.items():
            owners = [alice.id] + [bob.id] * (n - 1)  # alice's bot is player 0
            m = add_running_match(s, olga.id, owners, ruleset, options, games, f"Own hand {ruleset}")
            st["matches"][ruleset] = (m.id, m.tournament_id)
        s.commit()
    yield st
    wait_streams_released()
    server.shutdown()
    engine.dispose()


class SeatRecorder:
    """``on_step`` wrapper: before publishing, per (game, step), player 0's seat, its hand,
    and the cards of the other hands that seat has not seen (the engine's own view of it)."""

    def __init__(self, publisher: live.LivePublisher, seats: list[list[int]]):
        self.publisher, self.seats = publisher, seats
        self.own: dict[tuple[int, int], tuple[int, list[str]]] = {}
        self.unseen: dict[tuple[int, int], set[str]] = {}

    def __call__(self, gi: int, g, ex: dict) -> None:
        seat = self.seats[gi].index(0)
        seen = set(_cards_in(g.history(seat, 0))) | set(_cards_in([p.view(seat) for p in g.field]))
        hand = format_cards(sorted(g.hands[seat], key=sort_key))
        seen |= set(hand)
        others = {c for s, h in enumerate(g.hands) if s != seat for c in format_cards(h)}
        self.own[(gi, ex["n"])] = (seat, hand)
        self.unseen[(gi, ex["n"])] = others - seen - {"JK"}
        self.publisher.step(gi, g, ex)


def _play(site, ruleset: str) -> tuple[dict, SeatRecorder]:
    n, options, games = RULESETS[ruleset]
    mid, _tid = site["matches"][ruleset]
    seats = [spec["seats"] for spec in default_game_specs(ruleset, 5, games)]
    pub = live.LivePublisher(site["redis"], mid, seats=seats)
    rec = SeatRecorder(pub, seats)
    log = run_match(
        [LocalPlayer(SAMPLE_BOTS["random"](seed=i + 1), f"p{i}") for i in range(n)],
        ruleset,
        options,
        seed=5,
        games=games,
        time_rules=TimeRules(60000, 10000, 60000),
        max_faults=3,
        on_step=rec,
    )
    pub.end()
    return log, rec


def _signed_in(site, who: str) -> httpx.Client:
    c = httpx.Client(base_url=site["url"], timeout=60)
    assert c.post("/ui/login", data={"token": site["tokens"][who]}).status_code == 303
    return c


@pytest.mark.parametrize("ruleset", list(RULESETS))
def test_the_owner_sees_its_own_seats_hand_and_never_anothers(site, ruleset):
    mid, tid = site["matches"][ruleset]
    r = redis.Redis.from_url(site["redis"])
    alice = _signed_in(site, "alice")
    try:
        # her own view, and the attacker's tries at bob's seat and at the full channel
        readers = [SseReader(alice, f"/ui/matches/{mid}/live{q}") for q in ("", "?player=1", "?player=3&view=full")]
        _wait_subscribed(r, live.player_channel(mid, 0), len(readers))
        for other in range(1, RULESETS[ruleset][0]):
            assert _subscribers(r, live.player_channel(mid, other)) == 0
        assert _subscribers(r, live.channel(mid, True)) == 0
        log, rec = _play(site, ruleset)
        for rd in readers:
            rd.join()
        # while it runs, the API and the pages give her no log, replay or hand
        assert alice.get(f"/api/v1/matches/{mid}/log", headers={}).status_code in (401, 403)
        for path in (
            f"/ui/matches/{mid}/log.json",
            f"/ui/matches/{mid}/replay.json",
            f"/ui/tournaments/{tid}/logs.jsonl",
        ):
            assert alice.get(path).status_code == 403, path
        page = alice.get(f"/ui/matches/{mid}")
        assert page.status_code == 200 and 'data-player="0"' in page.text
    finally:
        alice.close()
    token = {"Authorization": f"Bearer {site['tokens']['alice']}"}
    with httpx.Client(base_url=site["url"], headers=token) as api:
        assert api.get(f"/api/v1/matches/{mid}/log").status_code == 403
        assert api.get(f"/api/v1/tournaments/{tid}/logs").status_code == 403
        record = api.get(f"/api/v1/matches/{mid}")
        assert record.status_code == 200 and not _cards_in(record.json())
    steps_played = sum(len(g["exchanges"]) for g in log["games"])
    for rd in readers:
        assert rd.status == 200 and rd.messages[-1]["type"] == "end"
        steps = [m for m in rd.messages if m["type"] == "step"]
        assert len(steps) == steps_played > 10
        for m in steps:
            key = (m["game"], m["step"])
            seat, hand = rec.own[key]
            assert m["own_seat"] == seat
            assert m["hands"][seat] == hand, key  # her bot's hand as the engine holds it
            assert all(h is None for s, h in enumerate(m["hands"]) if s != seat), key
            named = set(_cards_in({k: v for k, v in m.items() if k != "hands"}))
            assert not named & rec.unseen[key], (key, named & rec.unseen[key])
            assert not {"seed", "request", "response"} & set(json.dumps(m).split('"'))
    r.close()


def test_an_owner_may_watch_as_a_spectator_and_bob_gets_his_own_seat(site):
    mid, _tid = site["matches"]["million_doubt"]
    r = redis.Redis.from_url(site["redis"])
    alice, bob = _signed_in(site, "alice"), _signed_in(site, "bob")
    try:
        spectator = SseReader(alice, f"/ui/matches/{mid}/live?view=public")
        bobs = SseReader(bob, f"/ui/matches/{mid}/live?player=0")  # asks for alice's seat: gets his own
        _wait_subscribed(r, live.channel(mid, False))
        _wait_subscribed(r, live.player_channel(mid, 1))
        assert _subscribers(r, live.player_channel(mid, 0)) == 0
        _log, rec = _play(site, "million_doubt")
        spectator.join()
        bobs.join()
        page = alice.get(f"/ui/matches/{mid}?view=public")
        assert 'data-player=""' in page.text and 'id="live-as-owner"' in page.text
    finally:
        alice.close()
        bob.close()
    assert all("hands" not in m for m in spectator.messages)
    for m in bobs.messages[:-1]:
        seat, alices_hand = rec.own[(m["game"], m["step"])]
        assert m["own_seat"] == 1 - seat and m["hands"][seat] is None and m["hands"][1 - seat] is not None
    r.close()
