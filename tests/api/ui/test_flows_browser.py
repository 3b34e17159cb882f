"""The browser as a whole client (Chromium, headless, 1366x768): a contestant signs up,
registers and checks bots and rotates a secret; an organizer creates and starts a tournament
and sees it finished, all through the /ui forms (which call the REST API in-process).

The site runs with ``celery_eager`` (the queue calls the runner in-process, as in a
single-process installation), so starting a tournament plays it within the request; the bots
are real HTTP servers (bots_sdk.server) on 127.0.0.1. Screenshots in test-artifacts/."""

from __future__ import annotations

import re
import threading
import time

import pytest
from playwright.sync_api import Error as PlaywrightError
from sqlalchemy import select
from werkzeug.serving import make_server

from api import create_app
from arena.accounts import create_account
from arena.config import Settings
from arena.db.models import Bot, Tournament
from arena.db.session import make_engine, make_sessionmaker
from bots_sdk.samples import SAMPLE_BOTS
from bots_sdk.server import start as start_bot
from tests.helpers import eager_app

from .conftest import _QuietHandler

#: The tournament page's progress and status, read in one run of a script in the page: the live
#: part swaps both at once, and two reads could straddle a swap (or the page's own reload).
PROGRESS_JS = """() => {
  const progress = document.getElementById("progress"), status = document.getElementById("status");
  return progress && status ? [progress.innerText, status.dataset.status] : null;
}"""


def _progress(page) -> tuple[int, int, str]:
    """``(finished, total, status)`` the tournament page shows at one moment."""
    while True:
        try:
            shown = page.evaluate(PROGRESS_JS)
        except PlaywrightError as exc:  # the page's own reload destroyed the script's context
            if not any(why in str(exc) for why in ("context was destroyed", "navigat", "Not attached")):
                raise
            shown = None
        if shown is not None:
            done, total = map(int, re.search(r"(\d+) / (\d+)", shown[0]).groups())
            return done, total, shown[1]
        page.wait_for_load_state()


pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def eager_site(tmp_path_factory):
    data = tmp_path_factory.mktemp("ui-flows")
    app, engine = eager_app(data)
    sm = make_sessionmaker(engine)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    bots = [start_bot(SAMPLE_BOTS[kind](seed=i)) for i, kind in enumerate(("greedy", "heuristic"))]
    with sm() as s:
        _account, organizer_token = create_account(s, "olga", "organizer")
    yield {
        "url": f"http://127.0.0.1:{server.server_port}",
        "sm": sm,
        "organizer": organizer_token,
        "bots": [b.url for b in bots],
        "app": app,
    }
    for b in bots:
        b.close()
    server.shutdown()
    engine.dispose()


@pytest.fixture
def page(browser):
    context = browser.new_context(
        viewport={"width": 1366, "height": 768},
        device_scale_factor=1,
        permissions=["clipboard-read", "clipboard-write"],
    )
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("dialog", lambda d: d.accept())
    yield pg
    context.close()
    assert errors == [], errors


def test_contestant_and_organizer_run_a_tournament_through_the_pages(eager_site, page, artifacts):
    site = eager_site["url"]
    # --- a contestant signs up: the token is shown once, with a copy button
    page.goto(site + "/ui/signup")
    page.fill("#name", "mika")
    page.click("form button[type=submit]")
    token = page.locator("#token-value").inner_text()
    assert token.startswith("arena_") or len(token) >= 32
    page.click("button.copy")
    page.wait_for_selector("button.copy[data-copied='1']", timeout=10_000)  # the copy is asynchronous
    assert page.evaluate("navigator.clipboard.readText()") == token
    page.screenshot(path=str(artifacts / "ui-signup-token.png"))
    assert "mika" in page.locator("header .who").inner_text()  # signed in
    page.reload()  # the token is never shown again
    assert page.locator("#token-value").count() == 0
    # --- registers a bot with a bad URL: the API's message is shown next to the field
    page.goto(site + "/ui/bots")
    page.fill("#bot-name", "Bad")
    page.fill("#bot-url", "ftp://nowhere")
    page.check("input[name=rulesets][value=million_doubt]")
    page.click("#register-bot button[type=submit]")
    page.locator(".field-error[data-field=url]").wait_for()  # the answer to the form has loaded
    assert page.locator(".field-error[data-field=url]").count() == 1
    # --- registers two real bots and checks them
    ids = []
    for name, bot_url in zip(("Mika-greedy", "Mika-heuristic"), eager_site["bots"]):
        page.goto(site + "/ui/bots")
        page.fill("#bot-name", name)
        page.fill("#bot-url", bot_url)
        page.check("input[name=rulesets][value=million_doubt]")
        page.click("#register-bot button[type=submit]")
        secret = page.locator("#secret-value").inner_text()
        assert len(secret) == 64
        if not ids:
            page.screenshot(path=str(artifacts / "ui-bot-secret.png"))
        assert page.locator("#bot-status").get_attribute("data-status") == "unchecked"
        bot_id = int(re.search(r"#(\d+)", page.locator("h1").inner_text()).group(1))
        ids.append(bot_id)
        page.click("#run-check")
        assert page.locator("#bot-status").get_attribute("data-status") == "ready"
        assert page.locator("#check-result").get_attribute("class") == "ok"
        assert page.locator("#check-table tr[data-step=conformance-million_doubt]").count() == 1
        # each decision kind's result (Million Doubt: play, doubt, ...)
        kinds = page.locator("#check-table .kind-result").evaluate_all("ks => ks.map(k => k.dataset.kind)")
        assert "play" in kinds and "doubt" in kinds
        assert page.locator("#secret-value").count() == 0  # shown once only
    page.screenshot(path=str(artifacts / "ui-bot-checked.png"), full_page=True)
    # --- rotates the secret of the first bot: a new one, shown once
    with eager_site["sm"]() as s:
        old = s.get(Bot, ids[0]).secret
    page.goto(f"{site}/ui/bots/{ids[0]}")
    page.click("#rotate-secret")
    new = page.locator("#secret-value").inner_text()
    with eager_site["sm"]() as s:
        b = s.get(Bot, ids[0])
        assert new == b.secret != old and b.previous_secret == old
    # --- a contestant cannot open the organizer form
    resp = page.goto(site + "/ui/tournaments/new")
    assert resp.status == 403
    page.click("header form button")  # sign out

    # --- the organizer signs in, creates a tournament: first with a mistake the API names
    page.goto(site + "/ui/login")
    page.fill("#token", eager_site["organizer"])
    page.click("main form button[type=submit]")
    page.goto(site + "/ui/tournaments/new")
    page.fill("#t-name", "Browser cup")
    page.select_option("#t-ruleset", "million_doubt")
    page.fill("#t-gpp", "0")  # out of range (1-1000): the API names the field
    for bid in ids:
        page.check(f"#participants input[value='{bid}']")
    page.uncheck("input[name=separate_owners]")  # both bots are the contestant's: they play each other
    page.click("#create-tournament")
    page.locator(".field-error[data-field=games_per_pairing]").wait_for()  # the answer to the form has loaded
    assert page.locator(".field-error[data-field=games_per_pairing]").count() == 1
    assert page.locator("#t-name").input_value() == "Browser cup"  # the form keeps its values
    page.fill("#t-gpp", "2")
    page.fill("input[name=initial]", "20")
    page.fill("input[name=cap]", "20")
    page.screenshot(path=str(artifacts / "ui-tournament-new.png"), full_page=True)
    page.click("#create-tournament")
    assert page.locator("#status").get_attribute("data-status") == "created"
    tid = int(page.url.rstrip("/").rsplit("/", 1)[1])
    assert page.locator("#standings td.rank").all_inner_texts() == ["—", "—"]  # nobody ranked yet
    # --- starts it: eager mode plays every match within the request
    page.click("#action-start")
    assert page.locator("#status").get_attribute("data-status") == "finished"
    with eager_site["sm"]() as s:
        t = s.get(Tournament, tid)
        assert t.status == "finished" and t.time_rules["initial"] == 20.0
        assert sorted(p.bot_id for p in t.participants) == sorted(ids)
    assert sorted(page.locator("#standings td.rank").all_inner_texts()) == ["1", "2"]
    page.screenshot(path=str(artifacts / "ui-tournament-finished.png"), full_page=True)
    # --- starting again is refused by the API rules (409), shown as a notice
    assert page.locator("#action-start").count() == 0  # finished: no start button
    assert page.locator("#organizer-actions form").count() == 0  # nor any other action
    page.goto(f"{site}/ui/tournaments/new")  # a page with the session's CSRF token in a form
    page.evaluate(f"""() => {{ const f = document.createElement('form'); f.method = 'post';
        f.action = '/ui/tournaments/{tid}/start';
        const i = document.createElement('input'); i.name = 'csrf';
        i.value = document.querySelector('input[name=csrf]').value; f.appendChild(i);
        document.body.appendChild(f); f.submit(); }}""")
    page.wait_for_load_state()
    assert page.locator("#notice").inner_text().startswith("The tournament was not started: ")
    # --- the bot page lists the bot's matches
    page.goto(f"{site}/ui/bots/{ids[0]}")
    assert page.locator("#bot-matches tbody tr").count() == 1


def test_forms_need_the_session_csrf_token(eager_site):
    c = eager_site["app"].test_client()
    r = c.post("/ui/signup", data={"name": "eve"})
    assert r.status_code == 400
    r = c.post("/ui/login", data={"token": eager_site["organizer"], "next": "/ui/"})
    assert r.status_code == 303
    with eager_site["sm"]() as s:
        tid = s.scalar(select(Tournament.id).order_by(Tournament.id.desc()))
    if tid is not None:
        r = c.post(f"/ui/tournaments/{tid}/cancel", data={"csrf": "forged"})
        assert r.status_code == 400
    html = c.get("/ui/tournaments/new").get_data(as_text=True)
    token = re.search(r'name="csrf" value="([^"]+)"', html).group(1)
    r = c.post(
        "/ui/tournaments/new",
        data={
            "csrf": token,
            "ruleset": "jdf",
            "opt-jdf-sets": "0",
            "participants": "1",
            "games_per_pairing": "1",
            "max_faults": "3",
            "initial": "60",
            "increment": "10",
            "cap": "60",
        },
    )
    html = r.get_data(as_text=True)
    assert r.status_code == 422 and 'data-field="opt-jdf-sets"' in html, re.findall(r'data-field="[^"]*">[^<]*', html)
    r = c.post("/ui/tournaments/1/explode", data={"csrf": token})
    assert r.status_code == 404


# --------------------------------------------------------------------------- on a real worker
#: Guard against a hung check or tournament (never a timed assertion: the test waits for
#: conditions and fails only when one never comes).
WAIT_GUARD_MS = 180_000


@pytest.fixture
def worker_site(pg_url, redis_url, celery_worker_factory, tmp_path):
    """The site as it is deployed: the API app (pages included) on PostgreSQL and Redis, not
    eager, served over HTTP; one real Celery worker process (threads, like ``arena worker``)
    playing checks and matches against real HTTP bots on 127.0.0.1; one organizer account
    (``arena accounts create --organizer``). Only the service is started here: every
    contestant and organizer step is done through the pages."""
    from tests.worker.conftest import SwitchBot, fresh_pg_database

    url = fresh_pg_database(pg_url)
    db_engine = make_engine(url)
    sm = make_sessionmaker(db_engine)
    settings = Settings(
        data_dir=tmp_path,
        database_url=url,
        broker_url=redis_url,
        allow_private_bot_urls=True,
        celery_eager=False,
        rate_limits=False,
    )
    app = create_app(settings, engine=db_engine)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    worker = celery_worker_factory(database_url=url, pool="threads", concurrency=4)
    bots = [SwitchBot(SAMPLE_BOTS[kind](seed=i)) for i, kind in enumerate(("greedy", "heuristic", "random"))]
    with sm() as s:
        _account, organizer_token = create_account(s, "olga", "organizer")
    yield {
        "url": f"http://127.0.0.1:{server.server_port}",
        "sm": sm,
        "organizer": organizer_token,
        "bots": bots,
        "worker": worker,
    }
    for b in bots:
        b.close()
    server.shutdown()
    db_engine.dispose()


def _sign_up(page, site: str, name: str) -> None:
    page.goto(site + "/ui/signup")
    page.fill("#name", name)
    page.click("form button[type=submit]")
    assert page.locator("#token-value").inner_text()
    assert name in page.locator("header .who").inner_text()


def _register_and_check(page, site: str, name: str, bot) -> int:
    """Register ``bot`` on the bots page, give it the secret shown once (as its author would
    start it with ``secret=...``), run the check and wait until the worker has done it."""
    page.goto(site + "/ui/bots")
    page.fill("#bot-name", name)
    page.fill("#bot-url", bot.url)
    page.check("input[name=rulesets][value=million_doubt]")
    page.click("#register-bot button[type=submit]")
    bot.set_secret(page.locator("#secret-value").inner_text())
    bot_id = int(re.search(r"#(\d+)", page.locator("h1").inner_text()).group(1))
    page.click("#run-check")
    # the check runs on the worker: the page says so and reloads itself until it is done
    page.wait_for_selector("#bot-status[data-status=ready], #bot-status[data-status=failed]", timeout=WAIT_GUARD_MS)
    assert page.locator("#bot-status").get_attribute("data-status") == "ready", page.content()[-3000:]
    assert page.locator("#check-result").get_attribute("class") == "ok"
    assert page.locator("#check-table tr[data-step=signature] td").nth(1).inner_text() == "✔"  # it checks signatures
    return bot_id


@pytest.mark.services
def test_a_tournament_from_sign_up_to_replay_on_a_real_worker(worker_site, page, artifacts):
    site, bots = worker_site["url"], worker_site["bots"]
    # --- a contestant signs up and registers two bots; a second contestant a third one
    _sign_up(page, site, "mika")
    ids = [_register_and_check(page, site, "Mika-greedy", bots[0])]
    kinds = page.locator("#check-table .kind-result").evaluate_all(
        "ks => ks.map(k => [k.dataset.kind, k.classList.contains('bad'), k.textContent])"
    )
    assert {k for k, _bad, _text in kinds} >= {"play", "doubt"}  # each decision kind's result
    assert all("✔" in text for kind, bad, text in kinds if kind == "play")
    ids.append(_register_and_check(page, site, "Mika-heuristic", bots[1]))
    page.click("header form button")  # sign out
    _sign_up(page, site, "ken")
    ids.append(_register_and_check(page, site, "Ken-random", bots[2]))
    page.click("header form button")

    # --- the organizer signs in and creates the tournament through the form
    page.goto(site + "/ui/login")
    page.fill("#token", worker_site["organizer"])
    page.click("main form button[type=submit]")
    page.goto(site + "/ui/tournaments/new")
    page.fill("#t-name", "Worker cup")
    page.select_option("#t-ruleset", "million_doubt")
    assert page.locator("#options-million_doubt").is_visible()
    assert not page.locator("#options-jdf").is_visible()  # the script shows the chosen rule set's options
    page.fill("#opt-million_doubt-burst_score", "12")
    page.fill("#t-initial", "10")
    page.fill("#t-increment", "1")
    page.fill("#t-cap", "10")
    page.fill("#t-gpp", "2")
    for bid in ids:
        page.check(f"#participants input[value='{bid}']")
    page.uncheck("input[name=separate_owners]")  # Mika's two bots play each other too: 3 matches
    page.click("#create-tournament")
    page.wait_for_selector("#status[data-status=created]")
    assert "12" in page.locator("#options").inner_text()
    # --- starts it and watches the progress until the worker has played every match
    page.click("#action-start")
    page.wait_for_selector("#status[data-status=running], #status[data-status=finished]")
    progress: list[tuple[int, int]] = []
    guard = time.monotonic() + WAIT_GUARD_MS / 1000
    # The organizer watches the page until it says finished: its live part swaps the progress
    # in (tournament_live.js) and loads the page again at the end. No reload of ours: one could
    # meet the page's own (ERR_ABORTED, or "not attached to an active page").
    while True:
        done, total, status = _progress(page)
        if not progress or progress[-1] != (done, total):
            progress.append((done, total))
        if status == "finished":
            break
        if time.monotonic() > guard:
            pytest.fail(f"tournament not finished: progress {progress}\n{worker_site['worker'].log()[-3000:]}")
        page.wait_for_timeout(200)  # the next read of the live page
    assert progress[-1] == (3, 3) and all(t == 3 for _d, t in progress)
    assert [d for d, _t in progress] == sorted(d for d, _t in progress)  # never goes back
    # the finished page: the live part, if it showed the end, loads the page again by itself
    page.wait_for_selector("#live-tournament", state="detached", timeout=WAIT_GUARD_MS)
    assert sorted(page.locator("#standings td.rank").all_inner_texts()) == ["1", "2", "3"]
    page.screenshot(path=str(artifacts / "ui-tournament-worker-finished.png"), full_page=True)
    with worker_site["sm"]() as s:
        t = s.scalar(select(Tournament).where(Tournament.name == "Worker cup"))
        assert t.status == "finished" and t.options == {"burst_score": 12}
        assert t.time_rules == {"initial": 10.0, "increment": 1.0, "cap": 10.0}
        assert sorted(p.bot_id for p in t.participants) == sorted(ids)
    # --- a replay is shown
    page.locator("#matches a", has_text="replay").first.click()
    page.wait_for_selector("#replay #seat-list .seat, #replay #seat-list > *")
    assert page.locator("#replay-card").is_visible()
    assert page.locator("#game-pick option").count() == 2  # two games per pairing
