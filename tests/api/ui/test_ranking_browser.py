"""Issue 28 in a real browser (Debian's Chromium through Playwright): the leaderboard page
(reached from the navigation, per rule set, links to the bots for their owner) and the
standings' settled line, in English and Japanese.

A site of its own (SQLite, served on 127.0.0.1): two finished Million Doubt tournaments stored
with arena.lifecycle.store_result, one long with a par in every game (settled) and one short
without (not settled), and the ratings rebuilt as the worker does. Screenshots land in
``test-artifacts/``: ``ui-leaderboard.png``, ``ui-leaderboard-ja.png``,
``ui-standings-settled.png``, ``ui-standings-unsettled-ja.png``.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from werkzeug.serving import make_server

from api import create_app
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.session import make_engine, make_sessionmaker
from arena.leaderboard import leaderboard
from arena.ratings import rebuild_ratings
from arena.standings import tournament_report
from tests.api.test_standings_settled import _bots, _duels
from tests.api.ui.conftest import _QuietHandler

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    data = tmp_path_factory.mktemp("ranking-site")
    url = f"sqlite:///{data / 'arena.db'}"
    upgrade(url)
    engine = make_engine(url)
    sm = make_sessionmaker(engine)
    with sm() as s:
        olga, _ = create_account(s, "olga", "organizer")
        ann, ann_token = create_account(s, "ann")
        bots = _bots(s, ann.id, ["strong", "mid", "weak"])
        s.commit()
        settled = _duels(s, olga.id, bots, rounds=4, seed=1, par=True, name="Long cup")
        short = _duels(s, olga.id, bots, rounds=1, seed=7, par=False, name="Short cup")
        rebuild_ratings(s, "million_doubt")
        s.commit()
    app = create_app(
        Settings(data_dir=data, database_url=url, broker_url="redis://127.0.0.1:1/0", rate_limits=False),
        engine=engine,
    )
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield SimpleNamespace(
        url=f"http://127.0.0.1:{server.server_port}",
        sessions=sm,
        bots=bots,
        settled=settled,
        short=short,
        ann_token=ann_token,
    )
    server.shutdown()
    engine.dispose()


def _switch(page, lang: str) -> None:
    page.click(f"#lang-switch a[lang={lang}]")
    page.wait_for_selector(f"html[lang={lang}]")


def test_leaderboard_page_from_the_navigation_in_both_languages(ranked, page, artifacts):
    page.goto(ranked.url + "/ui/")
    page.click("#nav-leaderboard")
    page.wait_for_selector("#leaderboard")
    with ranked.sessions() as s:
        rows, total = leaderboard(s, "million_doubt")
    assert total == 3
    shown = page.locator("#leaderboard tbody tr")
    assert shown.count() == 3
    for i, r in enumerate(rows):
        row = shown.nth(i)
        assert row.locator(".bot").inner_text() == f"{r.bot_name} #{r.bot_id}"
        assert row.locator(".ordinal").inner_text() == f"{r.ordinal:.2f}"
        assert row.locator(".rating").inner_text() == f"{r.mu:.2f} ± {r.sigma:.2f}"
        assert (row.locator(".games").inner_text(), row.locator(".matches").inner_text()) == ("20", "10")
        assert row.locator(".last").inner_text() == r.last_played.strftime("%Y-%m-%d %H:%M UTC")
        assert row.locator(".bot a").get_attribute("href") == f"/ui/bots/{r.bot_id}"  # for everyone (issue 42)
    assert [r.bot_name for r in rows] == ["strong", "mid", "weak"]
    assert "Conservative rating (μ − 3σ)" in page.locator("#leaderboard thead").inner_text()
    page.screenshot(path=str(artifacts / "ui-leaderboard.png"), full_page=True)
    _switch(page, "ja")
    assert page.locator("#nav-leaderboard").inner_text() == "ランキング"
    head = page.locator("#leaderboard thead").inner_text()
    assert "保守的レーティング (μ − 3σ)" in head and "最終対戦" in head
    assert page.locator("#ruleset-name").inner_text() == "ミリオンダウト"
    page.screenshot(path=str(artifacts / "ui-leaderboard-ja.png"), full_page=True)
    page.click("#rulesets a[data-ruleset=jdf]")
    page.wait_for_selector("#no-ratings")
    assert "大会が終わるとレーティングが付きます" in page.locator("#no-ratings").inner_text()


def test_the_owner_follows_the_leaderboard_to_its_bot(ranked, page):
    page.goto(ranked.url + "/ui/login?next=/ui/leaderboard")
    page.fill("input[name=token]", ranked.ann_token)
    page.click("main form button[type=submit]")
    page.wait_for_selector("#leaderboard .bot a")
    assert page.locator("#leaderboard .bot a").count() == 3
    page.click(f"#leaderboard tr[data-bot='{ranked.bots['mid']}'] .bot a")
    page.wait_for_url(f"**/ui/bots/{ranked.bots['mid']}")
    assert "mid" in page.locator("h1").inner_text()


def test_standings_say_whether_the_ranking_is_settled_in_both_languages(ranked, page, artifacts):
    with ranked.sessions() as s:
        from arena.db.models import Tournament

        long_report = tournament_report(s, s.get(Tournament, ranked.settled))
        short_report = tournament_report(s, s.get(Tournament, ranked.short))
    assert long_report.settled and not short_report.settled
    page.goto(f"{ranked.url}/ui/tournaments/{ranked.settled}")
    verdict = page.locator("#settled")
    assert verdict.get_attribute("data-settled") == "true"
    assert verdict.inner_text().startswith(
        "Ranking settled: every difference between neighbours is significant at 95%."
    )
    assert "significant at 95%. First place settled." in verdict.inner_text()  # one space between sentences
    assert (
        page.locator("#order-basis").inner_text() == "Order by adjusted mean (score minus par): every game has a par."
    )
    gaps = page.locator("#standings td.gap")
    assert gaps.evaluate_all("tds => tds.map(t => t.dataset.significant)") == ["true", "true", ""]
    assert page.locator("#standings td.gap .tag").all_inner_texts() == ["significant", "significant"]
    rows = page.locator("#standings tbody tr")
    for i, st in enumerate(long_report.rows):
        assert rows.nth(i).locator(".adjusted").inner_text() == f"{st.adjusted_mean:+.2f}"
        assert rows.nth(i).locator(".par-games").inner_text() == "16"
    page.screenshot(path=str(artifacts / "ui-standings-settled.png"), full_page=True)
    _switch(page, "ja")
    assert page.locator("#settled").inner_text().startswith("順位確定：隣り合う順位の差はすべて95% 水準で有意です。")
    assert page.locator("#standings td.gap .tag").all_inner_texts() == ["有意", "有意"]

    page.goto(f"{ranked.url}/ui/tournaments/{ranked.short}")
    verdict = page.locator("#settled")
    assert verdict.get_attribute("data-settled") == "false"
    opened = sum(not n.significant for n in short_report.neighbours)
    assert verdict.inner_text().startswith(
        f"順位未確定：隣り合う順位の差 2 組のうち {opened} 組が95% 水準で有意ではありません。"
    )
    assert "ありません。1位は未確定です。" in verdict.inner_text()  # no space between Japanese sentences
    assert page.locator("#order-basis").inner_text() == "並び順：素点の平均。パーがあるのは 6 ゲーム中 0 ゲームです。"
    # 2 games per bot: under the 10-game floor, each gap says so rather than "not significant"
    assert "ゲーム数不足" in page.locator("#standings").inner_text()
    assert page.locator("#standings td.adjusted").count() == 0  # no par: no adjusted columns
    page.screenshot(path=str(artifacts / "ui-standings-unsettled-ja.png"), full_page=True)
    _switch(page, "en")
    assert (
        page.locator("#settled")
        .inner_text()
        .startswith(
            f"Ranking not yet settled: {opened} of 2 differences between neighbours are not significant at 95%."
        )
    )
