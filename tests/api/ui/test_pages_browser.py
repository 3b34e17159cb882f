"""The /ui pages in a real browser (Debian's Chromium through Playwright, headless).

Screenshots of every page land in ``test-artifacts/`` (gitignored)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from arena import matchlog
from arena.db.models import Bot, Match, MatchLog, Tournament
from arena.standings import tournament_standings
from engine.frames import frames

pytestmark = pytest.mark.browser


def _names(site) -> dict[int, str]:
    with site.sessionmaker() as s:
        return {b.id: b.name for b in s.scalars(select(Bot))}


def _log(site, match_id: int) -> dict:
    with site.sessionmaker() as s:
        return json.loads(matchlog.decompress(s.scalar(select(MatchLog.data).where(MatchLog.match_id == match_id))))


def _matches(site, key: str) -> list[Match]:
    with site.sessionmaker() as s:
        return list(s.scalars(select(Match).where(Match.tournament_id == site.tournaments[key]).order_by(Match.index)))


def _shown_hands(page) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#seat-list .seat",
        "rows => rows.map(r => Array.from(r.querySelectorAll('.hand [data-card]')).map(c => c.dataset.card))",
    )


def _shown_field(page) -> list[dict]:
    """Each play on the field: seat, cards, and which of them are drawn as card backs."""
    return page.eval_on_selector_all(
        "#field .play",
        "plays => plays.map(p => ({seat: Number(p.dataset.seat), "
        "cards: Array.from(p.querySelectorAll('[data-card]')).map(c => c.dataset.card), "
        "backs: Array.from(p.querySelectorAll('[data-card].back')).map(c => c.dataset.card)}))",
    )


def _expected_field(frame: dict) -> list[dict]:
    out = []
    for p in frame["field"]:
        down = [] if p.get("revealed") else list(p.get("face_down") or [])
        backs = []
        for c in p["cards"]:
            if c in down:
                down.remove(c)
                backs.append(c)
        out.append({"seat": p["seat"], "cards": p["cards"], "backs": backs})
    return out


def test_index_lists_public_finished_tournaments(site, page, artifacts):
    page.goto(site.url + "/ui/")
    rows = page.locator("#tournaments tbody tr")
    shown = sorted(int(x) for x in rows.evaluate_all("rs => rs.map(r => r.dataset.tournament)"))
    assert shown == sorted([site.tournaments["md"], site.tournaments["jdf"], site.tournaments["tm"]])
    page.screenshot(path=str(artifacts / "ui-index.png"), full_page=True)


def test_finished_tournament_page_shows_the_standings(site, page, artifacts):
    tid = site.tournaments["md"]
    page.goto(f"{site.url}/ui/tournaments/{tid}")
    assert page.locator("#status").inner_text() == "finished"
    names = _names(site)
    with site.sessionmaker() as s:
        expected = tournament_standings(s, s.get(Tournament, tid))
    rows = page.locator("#standings tbody tr")
    assert rows.count() == len(expected) == 3
    for i, st in enumerate(expected):
        row = rows.nth(i)
        assert row.locator(".bot").inner_text() == f"{names[st.entrant]} #{st.entrant}"
        assert int(row.locator(".games").inner_text()) == st.games == 4  # 2 opponents x 2 games
        assert int(row.locator(".wins").inner_text()) == st.wins
        assert row.locator(".mean").inner_text() == f"{st.mean_score:+.2f}"
        assert row.locator(".ci").inner_text() == f"[{st.mean_score - st.ci95:+.2f}, {st.mean_score + st.ci95:+.2f}]"
        assert int(row.locator(".faults").inner_text()) == st.faults
        assert row.locator(".rating").inner_text().startswith(f"{st.mu:.2f}")
    # the chart has one bar per bot, the matches table links every match and its log
    assert page.locator("#chart g.row").count() == 3
    matches = _matches(site, "md")
    links = page.locator("#matches a", has_text="replay")
    assert sorted(links.evaluate_all("as => as.map(a => a.getAttribute('href'))")) == sorted(
        f"/ui/matches/{m.id}" for m in matches
    )
    assert page.locator("#matches a", has_text="log").count() == len(matches)
    # the JSON Lines download holds every match log
    resp = page.request.get(f"{site.url}/ui/tournaments/{tid}/logs.jsonl")
    assert resp.status == 200
    head, *lines = [json.loads(x) for x in resp.text().splitlines()]
    assert head["tournament"]["id"] == tid
    assert sorted(x["match_id"] for x in lines) == sorted(m.id for m in matches)
    page.screenshot(path=str(artifacts / "ui-tournament-md.png"), full_page=True)


def test_match_replay_steps_with_the_arrow_keys(site, page, artifacts):
    # a Million Doubt match whose first game has a face-down play and a doubt early on
    chosen = None
    for m in _matches(site, "md"):
        fr = frames(_log(site, m.id)["games"][0]["engine_log"])
        if any(p.get("face_down") for f in fr[:6] for p in f["field"]):
            chosen = m
            break
    assert chosen is not None
    log = _log(site, chosen.id)
    fr = frames(log["games"][0]["engine_log"])
    page.goto(f"{site.url}/ui/matches/{chosen.id}")
    assert page.locator("#replay").get_attribute("data-step") == "0"
    assert _shown_hands(page) == fr[0]["hands"]
    assert _shown_field(page) == []
    changes = 0
    for k in range(1, min(8, len(fr))):
        page.keyboard.press("ArrowRight")
        assert page.locator("#replay").get_attribute("data-step") == str(k)
        assert page.locator("#step-label").inner_text() == f"step {k} / {len(fr) - 1}"
        assert _shown_hands(page) == fr[k]["hands"]
        assert _shown_field(page) == _expected_field(fr[k])
        changes += fr[k]["hands"] != fr[k - 1]["hands"]
        ex = log["games"][0]["exchanges"][k - 1]
        assert page.locator(f"#seat-{ex['seat']} .bank").get_attribute("data-bank-ms") == str(ex["bank_after_ms"])
        assert page.locator("#action .took").inner_text() == f"{ex['elapsed_ms']} ms"
        if k == 3:
            page.screenshot(path=str(artifacts / "ui-match-md.png"), full_page=True)
    assert changes >= 2
    # the face-down cards were drawn as backs at some step
    assert any(_expected_field(f) and any(p["backs"] for p in _expected_field(f)) for f in fr[1:8])
    page.keyboard.press("ArrowLeft")
    assert page.locator("#replay").get_attribute("data-step") == "6"
    assert _shown_hands(page) == fr[6]["hands"]
    page.click("#first")
    assert page.locator("#replay").get_attribute("data-step") == "0"
    page.click("#next")
    assert _shown_hands(page) == fr[1]["hands"]
    # the second game: dealt afresh, seats swapped
    page.select_option("#game-pick", "1")
    fr2 = frames(log["games"][1]["engine_log"])
    assert page.locator("#replay").get_attribute("data-game") == "1"
    assert _shown_hands(page) == fr2[0]["hands"]
    # a time bank that drained: the heuristic bot sleeps 20 ms a decision, increment 0
    banks = [int(x) for x in page.locator("#seat-list .bank").evaluate_all("bs => bs.map(b => b.dataset.bankMs)")]
    page.keyboard.press("End")
    last = [int(x) for x in page.locator("#seat-list .bank").evaluate_all("bs => bs.map(b => b.dataset.bankMs)")]
    assert banks == [5000, 5000] and min(last) < 5000
    # the JSON log download is the stored log
    href = page.locator("#log-download").get_attribute("href")
    assert page.request.get(site.url + href).json() == log


def test_jdf_match_with_faults_is_highlighted(site, page, artifacts):
    glitch = site.bots["Glitch"]
    chosen = next(m for m in _matches(site, "jdf"))
    log = _log(site, chosen.id)
    assert log["faults"], "the faulty bot must have faulted"
    fault = log["faults"][0]
    # the engine step of the first fault: count engine actions up to its exchange
    actions = log["games"][0]["engine_log"]["actions"]
    step, k = None, 0
    for i, a in enumerate(actions, start=1):
        if a.get("forfeit") == "max_faults":
            continue
        if k == fault["n"]:
            step = i
            break
        k += 1
    assert step is not None
    page.goto(f"{site.url}/ui/matches/{chosen.id}#g0s{step - 1}")
    assert page.locator("#faults tbody tr").count() == len(log["faults"])
    assert page.locator("#replay").get_attribute("data-step") == str(step - 1)
    assert page.locator("#action.fault").count() == 0
    page.keyboard.press("ArrowRight")
    assert page.locator("#action.fault").count() == 1
    assert page.locator("#action .faultline").get_attribute("data-kind") == fault["kind"]
    assert page.locator("#action .faultline").inner_text().startswith("FAULT invalid action")
    assert page.locator(f"#seat-{fault['seat']}.fault").count() == 1
    assert log["players"][fault["player"]]["name"] == f"bot-{glitch}"
    fr = frames(log["games"][0]["engine_log"])
    assert _shown_hands(page) == fr[step]["hands"]
    # four hands, indicators present
    assert page.locator("#seat-list .seat").count() == 4
    for ind in ("#ind-revolution", "#ind-jback", "#ind-lock", "#ind-direction"):
        assert page.locator(ind).count() == 1
    page.screenshot(path=str(artifacts / "ui-match-jdf-fault.png"), full_page=True)
    # a step with a suit lock shows the lock indicator on
    locked = next(i for i, f in enumerate(fr) if f["suit_lock"])
    page.goto(f"{site.url}/ui/matches/{chosen.id}#g0s{locked}")
    page.reload()
    assert page.locator("#ind-lock").get_attribute("data-on") == "1"
    assert page.locator("#ind-revolution").get_attribute("data-on") == ("1" if fr[locked]["revolution"] else "0")
    page.screenshot(path=str(artifacts / "ui-match-jdf-lock.png"), full_page=True)


def test_private_tournament_needs_a_token_then_a_session(site, page, artifacts):
    tid = site.tournaments["private"]
    page.goto(f"{site.url}/ui/tournaments/{tid}")
    assert page.locator("h1").inner_text() == "Sign in"
    page.screenshot(path=str(artifacts / "ui-login.png"), full_page=True)
    page.fill("#token", site.tokens["alice"])
    page.click("button[type=submit]")
    assert page.url == f"{site.url}/ui/tournaments/{tid}"
    assert page.locator("#standings tbody tr").count() == 2
    match = _matches(site, "private")[0]
    page.goto(f"{site.url}/ui/matches/{match.id}")
    assert page.locator("#replay").count() == 1
    # sign out: the page is closed again
    page.click("header form button")
    page.goto(f"{site.url}/ui/matches/{match.id}")
    assert page.locator("h1").inner_text() == "Sign in"
    # a token in the address signs nobody in (sign-in is a form POST only)
    page.goto(f"{site.url}/ui/matches/{match.id}?token={site.tokens['olga']}")
    assert page.locator("h1").inner_text() == "Sign in"
