"""Bots of both transports through the REST API: a bot the arena calls (``http``, a URL) and a
bot that connects (``connect``, no URL); validation errors naming the field; the presence of
a bot that connects read from a real Redis, written there as a gateway writes it."""

from __future__ import annotations

import pytest
import redis

from arena import relay
from arena.db.models import Bot
from arena.lifecycle.claims import bot_endpoint
from arena.relay import LEASE_S


def _post(client, headers, **body):
    return client.post("/api/v1/bots", json={"name": "b", "rulesets": ["million_doubt"], **body}, headers=headers)


def test_register_a_bot_that_connects_and_one_that_is_called(client, accounts, bot_server):
    h = accounts.contestant("alice")
    called = _post(client, h, url=bot_server.url)
    assert called.status_code == 201, called.json
    assert called.json["transport"] == "http" and called.json["url"] == bot_server.url
    assert called.json["presence"] is None
    connects = _post(client, h, transport="connect")
    assert connects.status_code == 201, connects.json
    body = connects.json
    assert body["transport"] == "connect" and body["url"] is None and body["status"] == "unchecked"
    assert body["secret"]
    # the test app's broker is unreachable: presence unknown, never a 500
    assert body["presence"] is None
    got = client.get(f"/api/v1/bots/{body['id']}", headers=h)
    assert got.status_code == 200 and got.json["transport"] == "connect" and got.json["url"] is None
    listed = client.get("/api/v1/bots", headers=h).json["items"]
    assert [(b["transport"], b["url"]) for b in listed] == [("http", bot_server.url), ("connect", None)]
    engine = client.application.extensions["arena"]["engine"]
    with engine.connect() as conn:
        rows = conn.execute(Bot.__table__.select().order_by(Bot.id)).mappings().all()
    assert [(r["transport"], r["url"]) for r in rows] == [("http", bot_server.url), ("connect", None)]


@pytest.mark.parametrize(
    "body, field, words",
    [
        ({"transport": "connect", "url": "http://127.0.0.1:9/"}, "url", "a bot that connects has no URL"),
        ({"transport": "http"}, "url", "needs a URL"),
        ({}, "url", "needs a URL"),
        ({"transport": "carrier-pigeon", "url": "http://127.0.0.1:9/"}, "transport", "Must be one of"),
        ({"transport": 7}, "transport", "Not a valid string"),
    ],
)
def test_registration_errors_name_the_field(client, accounts, body, field, words):
    h = accounts.contestant("alice")
    r = _post(client, h, **body)
    assert r.status_code == 422, r.json
    assert list(r.json["errors"]["json"]) == [field]
    assert words in r.json["errors"]["json"][field][0]
    assert f"json.{field}" in r.json["message"]


def test_switching_transport_is_a_change_like_a_new_url(client, accounts, bot_server):
    h = accounts.contestant("alice")
    bot_id = _post(client, h, url=bot_server.url).json["id"]
    engine = client.application.extensions["arena"]["engine"]
    with engine.begin() as conn:
        conn.execute(Bot.__table__.update().where(Bot.id == bot_id).values(status="ready"))
    r = client.patch(f"/api/v1/bots/{bot_id}", json={"transport": "connect"}, headers=h)
    assert r.status_code == 200, r.json
    assert (r.json["transport"], r.json["url"], r.json["status"]) == ("connect", None, "unchecked")
    bad = client.patch(f"/api/v1/bots/{bot_id}", json={"url": bot_server.url}, headers=h)
    assert bad.status_code == 422 and bad.json["errors"]["json"]["url"] == ["a bot that connects has no URL"]
    back = client.patch(f"/api/v1/bots/{bot_id}", json={"transport": "http"}, headers=h)
    assert back.status_code == 422 and list(back.json["errors"]["json"]) == ["url"]
    back = client.patch(f"/api/v1/bots/{bot_id}", json={"transport": "http", "url": bot_server.url}, headers=h)
    assert back.status_code == 200, back.json
    assert (back.json["transport"], back.json["url"], back.json["status"]) == ("http", bot_server.url, "unchecked")
    wrong = client.patch(f"/api/v1/bots/{bot_id}", json={"transport": "smoke"}, headers=h)
    assert wrong.status_code == 422 and list(wrong.json["errors"]["json"]) == ["transport"]


def test_the_endpoint_of_a_bot_that_connects_is_its_own():
    assert bot_endpoint(5, "connect", None) == "connect:bot:5"
    assert bot_endpoint(6, "connect", None) != bot_endpoint(5, "connect", None)
    assert bot_endpoint(5, "http", "http://h:1/") == "http://h:1/"


def test_presence_is_read_from_redis_as_a_gateway_writes_it(make_app, accounts, redis_url):
    app = make_app(broker_url=redis_url)
    client = app.test_client()
    accounts.client = client
    h = accounts.contestant("carol")
    bot_id = _post(client, h, transport="connect").json["id"]
    r = redis.Redis.from_url(redis_url)
    r.delete(relay.conns_key(bot_id))
    offline = client.get(f"/api/v1/bots/{bot_id}", headers=h).json["presence"]
    assert offline == {"connected": False, "connections": 0, "since": None}
    seconds, micros = r.time()
    now = seconds + micros / 1e6
    since = 1_780_000_000.25  # 2026-05-28T20:26:40.250000+00:00
    r.zadd(
        relay.conns_key(bot_id),
        {
            relay.member("gw-a", "c1", since): now + LEASE_S,
            relay.member("gw-b", "c2", since + 60): now + LEASE_S,
            relay.member("gw-c", "c3", since - 600): now - 1,  # an expired lease: not counted
        },
    )
    try:
        presence = client.get(f"/api/v1/bots/{bot_id}", headers=h).json["presence"]
        assert presence == {"connected": True, "connections": 2, "since": "2026-05-28T20:26:40.250000+00:00"}
        listed = client.get("/api/v1/bots", headers=h).json["items"]
        assert [b["presence"] for b in listed] == [presence]
    finally:
        r.delete(relay.conns_key(bot_id))
