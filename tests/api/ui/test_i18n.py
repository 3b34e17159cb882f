"""English and Japanese pages (Flask-Babel, api.ui.i18n): the catalogs are complete and
compiled, every page renders in both languages, the switch link and Accept-Language choose."""

from __future__ import annotations

import gettext
import json
import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po
from sqlalchemy import select

import engine
from api.ui import i18n
from api.ui.lang import option_value
from api.ui.rulesets import PAGE_RULESETS
from arena.db.models import Match

UI = Path(i18n.__file__).resolve().parent
PO = UI / "translations" / "ja" / "LC_MESSAGES" / "messages.po"
MO = PO.with_suffix(".mo")
PLACEHOLDER = re.compile(r"%\(\w+\)s|\{\w+\}|%%")


def _catalog():
    with PO.open("rb") as f:
        return read_po(f)


def _extracted() -> set[str]:
    method_map = [("**.py", "python"), ("templates/**.html", "jinja2")]
    found = extract_from_dir(str(UI), method_map, keywords={"_": None, "N_": None, "gettext": None})
    return {msg if isinstance(msg, str) else msg[0] for _f, _l, msg, _c, _ctx in found}


def test_every_message_of_the_pages_has_a_japanese_translation():
    catalog = _catalog()
    translated = {m.id: m.string for m in catalog if m.id}
    missing = sorted(m for m in _extracted() if not translated.get(m))
    assert missing == [], f"run bash infra/i18n.sh and translate: {missing}"
    for msgid, msgstr in translated.items():  # placeholders survive the translation
        assert sorted(PLACEHOLDER.findall(msgid)) == sorted(PLACEHOLDER.findall(msgstr)), msgid


def test_every_rule_set_has_its_page_facts_translated():
    """The pages' descriptor (api.ui.rulesets) covers every rule set of engine.RULESETS, and
    its messages (title, replay hint, unit label) are in the catalog, translated."""
    assert tuple(PAGE_RULESETS) == tuple(engine.RULESETS)
    translated = {m.id: m.string for m in _catalog() if m.id}
    for rs in PAGE_RULESETS.values():
        for message in (rs.title, rs.replay_hint, rs.unit_label):
            assert message is None or translated.get(message), (rs.name, message)
    assert i18n.ruleset_names() == {
        "million_doubt": "Million Doubt",
        "trump_millionaire": "Trump Millionaire",
        "jdf": "JDF",
    }


def test_committed_mo_is_the_compiled_po():
    with MO.open("rb") as f:
        compiled = gettext.GNUTranslations(f)
    for m in _catalog():
        if m.id:
            assert compiled.gettext(m.id) == m.string, f"stale {MO.name}: run bash infra/i18n.sh compile"


def test_game_terms_follow_the_japanese_rule_texts():
    t = {m.id: m.string for m in _catalog() if m.id}
    assert t["Revolution"] == "革命"
    assert "8切り" in t["8-cut by {who}: the field is cleared"]
    assert t["Million Doubt"] == "ミリオンダウト" and t["Trump Millionaire"] == "トランプミリオネア"
    assert (
        "ミリオネア"
        in t[
            "Exchange (TM-3): the Millionaire may swap its whole hand for 10 cards drawn at random "
            "from the 14 set aside"
        ]
    )
    assert t["doubt"] == "ダウト" and t["lets it through (スルー)"] == "スルー"
    assert "都落ち" in t["Miyako-ochi: {who} falls to last place"]
    assert "階段" in t["Number lock (stairs): only the next ranks may follow"]
    assert "しばり" in t["Suit lock {suits}: only these suits may follow"]
    assert t["Daifugo Arena"] == "大富豪アリーナ" and t["Time bank"] == "持ち時間"
    # the table's button plays cards (出す), a seat that passed is パス: not the navigation's
    # "Play" (遊ぶ) nor a bot check's "passed" (合格)
    assert t["Play cards"] == "出す" and t["has passed"] == "パス"


def _signed_in(site, name: str):
    c = site.app.test_client()
    r = c.post("/ui/login", data={"token": site.tokens[name], "next": "/ui/"})
    assert r.status_code == 303
    return c


def _pages(site) -> list[str]:
    with site.sessionmaker() as s:
        first = {
            key: s.scalar(select(Match.id).where(Match.tournament_id == tid).order_by(Match.index))
            for key, tid in site.tournaments.items()
        }
    pages = [
        "/ui/",
        "/ui/login",
        "/ui/signup",
        "/ui/bots",
        f"/ui/bots/{site.bots['Ace']}",
        "/ui/tournaments/new",
        "/ui/tournaments/999999",
        "/ui/matches/99999999",
        "/ui/leaderboard",
        "/ui/leaderboard?ruleset=jdf",
        "/ui/ladders",
        "/ui/ladders/new",
        "/ui/ladders/999999",
    ]
    pages += [f"/ui/tournaments/{tid}" for tid in site.tournaments.values()]
    pages += [f"/ui/matches/{mid}" for mid in first.values()]
    return pages


# Per language: the html lang attribute and words every page shows (header, navigation).
EXPECT = {"en": ('<html lang="en">', "Tournaments", "sign out"), "ja": ('<html lang="ja">', "大会", "サインアウト")}


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_every_page_renders_in_both_languages(site, lang):
    c = _signed_in(site, "olga")  # the organizer sees every tournament, also running ones
    for path in _pages(site):
        r = c.get(path, headers={"Accept-Language": f"{lang},en;q=0.5"})
        html = r.get_data(as_text=True)
        assert r.status_code in (200, 404), (path, r.status_code)
        for word in EXPECT[lang]:
            assert word in html, (lang, path, word)
        assert "Accept-Language" in r.headers.get("Vary", ""), path
        if lang == "ja":
            for english in ("Standings", "Seats and result", "Rule set", ">Replay<", "Back to the tournaments"):
                assert english not in html, (path, english)
    # page-specific words
    md = c.get(f"/ui/tournaments/{site.tournaments['md']}", headers={"Accept-Language": lang}).get_data(as_text=True)
    assert ("順位表" if lang == "ja" else "Standings") in md
    assert ("ミリオンダウト" if lang == "ja" else "Million Doubt") in md


def test_replay_script_strings_follow_the_language(site):
    c = site.app.test_client()
    html = c.get("/ui/", headers={"Accept-Language": "ja"}).get_data(as_text=True)
    m = re.search(r'<script type="application/json" id="i18n">(.*?)</script>', html, re.S)
    assert m is not None
    strings = json.loads(m.group(1))
    assert strings["Revolution"] == "革命"
    assert strings["fault:timeout"] == "時間切れ"
    assert set(i18n.JS_MESSAGES) <= set(strings)


def test_cookie_switch_beats_accept_language_and_next_stays_on_the_site(site):
    c = site.app.test_client()
    assert '<html lang="ja">' in c.get("/ui/", headers={"Accept-Language": "ja-JP"}).get_data(as_text=True)
    assert '<html lang="en">' in c.get("/ui/", headers={"Accept-Language": "fr, de"}).get_data(as_text=True)
    r = c.get("/ui/lang/en?next=/ui/login")
    assert r.status_code == 303 and r.headers["Location"] == "/ui/login"
    assert "arena_lang=en" in r.headers["Set-Cookie"] and "Path=/ui" in r.headers["Set-Cookie"]
    assert '<html lang="en">' in c.get("/ui/", headers={"Accept-Language": "ja"}).get_data(as_text=True)
    for evil in ("//evil.example/", "https://evil.example/", "/api/v1/accounts", "/ui\\..\\x"):
        r = c.get("/ui/lang/ja", query_string={"next": evil})
        assert r.status_code == 303 and r.headers["Location"] == "/ui/", evil
    assert c.get("/ui/lang/xx").status_code == 404
    # the REST API stays English whatever the cookie says
    c.get("/ui/lang/ja")
    r = c.get("/api/v1/tournaments/999999", headers={"Accept-Language": "ja"})
    assert r.status_code in (401, 404)
    assert not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", r.get_data(as_text=True))


def test_unplayed_tournament_ranks_nobody_and_options_read_as_words(site):
    c = _signed_in(site, "olga")
    html = c.get(f"/ui/tournaments/{site.tournaments['running']}").get_data(as_text=True)
    ranks = re.findall(r'<td class="num rank">([^<]*)</td>', html)
    assert ranks and set(ranks) == {"—"}
    tm = c.get(f"/ui/tournaments/{site.tournaments['tm']}", headers={"Accept-Language": "ja"}).get_data(as_text=True)
    assert "目標点：20" in tm
    assert "False" not in tm and "True" not in tm


def test_option_values_are_words_not_python(site):
    for lang, yes, no in (("en", "yes", "no"), ("ja", "はい", "いいえ")):
        with site.app.test_request_context("/ui/", headers={"Accept-Language": lang}):
            assert (option_value(True), option_value(False)) == (yes, no)
            assert option_value([1, 2, 3]) == "1, 2, 3"
            assert option_value(None) == "—"
            assert option_value(20) == "20"
