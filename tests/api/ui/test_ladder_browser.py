"""The ladder pages in Chromium (Playwright, Debian's /usr/bin/chromium), English and Japanese, at
1280 and 390 px: the list from the navigation, a ladder's live table, sets and official table
with its matrix, the owner's forms, the organizer's form, a bot's public ladder profile; and,
with ``services``, a ladder page while a REAL Celery worker plays the set that beat's tick
formed (PostgreSQL, Redis, an SDK bot over HTTP): the set listed as playing with its live
view, then stored, rated and replayed.

The first site: tests/api/ui/ladder_site.py on SQLite (sets really played between HTTP sample
bots, ticks driven in-process), served on 127.0.0.1. Screenshots in ``test-artifacts/``:
``ui-ladder-{1280,390}-{en,ja}.png``, ``ui-ladders-*.png``, ``ui-ladder-profile-*.png``,
``ui-ladder-new-*.png``, ``ui-ladder-live-worker.png``.
"""

from __future__ import annotations

import re
import threading
import time

import httpx
import pytest
from sqlalchemy import select
from werkzeug.serving import make_server

from api import create_app
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.models import LadderSet
from arena.db.session import make_engine, make_sessionmaker
from bots_sdk.samples import SAMPLE_BOTS
from tests.api.ui import ladder_site
from tests.api.ui.conftest import _QuietHandler
from tests.api.ui.test_live_worker_browser import StopAt
from tests.helpers import mark_bot_checked
from tests.worker.conftest import Arena, fresh_pg_database
from worker.beat import ladder_tick

pytestmark = pytest.mark.browser

#: Milliseconds the test waits for a page (a guard against a hang, never a timing).
WAIT_MS = 60000
WIDTHS = (1280, 390)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data = tmp_path_factory.mktemp("ladder-site")
    url = f"sqlite:///{data / 'arena.db'}"
    upgrade(url)
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    with sessions() as s:
        _, token = create_account(s, "olga", "organizer")
    settings = Settings(
        data_dir=data,
        database_url=url,
        broker_url="redis://127.0.0.1:1/0",
        allow_private_bot_urls=True,
        rate_limits=False,
        par_rollouts=0,
    )
    app = create_app(settings, engine=engine)
    built = ladder_site.build(app, sessions, ticks=10, organizer_token=token)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    built.url = f"http://127.0.0.1:{server.server_port}"
    built.sessions = sessions
    yield built
    server.shutdown()
    built.close()
    engine.dispose()


def _context(browser, width: int, lang: str, site, who: str | None = None):
    ctx = browser.new_context(viewport={"width": width, "height": 900}, locale="ja-JP" if lang == "ja" else "en-US")
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(f"{site.url}/ui/lang/{lang}?next=/ui/")
    if who is not None:
        pg.goto(f"{site.url}/ui/login")
        pg.fill("#token", site.tokens[who])
        pg.click("main form button[type=submit]")
        pg.wait_for_selector("header .who strong")
    return ctx, pg, errors


def _fits(pg) -> bool:
    """Nothing wider than the window: no sideways scrolling of the page itself."""
    return pg.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


WORDS = {
    "en": {"nav": "Ladders", "live": "Live table", "official": "Official table", "health": "Health"},
    "ja": {"nav": "ラダー", "live": "ライブ順位表", "official": "公式順位表", "health": "健全性"},
}


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_ladder_page_from_the_navigation_at_1280_and_390(browser, site, artifacts, lang):
    api_rows = None
    for width in WIDTHS:
        ctx, pg, errors = _context(browser, width, lang, site)
        try:
            pg.goto(f"{site.url}/ui/")
            assert pg.locator("#nav-ladders").inner_text() == WORDS[lang]["nav"]
            pg.click("#nav-ladders")
            pg.wait_for_selector("#ladders")
            assert pg.locator("#ladders tbody tr").count() == 1  # the private ladder: not to a visitor
            pg.screenshot(path=str(artifacts / f"ui-ladders-{width}-{lang}.png"), full_page=True)
            pg.click(f"#ladders tr[data-ladder='{site.ladder}'] a")
            pg.wait_for_selector("#ladder-table")
            api_rows = api_rows or pg.request.get(f"{site.url}/api/v1/ladders/{site.ladder}").json()["rows"]
            rows = pg.locator("#ladder-table tbody tr")
            assert rows.count() == len(api_rows)
            for i, r in enumerate(api_rows):
                row = rows.nth(i)
                assert row.get_attribute("data-entry") == str(r["entry_id"])
                assert row.locator(".conservative").inner_text().split()[-1] == f"{r['conservative']:.2f}"
            assert pg.locator("#live-table-card h2").inner_text().startswith(WORDS[lang]["live"])
            paused = pg.locator("#ladder-table tr[data-status='paused'] .paused-why").inner_text()
            assert ("直近6セット中2セットで棄権" if lang == "ja" else "forfeited 2 of its last 6 sets") in paused
            assert pg.locator("#recent-table tbody tr").count() == 20
            assert pg.locator("#official h2").inner_text() == WORDS[lang]["official"]
            n = pg.locator("#matrix tbody tr").count()
            assert n >= 4 and pg.locator("#matrix td.self").count() == n
            assert pg.locator("#sign-in-to-enter").count() == 1
            assert _fits(pg), (lang, width)
            if width == 390:  # the table is blocks of labelled values, each row within the window
                box = pg.locator("#ladder-table tbody tr").first.bounding_box()
                assert box is not None and box["width"] <= 390
            pg.screenshot(path=str(artifacts / f"ui-ladder-{width}-{lang}.png"), full_page=True)
            # the replay of a recent set, from its row
            first = pg.locator("#recent-table tbody tr").first
            match_id = first.get_attribute("data-match")
            first.locator("a.replay-link").click()
            # the replay names its step in the fragment (#g0s0) as soon as it draws: a glob
            # without it missed the page whenever the script ran first
            pg.wait_for_url(re.compile(rf"/ui/matches/{match_id}(#g\d+s\d+)?$"))
            pg.wait_for_selector("#replay")
            assert errors == []
        finally:
            ctx.close()


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_bots_ladder_profile_is_public_at_1280_and_390(browser, site, artifacts, lang):
    for width in WIDTHS:
        ctx, pg, errors = _context(browser, width, lang, site)
        try:
            pg.goto(f"{site.url}/ui/ladders/{site.ladder}")
            pg.click(f"#ladder-table tr[data-bot='{site.bots['ben-greedy']}'] td.bot a")
            pg.wait_for_selector(f"#ladder-{site.ladder}")
            section = pg.locator(f"#ladder-{site.ladder}")
            assert section.locator("svg.ladder-chart circle.dot").count() > 1
            assert section.locator(".profile-sets tbody tr").count() == 10
            assert pg.locator("#run-check").count() == 0 and pg.locator("#bot-url").count() == 0
            assert WORDS[lang]["health"] in section.inner_text()
            assert _fits(pg), (lang, width)
            pg.screenshot(path=str(artifacts / f"ui-ladder-profile-{width}-{lang}.png"), full_page=True)
            pg.goto(f"{site.url}/ui/bots/{site.version}")
            compare = pg.locator(f"#ladder-{site.ladder} p.compare")
            assert int(compare.get_attribute("data-sets") or 0) >= 1
            assert (
                "旧バージョンとの比較" if lang == "ja" else "Against its parent on identical deals"
            ) in compare.inner_text()
            if width == 1280:
                pg.screenshot(path=str(artifacts / f"ui-ladder-version-{lang}.png"), full_page=True)
            assert errors == []
        finally:
            ctx.close()


def test_the_owner_enters_pauses_resumes_and_withdraws_from_the_page(browser, site, artifacts):
    r = httpx.post(
        f"{site.url}/api/v1/bots",
        json={"name": "cat-2", "url": site.servers[0].origin + "/", "rulesets": ["million_doubt"]},
        headers=site.headers("cat"),
    )
    fresh = r.json()["id"]
    assert mark_bot_checked(site.sessions, fresh, ladder_site.CHECK) == "ready"
    ctx, pg, errors = _context(browser, 1280, "en", site, "cat")
    pg.on("dialog", lambda d: d.accept())  # Withdraw asks first
    try:
        pg.goto(f"{site.url}/ui/ladders/{site.ladder}")
        pg.select_option("#e-bot", str(fresh))
        pg.fill("#e-concurrent", "9")
        pg.click("#enter-bot")
        pg.wait_for_selector("[data-field=max_concurrent]")  # refused by its field: at most 4 here
        assert "from 1 to 4 in this ladder" in pg.locator("[data-field=max_concurrent]").inner_text()
        assert pg.locator("#e-concurrent").input_value() == "9"
        pg.fill("#e-concurrent", "2")
        pg.click("#enter-bot")
        row = f"#my-entries tr[data-bot='{fresh}']"
        pg.wait_for_selector(f"{row}[data-status=active]")
        pg.screenshot(path=str(artifacts / "ui-ladder-entered.png"), full_page=True)
        for action, status in (("pause", "paused"), ("resume", "active"), ("withdraw", None)):
            pg.click(f"{row} button[data-action={action}]")
            if status is None:
                pg.wait_for_selector(row, state="detached")
            else:
                pg.wait_for_selector(f"{row}[data-status={status}]")
        # it may come back: offered again once the page after the withdrawal has loaded (the
        # row detaches as soon as the old page unloads, before the new one is there)
        pg.wait_for_selector(f"#e-bot option[value='{fresh}']", state="attached")
        assert pg.locator(f"#e-bot option[value='{fresh}']").count() == 1
        entry = pg.request.get(f"{site.url}/api/v1/ladders/{site.ladder}/entries/{fresh}").json()
        assert entry["status"] == "withdrawn"
        assert errors == []
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_an_organizer_creates_a_private_ladder_from_the_form(browser, site, artifacts, lang):
    name = f"Club JDF {lang}"
    for width in WIDTHS:
        ctx, pg, errors = _context(browser, width, lang, site, "olga")
        try:
            pg.goto(f"{site.url}/ui/ladders")
            pg.click("#new-ladder-link")
            pg.wait_for_selector("#new-ladder")
            pg.wait_for_load_state("load")  # the form's script runs after the form is parsed
            pg.select_option("#t-ruleset", "jdf")
            assert pg.locator("#options-jdf").is_visible() and not pg.locator("#options-million_doubt").is_visible()
            assert _fits(pg), (lang, width)
            pg.screenshot(path=str(artifacts / f"ui-ladder-new-{width}-{lang}.png"), full_page=True)
            if width != 1280:
                continue
            pg.fill("#t-name", name)
            pg.check("#kind-private")
            pg.fill("#t-members", "ann, nobody")
            pg.click("#create-ladder")
            pg.wait_for_selector("[data-field=members]")  # an unknown name: refused by its field
            assert "nobody" in pg.locator("[data-field=members]").inner_text()
            pg.fill("#t-members", "ann")
            pg.check("#opt-jdf-five_skip")
            pg.click("#create-ladder")
            pg.wait_for_selector("#ladder-table")
            assert pg.locator("h1").inner_text().startswith(name)
            assert pg.locator("#members").inner_text() == ("ann、olga" if lang == "ja" else "ann, olga")
            assert pg.locator("#ladder-table tbody tr.house").count() == 3
            assert errors == []
        finally:
            ctx.close()


# --------------------------------------------------------------------------- a real worker


@pytest.mark.services
def test_a_set_that_beats_tick_formed_plays_on_a_worker_while_the_page_shows_it(
    browser, pg_url, redis_url, tmp_path, celery_worker_factory, artifacts
):
    """An open ladder with one HTTP bot (house bots fill its tables): beat's tick
    (worker.beat.ladder_tick, run here as beat runs it) forms a set and sends it to the ladder
    queue; a real Celery worker plays it. The bot holds its first decision until the page has
    shown the set as playing (a closed gate, not a timing); then the set is stored, rated and
    its replay opens; the page's live part drops it from *Sets playing now* by itself."""
    arena = Arena(fresh_pg_database(pg_url), redis_url, tmp_path=tmp_path)
    app = create_app(arena.settings, engine=arena.engine)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    gated = StopAt(SAMPLE_BOTS["greedy"](seed=3), stops=(1,))
    ctx = None
    try:
        bot = arena.register(gated, ["million_doubt"], "gated")
        gated.armed = True  # after its check: count the ladder's decisions only
        r = arena.client.post(
            "/api/v1/ladders",
            json={"name": "Open MD", "ruleset": "million_doubt", "open": True, "time_rules": ladder_site.TIME_RULES},
            headers=arena.org,
        )
        lid = r.json["id"]
        # one set an hour: its stored set refills nothing (refilled sets would push it off the
        # recent sets the page lists)
        entry = {"bot_id": bot, "max_sets_per_hour": 1}
        assert arena.client.post(f"/api/v1/ladders/{lid}/entries", json=entry, headers=arena.owner).status_code == 201
        celery_worker_factory(  # pars off: a stored set is rated at once (no par task to wait for)
            database_url=arena.database_url,
            queues=("arena.priority", "arena.checks", "arena", "arena.ladder"),
            env={"ARENA_PAR_ROLLOUTS": "0"},
        )
        report = ladder_tick(arena.settings)
        assert report.startswith("ladder tick: 1 sets formed in 1 ladders"), report
        deadline = time.monotonic() + WAIT_MS / 1000
        while not gated.reached[1].is_set():
            assert time.monotonic() < deadline, "the worker never asked the bot"
            time.sleep(0.05)
        with arena.sessions() as s:
            mid = s.scalar(select(LadderSet.match_id).where(LadderSet.ladder_id == lid))
        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        pg = ctx.new_page()
        pg.goto(f"{url}/ui/ladders/{lid}")
        playing = pg.locator(f"#ladder-playing-list li[data-match='{mid}'][data-status=running]")
        assert playing.count() == 1 and "gated" in playing.inner_text()
        pg.screenshot(path=str(artifacts / "ui-ladder-live-worker.png"), full_page=True)
        playing.locator("a.live-link").click()
        pg.wait_for_url(f"**/ui/matches/{mid}#live-card")
        pg.wait_for_selector("#live-card")
        pg.goto(f"{url}/ui/ladders/{lid}")
        gated.release()
        # stored and rated by the worker; the page's live part notices by itself (no reload)
        pg.wait_for_selector("#ladder-playing-none", timeout=WAIT_MS)
        assert int(pg.locator("#ladder-live").get_attribute("data-refreshes") or 0) >= 1
        deadline = time.monotonic() + WAIT_MS / 1000
        while arena.client.get(f"/api/v1/ladders/{lid}/sets").json[0]["rating"] != "rated":
            assert time.monotonic() < deadline, "the set was never rated"
            time.sleep(0.1)
        pg.goto(f"{url}/ui/ladders/{lid}")
        pg.click(f"#recent-table tr[data-match='{mid}'] a.replay-link")
        pg.wait_for_selector("#replay")
        pg.goto(f"{url}/ui/bots/{bot}")  # public: the open ladder's entrant
        assert pg.locator(f"#ladder-{lid} .profile-sets tbody tr[data-match='{mid}']").count() == 1
    finally:
        gated.release()
        if ctx is not None:
            ctx.close()
        server.shutdown()
        gated.close()
        arena.close()
