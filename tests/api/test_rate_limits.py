"""Per-client rate limits (api.ratelimit) on a real Redis: 429 with Retry-After, shared by
every API process, per client address (X-Forwarded-For behind the trusted proxy)."""

from __future__ import annotations

import uuid

import pytest

from api import create_app
from arena.config import Settings


@pytest.fixture
def limited(engine, database_url, tmp_path, redis_url):
    """``limited(proxy_hops=0)`` -> a client of a new app (a new API process) with the limits on,
    counting in the real Redis under a prefix of this test."""
    prefix = f"rl-{uuid.uuid4().hex}"

    def make(proxy_hops: int = 0):
        settings = Settings(
            data_dir=tmp_path,
            database_url=database_url,
            broker_url=redis_url,
            allow_private_bot_urls=True,
            rate_limit_prefix=prefix,
            proxy_hops=proxy_hops,
        )
        app = create_app(settings, engine=engine)
        app.testing = True
        return app.test_client()

    return make


def test_sign_up_is_limited_per_client_across_processes(limited):
    first, second = limited(), limited()  # two API processes, one Redis
    codes = [
        c.post("/api/v1/accounts", json={"name": f"u{i}"}).status_code for i, c in zip(range(5), [first, second] * 3)
    ]
    assert codes == [201] * 5
    r = second.post("/api/v1/accounts", json={"name": "u5"})
    assert r.status_code == 429
    assert int(r.headers["Retry-After"]) > 0 and r.json["code"] == 429
    assert "5 per 1 minute" in r.json["message"]
    assert first.get("/healthz").status_code == 200  # reads are not limited
    assert first.get("/api/v1/tournaments").status_code == 200


def test_behind_the_proxy_each_forwarded_client_has_its_own_count(limited):
    c = limited(proxy_hops=1)
    for i in range(5):
        assert (
            c.post("/api/v1/accounts", json={"name": f"p{i}"}, headers={"X-Forwarded-For": "203.0.113.7"}).status_code
            == 201
        )
    assert (
        c.post("/api/v1/accounts", json={"name": "p5"}, headers={"X-Forwarded-For": "203.0.113.7"}).status_code == 429
    )
    assert (
        c.post("/api/v1/accounts", json={"name": "p6"}, headers={"X-Forwarded-For": "203.0.113.8"}).status_code == 201
    )
    # without a trusted proxy the header is ignored: the peer address counts
    direct = limited()
    codes = [
        direct.post(
            "/api/v1/accounts", json={"name": f"d{i}"}, headers={"X-Forwarded-For": f"198.51.100.{i}"}
        ).status_code
        for i in range(7)
    ]
    assert codes.count(429) >= 1


def test_checks_and_writes_are_limited(limited, sessionmaker):
    from arena.accounts import create_account

    with sessionmaker() as s:
        _, token = create_account(s, f"w-{uuid.uuid4().hex[:6]}")
    h = {"Authorization": f"Bearer {token}"}
    c = limited()
    bot = c.post("/api/v1/bots", json={"name": "b", "url": "http://127.0.0.1:9/", "rulesets": ["jdf"]}, headers=h)
    assert bot.status_code == 201
    codes = [c.post(f"/api/v1/bots/{bot.json['id']}/check", headers=h).status_code for _ in range(7)]
    # the first is queued (202), the next are refused while it is queued (409), then the limit
    assert codes[0] == 202 and codes[-1] == 429 and set(codes[1:6]) == {409}
    codes = [
        c.patch(f"/api/v1/bots/{bot.json['id']}", json={"name": f"n{i}"}, headers=h).status_code for i in range(121)
    ]
    assert codes[:120] == [200] * 120 and codes[120] == 429


def test_four_addresses_of_one_ipv6_64_are_one_client(limited):
    """Before: each IPv6 address counted apart, so four addresses of one /64 (one host picks
    any of them) got 20 sign-ups where one IPv4 address gets 5. A /64 is one client, as for
    the gateway and the check queue (arena.clients)."""
    c = limited(proxy_hops=1)
    addresses = [f"2001:db8:7:9::{i}" for i in (1, 2, 3, 4)]
    codes = [
        c.post("/api/v1/accounts", json={"name": f"v6-{i}"}, headers={"X-Forwarded-For": addresses[i % 4]}).status_code
        for i in range(20)
    ]
    assert codes.count(201) == 5 and codes.count(429) == 15, codes
    other = c.post("/api/v1/accounts", json={"name": "v6-other"}, headers={"X-Forwarded-For": "2001:db8:7:a::1"})
    assert other.status_code == 201  # another /64: another client


def test_a_client_over_its_write_limit_costs_no_parse_of_its_body(limited):
    """The per-client write limit comes before the input guard (api.app.create_app): once a
    client is over it, its requests are refused 429 before their body (up to 1 MiB of JSON) is
    parsed, whoever sends them (no token needed to be limited)."""
    c = limited()
    for _ in range(120):  # WRITE_LIMIT, per client and endpoint
        assert c.post("/api/v1/tournaments", json={}).status_code == 401
    poison = "[" + ",".join(["{}"] * 100_000) + ", NaN]"  # the guard would refuse it, after parsing
    r = c.post("/api/v1/tournaments", data=poison, content_type="application/json")
    assert r.status_code == 429, r.json
