"""Issue 42, point 3, in Chromium while a REAL Celery worker plays a tournament (PostgreSQL,
Redis, SDK bots over HTTP on 127.0.0.1): the live tournament page never contradicts itself.
The progress, "Playing now", the match table and the standings come from one read of the
matches (arena.board) and are swapped in together, so at every refresh of the page a match is
``finished`` in the table exactly when the progress counts it and the standings hold it, and
``running`` exactly when it is listed as playing now (the page had shown 5 playing, 1 running
in the table and a finished match still ``queued``).

Four bots, six Million Doubt matches, a worker of two processes; one bot holds its first
decision until the test releases it, so the page is checked at a moment that provably has a
running match beside finished ones (a closed gate, not a timing). A MutationObserver checks
the page after every refresh the live view makes."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import select

from arena.db.models import Match
from bots_sdk.samples import SAMPLE_BOTS
from tests.worker.conftest import SwitchBot

from .test_live_worker_browser import StopAt

pytestmark = [pytest.mark.browser, pytest.mark.services]

#: Milliseconds the test waits for the page or the worker (a guard against a hang, never a timing).
WAIT_MS = 90000

#: The page's own account of itself: progress, rows of the match table by status, the matches
#: playing now, the matches the standings hold (each Million Doubt match has two entrants).
READ_PAGE_JS = """() => {
  const prog = (document.getElementById('progress').innerText.match(/(\\d+)\\s*\\/\\s*(\\d+)/) || [0, 0, 0]);
  const rows = [...document.querySelectorAll('#matches tbody tr')].map(
    r => [Number(r.dataset.match), r.querySelector('.status').dataset.status]);
  const running = rows.filter(r => r[1] === 'running').map(r => r[0]).sort((a, b) => a - b);
  const playing = [...document.querySelectorAll('#playing li[data-match]')].map(li => Number(li.dataset.match))
    .sort((a, b) => a - b);
  const held = [...document.querySelectorAll('#standings-table td.matches')]
    .reduce((sum, td) => sum + Number(td.innerText), 0) / 2;
  return {progress: Number(prog[1]), total: Number(prog[2]),
          finishedRows: rows.filter(r => r[1] === 'finished').length, running, playing, held};
}"""

#: Installed on the page: after each refresh of the live parts (``data-refreshes`` changes),
#: the page's account of itself is recorded in ``window.__boards``.
WATCH_JS = (
    "() => { window.__boards = []; const read = "
    + READ_PAGE_JS
    + """;
  new MutationObserver(() => window.__boards.push(read())).observe(
    document.getElementById('live-tournament'), {attributes: true, attributeFilter: ['data-refreshes']});
}"""
)


def _agrees(board: dict) -> bool:
    return (
        board["progress"] == board["finishedRows"] == board["held"]
        and board["running"] == board["playing"]
        and board["total"] == 6
    )


def test_the_live_tournament_page_agrees_with_itself(browser, served, bots, celery_worker_factory, artifacts):
    arena, url = served
    gated = StopAt(SAMPLE_BOTS["random"](seed=1), stops=(1,))
    others = [SwitchBot(SAMPLE_BOTS["greedy"](seed=i)) for i in range(3)]
    bots += [gated, *others]
    ids = [arena.register(gated, ["million_doubt"], "Gated")]
    ids += [arena.register(b, ["million_doubt"], f"Bot{i}") for i, b in enumerate(others)]
    gated.armed = True  # after its check: its first tournament decision waits for the gate
    tid = arena.create(
        "million_doubt", ids, games_per_pairing=2, time_rules={"initial": 60.0, "increment": 10.0, "cap": 60.0}
    )
    arena.start(tid)
    ctx = browser.new_context(viewport={"width": 1366, "height": 900})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(url + "/ui/login")
        page.fill("#token", arena.org["Authorization"].split()[1])
        page.click("main form button[type=submit]")
        page.goto(f"{url}/ui/tournaments/{tid}")
        page.wait_for_selector("#live-tournament[data-state=live]", timeout=WAIT_MS)
        page.evaluate(WATCH_JS)
        worker = celery_worker_factory(database_url=arena.database_url, concurrency=2)
        deadline = time.monotonic() + WAIT_MS / 1000
        while not gated.reached[1].is_set():
            assert time.monotonic() < deadline and worker.alive(), worker.log()[-3000:]
            time.sleep(0.05)
        # the gated match runs; the worker's other process plays the five others
        page.wait_for_function("() => /5 \\/ 6/.test(document.getElementById('progress').innerText)", timeout=WAIT_MS)
        with arena.sessions() as s:
            held = [m for m in s.scalars(select(Match).where(Match.tournament_id == tid)) if m.status == "running"]
        assert len(held) == 1
        now = page.evaluate(READ_PAGE_JS)
        assert now == {
            "progress": 5,
            "total": 6,
            "finishedRows": 5,
            "running": [held[0].id],
            "playing": [held[0].id],
            "held": 5,
        }
        boards = page.evaluate("() => window.__boards")
        assert len(boards) >= 2 and [b for b in boards if not _agrees(b)] == []
        page.screenshot(path=str(artifacts / "ui-tournament-live-board.png"), full_page=True)
    finally:
        gated.release()
    page.wait_for_selector("#status[data-status='finished']", timeout=WAIT_MS)
    page.wait_for_selector("#organizer-actions, #verify-hint", timeout=WAIT_MS)  # the finished page, reloaded
    final = page.evaluate(READ_PAGE_JS)
    assert final == {"progress": 6, "total": 6, "finishedRows": 6, "running": [], "playing": [], "held": 6}
    ctx.close()
    assert errors == []
