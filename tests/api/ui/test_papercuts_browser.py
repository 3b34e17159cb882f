"""Issue 29 part B in Chromium: what a new user reads on the pages.

- B1: the tournament page offers "Download all logs" with the command that verifies it, and
  the file the browser saves verifies (``arena logs verify``; the seed commitment is
  tests/cli/test_public_logs.py's, on tournaments played with one).
- B2: the Japanese pages: the 結果 head of the check table does not wrap one character a line
  (measured), ranges end without an English full stop, 95% 信頼区間, 保守的レーティング, 秒,
  「カードを出す番」, fault details and check warnings in Japanese.
- B3: one match number (the match id) on Playing now, the tournament's table, the match
  page and the bot page.
- B4: a refused form's banner in the organizer's words, in both languages.
- B5: no empty organizer card on a finished tournament; before Start no "0 / 0" and no empty
  table, no logs link; the replay's key hint is the rule set's.
- B8: the guides are linked from the pages and served.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from sqlalchemy import select

from arena.db.models import Bot, Match, MatchSeat, Tournament, TournamentParticipant
from arena.faults import Fault, FaultCode, fault, refused
from engine.refusals import Refusal
from tests.helpers import mark_bot_checked

from .conftest import REPO

pytestmark = pytest.mark.browser

JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def _sign_in(page, site, who: str, lang: str = "en") -> None:
    page.goto(f"{site.url}/ui/lang/{lang}?next=/ui/login")
    page.fill("#token", site.tokens[who])
    page.click("main form button[type=submit]")
    page.wait_for_load_state()


def _matches(site, key: str) -> list[Match]:
    with site.sessionmaker() as s:
        return list(s.scalars(select(Match).where(Match.tournament_id == site.tournaments[key]).order_by(Match.index)))


def test_the_offered_download_verifies_and_the_page_says_how(site, page, tmp_path):
    tid = site.tournaments["md"]
    page.goto(f"{site.url}/ui/tournaments/{tid}")  # public: no sign-in
    hint = page.locator("#verify-hint")
    assert f"arena logs verify tournament-{tid}-logs.jsonl" in hint.locator("code").inner_text()
    assert hint.locator("a").get_attribute("href") == "/ui/guides/fairness#how-to-verify"
    with page.expect_download() as info:
        page.click("#logs-download")
    download = info.value
    assert download.suggested_filename == f"tournament-{tid}-logs.jsonl"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    done = subprocess.run(
        [sys.executable, "-m", "daifugo_arena.cli", "logs", "verify", str(saved)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == f"{len(_matches(site, 'md'))} verified, 0 failed"
    page.click("#verify-hint a")
    page.locator("#how-to-verify").wait_for()  # the guide has loaded
    assert page.locator("#how-to-verify").count() == 1 and "/ui/guides/fairness" in page.url


def test_one_match_number_from_page_to_page(site, page):
    _sign_in(page, site, "alice")
    # the tournament's table: the match id, linked
    matches = _matches(site, "md")
    page.goto(f"{site.url}/ui/tournaments/{site.tournaments['md']}")
    cells = page.locator("#matches td.match-no a")
    assert cells.all_inner_texts() == [str(m.id) for m in matches]
    assert cells.evaluate_all("as => as.map(a => a.getAttribute('href'))") == [f"/ui/matches/{m.id}" for m in matches]
    # the match page says the same number, and no schedule position
    last = matches[-1]
    page.goto(f"{site.url}/ui/matches/{last.id}")
    assert page.locator("h1").inner_text().startswith(f"Match {last.id}")
    assert "of the schedule" not in page.locator(".crumbs").inner_text()
    # the bot page: the same numbers
    page.goto(f"{site.url}/ui/bots/{site.bots['Ace']}")
    listed = page.locator("#bot-matches td.match-no").all_inner_texts()
    with site.sessionmaker() as s:
        ids = set(s.scalars(select(MatchSeat.match_id).where(MatchSeat.bot_id == site.bots["Ace"])))
    assert listed and {int(x) for x in listed} <= ids and not any(x.startswith("#") for x in listed)
    links = page.locator("#bot-matches td.match-no a").evaluate_all("as => as.map(a => [a.textContent, a.href])")
    assert links and all(href.endswith(f"/ui/matches/{text}") for text, href in links)
    # Playing now: the number alone ("Match 12"), no second one
    running = _matches(site, "running")[0]
    with site.sessionmaker() as s:
        s.get(Match, running.id).status = "running"
        s.commit()
    try:
        _sign_in(page, site, "bob")  # owns Rando, seated in the running tournament
        page.goto(f"{site.url}/ui/tournaments/{site.tournaments['running']}")
        item = page.locator(f"#playing li[data-match='{running.id}']")
        assert item.locator("a.match-no").inner_text() == f"Match {running.id}"
        seats = " vs ".join(item.locator(".seatname").all_inner_texts())
        assert item.inner_text() == f"Match {running.id} {seats} · watch live"  # no second number
        assert page.locator(f"#matches td.match-no a[href='/ui/matches/{running.id}']").inner_text() == str(running.id)
    finally:
        with site.sessionmaker() as s:
            s.get(Match, running.id).status = "queued"
            s.commit()


def _row(kind: str, why: Fault) -> dict:
    """A check's fault row as :mod:`arena.conformance` writes it (code, params, rule, detail)."""
    return {"kind": kind, **why.fields(), "detail": why.text()}


@pytest.fixture
def checked_bot(site):
    """A bot of alice's with a finished check: steps, a conformance game, two warnings."""
    with site.sessionmaker() as s:
        bot = Bot(
            owner_id=site.accounts["alice"],
            name="Kenta",
            url="http://127.0.0.1:9/",
            rulesets=["jdf"],
            secret="s",
            status="unchecked",
        )
        s.add(bot)
        s.commit()
        bot_id = bot.id
    result = {
        "ok": True,
        "url": {"ok": True},
        "health": {"ok": True, "status": 200, "elapsed_ms": 1.7, "name": "kenta"},
        "signature": {"ok": False, "status": 200},
        "conformance": [
            {
                "ruleset": "jdf",
                "ok": True,
                "decisions": 64,
                "elapsed_ms": 210,
                "kinds": {
                    "play": {"asked": 60, "faults": 0},
                    "give": {"asked": 0, "faults": 0},
                    "discard": {"asked": 3, "faults": 0},
                    "exchange": {"asked": 2, "faults": 1},
                },
                "faults": [
                    _row("invalid_action", refused(Refusal.LEADER_PASS, {}, "C-6")),
                    _row(
                        "invalid_action", refused(Refusal.NOT_HELD, {"seat": 2, "cards": "3S 3H 3D 4S 4H 4D"}, "C-12")
                    ),
                    _row("timeout", fault(FaultCode.OWN_TIME_OVER_BANK, ms=61234, bank=60000)),
                ],
            }
        ],
        "warnings": ["jdf: never asked give", "answered a badly signed request with 200"],
        "warning_codes": [
            {"code": "kind_not_asked", "params": {"ruleset": "jdf", "kind": "give"}},
            {"code": "signature_not_refused", "params": {"status": 200}},
        ],
    }
    assert mark_bot_checked(site.sessionmaker, bot_id, result) == "ready"
    yield bot_id
    with site.sessionmaker() as s:  # the site is shared: other tests do not see this bot
        s.get(Bot, bot_id).status = "deleted"
        s.commit()


def test_the_japanese_pages_read_as_japanese(site, page, checked_bot, artifacts):
    page.set_viewport_size({"width": 1280, "height": 800})  # a laptop: the check card is narrow
    _sign_in(page, site, "alice", "ja")
    page.goto(f"{site.url}/ui/bots/{checked_bot}")
    head = page.locator("#check-table th", has_text="結果")
    box = head.bounding_box()
    line = float(head.evaluate("th => parseFloat(getComputedStyle(th).lineHeight)"))
    assert box["height"] < 1.5 * line + 12, (box, line)  # one line (+ its padding), not one character a line
    assert box["width"] > 2 * float(head.evaluate("th => parseFloat(getComputedStyle(th).fontSize)"))
    warnings = page.locator("#check-table ~ p.warning").all_inner_texts()
    assert len(warnings) == 2 and all(JAPANESE.search(w) and "english" not in w for w in warnings)
    assert "親はパスできません [C-6]" in page.locator("#check-table").inner_text()
    assert page.locator("#check-guides a").first.get_attribute("href") == "/ui/guides/protocol"
    page.screenshot(path=str(artifacts / "ui-ja-bot-check.png"), full_page=True)
    # the standings: 95% 信頼区間; the rating: 保守的レーティング
    page.goto(f"{site.url}/ui/tournaments/{site.tournaments['jdf']}")
    heads = page.locator("#standings th").all_inner_texts()
    assert any(h.endswith("95% 信頼区間") for h in heads) and "序数" not in page.content()  # under each mean
    page.screenshot(path=str(artifacts / "ui-ja-tournament.png"), full_page=True)
    page.goto(f"{site.url}/ui/bots/{site.bots['Ace']}")
    heads = page.locator("#rating-table th").all_inner_texts()  # as shown: μ and σ in lower case
    assert "保守的レーティング（μ − 3σ）" in heads, heads
    # fault details of a match in Japanese (Glitch answers an unknown card every 4th decision)
    with site.sessionmaker() as s:
        glitch = site.bots["Glitch"]
        faulty = next(
            m.id
            for m in _matches(site, "jdf")
            if any(x.bot_id == glitch for x in s.get(Match, m.id).seats) and s.get(Match, m.id).result.faults != [0] * 4
        )
    page.goto(f"{site.url}/ui/matches/{faulty}")
    details = page.locator("#faults td.detail")
    assert details.count() > 0
    for i in range(details.count()):
        cell = details.nth(i)
        assert JAPANESE.search(cell.inner_text()) and cell.inner_text() != cell.get_attribute("title")
    # the replay: seconds as 秒, whose turn as 「カードを出す番」
    page.goto(f"{site.url}/ui/matches/{_matches(site, 'md')[0].id}")
    assert all(t.endswith(" 秒") for t in page.locator("#seat-list .banktext").all_inner_texts())
    turns = page.locator("#seat-list .tag.act").all_inner_texts()
    assert turns and turns[0] == "カードを出す番" and "出すの番" not in page.content()
    assert "ダウト" in page.locator("#replay-hint").inner_text()
    page.screenshot(path=str(artifacts / "ui-ja-replay.png"), full_page=True)
    # the tournament form: ranges without an English full stop
    _sign_in(page, site, "olga", "ja")
    page.goto(f"{site.url}/ui/tournaments/new")
    helps = page.locator("#rule-options .help").all_inner_texts()
    assert helps and not [h for h in helps if h.rstrip().endswith(".")], helps
    assert any("指定範囲：1〜333" in h for h in helps)
    page.screenshot(path=str(artifacts / "ui-ja-tournament-new.png"), full_page=True)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_refused_form_says_what_to_correct_in_the_organizers_words(site, page, lang):
    _sign_in(page, site, "olga", lang)
    page.goto(f"{site.url}/ui/tournaments/new")
    page.select_option("#t-ruleset", "trump_millionaire")
    for bot in ("Ace", "Greedo", "Rando", "Glitch"):
        page.check(f"#participants input[value='{site.bots[bot]}']")
    page.fill("#opt-trump_millionaire-target_score", "334")
    page.click("#create-tournament")
    banner = page.locator("#form-message").inner_text()
    assert "json." not in banner and "invalid request" not in banner and "runner" not in banner
    if lang == "en":
        assert banner == "The tournament was not created: correct the fields marked below (target score)."
    else:
        assert banner == "大会を作成できませんでした。下の印のある項目を直してください（目標点）。"
    beside = page.locator(".field-error[data-field='opt-trump_millionaire-target_score']").inner_text()
    assert "at most 333" in beside


def test_page_details_before_the_start_after_the_end_and_in_the_replay(site, page):
    with site.sessionmaker() as s:
        t = Tournament(
            name="Not started",
            organizer_id=site.accounts["olga"],
            ruleset="million_doubt",
            options={},
            time_rules={"initial": 60.0, "increment": 10.0, "cap": 60.0},
            games_per_pairing=2,
            seed=1,
            max_faults=3,
            public_when_finished=True,
            status="created",
        )
        t.participants = [
            TournamentParticipant(bot_id=site.bots["Ace"]),
            TournamentParticipant(bot_id=site.bots["Rando"]),
        ]
        s.add(t)
        s.commit()
        created = t.id
    try:
        _sign_in(page, site, "olga")
        page.goto(f"{site.url}/ui/tournaments/{created}")
        assert "0 / 0" not in page.locator("#progress").inner_text()
        assert page.locator("#not-started").is_visible()
        assert page.locator("#no-matches").is_visible() and page.locator("#matches").count() == 0
        assert page.locator("#logs-download").count() == 0 and page.locator("#verify-hint").count() == 0
        assert page.locator("#organizer-actions button").all_inner_texts() == ["Start", "Cancel"]
    finally:  # the site is shared: other tests do not see this tournament
        with site.sessionmaker() as s:
            s.delete(s.get(Tournament, created))
            s.commit()
    # a finished tournament: no organizer card at all (nothing left to do)
    page.goto(f"{site.url}/ui/tournaments/{site.tournaments['md']}")
    assert page.locator("#organizer-actions").count() == 0
    assert page.locator("#logs-download").is_visible()
    # the replay's key hint is the rule set's own
    hints = {}
    for key in ("md", "tm", "jdf"):
        page.goto(f"{site.url}/ui/matches/{_matches(site, key)[0].id}")
        hints[key] = page.locator("#replay-hint").inner_text()
    assert "doubt" in hints["md"] and "Face-down" in hints["md"]
    for key in ("tm", "jdf"):
        assert "doubt" not in hints[key] and "ace-down" not in hints[key], hints[key]
    assert "TM-3" in hints["tm"] and "JDF-4" in hints["jdf"]


def test_the_guides_are_linked_from_the_pages(site, page):
    _sign_in(page, site, "alice")
    page.goto(f"{site.url}/ui/bots")
    page.click("#bot-guides a:text('Writing a bot')")
    assert page.url.endswith("/ui/guides/writing-a-bot")
    assert "Writing" in page.locator("#guide h1").inner_text()
    page.click("#guide-nav a:text('Bot protocol')")
    assert page.locator("#guide h1").inner_text().startswith("Bot protocol")
    page.click("#nav-guides")
    assert page.locator("#guide-list li").count() >= 6
    _sign_in(page, site, "olga")
    page.goto(f"{site.url}/ui/tournaments/new")
    tm3 = page.locator("#options-trump_millionaire a.rule", has_text="TM-3").first
    assert tm3.get_attribute("href") == "/ui/guides/rules#tm-3"
    assert page.locator("#rules-link a", has_text="FAULT-3").get_attribute("href") == "/ui/guides/rules#fault-3"
    page.goto(f"{site.url}{tm3.get_attribute('href')}")
    assert page.locator("#tm-3").count() == 1
