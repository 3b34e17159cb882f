"""The live view as contestants see it: the policy (``arena.access.live_view_for``), the
tournament channel, and attacker tests of the public stream.

The attacker tests play a match of each rule set in-process with the worker's publisher
(``arena.live.LivePublisher.step`` as ``on_step``, real Redis) while a contestant owning a
seated bot reads ``GET /ui/matches/<id>/live`` over HTTP. Every card named anywhere in the
messages it receives must be public at that step by C-11, computed independently from the
engine's full (log) view: cards played face up, a doubt's reveal (MD-8), penalty cards,
discards (LR-6), blind cards once their set ends (JDF-2). Hands, unrevealed face-down cards,
the set-aside and blind cards, cards given or exchanged between seats and seeds never appear.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import redis
from werkzeug.serving import make_server

from api import create_app
from arena import access, live
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.models import Bot, Match, MatchSeat, Tournament, TournamentParticipant, utcnow
from arena.db.session import make_engine, make_sessionmaker
from arena.live import announce
from arena.runner.match import default_game_specs, run_match
from arena.runner.players import LocalPlayer
from bots_sdk.samples import SAMPLE_BOTS
from engine.cards import format_cards
from engine.timebank import TimeRules

from .conftest import _QuietHandler, wait_streams_released

CARD = re.compile(r"^(?:[2-9TJQKA][SHDC]|JK)$")
RULESETS = {"million_doubt": (2, {}, 4), "trump_millionaire": (4, {"target_score": 10}, 1), "jdf": (4, {"sets": 1}, 1)}


# ----------------------------------------------------------------------------- the site
def _site(tmp_path, broker_url: str):
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    upgrade(url)
    engine = make_engine(url)
    sm = make_sessionmaker(engine)
    app = create_app(
        Settings(
            data_dir=tmp_path,
            database_url=url,
            broker_url=broker_url,
            allow_private_bot_urls=True,
            rate_limits=False,
            cookie_secure=False,
        ),
        engine=engine,
    )
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site: dict = {"url": f"http://127.0.0.1:{server.server_port}", "sm": sm, "matches": {}, "tokens": {}}
    with sm() as s:
        olga, site["tokens"]["olga"] = create_account(s, "olga", "organizer")
        alice, site["tokens"]["alice"] = create_account(s, "alice", "contestant")
        _eve, site["tokens"]["eve"] = create_account(s, "eve", "contestant")  # owns no seated bot
        for ruleset, (n, options, games) in RULESETS.items():
            m = add_running_match(s, olga.id, [alice.id] * n, ruleset, options, games, f"Live {ruleset}")
            site["matches"][ruleset] = m.id
            site.setdefault("tournaments", {})[ruleset] = m.tournament_id
        s.commit()
    return site, server, engine


def add_running_match(
    s, organizer_id: int, owner_ids: list[int], ruleset: str, options: dict, games: int, name: str
) -> Match:
    """A running tournament of ``ruleset`` whose first match is running, one ready bot per
    seat (seat i owned by ``owner_ids[i]``, named ``<ruleset[:2]><i>``); flushed."""
    bots = [
        Bot(
            owner_id=owner,
            name=f"{ruleset[:2]}{i}",
            url="http://127.0.0.1:9/",
            rulesets=[ruleset],
            secret="s",
            status="ready",
        )
        for i, owner in enumerate(owner_ids)
    ]
    s.add_all(bots)
    s.flush()
    t = Tournament(
        name=name,
        organizer_id=organizer_id,
        ruleset=ruleset,
        options=options,
        time_rules={"initial": 60.0, "increment": 10.0, "cap": 60.0},
        games_per_pairing=games,
        seed=1,
        max_faults=3,
        public_when_finished=True,
        status="running",
        started_at=utcnow(),
    )
    t.participants = [TournamentParticipant(bot_id=b.id) for b in bots]
    s.add(t)
    s.flush()
    m = Match(
        tournament_id=t.id,
        index=0,
        table=0,
        seed=77,
        status="running",
        seats=[MatchSeat(seat=i, bot_id=b.id) for i, b in enumerate(bots)],
    )
    s.add(m)
    s.flush()
    return m


@pytest.fixture
def site(tmp_path, redis_url):
    st, server, engine = _site(tmp_path, redis_url)
    st["redis"] = redis_url
    yield st
    wait_streams_released()
    server.shutdown()
    engine.dispose()


@contextmanager
def _client(site, who: str | None) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=site["url"], timeout=60) as c:
        if who:
            r = c.post("/ui/login", data={"token": site["tokens"][who]})
            assert r.status_code == 303
        yield c


def _subscribers(r: redis.Redis, name: str) -> int:
    return dict(r.pubsub_numsub(name)).get(name.encode(), 0)


def _wait_subscribed(r: redis.Redis, name: str, n: int = 1) -> None:
    for _ in range(600):
        if _subscribers(r, name) >= n:
            return
        threading.Event().wait(0.05)
    pytest.fail(f"nobody subscribed to {name}")


class SseReader:
    """Reads a server-sent event stream in a thread: ``messages`` (parsed ``data:`` JSON)."""

    def __init__(self, client: httpx.Client, path: str, headers: dict | None = None):
        self.messages: list[dict] = []
        self.status: int | None = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(client, path, headers or {}), daemon=True)
        self._thread.start()

    def _run(self, client, path, headers):
        try:
            with client.stream("GET", path, headers=headers) as resp:
                self.status = resp.status_code
                if resp.status_code != 200:
                    return
                for line in resp.iter_lines():
                    if line.startswith("data: "):
                        msg = json.loads(line[6:])
                        self.messages.append(msg)
                        if msg.get("type") == "end":
                            return
        finally:
            self.done.set()

    def join(self, timeout: float = 120) -> None:
        assert self.done.wait(timeout), "the stream did not end"


# ----------------------------------------------------------------------------- C-11, independently
def _cards_in(value) -> list[str]:
    """Every card code in a JSON value (strings anywhere, keys too)."""
    out: list[str] = []
    if isinstance(value, str):
        if CARD.match(value):
            out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            out += _cards_in(k) + _cards_in(v)
    elif isinstance(value, list):
        for v in value:
            out += _cards_in(v)
    return out


def _keys_in(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys_in(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys_in(v)}
    return set()


def _made_public(ev: dict) -> list[str]:
    """Cards a full-view engine event shows to every seat (C-11, MD-8, LR-6, JDF-2)."""
    t = ev.get("type")
    if t == "play":
        cards = list(ev.get("cards") or [])
        for c in ev.get("face_down") or []:
            cards.remove(c)
        return cards
    if t == "reveal":
        return [c for p in ev.get("field", []) for c in p.get("cards", [])]
    if t in ("penalty", "discard"):
        return list(ev.get("cards") or [])
    if t == "set_end":
        return list(ev.get("blind") or [])
    return []


class PublicCards:
    """``on_step`` wrapper: before publishing, the cards public so far in the current deal /
    game (from the full view), by (game, step), and every card still hidden then."""

    def __init__(self, publisher: live.LivePublisher):
        self.publisher = publisher
        self.public: dict[tuple[int, int], set[str]] = {}
        self.hidden: dict[tuple[int, int], set[str]] = {}
        self._seen: dict[int, int] = {}
        self._unit: dict[int, set[str]] = {}
        self.face_down_hidden = 0

    def __call__(self, gi: int, g, ex: dict) -> None:
        start = self._seen.get(gi, 0)
        self._seen[gi] = len(g.events)
        window = set(self._unit.get(gi, set()))  # public before this step and during it
        unit = self._unit.setdefault(gi, set())
        for ev, _visible, _public in g.events[start:]:
            if ev.get("type") in ("deal", "game", "start"):  # a new deal / game: hands dealt afresh
                unit.clear()
            shown = _made_public(ev)
            unit.update(shown)
            window.update(shown)
        self.public[(gi, ex["n"])] = window
        in_hands = {c for h in g.hands for c in format_cards(h)}
        down = {c for p in g.field if p.face_down and not p.revealed for c in format_cards(p.face_down)}
        self.face_down_hidden += bool(down)
        self.hidden[(gi, ex["n"])] = (in_hands | down | set(format_cards(g.outside))) - window
        self.publisher.step(gi, g, ex)


def _play(site, ruleset: str, recorder_factory=PublicCards):
    n, options, games = RULESETS[ruleset]
    mid = site["matches"][ruleset]
    seed = 5
    seats = [s["seats"] for s in default_game_specs(ruleset, seed, games)]
    pub = live.LivePublisher(site["redis"], mid, seats=seats)
    rec = recorder_factory(pub)
    players = [LocalPlayer(SAMPLE_BOTS["random"](seed=i + 1), f"p{i}") for i in range(n)]
    log = run_match(
        players,
        ruleset,
        options,
        seed=seed,
        games=games,
        time_rules=TimeRules(60000, 10000, 60000),
        max_faults=3,
        on_step=rec,
    )
    pub.end()
    return log, rec


@pytest.mark.services
@pytest.mark.parametrize("ruleset", list(RULESETS))
def test_a_contestants_live_stream_names_no_hidden_card(site, ruleset):
    mid = site["matches"][ruleset]
    r = redis.Redis.from_url(site["redis"])
    with _client(site, "alice") as alice:
        # the spectator's view an owner may choose (its own seat's view: test_live_own_hand.py)
        reader = SseReader(alice, f"/ui/matches/{mid}/live?view=public")
        _wait_subscribed(r, live.channel(mid, False))
        assert _subscribers(r, live.channel(mid, True)) == 0  # the contestant's stream is the public one
        log, rec = _play(site, ruleset)
        reader.join()
    assert reader.status == 200
    steps = [m for m in reader.messages if m["type"] == "step"]
    assert len(steps) == sum(len(g["exchanges"]) for g in log["games"]) > 20
    assert reader.messages[-1]["type"] == "end"
    names = 0
    for m in steps:
        key = (m["game"], m["step"])
        assert not {"hands", "hand", "seed", "request", "response"} & _keys_in(m), key
        named = set(_cards_in(m))
        names += len(named)
        assert not named & rec.hidden[key], (key, named & rec.hidden[key])
        assert named - {"JK"} <= rec.public[key], (key, named - rec.public[key])
        assert "JK" not in named or "JK" in rec.public[key], key
        for p in m["field"]:  # an unrevealed face-down card is a count, never a card
            assert not isinstance(p.get("face_down"), list) or p.get("revealed") is True
        assert len(m["hand_sizes"]) == RULESETS[ruleset][0] and m["seats"] is not None
    assert names > 0  # face-up cards are named: the check looked at real content
    if ruleset == "million_doubt":
        assert rec.face_down_hidden > 0  # the random bots played face-down cards that were on the field
        kinds = {e["type"] for m in steps for e in m["events"]}
        assert {"doubt", "reveal", "through"} <= kinds, kinds
    r.close()


@pytest.mark.services
def test_the_organizer_stream_is_the_full_one(site):
    mid = site["matches"]["million_doubt"]
    r = redis.Redis.from_url(site["redis"])
    with _client(site, "olga") as olga:
        reader = SseReader(olga, f"/ui/matches/{mid}/live")
        _wait_subscribed(r, live.channel(mid, True))
        assert _subscribers(r, live.channel(mid, False)) == 0
        _play(site, "million_doubt")
        reader.join()
    steps = [m for m in reader.messages if m["type"] == "step"]
    assert steps and all(len(m["hands"]) == 2 for m in steps)
    r.close()


@pytest.mark.services
def test_nothing_in_the_request_switches_a_contestant_to_the_full_channel(site):
    mid = site["matches"]["million_doubt"]
    r = redis.Redis.from_url(site["redis"])
    tries = [
        ("?full=1&view=public", {}),
        ("?view=full&channel=full", {}),
        ("?full=true&organizer=1&player=-1", {}),
        ("?player=7", {"X-Live-View": "full", "Last-Event-ID": "full", "Accept": "text/event-stream"}),
        ("", {"X-Forwarded-User": "olga", "Authorization": "Bearer " + site["tokens"]["olga"]}),
    ]
    with _client(site, "alice") as alice:  # alice owns both seats: her first seat's view, or the public one
        readers = [SseReader(alice, f"/ui/matches/{mid}/live{q}", h) for q, h in tries]
        _wait_subscribed(r, live.channel(mid, False), 1)
        _wait_subscribed(r, live.player_channel(mid, 0), len(tries) - 1)
        assert _subscribers(r, live.channel(mid, True)) == 0
        _play(site, "million_doubt")
        for rd in readers:
            rd.join()
    for rd in readers:
        assert rd.status == 200 and rd.messages[-1]["type"] == "end"
        for m in rd.messages[:-1]:  # never every hand: at most the seat's own
            assert sum(h is not None for h in m.get("hands") or []) <= 1
    assert all("hands" not in m for m in readers[0].messages)
    # another path is no stream at all, a contestant without a seated bot and an anonymous reader are refused
    with _client(site, "alice") as alice:
        assert alice.get(f"/ui/matches/{mid}/live/full").status_code == 404
    with _client(site, "eve") as eve:
        assert eve.get(f"/ui/matches/{mid}/live").status_code == 403
    with _client(site, None) as anon:
        assert anon.get(f"/ui/matches/{mid}/live").status_code == 401
    r.close()


@pytest.mark.services
def test_a_stream_opened_after_the_end_ends_at_once(site):
    mid = site["matches"]["jdf"]
    with site["sm"]() as s:
        s.get(Match, mid).status = "finished"
        s.commit()
    with _client(site, "alice") as alice:
        resp = alice.get(f"/ui/matches/{mid}/live")
    assert resp.status_code == 200
    assert json.loads(resp.text.split("data: ", 1)[1]) == {"type": "end", "match_id": mid, "status": "finished"}


# ----------------------------------------------------------------------------- the policy
def test_live_view_policy(tmp_path):
    st, server, engine = _site(tmp_path, "redis://127.0.0.1:1/0")
    server.shutdown()
    try:
        with st["sm"]() as s:
            from arena.db.models import Account

            olga, alice, eve = (s.query(Account).filter_by(name=n).one() for n in ("olga", "alice", "eve"))
            m = s.get(Match, st["matches"]["million_doubt"])
            t = s.get(Tournament, m.tournament_id)
            assert access.live_view_for(s, olga, m, t) == "full"
            assert access.live_view_for(s, alice, m, t) == "public"  # owns the seated bots
            assert access.live_view_for(s, eve, m, t) is None  # may not read the match
            assert access.live_view_for(s, None, m, t) is None
            assert not access.can_read_log(s, alice, m, t)  # the embargo holds
            t.status = "finished"  # public once finished: readers get the public channel, never the full one
            s.flush()
            assert access.live_view_for(s, None, m, t) == "public"
            assert access.live_view_for(s, alice, m, t) == "public" and access.can_read_log(s, alice, m, t)
            t.public_when_finished = False
            s.flush()
            assert access.live_view_for(s, None, m, t) is None
            assert access.live_view_for(s, eve, m, t) is None
            s.rollback()
    finally:
        engine.dispose()


def test_public_view_drops_the_hands_of_a_million_doubt_game_end():
    seen = []

    def on_step(gi, g, ex):
        seen.append(live.public_view(g, 0))

    players = [LocalPlayer(SAMPLE_BOTS["random"](seed=i), f"p{i}") for i in range(2)]
    log = run_match(
        players,
        "million_doubt",
        {},
        seed=3,
        games=1,
        time_rules=TimeRules(60000, 10000, 60000),
        max_faults=3,
        on_step=on_step,
    )
    full_end = [e for e in log["games"][0]["engine_log"]["events"] if e["type"] == "game_end"]
    assert full_end and "hands" in full_end[0]  # the engine's record has them ...
    ends = [e for v in seen for e in v["events"] if e["type"] == "game_end"]
    assert ends and all("hands" not in e for e in ends)  # ... the live public view does not


# ----------------------------------------------------------------------------- the tournament channel
@pytest.mark.services
def test_tournament_events_reach_the_channel_and_the_stream(site):
    tid = site["tournaments"]["million_doubt"]
    r = redis.Redis.from_url(site["redis"])
    sub = live.subscribe_tournament(site["redis"], tid)
    try:
        assert live.publish_tournament_event(site["redis"], tid, "claimed", [7]) is True
        msgs = sub.messages(idle_s=5, until_end=False)
        got = next(m for m in msgs if m is not None)
        assert json.loads(got) == {"type": "tournament", "tournament_id": tid, "event": "claimed", "match_ids": [7]}
    finally:
        sub.close()
    with pytest.raises(ValueError):
        live.publish_tournament_event(site["redis"], tid, "exploded", [])
    assert live.publish_tournament_event("redis://127.0.0.1:1/0", tid, "failed", [1]) is False  # never raises
    assert live.publish_tournament_event("sqla+sqlite://", tid, "failed", [1]) is False
    with _client(site, None) as anon:  # a running tournament: signed-in readers only
        assert anon.get(f"/ui/tournaments/{tid}/live").status_code == 401
        assert anon.get(f"/ui/tournaments/{tid}/live.html").status_code == 401
    # the page stream relays them: match ids to organizers only; it ends when the tournament does
    with _client(site, "alice") as alice, _client(site, "olga") as olga:
        ra = SseReader(alice, f"/ui/tournaments/{tid}/live")
        ro = SseReader(olga, f"/ui/tournaments/{tid}/live")
        _wait_subscribed(r, live.tournament_channel(tid), 2)
        settings = Settings(
            data_dir=Path("/nonexistent"), database_url="sqlite://", broker_url=site["redis"], celery_eager=False
        )
        announce(settings, tid, "claimed", [11])
        announce(dataclass_replace(settings, celery_eager=True), tid, "claimed", [12])  # eager: nothing sent
        with site["sm"]() as s:
            s.get(Tournament, tid).status = "finished"
            s.commit()
        announce(settings, tid, "finished", [11])
        ra.join(60)
        ro.join(60)
        assert alice.get(f"/ui/tournaments/{tid}/live.html").status_code == 200
    assert ra.messages == [
        {"type": "tournament", "event": "claimed"},
        {"type": "tournament", "event": "finished"},
        {"type": "end", "tournament_id": tid, "status": "finished"},
    ]
    assert ro.messages[:2] == [
        {"type": "tournament", "event": "claimed", "match_ids": [11]},
        {"type": "tournament", "event": "finished", "match_ids": [11]},
    ]
    r.close()


def dataclass_replace(obj, **kw):
    import dataclasses

    return dataclasses.replace(obj, **kw)


@pytest.mark.services
def test_each_step_carries_the_match_totals_of_the_games_ended_so_far(site):
    """A viewer who joins after game 1 still shows right running totals: every step names
    each player's score over the games ended so far (``match_totals``), as the match result
    sums them; the last one is the match's scores."""
    mid = site["matches"]["million_doubt"]
    sub = live.Subscription(site["redis"], live.channel(mid, False))
    try:
        log, _rec = _play(site, "million_doubt")
        steps, idle = [], 0
        for text in sub.messages(idle_s=1):
            if text is None:  # (the subscription's own confirmation reads as one too)
                idle += 1
                assert idle < 5, "the end never came"
                continue
            msg = json.loads(text)
            if msg["type"] == "end":
                break
            steps.append(msg)
    finally:
        sub.close()
    assert len(log["games"]) == 4 and len(steps) == sum(len(g["exchanges"]) for g in log["games"])
    running, ended = [0, 0], 0
    for m in steps:
        game = log["games"][m["game"]]
        if m["over"] and m["game"] == ended:  # the step that ended this game
            for seat, player in enumerate(game["seats"]):
                running[player] += game["result"]["scores"][str(seat)]
            ended += 1
        assert m["match_totals"] == running, (m["game"], m["step"])
    assert ended == 4 and running == log["result"]["scores"]
    assert any(v != 0 for v in running)  # real scores, not a default
