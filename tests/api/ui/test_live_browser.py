"""Live match view in a real browser: the match is played by ``run_match`` with the worker's
publisher (``arena.live.LivePublisher.step`` as ``on_step``, as
``arena.delivery.play_and_store`` wires it) through a real Redis; Chromium watches
the match page over server-sent events as an organizer (the full channel: every hand) and as
the contestant owning one of the seated bots (its bot's own view: its hand, the other seat's
hand size as card backs that name no card; the log and the replay stay embargoed,
docs/fairness.md).

A gated bot blocks at its 6th decision until the test releases it, so the page is checked
while the match is provably still being played (no timed assertion)."""

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
from arena.db.models import Bot, Match, MatchSeat, Tournament, TournamentParticipant, utcnow
from arena.db.session import make_engine, make_sessionmaker
from arena.runner.match import run_match
from arena.runner.players import LocalPlayer
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules

from .conftest import _QuietHandler, wait_streams_released

pytestmark = pytest.mark.browser

SUITS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}


def _card_text(c: str) -> str:
    return ("10" if c[0] == "T" else c[0]) + SUITS[c[1]]


class GatedBot:
    """A sample bot that waits for ``gate`` before its ``stop_at``-th decision."""

    def __init__(self, bot, gate: threading.Event, stop_at: int):
        self.bot, self.gate, self.stop_at, self.name, self.calls = bot, gate, stop_at, bot.name, 0

    def decide(self, request):
        self.calls += 1
        if self.calls == self.stop_at:
            self.gate.wait(120)
        return self.bot.decide(request)

    def notice(self, message):
        return self.bot.notice(message)


@pytest.fixture
def live_site(tmp_path, redis_url):
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    upgrade(url)
    engine = make_engine(url)
    sm = make_sessionmaker(engine)
    app = create_app(
        Settings(data_dir=tmp_path, database_url=url, broker_url=redis_url, allow_private_bot_urls=True), engine=engine
    )
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with sm() as s:
        olga, olga_token = create_account(s, "olga", "organizer")
        alice, alice_token = create_account(s, "alice", "contestant")
        bob, _bob_token = create_account(s, "bob", "contestant")
        bots = []
        for name, owner in (("A", alice), ("B", bob)):  # alice's A is player 0, bob's B player 1
            b = Bot(
                owner_id=owner.id,
                name=name,
                url="http://127.0.0.1:9/",
                rulesets=["million_doubt"],
                secret="s",
                status="ready",
            )
            s.add(b)
            bots.append(b)
        s.flush()
        t = Tournament(
            name="Live cup",
            organizer_id=olga.id,
            ruleset="million_doubt",
            options={},
            time_rules={"initial": 60.0, "increment": 10.0, "cap": 60.0},
            games_per_pairing=2,
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
        s.commit()
        mid = m.id
        tid = t.id
    yield {
        "url": f"http://127.0.0.1:{server.server_port}",
        "redis": redis_url,
        "match": mid,
        "tournament": tid,
        "sm": sm,
        "tokens": {"olga": olga_token, "alice": alice_token},
    }
    wait_streams_released()
    server.shutdown()
    engine.dispose()


def _play_live(site, players) -> tuple[threading.Thread, dict]:
    """Play a 2-game Million Doubt match of ``players`` on a thread, published live on the
    site's match channel; returns the thread and a dict that gets the log (key ``"log"``)."""
    publisher = live.LivePublisher(site["redis"], site["match"], seats=[[0, 1], [1, 0]])
    result: dict = {}

    def play():
        result["log"] = run_match(
            players,
            "million_doubt",
            {},
            seed=5,
            games=2,
            time_rules=TimeRules(60000, 10000, 60000),
            max_faults=3,
            on_step=publisher.step,
        )
        publisher.end()

    worker = threading.Thread(target=play, daemon=True)
    worker.start()
    return worker, result


def _signed_in_page(browser, site, who):
    ctx = browser.new_context(viewport={"width": 1366, "height": 768})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(site["url"] + "/ui/login")
    pg.fill("#token", site["tokens"][who])
    pg.click("main form button[type=submit]")
    pg.goto(f"{site['url']}/ui/matches/{site['match']}")
    return ctx, pg, errors


def test_running_match_updates_live_for_the_organizer_and_the_contestant(browser, live_site, artifacts):
    site = live_site
    ctx_c, contestant, errs_c = _signed_in_page(browser, site, "alice")
    ctx_o, organizer, errs_o = _signed_in_page(browser, site, "olga")
    assert contestant.locator("#live-card").get_attribute("data-view") == "public"
    assert contestant.locator("#live-card").get_attribute("data-player") == "0"  # her bot A's own view
    assert organizer.locator("#live-card").get_attribute("data-view") == "full"
    assert contestant.locator("#replay-data").count() == 1 and contestant.locator("#replay-card").count() == 0
    r = redis.Redis.from_url(site["redis"])
    full, public = live.channel(site["match"], True), live.player_channel(site["match"], 0)
    for _ in range(600):  # both pages have subscribed before the first decision
        if (
            dict(r.pubsub_numsub(full)).get(full.encode(), 0) >= 1
            and dict(r.pubsub_numsub(public)).get(public.encode(), 0) >= 1
        ):
            break
        threading.Event().wait(0.05)
    else:
        pytest.fail(f"the live pages did not subscribe: {errs_c} {errs_o}")
    rec = r.pubsub(ignore_subscribe_messages=True)
    rec.subscribe(full)
    gate = threading.Event()
    players = [
        LocalPlayer(GatedBot(SAMPLE_BOTS["random"](seed=1), gate, 6), "a"),
        LocalPlayer(SAMPLE_BOTS["random"](seed=2), "b"),
    ]
    worker, result = _play_live(site, players)
    try:
        # the pages update while the match is blocked in the gated bot's 6th decision
        organizer.wait_for_function(
            "() => Number(document.getElementById('live-card').dataset.steps || 0) >= 5", timeout=30000
        )
        assert worker.is_alive() and "log" not in result  # still being played (the gate is closed)
        fulls = []
        for _ in range(100):  # drain: the match is blocked, so the messages stop after the 5th
            msg = rec.get_message(timeout=0.5)
            if msg is not None:
                fulls.append(json.loads(msg["data"]))
            elif len(fulls) >= 5:
                break
        last = fulls[-1]
        organizer.wait_for_function(
            f"() => Number(document.getElementById('live-card').dataset.steps) === {len(fulls)}", timeout=30000
        )
        hands = [
            organizer.locator(f"#seat-{s} .hand .c").evaluate_all("els => els.map(e => e.dataset.card)")
            for s in range(2)
        ]
        assert hands == last["hands"]
        sizes = organizer.locator("#seat-list .seat .count").all_inner_texts()
        assert [int(x.split()[0]) for x in sizes] == last["hand_sizes"]
        contestant.wait_for_function(
            f"() => Number(document.getElementById('live-card').dataset.steps) === {len(fulls)}", timeout=30000
        )
        # game 1: alice's bot A (player 0) sits in seat 0; she sees its hand, only its hand
        mine = contestant.locator("#seat-0 .hand .c[data-card]").evaluate_all("els => els.map(e => e.dataset.card)")
        assert mine == last["hands"][0] and mine
        assert contestant.locator("#seat-1 .hand .c[data-card]").count() == 0
        assert contestant.locator("#seat-1 .hand .c.back").count() == last["hand_sizes"][1]
        assert contestant.locator("#seat-0.own").count() == 1
        contestant.screenshot(path=str(artifacts / "ui-live-owner.png"), full_page=True)
        organizer.screenshot(path=str(artifacts / "ui-live-organizer.png"), full_page=True)
    finally:
        gate.set()
        worker.join(120)
    for pg in (organizer, contestant):
        pg.wait_for_function("() => document.getElementById('live-state').dataset.state === 'ended'", timeout=30000)
    assert organizer.locator("#live-replay-link").inner_text() == "Open the replay"
    assert "when the tournament is finished" in contestant.locator("#live-after").inner_text()
    assert "log" in result
    ctx_c.close()
    ctx_o.close()
    rec.close()
    r.close()
    assert errs_c == [] and errs_o == []


def test_live_stream_of_an_unknown_match_is_a_404(live_site):
    with httpx.Client(base_url=live_site["url"]) as c:
        assert c.get(f"/ui/matches/{live_site['match'] + 1000}/live").status_code == 404


class SecondGameGate:
    """A sample bot that, at its first decision of game 2 (protocol ``game`` 1), says so
    (``reached``) and waits for ``gate``."""

    def __init__(self, bot, gate: threading.Event, reached: threading.Event):
        self.bot, self.gate, self.reached, self.name = bot, gate, reached, bot.name

    def decide(self, request):
        if request.raw.get("game") == 1 and not self.reached.is_set():
            self.reached.set()
            self.gate.wait(120)
        return self.bot.decide(request)

    def notice(self, message):
        return self.bot.notice(message)


def test_a_live_view_opened_after_the_first_game_follows_the_second(browser, live_site):
    """A viewer who opens the live view while game 2 of a match is played (game 1 was never
    seen by the page) gets the board of game 2, with no script error (the game picker used
    to fail on the unseen game)."""
    site = live_site
    gate, reached = threading.Event(), threading.Event()
    players = [
        LocalPlayer(SecondGameGate(SAMPLE_BOTS["random"](seed=1), gate, reached), "a"),
        LocalPlayer(SecondGameGate(SAMPLE_BOTS["random"](seed=2), gate, reached), "b"),
    ]
    worker, result = _play_live(site, players)
    try:
        assert reached.wait(60)  # game 1 is over, game 2 waits for its first decision
        ctx, organizer, errors = _signed_in_page(browser, site, "olga")
        r = redis.Redis.from_url(site["redis"])
        full = live.channel(site["match"], True)
        for _ in range(600):
            if dict(r.pubsub_numsub(full)).get(full.encode(), 0) >= 1:
                break
            threading.Event().wait(0.05)
        r.close()
        # game 1's last decision reached nobody, so the publisher skips this channel for
        # QUIET_S: what it skipped comes with game 2's end at the latest (not waited out)
        gate.set()
        organizer.wait_for_function(
            "() => document.getElementById('live-state').dataset.state === 'ended'", timeout=60000
        )
        assert int(organizer.locator("#live-card").get_attribute("data-steps") or 0) > 0
        assert organizer.locator("#seat-list .seat").count() == 2
        # the running totals after game 2 are the match's, though game 1 was never seen here
        worker.join(60)
        shown = {
            int(row.get_attribute("data-seat")): row.locator("td.total").inner_text()
            for row in organizer.locator("#totals-table tbody tr").all()
        }
        want = result["log"]["result"]["scores"]
        game2 = result["log"]["games"][1]
        assert want != [game2["result"]["scores"][str(game2["seats"].index(p))] for p in range(2)]  # telling
        assert {p: int(v.replace("−", "-").replace("±", "")) for p, v in shown.items()} == dict(enumerate(want))
        assert errors == []
        ctx.close()
    finally:
        gate.set()
        worker.join(120)
    assert "log" in result
