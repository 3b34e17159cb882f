"""Live pages in Chromium while a REAL Celery worker plays the match (PostgreSQL, Redis, SDK
bots over HTTP on 127.0.0.1; issue 17 items 3 and 6).

A contestant owning both seated bots watches the tournament page and the match page (as a
spectator, ``?view=public``; its own seat's view is test_live_browser.py's); an
organizer watches the match page too. One bot holds its 1st decision until every page has
subscribed, and its 6th until the pages have been checked, so "the page updates while the
match is played" is proven by a closed gate, not by a timing. Checked: the tournament page's
playing list, progress, status and standings follow the worker's events; the contestant's
match page grows step by step with the replay renderer, shows hand sizes as card backs and
names no card of a hand nor a face-down card; the organizer's shows every hand (equal to the
full channel); at the end the contestant is told the replay is embargoed, the organizer gets
a link to it."""

from __future__ import annotations

import io
import json
import re
import threading
import time

import pytest
import redis
from sqlalchemy import select

from arena import live
from arena.db.models import Match
from bots_sdk.samples import SAMPLE_BOTS
from tests.worker.conftest import SwitchBot

pytestmark = [pytest.mark.browser, pytest.mark.services]

SUITS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
#: Seconds the test waits for a page or the worker (a guard against a hang, never a timing).
WAIT_MS = 60000


def _texts(code: str) -> set[str]:
    """How the page may write a card: its code (data-card) and its face text."""
    if code == "JK":
        return {'data-card="JK"'}
    return {f'data-card="{code}"', ("10" if code[0] == "T" else code[0]) + SUITS[code[1]]}


class StopAt(SwitchBot):
    """A SwitchBot that, once armed, holds its n-th decision (n in ``stops``) until that gate
    is set; ``reached[n]`` is set when the n-th decision arrives."""

    def __init__(self, bot, stops):
        super().__init__(bot)
        self.armed = False
        self.count = 0
        self.stops = {n: threading.Event() for n in stops}
        self.reached = {n: threading.Event() for n in stops}

    def wsgi(self, environ, start_response):
        if environ["REQUEST_METHOD"] == "POST" and self.armed:
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            if b'"decision"' in body:
                with self._lock:
                    self.count += 1
                    n = self.count
                if n in self.stops:
                    self.reached[n].set()
                    self.stops[n].wait(120)
        return super().wsgi(environ, start_response)

    def release(self) -> None:
        for e in self.stops.values():
            e.set()


def _signed_in(browser, url: str, token: str):
    ctx = browser.new_context(viewport={"width": 1366, "height": 768})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(url + "/ui/login")
    pg.fill("#token", token)
    pg.click("main form button[type=submit]")
    return ctx, pg, errors


def _subscribers(r: redis.Redis, name: str) -> int:
    return dict(r.pubsub_numsub(name)).get(name.encode(), 0)


def _until(cond, what: str, timeout_s: float = WAIT_MS / 1000):
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"waited in vain for {what}")
        time.sleep(0.05)


#: Runs in every document of the tournament page (``add_init_script``): the first time the live
#: part shows the tournament finished, it hands what the live part shows to the test
#: (``arenaLiveFinished``, an exposed function), read in the same task as the swap that showed
#: it. The page then loads itself again (tournament_live.js), so a read by the test afterwards
#: would race that reload.
RECORD_FINISHED_JS = """(() => {
  let sent = false;
  const record = () => {
    const box = document.getElementById("live-tournament"), status = document.getElementById("status");
    if (sent || !box || !status || status.dataset.status !== "finished") return;
    sent = true;
    window.arenaLiveFinished({
      progress: document.getElementById("progress").innerText,
      playing: document.querySelectorAll("#playing li").length,
      ranks: Array.from(document.querySelectorAll("#standings td.rank"), (e) => e.innerText.trim()),
      refreshes: Number(box.dataset.refreshes || 0),
    });
  };
  new MutationObserver(record).observe(document, { subtree: true, childList: true, attributes: true });
})();"""


def _drain(sub: redis.client.PubSub, out: dict[bytes, list[dict]]) -> None:
    while True:
        msg = sub.get_message(timeout=0.3)
        if msg is None:
            return
        out.setdefault(msg["channel"], []).append(json.loads(msg["data"]))


def test_live_pages_follow_a_match_a_worker_plays(browser, served, bots, celery_worker_factory, artifacts):
    arena, url = served
    gated = StopAt(SAMPLE_BOTS["random"](seed=1), stops=(1, 6))
    other = SwitchBot(SAMPLE_BOTS["random"](seed=2))
    bots += [gated, other]
    ids = [arena.register(gated, ["million_doubt"], "Gated"), arena.register(other, ["million_doubt"], "Other")]
    gated.armed = True  # after its check: count tournament decisions only
    tid = arena.create(
        "million_doubt", ids, games_per_pairing=2, time_rules={"initial": 60.0, "increment": 10.0, "cap": 60.0}
    )
    arena.start(tid)  # running; the schedule waits for a worker
    owner_token = arena.owner["Authorization"].split()[1]
    org_token = arena.org["Authorization"].split()[1]
    r = redis.Redis.from_url(arena.settings.broker_url)
    ctx_t, tpage, errs_t = _signed_in(browser, url, owner_token)
    ctx_c = ctx_o = None
    finished_live: list[dict] = []
    tpage.expose_function("arenaLiveFinished", lambda shown: finished_live.append(shown))
    tpage.add_init_script(RECORD_FINISHED_JS)
    try:
        tpage.goto(f"{url}/ui/tournaments/{tid}")
        assert tpage.locator("#live-tournament").count() == 1
        assert tpage.locator("#playing li").count() == 0
        _until(lambda: _subscribers(r, live.tournament_channel(tid)) >= 1, "the tournament page's subscription")

        worker = celery_worker_factory(database_url=arena.database_url)
        _until(lambda: gated.reached[1].is_set(), "the gated bot's first decision")
        with arena.sessions() as s:
            mid = s.scalar(select(Match.id).where(Match.tournament_id == tid))
            assert s.get(Match, mid).status == "running"
        # the tournament page learnt of the claim: the match is listed as playing, with its live link
        tpage.wait_for_selector(
            f"#playing li[data-match='{mid}'] a[href$='/ui/matches/{mid}#live-card']", timeout=WAIT_MS
        )
        assert "0 / 1" in tpage.locator("#progress").inner_text()

        # the match pages subscribe, and the test records both channels, before the gate opens
        got: dict[bytes, list[dict]] = {}
        rec = r.pubsub(ignore_subscribe_messages=True)
        rec.subscribe(live.channel(mid, True), live.channel(mid, False))
        ctx_c, contestant, errs_c = _signed_in(browser, url, owner_token)
        contestant.goto(f"{url}/ui/matches/{mid}?view=public")  # as a spectator (its own seat: test_live_browser)
        ctx_o, organizer, errs_o = _signed_in(browser, url, org_token)
        organizer.goto(f"{url}/ui/matches/{mid}")
        assert contestant.locator("#live-card").get_attribute("data-view") == "public"
        assert organizer.locator("#live-card").get_attribute("data-view") == "full"
        _until(
            lambda: _subscribers(r, live.channel(mid, False)) >= 2 and _subscribers(r, live.channel(mid, True)) >= 2,
            "the match pages' subscriptions",
        )
        gated.stops[1].set()
        _until(lambda: gated.reached[6].is_set(), "the gated bot's 6th decision")
        # the match is blocked in that decision: the messages stop; both pages show all of them
        for _ in range(3):
            _drain(rec, got)
        full = got.get(live.channel(mid, True).encode(), [])
        public = got.get(live.channel(mid, False).encode(), [])
        steps = [m for m in full if m["type"] == "step"]
        assert len(steps) >= 5 and len([m for m in public if m["type"] == "step"]) == len(steps)
        for pg in (contestant, organizer):
            pg.wait_for_function(
                f"() => Number(document.getElementById('live-card').dataset.steps) === {len(steps)}", timeout=WAIT_MS
            )
        with arena.sessions() as s:
            assert s.get(Match, mid).status == "running"  # still being played: the gate is closed
        assert worker.alive() and not gated.stops[6].is_set()

        last = steps[-1]
        # the organizer sees every hand, as the full channel has it
        hands = [
            organizer.locator(f"#seat-{s} .hand .c").evaluate_all("els => els.map(e => e.dataset.card)")
            for s in range(2)
        ]
        assert hands == last["hands"]
        # the contestant: hand sizes as backs naming no card; no hidden card anywhere on the page
        assert contestant.locator("#seat-list .hand .c[data-card]").count() == 0
        backs = [contestant.locator(f"#seat-{s} .hand .c.back[data-hidden]").count() for s in range(2)]
        assert backs == last["hand_sizes"]
        assert contestant.locator("#field .c.back:not([data-hidden])").count() == 0
        game = last["game"]
        shown = set()
        for m in public:
            if m["type"] == "step" and m["game"] == game:
                shown |= set(re.findall(r'"((?:[2-9TJQKA][SHDC])|JK)"', json.dumps(m)))
        hidden = {c for h in last["hands"] for c in h}
        hidden |= {
            c
            for p in last["field"]
            if isinstance(p.get("face_down"), list) and not p.get("revealed")
            for c in p["face_down"]
        }
        hidden -= shown
        assert hidden
        html = contestant.locator("#live-card").inner_html()
        leaked = [c for c in hidden if any(t in html for t in _texts(c)) and c != "JK"]
        assert leaked == []
        assert contestant.locator("#seat-0 .bank").get_attribute("data-bank-ms") is not None
        contestant.screenshot(path=str(artifacts / "ui-live-contestant.png"), full_page=True)
        organizer.screenshot(path=str(artifacts / "ui-live-organizer.png"), full_page=True)
        tpage.screenshot(path=str(artifacts / "ui-tournament-live.png"), full_page=True)
    finally:
        gated.release()
    # the end: the contestant is told the replay waits for the tournament's end, the organizer gets a link
    for pg in (contestant, organizer):
        pg.wait_for_function("() => document.getElementById('live-state').dataset.state === 'ended'", timeout=WAIT_MS)
    assert "when the tournament is finished" in contestant.locator("#live-after").inner_text()
    assert organizer.locator("#live-replay-link").inner_text() == "Open the replay"
    organizer.click("#live-replay-link")
    organizer.wait_for_selector("#replay-card")
    # the tournament page's live part: finished, 1 / 1, nothing playing, both bots ranked (as
    # RECORD_FINISHED_JS saw it, before the page loads itself again)
    deadline = time.monotonic() + WAIT_MS / 1000
    while not finished_live and time.monotonic() < deadline:
        tpage.wait_for_timeout(50)  # lets Playwright deliver the page's call
    assert len(finished_live) == 1, "the live part never showed the tournament finished"
    shown = finished_live[0]
    assert "1 / 1" in shown["progress"] and shown["playing"] == 0, shown
    assert sorted(shown["ranks"]) == ["1", "2"] and shown["refreshes"] >= 2, shown
    # then the page loads itself again: the finished page (no live part, the match's replay
    # link in the table, no Resume/Cancel), with no reload by hand
    tpage.wait_for_selector("#live-tournament", state="detached", timeout=WAIT_MS)
    tpage.wait_for_selector(f"td a[href$='/ui/matches/{mid}']:text-is('replay')", timeout=WAIT_MS)
    assert tpage.locator("#status").get_attribute("data-status") == "finished"
    rec.close()
    r.close()
    for c in (ctx_t, ctx_c, ctx_o):
        if c is not None:
            c.close()
    assert errs_t == [] and errs_c == [] and errs_o == []
