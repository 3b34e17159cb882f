"""Issue 29 part B without a browser: fault details and check warnings in the page's language
(B2), the refusal banner in the organizer's words (B4), the guides served (B8).

The fault details are the ones the runner and the engine really write: a Million Doubt
match against a bot that answers one wrong thing per game (each wrong answer forfeits that
game), and HTTP bots that misbehave (``tests.fakes.FakeBot``). Every fault must carry a code
the pages have a message for (``api.ui.faults``), with the catalogue's parameters, and read
in Japanese on a Japanese page.
"""

from __future__ import annotations

import re

import pytest
from babel.messages.pofile import read_po

from api.ui import faults, i18n
from arena.faults import Fault, FaultCode, param_names
from arena.runner.match import run_match
from arena.runner.players import HttpPlayer, LocalPlayer
from bots_sdk.bot import Request
from bots_sdk.samples import SAMPLE_BOTS
from engine.refusals import Refusal
from engine.timebank import TimeRules
from tests.fakes import FakeBot

from .test_i18n import PO

JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


class WrongOnce:
    """Plays as the greedy sample bot but answers ``wrong(request)`` to its first decision of
    every game (a fault: the Million Doubt game is forfeited)."""

    def __init__(self, wrongs):
        self.bot, self.wrongs, self.name, self.games = SAMPLE_BOTS["greedy"](seed=1), list(wrongs), "wrong", set()

    def decide(self, request):
        game = request.raw.get("game")
        if game not in self.games and len(self.games) < len(self.wrongs):
            self.games.add(game)
            return self.wrongs[len(self.games) - 1](request)
        return self.bot.decide(request)

    def notice(self, message):
        return None


def _other(req: Request) -> str:
    """A card this seat does not hold."""
    return next(c for c in ("3S", "3H", "3D", "3C", "4S", "4H", "JK") if c not in req.hand)


WRONG_ANSWERS = [
    lambda r: "nope",
    lambda r: {"type": "fly"},
    lambda r: {"type": "play"},
    lambda r: {"type": "play", "cards": []},
    lambda r: {"type": "play", "cards": ["ZZ"]},
    lambda r: {"type": "play", "cards": r.hand[:1], "x": 1},
    lambda r: {"type": "play", "cards": r.hand[:1], "comment": 5},
    lambda r: {"type": "play", "cards": r.hand[:1], "jokers": ["Z"]},
    lambda r: {"type": "rate", "rate": 0},
    lambda r: {"type": "exchange", "accept": "yes"},
    lambda r: {"type": "play", "cards": [_other(r)]},
    lambda r: {"type": "doubt"},
    lambda r: {"type": "play", "cards": r.hand[:1], "face_down": [_other(r)]},
    lambda r: {"type": "play", "cards": sorted(set(r.hand), key=r.hand.index)[:2]},  # two ranks (mostly)
]


def faulty_log(wrongs=WRONG_ANSWERS, rival=None, games: int | None = None) -> dict:
    """A Million Doubt match of :class:`WrongOnce` (``wrongs``) against ``rival`` (the random
    sample bot by default): one wrong answer a game, never a forfeit of the match."""
    return run_match(
        [
            LocalPlayer(WrongOnce(wrongs) if isinstance(wrongs, list) else wrongs),
            LocalPlayer(rival or SAMPLE_BOTS["random"](seed=2)),
        ],
        "million_doubt",
        {},
        seed=3,
        games=games or len(WRONG_ANSWERS) + 2,
        time_rules=TimeRules(60000, 10000, 60000),
        max_faults=100,
    )


def _details() -> list[dict]:
    """Fault records as the runner writes them (code, params, rule and English detail)."""
    log = faulty_log()
    out: list[dict] = list(log["faults"])
    assert len(out) >= len(WRONG_ANSWERS) - 2  # one wrong answer a game (a few may be legal by chance)
    for mode in ("garbage", "html", "status500", "huge", "redirect", "hang"):
        bot = FakeBot(mode=mode, every_post=True)
        player = HttpPlayer(bot.url, allow_private=True)
        try:
            outcome = player.decide(b'{"type":"decision"}', 0.5 if mode == "hang" else 10.0)
        finally:
            player.close()
            bot.close()
        assert outcome.fault is not None and outcome.reason is not None, mode
        out.append({"kind": outcome.fault, **outcome.reason.fields(), "detail": outcome.detail})
    refused = HttpPlayer("http://127.0.0.1:9/", allow_private=True)  # nothing listens on port 9
    outcome = refused.decide(b"{}", 5.0)
    assert outcome.reason is not None
    out.append({"kind": outcome.fault, **outcome.reason.fields(), "detail": outcome.detail})
    refused.close()
    return out


@pytest.fixture(scope="module")
def details() -> list[dict]:
    return _details()


def test_every_fault_the_runner_writes_has_a_code_the_pages_know(details):
    unknown = [d for d in details if d["code"] not in faults.MESSAGES]
    assert unknown == [], unknown
    for d in details:
        assert set(d["params"]) == param_names(d["code"]), d  # the catalogue's shape
        assert d["detail"] == Fault(d["code"], d["params"], d.get("rule")).text()
    assert len({d["code"] for d in details}) >= 12  # many different codes were really written


def test_fault_details_read_in_japanese_on_a_japanese_page(site, details):
    with site.app.test_request_context("/ui/", headers={"Accept-Language": "ja"}):
        for d in details:
            ja = faults.fault_detail(d)
            assert JAPANESE.search(ja), (d, ja)
            if d.get("rule"):
                assert ja.endswith(f" [{d['rule']}]")  # the rule id stays
    with site.app.test_request_context("/ui/", headers={"Accept-Language": "en"}):
        assert all(faults.fault_detail(d) for d in details)
        old = {"kind": "timeout", "detail": "something an old log wrote"}  # no code: as it is
        assert faults.fault_detail(old) == "something an old log wrote"


def test_every_code_has_a_page_message_of_its_parameters():
    codes = [c.value for c in FaultCode if c is not FaultCode.RELAYED] + [c.value for c in Refusal]
    for code in codes:
        message = faults.MESSAGES.get(code)
        assert message is not None, code
        assert set(re.findall(r"%\((\w+)\)s", message)) <= param_names(code), (code, message)


def test_every_fault_and_warning_message_is_translated():
    with PO.open("rb") as f:
        translated = {m.id: m.string for m in read_po(f) if m.id}
    for message in faults.MESSAGES.values():
        assert JAPANESE.search(translated.get(message, "")), message
    for message in i18n._WARNING_MESSAGES.values():
        assert JAPANESE.search(translated.get(message, "")), message


def test_every_check_warning_reads_in_japanese(site):
    codes = [
        {"code": "kind_not_asked", "params": {"ruleset": "jdf", "kind": "give"}},
        {"code": "signature_not_refused", "params": {"status": 200}},
        {"code": "signature_no_answer", "params": {"fault": "timeout"}},
        {"code": "auth_not_refused", "params": {"status": 1000}},
        {"code": "auth_probe_failed", "params": {"error": "ConnectionRefusedError: [Errno 111]"}},
    ]
    result = {"warnings": [f"english {i}" for i in range(len(codes))], "warning_codes": codes}
    with site.app.test_request_context("/ui/", headers={"Accept-Language": "ja"}):
        shown = i18n.check_warnings(result)
    assert len(shown) == len(codes) and all(JAPANESE.search(w) and "english" not in w for w in shown), shown


# Japanese words the review settled (issue 29, B2): what a Japanese player reads.
WORDING = {
    "to play": "カードを出す番",
    "95%% interval": "95%% 信頼区間",
    "Ordinal": "保守的レーティング（μ − 3σ）",
    "A play with a natural J turns the order back (J-back) until the trick clears.": "ジョーカー以外の J",
    "{s} s": "{s} 秒",
}


def test_the_reviewed_japanese_wording():
    with PO.open("rb") as f:
        t = {m.id: m.string for m in read_po(f) if m.id}
    for msgid, words in WORDING.items():
        assert words in t[msgid], (msgid, t[msgid])
    joined = "\n".join(t.values())
    for wrong in ("出すの番", "序数", "本物の", "95%% 区間", "95% 区間"):
        assert wrong not in joined, wrong
    for msgid, text in t.items():  # no English full stop in a Japanese sentence, no "s" for seconds
        assert not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]\.(\s|$)", text), (msgid, text)
        assert not re.search(r"\d s\b|\} s\b|%\(\w+\)s s\b", text), (msgid, text)
        assert not re.search(r"〜%\(\w+\)s\.", text), (msgid, text)


def test_the_refusal_banner_names_the_fields_in_the_organizers_words(site):
    c = site.app.test_client()
    assert c.post("/ui/login", data={"token": site.tokens["olga"], "next": "/ui/"}).status_code == 303
    for lang, words in (
        ("en", ("The tournament was not created", "target score")),
        ("ja", ("大会を作成できませんでした", "目標点")),
    ):
        html = c.get("/ui/tournaments/new", headers={"Accept-Language": lang}).get_data(as_text=True)
        csrf = re.search(r'name="csrf" value="([^"]+)"', html).group(1)
        r = c.post(
            "/ui/tournaments/new",
            headers={"Accept-Language": lang},
            data={
                "csrf": csrf,
                "ruleset": "trump_millionaire",
                "participants": [str(b) for b in site.bots.values()],
                "opt-trump_millionaire-target_score": "334",
                "initial": "60",
                "increment": "10",
                "cap": "60",
                "games_per_pairing": "1",
                "max_faults": "3",
            },
        )
        page = r.get_data(as_text=True)
        assert r.status_code == 422
        banner = re.search(r'<p class="error card" role="alert" id="form-message">([^<]*)</p>', page).group(1)
        assert all(w in banner for w in words), banner
        assert "json." not in banner and "invalid request" not in banner
        beside = re.search(r'data-field="opt-trump_millionaire-target_score">([^<]*)<', page).group(1)
        assert "at most 333" in beside  # the precise message stays by its field


def test_the_guides_are_served_and_linked(site):
    c = site.app.test_client()
    assert c.post("/ui/login", data={"token": site.tokens["alice"], "next": "/ui/"}).status_code == 303
    bots = c.get("/ui/bots").get_data(as_text=True)
    assert 'href="/ui/guides/writing-a-bot"' in bots and 'href="/ui/guides/protocol"' in bots
    guide = c.get("/ui/guides/writing-a-bot")
    assert guide.status_code == 200
    html = guide.get_data(as_text=True)
    assert "<h1" in html and "bots_sdk" in html and 'href="/ui/guides/rules#' in html  # links between guides
    rules = c.get("/ui/guides/rules").get_data(as_text=True)
    assert 'id="tm-5"' in rules and 'id="time-1"' in rules  # the rule ids the pages link to
    assert "<script" not in rules.split('id="guide"', 1)[1].split("</article>")[0]
    assert c.get("/ui/guides/").status_code == 200
    for bad in ("nothing", "..%2f..%2fREADME", "ARCHITECTURE"):
        assert c.get(f"/ui/guides/{bad}").status_code == 404
    ja = c.get("/ui/guides/fairness", headers={"Accept-Language": "ja"}).get_data(as_text=True)
    assert "ガイドは英語で書かれています" in ja and 'id="how-to-verify"' in ja
    tournament = c.get(f"/ui/tournaments/{site.tournaments['md']}").get_data(as_text=True)
    assert 'href="/ui/guides/fairness#how-to-verify"' in tournament


def test_a_guide_is_markdown_without_raw_html(site, tmp_path, monkeypatch):
    (tmp_path / "writing-a-bot.md").write_text(
        "# Title\n\n<script>alert(1)</script>\n\nSee [the protocol](protocol.md#signatures), "
        "[the code](../arena/live.py) and [a site](https://example.org/).\n\n"
        "## Words, and more\n\n## Words, and more\n",
        "utf-8",
    )
    monkeypatch.setenv("ARENA_DOCS_DIR", str(tmp_path))
    html = site.app.test_client().get("/ui/guides/writing-a-bot").get_data(as_text=True)
    body = html.split('id="guide"', 1)[1].split("</article>")[0]
    assert "<script>" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert 'href="/ui/guides/protocol#signatures"' in body and 'href="https://example.org/"' in body
    assert '<span class="repo-link">the code</span>' in body  # a file of the repository: its text only
    assert 'id="words-and-more"' in body and 'id="words-and-more-1"' in body
