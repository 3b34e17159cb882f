"""The bot page and the tournament form in Chromium at 1366x768, English and Japanese:
nothing overflows the page, the script shows only the chosen rule set's options, a refused
value comes back by its field; screenshots in test-artifacts/ (described in docs/ui.md)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture
def wide_page(browser):
    context = browser.new_context(viewport={"width": 1366, "height": 768}, device_scale_factor=1)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert errors == [], errors


def _sign_in(page, site, who: str) -> None:
    page.goto(site.url + "/ui/login")
    page.fill("#token", site.tokens[who])
    page.click("main form button[type=submit]")


def _language(page, site, code: str, path: str) -> None:
    page.goto(f"{site.url}/ui/lang/{code}?next={path}")


def _no_overflow(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1366, f"the page is {width} px wide"
    wide = page.evaluate("""() => [...document.querySelectorAll('section.card, form.card')]
        .filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.id || c.className)""")
    assert wide == [], wide


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_bot_page_renders_in_both_languages(site, wide_page, artifacts, lang):
    page = wide_page
    _sign_in(page, site, "bob")
    path = f"/ui/bots/{site.bots['Glitch']}"
    _language(page, site, lang, path)
    assert page.locator("html").get_attribute("lang") == lang
    assert page.locator("#rating-table tbody tr").count() == 2  # Glitch played the JDF cup and the TM sprint
    assert page.locator("svg.rating-chart").count() >= 1
    assert page.locator("#bot-faults tbody tr").count() > 0
    assert page.locator("#max-concurrency").get_attribute("data-value") == "4"
    if lang == "ja":
        assert "同時リクエスト上限" in page.locator("#bot-facts").inner_text()
        assert "レーティングの推移" in page.locator("#rating-history h2").inner_text()
    _no_overflow(page)
    page.screenshot(path=str(artifacts / f"ui-bot-page{'-ja' if lang == 'ja' else ''}.png"), full_page=True)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_tournament_form_renders_in_both_languages(site, wide_page, artifacts, lang):
    page = wide_page
    _sign_in(page, site, "olga")
    _language(page, site, lang, "/ui/tournaments/new")
    page.select_option("#t-ruleset", "jdf")
    assert page.locator("#options-jdf").is_visible()
    assert not page.locator("#options-million_doubt").is_visible()
    assert not page.locator("#options-trump_millionaire").is_visible()
    page.select_option("#t-ruleset", "trump_millionaire")
    assert page.locator("#options-trump_millionaire").is_visible() and not page.locator("#options-jdf").is_visible()
    assert page.locator("#options-trump_millionaire input[type=checkbox]").count() == 6  # LR-1..LR-6
    _no_overflow(page)
    page.screenshot(path=str(artifacts / f"ui-tournament-form{'-ja' if lang == 'ja' else ''}.png"), full_page=True)
    # a refused value: the API's message by the field, what was typed kept
    page.fill("#t-name", "Sprint")
    page.fill("#opt-trump_millionaire-target_score", "500")
    page.check("#opt-trump_millionaire-five_skip")
    for name in ("Ace", "Greedo", "Rando", "Glitch"):
        page.check(f"#participants input[value='{site.bots[name]}']")
    page.click("#create-tournament")
    err = page.locator(".field-error[data-field='opt-trump_millionaire-target_score']")
    assert "333" in err.inner_text()
    assert page.locator("#opt-trump_millionaire-target_score").input_value() == "500"
    assert page.locator("#opt-trump_millionaire-five_skip").is_checked()
    assert page.locator("#options-trump_millionaire").is_visible()  # the chosen rule set is still shown
    err.scroll_into_view_if_needed()
    _no_overflow(page)
    if lang == "en":
        page.screenshot(path=str(artifacts / "ui-tournament-form-refused.png"), full_page=True)
