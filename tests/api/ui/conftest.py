"""Fixtures of the web page tests: a site with real played matches, served over HTTP, and
Debian's Chromium driven by Playwright.

- ``site`` (session): a migrated SQLite database holding accounts, bots and four finished
  tournaments (MD, JDF, TM with target score 20, a private MD) whose matches were really
  played by ``arena.runner.match.run_match`` between sample bots in-process and stored with
  ``arena.lifecycle.store_result``, plus a running one; the
  API app (``api.create_app``) served by a werkzeug server on 127.0.0.1 in a thread.
- ``chromium`` (session): path of the system Chromium; ``apt-get install -y chromium`` when
  ``/usr/bin/chromium`` is missing (never ``playwright install``), and ``fonts-noto-cjk``
  when there is no Japanese font.
- ``browser`` (session) / ``page`` (function): headless Chromium through Playwright.
- ``artifacts``: the ``test-artifacts/`` folder (gitignored) for screenshots.
- ``served`` / ``bots``: the API on real PostgreSQL and Redis, served (for the tests with a
  real worker), and the bot servers a test starts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from werkzeug.serving import WSGIRequestHandler, make_server

from api import create_app
from api.ui import live as live_pages
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.models import Bot, Match, MatchSeat, Tournament, TournamentParticipant, utcnow
from arena.db.session import make_engine, make_sessionmaker
from arena.lifecycle import store_result
from arena.runner.match import run_match
from arena.runner.players import LocalPlayer
from arena.schedule import build_schedule
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: Milliseconds a page's wait (a click, a navigation, a selector) may take before it fails (a guard).
UI_TIMEOUT_MS = 120_000


# --------------------------------------------------------------------------- bots used in matches
class SlowBot:
    """Wraps a sample bot and sleeps ``delay_s`` before every answer (time banks move)."""

    def __init__(self, bot, delay_s: float):
        self.bot, self.delay_s, self.name = bot, delay_s, bot.name

    def decide(self, request):
        time.sleep(self.delay_s)
        return self.bot.decide(request)

    def notice(self, message):
        return self.bot.notice(message)


class FaultyBot(SAMPLE_BOTS["random"]):
    """A random bot that answers an illegal play on every 4th decision (FAULT-1, invalid_action)."""

    def __init__(self, seed: int = 0):
        super().__init__(seed=seed)
        self.calls = 0

    def decide(self, request):
        self.calls += 1
        if self.calls % 4 == 0:
            return {"type": "play", "cards": ["ZZ"]}
        return super().decide(request)


def _player(kind: str, seed: int, name: str, slow: bool):
    if kind == "faulty":
        return LocalPlayer(FaultyBot(seed=seed), name)
    bot = SAMPLE_BOTS[kind](seed=seed)
    if kind == "heuristic" and slow:  # thinks 20 ms a decision: its time bank visibly drains
        return LocalPlayer(SlowBot(bot, 0.02), name)  # type: ignore[arg-type]
    return LocalPlayer(bot, name)


def _result_fields(match_log: dict, n: int) -> dict[str, Any]:
    res = match_log["result"]
    scores = [float(x) for x in res["scores"]]
    if res.get("ranks"):
        places = [int(r) for r in res["ranks"]]
    else:
        places = [1 + sum(1 for o in scores if o > x) for x in scores]
    games = []
    for gm in match_log["games"]:
        gs, gp = [0.0] * n, [0] * n
        for seat, player in enumerate(gm["seats"]):
            gs[player] = float(gm["result"]["scores"][str(seat)])
            gp[player] = int(gm["result"]["ranks"][str(seat)])
        games.append({"scores": gs, "places": gp})
    return {
        "scores": scores,
        "places": places,
        "faults": [int(f) for f in res["faults"]],
        "games": games,
        "timings": {"wall_s": round(match_log["finished_at"] - match_log["started_at"], 3)},
    }


# --------------------------------------------------------------------------- the site
class _QuietHandler(WSGIRequestHandler):
    def log_request(self, *args, **kwargs):
        pass


def wait_streams_released(timeout_s: float = 60.0) -> None:
    """Wait until this process's live streams (``api.ui.live``) gave their places back, then
    assert it: a stream whose viewer left is noticed at its next keep-alive write (5 s), and
    the next test of the process starts with every place free (the places are per process,
    and the test sites share one Redis, where the same account ids hold leases)."""
    deadline = time.monotonic() + timeout_s
    while live_pages.open_streams() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_pages.open_streams() == 0, "a live stream kept its place"


@dataclass
class Site:
    url: str
    sessionmaker: Any
    tokens: dict[str, str] = field(default_factory=dict)
    accounts: dict[str, int] = field(default_factory=dict)
    bots: dict[str, int] = field(default_factory=dict)
    bot_kinds: dict[int, str] = field(default_factory=dict)
    tournaments: dict[str, int] = field(default_factory=dict)
    app: Any = None


def _play_tournament(
    site: Site,
    s,
    name: str,
    ruleset: str,
    bot_names: list[str],
    *,
    games_per_pairing: int,
    seed: int,
    public: bool = True,
    finish: bool = True,
    time_rules=None,
    slow: bool = False,
    options: dict | None = None,
) -> int:
    organizer = site.accounts["olga"]
    tr = time_rules or {"initial": 60.0, "increment": 10.0, "cap": 60.0}
    t = Tournament(
        name=name,
        organizer_id=organizer,
        ruleset=ruleset,
        options=options or {},
        time_rules=tr,
        games_per_pairing=games_per_pairing,
        seed=seed,
        max_faults=3,
        public_when_finished=public,
        status="running",
        started_at=utcnow(),
    )
    ids = [site.bots[b] for b in bot_names]
    t.participants = [TournamentParticipant(bot_id=b) for b in ids]
    s.add(t)
    s.flush()
    plan = build_schedule(4 if ruleset != "million_doubt" else 2, ids, games_per_pairing, seed)
    for m in plan:
        s.add(
            Match(
                tournament_id=t.id,
                index=m.index,
                table=m.table,
                seed=m.seed,
                status="queued",
                seats=[MatchSeat(seat=i, bot_id=e) for i, e in enumerate(m.seats)],
            )
        )
    s.commit()
    if not finish:
        return t.id
    matches = s.scalars(select(Match).where(Match.tournament_id == t.id).order_by(Match.index)).all()
    rules = TimeRules(int(tr["initial"] * 1000), int(tr["increment"] * 1000), int(tr["cap"] * 1000))
    for m in matches:
        seats = sorted(m.seats, key=lambda x: x.seat)
        players = [_player(site.bot_kinds[x.bot_id], m.seed % 100_000 + x.seat, f"bot-{x.bot_id}", slow) for x in seats]
        games = games_per_pairing if ruleset == "million_doubt" else 1
        log = run_match(
            players,
            ruleset,
            options or {},
            seed=m.seed,
            games=games,
            time_rules=rules,
            max_faults=3,
            match_id=str(m.id),
        )
        assert store_result(s, m.id, log=log, **_result_fields(log, len(seats)))
    s.refresh(t)
    assert t.status == "finished"
    return t.id


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Site:
    data = tmp_path_factory.mktemp("ui-site")
    url = f"sqlite:///{data / 'arena.db'}"
    upgrade(url)
    engine = make_engine(url)
    sm = make_sessionmaker(engine)
    settings = Settings(
        data_dir=data, database_url=url, broker_url="redis://127.0.0.1:1/0", allow_private_bot_urls=True
    )
    app = create_app(settings, engine=engine)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    site = Site(url=f"http://127.0.0.1:{server.server_port}", sessionmaker=sm, app=app)
    with sm() as s:
        for name, role in (
            ("olga", "organizer"),
            ("alice", "contestant"),
            ("bob", "contestant"),
            ("carol", "contestant"),
        ):
            account, token = create_account(s, name, role)
            site.tokens[name], site.accounts[name] = token, account.id
        for owner, bname, kind in (
            ("alice", "Ace", "heuristic"),
            ("alice", "Greedo", "greedy"),
            ("bob", "Rando", "random"),
            ("bob", "Glitch", "faulty"),
        ):
            bot = Bot(
                owner_id=site.accounts[owner],
                name=bname,
                url="http://127.0.0.1:9/",
                rulesets=["million_doubt", "trump_millionaire", "jdf"],
                secret="s",
                status="ready",
            )
            s.add(bot)
            s.flush()
            site.bots[bname], site.bot_kinds[bot.id] = bot.id, kind
        s.commit()
        site.tournaments["md"] = _play_tournament(
            site,
            s,
            "Million Doubt open",
            "million_doubt",
            ["Ace", "Greedo", "Rando"],
            games_per_pairing=2,
            seed=11,
            time_rules={"initial": 5.0, "increment": 0.0, "cap": 5.0},
            slow=True,
        )
        site.tournaments["jdf"] = _play_tournament(
            site, s, "JDF cup", "jdf", ["Ace", "Greedo", "Rando", "Glitch"], games_per_pairing=1, seed=5
        )
        site.tournaments["tm"] = _play_tournament(
            site,
            s,
            "Trump Millionaire sprint",
            "trump_millionaire",
            ["Ace", "Greedo", "Rando", "Glitch"],
            games_per_pairing=1,
            seed=8,
            options={"target_score": 20},
        )
        site.tournaments["private"] = _play_tournament(
            site, s, "Private duel", "million_doubt", ["Ace", "Rando"], games_per_pairing=2, seed=3, public=False
        )
        site.tournaments["running"] = _play_tournament(
            site, s, "Still running", "million_doubt", ["Greedo", "Rando"], games_per_pairing=2, seed=4, finish=False
        )
    yield site
    server.shutdown()
    engine.dispose()


# --------------------------------------------------------------------------- the browser
@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of Debian's Chromium, installed with apt-get when missing."""
    if not os.path.exists(CHROMIUM):
        apt = shutil.which("apt-get")
        if apt is None:
            pytest.fail("Chromium is missing and apt-get is not available to install it")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        r = subprocess.run(
            [apt, "install", "-y", "--no-install-recommends", "chromium"], env=env, capture_output=True, text=True
        )
        if r.returncode != 0:  # package lists may be missing on a fresh machine
            subprocess.run([apt, "update"], env=env, capture_output=True, text=True, check=False)
            r = subprocess.run(
                [apt, "install", "-y", "--no-install-recommends", "chromium"], env=env, capture_output=True, text=True
            )
        if r.returncode != 0 or not os.path.exists(CHROMIUM):
            pytest.fail(f"apt-get install chromium failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    _japanese_font()
    return CHROMIUM


def _japanese_font() -> None:
    """Install a Japanese font (fonts-noto-cjk) when fontconfig has none, so screenshots of the
    Japanese pages show text, not boxes. The tests read the DOM, so a failure only warns."""
    fc, apt = shutil.which("fc-list"), shutil.which("apt-get")
    if fc is None or apt is None:
        return
    if subprocess.run([fc, ":lang=ja"], capture_output=True, text=True).stdout.strip():
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    r = subprocess.run(
        [apt, "install", "-y", "--no-install-recommends", "fonts-noto-cjk"], env=env, capture_output=True, text=True
    )
    if r.returncode != 0:
        warnings.warn(f"no Japanese font for the screenshots: {r.stderr[-500:]}", stacklevel=2)


@pytest.fixture(scope="session")
def browser(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        new_context = b.new_context

        def guarded_context(*args: Any, **kwargs: Any) -> Any:
            """A context whose waits (clicks, navigations, selectors) give up after
            :data:`UI_TIMEOUT_MS`, not Playwright's 30 s: a guard against a hang, which a page
            on a loaded machine (the suite beside other jobs) may take longer than 30 s to pass."""
            context = new_context(*args, **kwargs)
            context.set_default_timeout(UI_TIMEOUT_MS)
            return context

        b.new_context = guarded_context  # type: ignore[method-assign]
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900}, device_scale_factor=1)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    # 401/403 pages are expected in the access tests; a missing script or style is not
    pg.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and not msg.text.startswith("Failed to load resource")
            else None
        ),
    )
    pg.on(
        "response",
        lambda r: errors.append(f"{r.status} {r.url}") if "/ui/static/" in r.url and r.status >= 400 else None,
    )
    pg.js_errors = errors  # type: ignore[attr-defined]
    yield pg
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


@pytest.fixture(scope="session")
def artifacts() -> Path:
    out = REPO / "test-artifacts"
    out.mkdir(exist_ok=True)
    return out


# --------------------------------------------------------------------------- a site on real services
@pytest.fixture
def served(pg_url, redis_url, tmp_path):
    """``(arena, url)``: the real API app (tests.worker.conftest.Arena: an organizer and a
    contestant, a fresh PostgreSQL database, the test Redis) served on 127.0.0.1, for pages
    watched while a real worker plays."""
    from tests.worker.conftest import Arena, fresh_pg_database

    arena = Arena(fresh_pg_database(pg_url), redis_url, tmp_path=tmp_path)
    app = create_app(arena.settings, engine=arena.engine)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield arena, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    arena.close()


@pytest.fixture
def bots():
    """SwitchBot servers of a test (tests.fakes.FakeBot); closed at teardown."""
    servers: list[Any] = []
    yield servers
    for b in servers:
        b.close()
