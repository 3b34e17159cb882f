"""Bots that connect in the browser (Chromium): the register form offers both ways (the URL
field hides for a bot that connects), the bot page shows whether it is connected, how many
connections and since when, and the gateway URL; the tournament form shows which entrants
are online. Presence lives in a real Redis, written there as a gateway writes it."""

from __future__ import annotations

import threading

import pytest
import redis
from sqlalchemy import select
from werkzeug.serving import make_server

from api import create_app
from arena import relay
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.models import Account, Bot
from arena.db.session import make_engine, make_sessionmaker

from .conftest import _QuietHandler

pytestmark = pytest.mark.browser

GATEWAY = "ws://127.0.0.1:8765/v1/bots"


@pytest.fixture
def connect_site(tmp_path, redis_url):
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    upgrade(url)
    engine = make_engine(url)
    sm = make_sessionmaker(engine)
    settings = Settings(
        data_dir=tmp_path,
        database_url=url,
        broker_url=redis_url,
        allow_private_bot_urls=True,
        rate_limits=False,
        cookie_secure=False,
        gateway_url=GATEWAY,
    )
    server = make_server(
        "127.0.0.1", 0, create_app(settings, engine=engine), threaded=True, request_handler=_QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with sm() as s:
        _, contestant = create_account(s, "dana")
        _, organizer = create_account(s, "otto", "organizer")
    client = redis.Redis.from_url(redis_url)
    site = {"url": f"http://127.0.0.1:{server.server_port}", "sm": sm, "redis": client, "tokens": {}}
    site["tokens"] = {"dana": contestant, "otto": organizer}
    yield site
    server.shutdown()
    engine.dispose()


def _sign_in(page, site, who: str) -> None:
    page.goto(site["url"] + "/ui/login")
    page.fill("#token", site["tokens"][who])
    page.click("main form button[type=submit]")
    page.wait_for_url("**/ui/**")


def _connect(site, bot_id: int, *sinces: float) -> None:
    """Leases of ``sinces`` connections of ``bot_id``, 30 s into the future of Redis TIME."""
    r = site["redis"]
    seconds, micros = r.time()
    now = seconds + micros / 1e6
    r.zadd(relay.conns_key(bot_id), {relay.member("gw-1", f"c{i}", t): now + 30 for i, t in enumerate(sinces)})


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_register_a_bot_that_connects_and_see_it_connected(connect_site, page, lang):
    site = connect_site
    _sign_in(page, site, "dana")
    page.goto(f"{site['url']}/ui/lang/{lang}?next=/ui/bots")
    assert page.locator("#bot-url-field").is_visible()
    page.check("#transport-connect")
    assert not page.locator("#bot-url-field").is_visible()
    page.fill("#bot-name", "Nat")
    page.check("#register-bot input[name=rulesets][value=million_doubt]")
    page.click("#register-bot button[type=submit]")
    page.locator("#secret-value").wait_for()
    with site["sm"]() as s:
        bot = s.scalars(select(Bot).where(Bot.name == "Nat")).one()
        assert (bot.transport, bot.url) == ("connect", None)
        bot_id = bot.id
    site["redis"].delete(relay.conns_key(bot_id))
    assert page.locator("#bot-url").get_attribute("data-transport") == "connect"
    assert page.locator("#presence").get_attribute("data-connected") == "0"
    assert page.locator("#gateway-url").inner_text() == GATEWAY
    _connect(site, bot_id, 1_780_000_000.0, 1_780_000_100.0)  # 2026-05-28 20:26 UTC
    try:
        page.goto(f"{site['url']}/ui/bots/{bot_id}")
        presence = page.locator("#presence")
        assert presence.get_attribute("data-connected") == "1"
        assert presence.get_attribute("data-connections") == "2"
        text = presence.inner_text()
        assert "2026-05-28 20:26 UTC" in text
        assert ("2 connections" in text) if lang == "en" else text == "接続中：2026-05-28 20:26 UTC から 2 本"
        page.goto(f"{site['url']}/ui/bots")
        cell = page.locator(f"#bots tr[data-bot='{bot_id}'] td[data-transport]")
        assert cell.inner_text() == ("connected" if lang == "en" else "接続中")
    finally:
        site["redis"].delete(relay.conns_key(bot_id))


def test_a_url_for_a_bot_that_connects_is_refused_by_its_field(connect_site, page):
    site = connect_site
    _sign_in(page, site, "dana")
    page.goto(f"{site['url']}/ui/bots")
    page.fill("#bot-name", "Both")
    page.fill("#bot-url", "http://127.0.0.1:9/")
    page.check("#register-bot input[name=rulesets][value=jdf]")
    page.check("#transport-http")
    page.click("#register-bot button[type=submit]")  # a URL bot: registered
    page.locator("#secret-value").wait_for()
    page.goto(f"{site['url']}/ui/bots")
    page.fill("#bot-name", "Nourl")
    page.check("#register-bot input[name=rulesets][value=jdf]")
    page.click("#register-bot button[type=submit]")  # the arena calls it, but no URL
    err = page.locator(".field-error[data-field='url']")
    assert "needs a URL" in err.inner_text()


def test_the_tournament_form_shows_which_entrants_are_online(connect_site, page):
    site = connect_site
    with site["sm"]() as s:
        owner = s.scalars(select(Account.id).where(Account.name == "dana")).one()
        ids = {}
        for name, transport, url in (
            ("Online", "connect", None),
            ("Offline", "connect", None),
            ("Caller", "http", "http://127.0.0.1:9/"),
        ):
            b = Bot(
                owner_id=owner,
                name=name,
                transport=transport,
                url=url,
                rulesets=["million_doubt"],
                secret="s",
                status="ready",
            )
            s.add(b)
            s.flush()
            ids[name] = b.id
        s.commit()
    for bot_id in ids.values():
        site["redis"].delete(relay.conns_key(bot_id))
    _connect(site, ids["Online"], 1_780_000_000.0)
    try:
        _sign_in(page, site, "otto")
        page.goto(f"{site['url']}/ui/tournaments/new")
        got = {
            name: page.locator(f"#participants input[value='{bot_id}'] ~ .presence").get_attribute("data-online")
            for name, bot_id in ids.items()
        }
        assert got == {"Online": "1", "Offline": "0", "Caller": "url"}
        label = page.locator(f"#participants label:has(input[value='{ids['Caller']}'])").inner_text()
        assert "called by URL" in label
    finally:
        for bot_id in ids.values():
            site["redis"].delete(relay.conns_key(bot_id))
