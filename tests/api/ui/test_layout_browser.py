"""Issue 42, points 4 and 10, in Chromium: the finished standings fit a 1280 px laptop and a
390 px phone in English and Japanese (no column cut off, no page wider than the screen), the
Japanese Copy button keeps its label on one line, and a visitor follows the leaderboard to a
bot's public page (its rating chart, its public matches; none of its owner's parts).

A site of its own (SQLite, served on 127.0.0.1): a finished Million Doubt tournament with a
par in every game (the widest standings: adjusted means and games with par) between bots with
long names, a private tournament, the ratings rebuilt as the worker does, and a bot that
connects (its run command). Screenshots land in ``test-artifacts/``: ``ui-standings-<width>-<lang>.png``,
``ui-bot-public-<width>-<lang>.png``, ``ui-copy-ja-<width>.png``.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from sqlalchemy import select
from werkzeug.serving import make_server

from api import create_app
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.models import Bot, Match, MatchSeat, Tournament, TournamentParticipant
from arena.db.session import make_engine, make_sessionmaker
from arena.ratings import rebuild_ratings
from tests.api.test_standings_settled import _bots, _duels
from tests.api.ui.conftest import _QuietHandler

pytestmark = pytest.mark.browser

#: The bots' names as a class might name them (long ones: the standings' bot column grows).
LONG_NAMES = {"strong": "strong-heuristic-v2", "mid": "monte-carlo-rollouts", "weak": "weak-random-baseline"}
WIDTHS = (1280, 390)
LANGS = ("en", "ja")


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    data = tmp_path_factory.mktemp("layout-site")
    url = f"sqlite:///{data / 'arena.db'}"
    upgrade(url)
    engine = make_engine(url)
    sm = make_sessionmaker(engine)
    with sm() as s:
        olga, _ = create_account(s, "olga", "organizer")
        ann, ann_token = create_account(s, "ann")
        bots = _bots(s, ann.id, list(LONG_NAMES))
        for short, long_name in LONG_NAMES.items():
            s.get(Bot, bots[short]).name = long_name
        laptop = Bot(owner_id=ann.id, name="laptop", transport="connect", url=None, rulesets=["jdf"], secret="s")
        laptop.status = "ready"
        s.add(laptop)
        s.commit()
        public = _duels(s, olga.id, bots, rounds=4, seed=1, par=True, name="Class final")
        private = _duels(s, olga.id, bots, rounds=1, seed=7, par=False, name="Staff trial")
        for tid in (public, private):
            s.add_all(TournamentParticipant(tournament_id=tid, bot_id=b) for b in bots.values())
        s.get(Tournament, private).public_when_finished = False
        rebuild_ratings(s, "million_doubt")
        s.commit()
        laptop_id = laptop.id
    settings = Settings(
        data_dir=data,
        database_url=url,
        broker_url="redis://127.0.0.1:1/0",
        rate_limits=False,
        gateway_url="wss://arena.example-university.ac.jp/v1/bots",
    )
    app = create_app(settings, engine=engine)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield SimpleNamespace(
        url=f"http://127.0.0.1:{server.server_port}",
        sessions=sm,
        bots=bots,
        laptop=laptop_id,
        public=public,
        private=private,
        ann_token=ann_token,
    )
    server.shutdown()
    engine.dispose()


def _page(browser, site, width: int, lang: str, token: str | None = None):
    ctx = browser.new_context(viewport={"width": width, "height": 900}, device_scale_factor=1)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    if token is not None:
        pg.goto(site.url + "/ui/login")
        pg.fill("#token", token)
        pg.click("main form button[type=submit]")
        pg.wait_for_selector("#lang-switch")
    pg.goto(f"{site.url}/ui/lang/{lang}?next=/ui/")
    pg.wait_for_selector(f"html[lang={lang}]")
    return ctx, pg, errors


#: What sticks out: the cells of ``table`` past its card's edges, the table's scroll overflow
#: inside its card, the page's width beyond the screen.
OVERFLOW_JS = """(sel) => {
  const table = document.querySelector(sel);
  const card = table.closest('.card').getBoundingClientRect();
  const wrap = table.closest('.scroll-x');
  const cut = [...table.querySelectorAll('th, td')]
    .filter(c => c.offsetParent !== null)
    .filter(c => { const r = c.getBoundingClientRect();
                   return r.right > card.right + 0.5 || r.left < card.left - 0.5; })
    .map(c => c.className || c.textContent.trim());
  return {cut, scroll: wrap ? wrap.scrollWidth - wrap.clientWidth : 0,
          page: document.documentElement.scrollWidth, screen: window.innerWidth};
}"""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("lang", LANGS)
def test_finished_standings_fit_the_screen_in_both_languages(wide, browser, artifacts, width, lang):
    """Every column of the finished standings (rating and faults too) is on the screen, in its
    card, without scrolling, at 1280 px and at 390 px, in English and Japanese."""
    ctx, pg, errors = _page(browser, wide, width, lang)
    try:
        pg.goto(f"{wide.url}/ui/tournaments/{wide.public}")
        pg.wait_for_selector("#standings-table")
        got = pg.evaluate(OVERFLOW_JS, "#standings-table")
        assert got["cut"] == [] and got["scroll"] <= 0, got
        assert got["page"] <= got["screen"], got
        rows = pg.locator("#standings-table tbody tr")
        assert rows.count() == 3
        for i in range(3):
            for cell in (".rating", ".faults", ".mean", ".ci", ".adjusted", ".gap", ".bot"):
                assert rows.nth(i).locator(cell).first.is_visible(), (i, cell)
        assert rows.nth(0).locator(".bot").inner_text() == f"strong-heuristic-v2 #{wide.bots['strong']}"
        # the chart's names start inside it (a long one is shortened, not cut at the edge)
        lefts = pg.locator("#chart text.label").evaluate_all("ts => ts.map(t => t.getBBox().x)")
        assert len(lefts) == 3 and min(lefts) >= 0, lefts
        pg.screenshot(path=str(artifacts / f"ui-standings-{width}-{lang}.png"), full_page=True)
    finally:
        ctx.close()
    assert errors == []


@pytest.mark.parametrize("width", WIDTHS)
def test_the_japanese_copy_button_stays_on_one_line(wide, browser, artifacts, width):
    """コピー beside a long run command and a long gateway address is as tall as a one-line
    button of the same page (it broke into two lines: issue 42)."""
    ctx, pg, errors = _page(browser, wide, width, "ja", token=wide.ann_token)
    try:
        pg.goto(f"{wide.url}/ui/bots/{wide.laptop}")
        pg.wait_for_selector("#connect-command")
        one_line = pg.locator("#run-check").bounding_box()["height"]
        copies = pg.locator("button.copy")  # the gateway address and the run commands (a sample, a program)
        assert copies.count() >= 2
        for i in range(copies.count()):
            assert copies.nth(i).inner_text() == "コピー"
            assert copies.nth(i).bounding_box()["height"] <= one_line + 0.5
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        pg.screenshot(path=str(artifacts / f"ui-copy-ja-{width}.png"), full_page=True)
    finally:
        ctx.close()
    assert errors == []


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("lang", LANGS)
def test_a_visitor_follows_the_leaderboard_to_a_public_bot_page(wide, browser, artifacts, width, lang):
    """Issue 42, point 10: every name of the leaderboard links to the bot's page, which a
    visitor opens: the rating across tournaments, the rating chart and history of its public
    tournaments, its public matches; no check, URL, status, cap or secret."""
    ctx, pg, errors = _page(browser, wide, width, lang)
    strong = wide.bots["strong"]
    try:
        pg.goto(f"{wide.url}/ui/leaderboard")
        assert pg.locator("#leaderboard .bot a").count() == 3
        pg.click(f"#leaderboard tr[data-bot='{strong}'] .bot a")
        pg.wait_for_url(f"**/ui/bots/{strong}")
        assert "strong-heuristic-v2" in pg.locator("h1").inner_text()
        assert pg.locator("#bot-owner").inner_text() == "ann"
        assert pg.locator("#ratings tbody tr").count() == 1
        assert pg.locator("svg.rating-chart[data-ruleset=million_doubt] circle.dot").count() == 1
        assert pg.locator("#rating-table tbody tr").evaluate_all("rs => rs.map(r => r.dataset.tournament)") == [
            str(wide.public)
        ]
        with wide.sessions() as s:
            public = set(
                s.scalars(
                    select(Match.id)
                    .join(MatchSeat, MatchSeat.match_id == Match.id)
                    .where(MatchSeat.bot_id == strong, Match.tournament_id == wide.public)
                )
            )
        shown = pg.locator("#bot-matches tbody tr").evaluate_all("rs => rs.map(r => Number(r.dataset.match))")
        assert set(shown) == public and len(shown) == len(public)
        for owners_part in ("#bot-check", "#bot-url", "#bot-status", "#max-concurrency", "#run-check", "#secret-card"):
            assert pg.locator(owners_part).count() == 0, owners_part
        for table in ("#ratings", "#rating-table", "#bot-matches"):
            got = pg.evaluate(OVERFLOW_JS, table)
            assert got["page"] <= got["screen"], (table, got)
        pg.screenshot(path=str(artifacts / f"ui-bot-public-{width}-{lang}.png"), full_page=True)
    finally:
        ctx.close()
    assert errors == []
