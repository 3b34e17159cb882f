"""People play whole games through the table page in Chromium, against a REAL Celery worker,
PostgreSQL, Redis and HTTP bots (issue 40, docs/tables.md):

* Million Doubt with a face-down bluff and a doubt (the mouse), every frame the page got
  checked to be the seat's own view (never another seat's hidden card);
* Trump Millionaire with the Millionaire's exchange and rate, at phone width, in Japanese;
* JDF with a revolution and a give (the JDF-4 exchange, the local rules' give and discard);
* Million Doubt with the keyboard only;
* a closed tab: the seat forfeits within its bank and the worker plays the next table;
* "play against my bot" from the bot's page; a class table taken by its link.

The opponents are bots that make the situations certain: a bluffer that doubts every
face-down play and bluffs when it follows (Million Doubt), passive bots that pass whenever
they may (the person leads, goes out first and becomes the Millionaire, the daifugo). The
JDF deal's seed is chosen so that the person's first hand holds four of a kind.
Screenshots of each decision kind at 1280 and 390 px, English and Japanese:
``test-artifacts/table-<ruleset>-<kind>-<lang>-<width>.png``."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sqlalchemy import func, select

import engine
from arena.db.models import Match, Tournament
from arena.seeds import attempt_seed, game_seed, match_seed
from bots_sdk.bot import PASS, Bot, Request
from bots_sdk.md import all_face_down_ok, trick_state
from bots_sdk.samples import SAMPLE_BOTS
from tests.tables_play import check_frames
from tests.worker.conftest import Arena, SwitchBot

from .tables_person import WAIT_MS, Person, keep_frames

pytestmark = [pytest.mark.browser, pytest.mark.services]

WIDTHS = (1280, 390)
LANGS = ("en", "ja")


class Bluffer(SAMPLE_BOTS["greedy"]):  # type: ignore[misc,valid-type]
    """Million Doubt: leads its weakest card face up; follows with its weakest cards face down
    (a bluff, most of the time); doubts every face-down play."""

    name = "bluffer"

    def play(self, req: Request) -> dict:
        if req.leading:
            plays = [a for a in req.plays() if len(a["cards"]) == 1]
            return plays[0] if plays else req.plays()[0]
        n = int(req.observation.get("trick_count") or 1)
        if len(req.hand) < n or not all_face_down_ok(trick_state(req.observation), n):
            return PASS
        cards = req.weakest_cards(n)
        return {"type": "play", "cards": cards, "face_down": list(cards)}

    def doubt(self, req: Request) -> dict:
        return {"type": "doubt"}


class Passive(Bot):
    """Passes whenever it may; leads its weakest single (Trump Millionaire, JDF)."""

    name = "passive"

    def play(self, req: Request) -> dict:
        if req.can_pass:
            return PASS
        singles = [a for a in req.plays() if len(a["cards"]) == 1]
        return singles[0] if singles else req.plays()[0]


def _people_bot(arena: Arena, bots: list, bot: Bot, rulesets: list[str], name: str) -> int:
    server = SwitchBot(bot)
    bots.append(server)
    bot_id = arena.register(server, rulesets, name)
    r = arena.client.patch(f"/api/v1/bots/{bot_id}", json={"play_people": True}, headers=arena.owner)
    assert r.status_code == 200, r.json
    return bot_id


def _person(arena: Arena) -> str:
    import uuid

    r = arena.client.post("/api/v1/accounts", json={"name": "person-" + uuid.uuid4().hex[:6]})
    assert r.status_code == 201, r.json
    return r.json["token"]


def _page(browser, url: str, token: str, *, lang: str = "en", width: int = 1280):
    ctx = browser.new_context(viewport={"width": width, "height": 900 if width > 600 else 844}, locale=lang)
    kept = keep_frames(ctx)
    pg = ctx.new_page()
    pg.kept_frames = kept  # type: ignore[attr-defined]
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(url + f"/ui/lang/{lang}?next=/ui/login")
    pg.fill("#token", token)
    pg.click("main form button[type=submit]")
    pg.js_errors = errors  # type: ignore[attr-defined]
    return ctx, pg


def _sit_down(pg, url: str, ruleset: str, opponents: list[str], **fields: Any) -> int:
    """Open a table through /ui/play as a person would; returns its id."""
    pg.goto(url + "/ui/play")
    pg.check(f"input[name=ruleset][value={ruleset}]")
    for i, o in enumerate(opponents):
        pg.select_option(f"#opponent-{i}", o)
    for name, value in fields.items():
        if isinstance(value, bool):
            (pg.check if value else pg.uncheck)(f"[name='{name}']")
        else:
            pg.fill(f"[name='{name}']", str(value))
    pg.click("#sit-down")
    pg.wait_for_selector("#game, #result, #table-message", timeout=WAIT_MS)
    assert pg.locator("#table-message").count() == 0, pg.locator("#table-message").inner_text()
    return int(pg.url.rsplit("/", 1)[1].split("?")[0])


def _log_of(arena: Arena, table_tournament: int) -> dict:
    stored = arena.stored(table_tournament)
    assert len(stored) == 1
    return stored[0][2]


def _tournament_of(arena: Arena, table_id: int) -> int:
    r = arena.client.get(f"/api/v1/tables/{table_id}", headers=arena.org)
    assert r.status_code == 200, r.json
    return r.json["tournament_id"]


class Shots:
    """Screenshots of each decision kind the first time the page is asked it, at each width and
    language (the page reloads in the other language: the pending decision is restored)."""

    def __init__(self, pg, url: str, table_id: int, ruleset: str, artifacts, *, lang: str, width: int):
        self.pg, self.url, self.table_id, self.ruleset, self.artifacts = pg, url, table_id, ruleset, artifacts
        self.lang, self.width = lang, width
        self.kinds: set[str] = set()

    def __call__(self, frame: dict) -> None:
        decision = frame["request"]["decision"]
        kind = decision["kind"]
        if (decision.get("info") or {}).get("exchange"):
            kind = "exchange"  # JDF-4's card exchange, a give of its own (not LR-5's 7-pass)
        if kind in self.kinds:
            return
        self.kinds.add(kind)
        pg = self.pg
        for lang in LANGS:
            if pg.evaluate("() => document.documentElement.lang") != lang:
                pg.goto(self.url + f"/ui/lang/{lang}?next=/ui/tables/{self.table_id}")
                pg.wait_for_selector(f"#game[data-state=asked][data-rid='{frame['rid']}']", timeout=WAIT_MS)
            for width in WIDTHS:
                pg.set_viewport_size({"width": width, "height": 900 if width > 600 else 844})
                pg.screenshot(
                    path=str(self.artifacts / f"table-{self.ruleset}-{kind}-{lang}-{width}.png"), full_page=True
                )
        pg.set_viewport_size({"width": self.width, "height": 900 if self.width > 600 else 844})
        if pg.evaluate("() => document.documentElement.lang") != self.lang:
            pg.goto(self.url + f"/ui/lang/{self.lang}?next=/ui/tables/{self.table_id}")
            pg.wait_for_selector(f"#game[data-state=asked][data-rid='{frame['rid']}']", timeout=WAIT_MS)


def _rank(card: str) -> int:
    return 13 if card == "JK" else "3456789TJQKA2".index(card[0])


def _caught_bluffs(log: dict, player: int) -> int:
    """How many face-down plays of ``player`` were doubted and found dishonest (MD-7)."""
    caught = 0
    for gm in log["games"]:
        seat = gm["seats"].index(player)
        last_play = None
        for e in gm["engine_log"]["events"]:
            if e["type"] == "play":
                last_play = e
            elif e["type"] == "reveal" and last_play is not None and last_play.get("seat") == seat:
                caught += e["honest"] is False
    return caught


def test_million_doubt_with_a_bluff_and_a_doubt_and_every_frame_is_the_seats_own(
    browser, served, bots, celery_worker_factory, artifacts
):
    arena, url = served
    bluffer = _people_bot(arena, bots, Bluffer(), ["million_doubt"], "Bluffer")
    ctx, pg = _page(browser, url, _person(arena))
    worker = celery_worker_factory(database_url=arena.database_url)
    tid = _sit_down(pg, url, "million_doubt", [str(bluffer)], games=2)

    def refused_shot(_what: str) -> None:
        for width in WIDTHS:
            pg.set_viewport_size({"width": width, "height": 900 if width > 600 else 844})
            pg.screenshot(path=str(artifacts / f"table-million_doubt-refused-en-{width}.png"), full_page=True)
        pg.set_viewport_size({"width": 1280, "height": 900})

    person = Person(pg, tid, shots=refused_shot)
    shots = Shots(pg, url, tid, "million_doubt", artifacts, lang="en", width=1280)
    bluffed = {"done": False, "wrong": False, "doubted": False}

    def policy(req: dict) -> dict | None:
        """Certain whatever the deal: the first lead tries two face-up cards of two ranks (the
        engine refuses it, C-3), then leads the strongest plain single; the first face-down
        play of the bluffer is doubted, the next let through, so that the person follows a
        trick of one: there it plays its weakest card face down, below its own lead (a bluff)."""
        kind, obs = req["decision"]["kind"], req["observation"]
        hand = list(obs["hand"])
        if kind == "doubt":
            first = not bluffed["doubted"]
            bluffed["doubted"] = True
            return {"type": "doubt" if first or bluffed["done"] else "through"}
        if kind == "play" and not obs["field"]:
            plain = sorted((c for c in hand if c != "JK"), key=_rank)
            if not bluffed["wrong"] and len({c[0] for c in plain}) >= 2:
                bluffed["wrong"] = True
                return {"type": "play", "cards": [plain[0], plain[-1]]}  # not a legal form
            singles = [c for c in plain if c[0] not in "8J"]  # no 8-cut, no J-back (MD-12, MD-13)
            return {"type": "play", "cards": [singles[-1]]} if singles and not bluffed["done"] else None
        if kind == "play" and not bluffed["done"] and obs.get("trick_count") == 1:
            lead, card = obs["field"][0], min(hand, key=_rank)
            below = lead["seat"] == obs["seat"] and _rank(card) < _rank(lead["cards"][0])
            if below and not obs["revolution"] and all_face_down_ok(trick_state(obs), 1):
                bluffed["done"] = True  # below the person's own lead, the trick's reference
                return {"type": "play", "cards": [card], "face_down": [card]}
        if kind == "penalty":
            ch = req["choice"]
            return {"type": "penalty", "cards": list(ch["from"][: max(ch["min"], min(1, ch["max"]))])}
        return None

    person.play(policy, on_turn=shots)
    pg.wait_for_selector("#result", timeout=WAIT_MS)
    kinds = Counter(k for k, _a in person.answered)
    assert kinds["doubt"] >= 1 and bluffed["done"], kinds
    assert any(a.get("face_down") for k, a in person.answered if k == "play")
    # the wrong try was refused with its rule, linked to the rule book; the game went on
    assert person.refusals and person.refusals[0]["rule"] == "C-3", person.refusals
    assert "Refused" in person.refusals[0]["text"]
    words = person.refusals[0]["text"].split()  # the engine's card codes shown as the page shows cards
    assert not set(person.refusals[0]["action"]["cards"]) & set(words), words
    assert any(w[-1] in "♠♥♦♣" for w in words), words
    # the result, the replay from the person's seat and with every hand, the log
    assert pg.locator("#result-table tbody tr").count() == 2
    assert pg.locator("#replay-mine").count() == 1 and pg.locator("#log-download").count() == 1
    log = _log_of(arena, _tournament_of(arena, tid))
    events = [e["type"] for gm in log["games"] for e in gm["engine_log"]["events"]]
    assert "doubt" in events and "reveal" in events
    assert _caught_bluffs(log, 0), "the person's bluff was never doubted and found out"
    # every frame the page received is the seat's own view: requests the runner sent it,
    # observations of its seat (never another seat's hidden card)
    counts = check_frames(person.frames, log, 0)
    assert counts["request"] >= len(person.answered) - 1 and counts.get("view", 0) >= 1, counts
    pg.click("#replay-mine")
    pg.wait_for_selector("#replay-card #every-hand")
    theirs = pg.locator("#seat-list .seat .hand .c[data-card]").count()
    pg.check("#every-hand")
    assert pg.locator("#seat-list .seat .hand .c[data-card]").count() >= theirs
    assert pg.js_errors == []  # type: ignore[attr-defined]
    ctx.close()
    assert worker.alive()


def test_trump_millionaire_exchange_and_rate_at_phone_width_in_japanese(
    browser, served, bots, celery_worker_factory, artifacts
):
    arena, url = served
    ids = [_people_bot(arena, bots, Passive(), ["trump_millionaire"], f"Passive-{i}") for i in range(3)]
    ctx, pg = _page(browser, url, _person(arena), lang="ja", width=390)
    worker = celery_worker_factory(database_url=arena.database_url)
    tid = _sit_down(
        pg,
        url,
        "trump_millionaire",
        [str(i) for i in ids],
        **{
            "opt-trump_millionaire-target_score": 40,
            "opt-trump_millionaire-seven_pass": True,
            "opt-trump_millionaire-ten_discard": True,
        },
    )
    assert pg.evaluate("() => document.documentElement.lang") == "ja"
    assert "あなた" in pg.locator("#game").inner_text() or pg.locator("#result").count()
    person = Person(pg, tid)
    person.play(on_turn=Shots(pg, url, tid, "trump_millionaire", artifacts, lang="ja", width=390))
    kinds = Counter(k for k, _a in person.answered)
    assert kinds["exchange"] >= 1 and kinds["rate"] >= 1, kinds
    pg.wait_for_selector("#result", timeout=WAIT_MS)
    assert "位" in pg.locator("#verdict").inner_text() or "勝ち" in pg.locator("#verdict").inner_text()
    check_frames(person.frames, _log_of(arena, _tournament_of(arena, tid)), 0)
    assert pg.js_errors == []  # type: ignore[attr-defined]
    ctx.close()
    assert worker.alive()


def _jdf_seed_with_a_revolution(arena: Arena, options: dict) -> int:
    """A seed whose table match deals seat 0 four of a kind in its first game (the next
    tournament id of this fresh database, the seed chain of docs/fairness.md)."""
    with arena.sessions() as s:
        next_id = int(s.scalar(select(func.coalesce(func.max(Tournament.id), 0))) or 0) + 1
    for seed in range(1, 5000):
        g = engine.new_game("jdf", options, game_seed(attempt_seed(match_seed(seed, next_id, 0), 1), 0))
        hand = g.observation(0)["hand"]
        ranks = Counter(c[0] for c in hand if c != "JK")
        if max(ranks.values()) + hand.count("JK") >= 4:
            return seed
    pytest.fail("no seed found")


def test_jdf_revolution_and_give(browser, served, bots, celery_worker_factory, artifacts):
    arena, url = served
    ids = [_people_bot(arena, bots, Passive(), ["jdf"], f"Passive-{i}") for i in range(3)]
    options = {"sets": 1, "games_per_set": 2, "seven_pass": True, "ten_discard": True}
    seed = _jdf_seed_with_a_revolution(arena, options)
    ctx, pg = _page(browser, url, _person(arena))
    worker = celery_worker_factory(database_url=arena.database_url)
    tid = _sit_down(
        pg,
        url,
        "jdf",
        [str(i) for i in ids],
        seed=seed,
        **{"opt-jdf-sets": 1, "opt-jdf-games_per_set": 2, "opt-jdf-seven_pass": True, "opt-jdf-ten_discard": True},
    )
    assert pg.locator("#seed-chosen").count() == 1  # a chosen seed: rated nowhere, and said so
    person = Person(pg, tid)
    person.play(on_turn=Shots(pg, url, tid, "jdf", artifacts, lang="en", width=1280))
    pg.wait_for_selector("#result", timeout=WAIT_MS)
    log = _log_of(arena, _tournament_of(arena, tid))
    events = [e for gm in log["games"] for e in gm["engine_log"]["events"]]
    assert any(e["type"] == "revolution" for e in events), "no revolution"
    gives = [a for k, a in person.answered if k == "give"]
    assert gives, Counter(k for k, _a in person.answered)
    check_frames(person.frames, log, 0)
    assert pg.js_errors == []  # type: ignore[attr-defined]
    ctx.close()
    assert worker.alive()


def test_million_doubt_with_the_keyboard_only(browser, served, bots, celery_worker_factory):
    arena, url = served
    bluffer = _people_bot(arena, bots, Bluffer(), ["million_doubt"], "Bluffer")
    ctx, pg = _page(browser, url, _person(arena))
    worker = celery_worker_factory(database_url=arena.database_url)
    tid = _sit_down(pg, url, "million_doubt", [str(bluffer)], games=1)
    person = Person(pg, tid, keyboard=True)

    def policy(req: dict) -> dict | None:
        kind, obs = req["decision"]["kind"], req["observation"]
        if kind == "doubt":
            return {"type": "doubt"}
        if (
            kind == "play"
            and obs["field"]
            and obs.get("trick_count") == 1
            and not any(a.get("face_down") for k, a in person.answered)
        ):
            card = min(obs["hand"], key=_rank)
            return {"type": "play", "cards": [card], "face_down": [card]}
        return None

    person.play(policy)
    pg.wait_for_selector("#result", timeout=WAIT_MS)
    kinds = Counter(k for k, _a in person.answered)
    assert kinds["play"] >= 1 and kinds["doubt"] >= 1, kinds
    assert pg.js_errors == []  # type: ignore[attr-defined]
    ctx.close()
    assert worker.alive()


def test_a_closed_tab_forfeits_and_the_worker_is_free(browser, served, celery_worker_factory):
    arena, url = served
    token = _person(arena)
    ctx, pg = _page(browser, url, token)
    worker = celery_worker_factory(database_url=arena.database_url)  # one match at a time
    tid = _sit_down(pg, url, "million_doubt", ["random"], games=1, initial=2, increment=0, cap=2)
    pg.wait_for_selector("#game[data-state=asked], #game[data-state=waiting]", timeout=WAIT_MS)
    ctx.close()  # the tab is closed: nobody answers
    t = _tournament_of(arena, tid)
    arena.wait_finished(t, workers=[worker])
    log = _log_of(arena, t)
    assert {f["kind"] for f in log["faults"] if f["player"] == 0} == {"timeout"}
    with arena.sessions() as s:
        assert s.scalar(select(Match.status).where(Match.tournament_id == t)) == "finished"
    # the worker plays the next table: a new tab, a whole game
    ctx2, pg2 = _page(browser, url, token)
    tid2 = _sit_down(pg2, url, "million_doubt", ["greedy"], games=1)
    Person(pg2, tid2).play()
    pg2.wait_for_selector("#result", timeout=WAIT_MS)
    ctx2.close()


def test_play_against_my_bot_from_its_page_and_a_class_table_by_its_link(browser, served, bots, celery_worker_factory):
    arena, url = served
    server = SwitchBot(SAMPLE_BOTS["random"](seed=5))
    bots.append(server)
    mine = arena.register(server, ["million_doubt"], "Mine")  # people may not play it: its owner may
    owner_token = arena.owner["Authorization"].split()[1]
    ctx, pg = _page(browser, url, owner_token)
    pg.goto(url + f"/ui/bots/{mine}")
    pg.click("#play-against")
    pg.wait_for_selector("#play-form")
    assert pg.locator("#opponent-0").input_value() == str(mine)
    worker = celery_worker_factory(database_url=arena.database_url)
    pg.fill("[name=games]", "1")
    pg.click("#sit-down")
    pg.wait_for_selector("#game", timeout=WAIT_MS)
    tid = int(pg.url.rsplit("/", 1)[1])
    Person(pg, tid).play()
    pg.wait_for_selector("#result", timeout=WAIT_MS)
    ctx.close()
    # a class table: the organizer opens it, a student follows the link, the organizer starts it
    org_token = arena.org["Authorization"].split()[1]
    octx, opg = _page(browser, url, org_token)
    opg.goto(url + "/ui/play")
    opg.check("input[name=ruleset][value=million_doubt]")
    opg.check("#p-class")
    opg.select_option("#class-seat-0", "person")
    opg.select_option("#class-seat-1", "greedy")
    opg.fill("[name=games]", "1")
    opg.click("#sit-down")
    opg.wait_for_selector("#join-link")
    link = opg.locator("#join-link").inner_text()
    assert opg.locator("#start-table").is_disabled()
    sctx, spg = _page(browser, url, _person(arena))
    spg.goto(link)
    spg.click("#take-seat")
    spg.wait_for_selector("#seated")
    # the organizer's page notices the seat taken by itself (no reload of ours to race its own)
    opg.wait_for_selector("#start-table:not([disabled])", timeout=WAIT_MS)
    assert opg.locator("#free-seats").get_attribute("data-free") == "0"
    opg.click("#start-table")
    opg.wait_for_selector("#watch-live", timeout=WAIT_MS)
    spg.wait_for_selector("#game", timeout=WAIT_MS)  # the student's page follows the start
    class_tid = int(opg.url.rsplit("/", 1)[1].split("?")[0])
    opg.click("#watch-live")  # the organizer watches it live, every hand
    opg.wait_for_selector("#live-card[data-view=full]", timeout=WAIT_MS)
    # its stream open before the student plays: a step published before that is never seen live
    opg.wait_for_function(
        "() => ['waiting', 'live'].includes(document.getElementById('live-state').dataset.state)",
        timeout=WAIT_MS,
    )
    Person(spg, class_tid).play()
    spg.wait_for_selector("#result", timeout=WAIT_MS)
    opg.wait_for_function("() => document.getElementById('live-state').dataset.state === 'ended'", timeout=WAIT_MS)
    assert int(opg.locator("#live-card").get_attribute("data-steps") or 0) >= 1
    sctx.close()
    octx.close()
    assert worker.alive()
