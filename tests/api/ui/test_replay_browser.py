"""Whole-game replays in a real browser (Chromium, headless, 1366x768): the deal / game
pickers, running totals and their chart, the exchange explanation, the Million Doubt end
line, the faults table inside its card, and the Japanese pages. Screenshots in test-artifacts/."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from api.ui.replay import build_replay
from arena import matchlog
from arena.db.models import Match, MatchLog

pytestmark = pytest.mark.browser


@pytest.fixture
def small(browser):
    """A 1366x768 page (the laptop size the issue names)."""
    context = browser.new_context(viewport={"width": 1366, "height": 768}, device_scale_factor=1)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert errors == [], errors


def _first_match(site, key: str) -> int:
    with site.sessionmaker() as s:
        return s.scalar(select(Match.id).where(Match.tournament_id == site.tournaments[key]).order_by(Match.index))


def _replay(site, match_id: int) -> dict:
    with site.sessionmaker() as s:
        log = json.loads(matchlog.decompress(s.scalar(select(MatchLog.data).where(MatchLog.match_id == match_id))))
    return build_replay(log)


def test_trump_millionaire_deal_picker_and_running_totals(site, small, artifacts):
    mid = _first_match(site, "tm")
    data = _replay(site, mid)
    units = data["games"][0]["units"]
    scored = [u for u in units if u["totals"]]
    assert len(scored) >= 2, "the TM sprint must have several deals"
    small.goto(f"{site.url}/ui/matches/{mid}")
    pick = small.locator("#unit-pick")
    assert pick.locator("option").count() == len(units)
    # jump to the second deal: the replay stands at its first step, the totals are those after deal 1
    second = units[1]
    pick.select_option(str(second["unit"]))
    assert small.locator("#replay").get_attribute("data-step") == str(second["first_step"])
    assert small.locator("#ind-unit").inner_text() == "Deal 2"
    first_done = units[0]
    assert small.locator("#totals h3").inner_text() == "Running totals after Deal 1"
    totals = small.locator("#totals-table tbody tr .total").all_inner_texts()
    assert [int(t.replace("−", "-").replace("±", "")) for t in totals] == first_done["totals"]
    assert small.locator("#totals-chart polyline").count() == 4
    # the deal starts with the Millionaire's exchange decision, explained in words (TM-3)
    exch = next(
        i for i, f in enumerate(data["games"][0]["frames"]) if f["action"] and f["action"].get("type") == "exchange"
    )
    small.goto(f"{site.url}/ui/matches/{mid}#g0s{exch}")
    small.reload()
    assert "Millionaire" in small.locator("#explain").inner_text()
    small.screenshot(path=str(artifacts / "ui-match-tm-exchange.png"), full_page=False)
    # the last step: the totals are the game's result
    small.keyboard.press("End")
    final = scored[-1]["totals"]
    totals = small.locator("#totals-table tbody tr .total").all_inner_texts()
    assert [int(t.replace("−", "-").replace("±", "")) for t in totals] == final
    small.screenshot(path=str(artifacts / "ui-match-tm-totals.png"), full_page=True)


def test_million_doubt_end_line_and_game_totals(site, small, artifacts):
    mid = _first_match(site, "md")
    data = _replay(site, mid)
    small.goto(f"{site.url}/ui/matches/{mid}")
    small.keyboard.press("End")
    events = small.locator("#events").inner_text()
    assert "Game over" in events and "Score:" in events
    assert "{" not in events and '"0"' not in events  # no raw JSON (was: scores {"0":11,"1":-11})
    # the game picker lists the games with their scores, the totals follow the match's games
    assert small.locator("#game-pick option").count() == len(data["games"]) == 2
    assert small.locator("#totals h3").inner_text() == "Running totals after Game 1"
    small.select_option("#game-pick", "1")
    small.keyboard.press("End")
    assert small.locator("#totals h3").inner_text() == "Running totals after Game 2"
    totals = small.locator("#totals-table tbody tr .total").all_inner_texts()
    assert [float(t.replace("−", "-").replace("±", "")) for t in totals] == data["game_totals"][-1]["totals"]
    small.screenshot(path=str(artifacts / "ui-match-md-end.png"), full_page=True)


def test_faults_table_stays_inside_its_card_at_1366(site, small, artifacts):
    with site.sessionmaker() as s:
        mids = list(
            s.scalars(
                select(Match.id).where(Match.tournament_id.in_([site.tournaments["jdf"], site.tournaments["tm"]]))
            )
        )
    shown = 0
    for mid in mids:
        small.goto(f"{site.url}/ui/matches/{mid}")
        if small.locator("table#faults").count() == 0:
            continue
        shown += 1
        card = small.locator("section.card", has=small.locator("table#faults")).bounding_box()
        wrap = small.locator(".scroll-x").bounding_box()
        assert card and wrap
        assert wrap["x"] + wrap["width"] <= card["x"] + card["width"] + 0.5
        assert small.evaluate("document.documentElement.scrollWidth") <= 1366
        small.locator("table#faults").scroll_into_view_if_needed()
        small.screenshot(path=str(artifacts / "ui-match-faults-1366.png"), full_page=True)
        break
    assert shown == 1, "the faulty bot must have produced a faults table"


def test_japanese_replay_uses_the_game_terms(site, small, artifacts):
    mid = _first_match(site, "jdf")
    small.goto(f"{site.url}/ui/lang/ja?next=/ui/matches/{mid}")
    assert small.locator("html").get_attribute("lang") == "ja"
    assert small.locator("#ind-revolution").inner_text() == "革命"
    assert small.locator("#ind-jback").inner_text() == "Jバック"
    assert "手" in small.locator("#step-label").inner_text()
    assert small.locator("#unit-pick-wrap").inner_text().startswith("ゲーム")
    small.screenshot(path=str(artifacts / "ui-match-jdf-ja.png"), full_page=True)
    tid = site.tournaments["tm"]
    small.goto(f"{site.url}/ui/tournaments/{tid}")
    assert small.locator("#status").inner_text() == "終了"
    assert "トランプミリオネア" in small.locator(".facts").inner_text()
    small.screenshot(path=str(artifacts / "ui-tournament-tm-ja.png"), full_page=True)
    # switch back with the header link
    small.click("#lang-switch a[lang=en]")
    assert small.locator("html").get_attribute("lang") == "en"
    assert small.locator("#status").inner_text() == "finished"
