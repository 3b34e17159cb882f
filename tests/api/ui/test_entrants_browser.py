"""Issue 42, point 2, in Chromium with a REAL Celery worker (PostgreSQL, Redis, SDK bots over
HTTP on 127.0.0.1): the organizer's Start says which entrants are offline and offers to wait
or to start without them; a waiting start is shown live (who is offline, a countdown) until
the bot answers and the page moves on by itself; the owner's bot page says a tournament waits
for it; a contestant sets a webhook on *My bots* and sends a test event. Screenshots in
``test-artifacts/``: ``ui-start-offline.png``, ``ui-start-waiting-<width>-<lang>.png``,
``ui-bot-waiting.png``, ``ui-webhook.png``."""

from __future__ import annotations

import pytest

from bots_sdk import protocol
from bots_sdk.samples import SAMPLE_BOTS
from tests.helpers import wait_until
from tests.worker.conftest import SwitchBot
from tests.worker.test_entrants_wait import Receiver

pytestmark = [pytest.mark.browser, pytest.mark.services]

#: Milliseconds the test waits for a page or the worker (a guard against a hang, never a timing).
WAIT_MS = 90000


def _signed_in(browser, url: str, token: str, width: int = 1280, lang: str = "en"):
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(url + "/ui/login")
    pg.fill("#token", token)
    pg.click("main form button[type=submit]")
    pg.wait_for_selector("#lang-switch")
    pg.goto(f"{url}/ui/lang/{lang}?next=/ui/")
    return ctx, pg, errors


def test_the_start_asks_waits_live_and_moves_on_when_the_bot_answers(
    browser, served, bots, celery_worker_factory, artifacts
):
    arena, url = served
    for i in range(2):
        bots.append(SwitchBot(SAMPLE_BOTS["greedy"](seed=i)))
    ids = [arena.register(b, ["million_doubt"], f"Bot{i}") for i, b in enumerate(bots)]
    sleepy = bots[1]
    port = int(sleepy.url.rsplit(":", 1)[1].strip("/"))
    sleepy.down()
    tid = arena.create("million_doubt", ids, games_per_pairing=2, name="Class final")
    worker = celery_worker_factory(database_url=arena.database_url)
    org_token = arena.org["Authorization"].split()[1]
    owner_token = arena.owner["Authorization"].split()[1]
    ctx, page, errors = _signed_in(browser, url, org_token)
    try:
        page.goto(f"{url}/ui/tournaments/{tid}")
        page.click("#action-start")
        page.wait_for_selector("#offline-asked")
        assert page.locator("#offline-asked li").evaluate_all("ls => ls.map(l => Number(l.dataset.bot))") == [ids[1]]
        assert "health check failed" in page.locator("#offline-asked").inner_text()
        assert page.locator("#status").get_attribute("data-status") == "created"  # nothing started
        page.screenshot(path=str(artifacts / "ui-start-offline.png"), full_page=True)

        page.fill("#wait-minutes", "10")
        page.click("#action-wait")
        page.wait_for_selector("#live-tournament[data-phase=waiting][data-state=live]", timeout=WAIT_MS)
        assert page.locator("#offline-list li").evaluate_all("ls => ls.map(l => Number(l.dataset.bot))") == [ids[1]]
        page.wait_for_function("() => /in \\d+ min \\d+ s/.test(document.getElementById('waiting-left').textContent)")
        left = page.locator("#waiting-left").inner_text()
        page.wait_for_function(f"() => document.getElementById('waiting-left').textContent !== {left!r}")
        assert page.locator("#action-start").inner_text() == "Start now, without the offline entrants"
        page.screenshot(path=str(artifacts / "ui-start-waiting-1280-en.png"), full_page=True)
        # the worker's polls reach the page live (each roll call is an event): refreshes grow
        page.wait_for_function(
            "() => Number(document.getElementById('live-tournament').dataset.refreshes || 0) >= 2", timeout=WAIT_MS
        )

        # the owner sees it on its bot's page, in Japanese on a phone
        octx, owner, owner_errors = _signed_in(browser, url, owner_token, width=390, lang="ja")
        try:
            owner.goto(f"{url}/ui/bots/{ids[1]}")
            assert owner.locator("#bot-waiting li").evaluate_all("ls => ls.map(l => Number(l.dataset.tournament))") == [
                tid
            ]
            assert "Class final" in owner.locator("#bot-waiting").inner_text()
            assert owner.evaluate("document.documentElement.scrollWidth") <= 390
            owner.screenshot(path=str(artifacts / "ui-bot-waiting.png"), full_page=True)
            owner.goto(f"{url}/ui/tournaments/{tid}")
            owner.wait_for_selector("#waiting-left")
            owner.wait_for_function("() => /あと/.test(document.getElementById('waiting-left').textContent)")
            assert owner.evaluate("document.documentElement.scrollWidth") <= 390
            owner.screenshot(path=str(artifacts / "ui-start-waiting-390-ja.png"), full_page=True)
        finally:
            octx.close()
        assert owner_errors == []

        back = SwitchBot(SAMPLE_BOTS["greedy"](seed=1), port=port)  # the bot is back at its address
        bots.append(back)
        back.set_secret(sleepy.secret or "")
        # the next poll starts the tournament: the page moves on by itself (reloaded, running or over)
        page.wait_for_selector("#status[data-status=running], #status[data-status=finished]", timeout=WAIT_MS)
        page.wait_for_selector("#status[data-status=finished]", timeout=WAIT_MS)
        # the live part follows at its next refresh (seen once under load: the status first)
        page.wait_for_function("() => !document.querySelector('#live-tournament[data-phase=waiting]')", timeout=WAIT_MS)
    finally:
        ctx.close()
    assert errors == []
    assert worker.alive()


def test_a_contestant_sets_a_webhook_and_sends_a_test_event(browser, served, celery_worker_factory, artifacts):
    arena, url = served
    receiver = Receiver()
    try:
        celery_worker_factory(database_url=arena.database_url)
        ctx, page, errors = _signed_in(browser, url, arena.owner["Authorization"].split()[1])
        try:
            page.goto(f"{url}/ui/bots")
            assert page.locator("#webhook-url").count() == 0  # none yet
            page.fill("#webhook-url-input", "http://169.254.169.254/hook")  # metadata: refused always
            page.click("#webhook-save")
            page.wait_for_selector("#webhook-error")
            assert page.locator("#webhook-secret").count() == 0
            page.fill("#webhook-url-input", receiver.url)
            page.click("#webhook-save")
            secret = page.locator("#webhook-secret").inner_text()
            assert len(secret) == 64 and page.locator("#webhook-url").inner_text() == receiver.url
            page.click("#webhook-test")
            page.wait_for_selector("#webhook-notice")
            ping = receiver.wait_for(lambda e: e["event"] == "ping", "the test event")
            headers, body, _ = receiver.events[0]
            protocol.verify(secret, body, headers)
            assert ping["data"]["account"]["name"].startswith("c-")

            def delivered() -> bool:
                page.goto(f"{url}/ui/bots")
                return page.locator("#webhook-last").get_attribute("data-ok") == "1"

            wait_until(delivered, "the delivery shown on the page", WAIT_MS / 1000)
            assert "delivered (HTTP 200)" in page.locator("#webhook-last").inner_text()
            assert secret not in page.content()  # shown once
            page.screenshot(path=str(artifacts / "ui-webhook.png"), full_page=True)
        finally:
            ctx.close()
        assert errors == []
    finally:
        receiver.close()
