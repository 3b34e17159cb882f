"""Hostile input is a 4xx naming the field, never a 500; a database outage is a 503 with JSON.

Plays the attacker with raw request bodies (nesting, huge integers, NUL, lone surrogates,
oversized strings, NaN) on every database of the ``client`` fixture, a real bot server
whose health check answers nested JSON, and a real PostgreSQL stopped in the middle of a test.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from api import create_app
from arena.accounts import create_account
from arena.config import Settings
from arena.conformance import health_check
from arena.db.migrate import upgrade
from arena.db.session import make_engine, make_sessionmaker
from arena.safejson import MAX_DEPTH, JsonLimitError, loads_limited

REPO = Path(__file__).resolve().parents[2]


def _post(client, path, raw: bytes | str, headers=None):
    return client.post(path, data=raw, content_type="application/json", headers=headers or {})


def _field_error(r, code: int, location: str, field: str) -> str:
    assert r.status_code == code, (r.status_code, r.get_data(as_text=True)[:300])
    body = r.json
    assert body["code"] == code
    assert field in body["errors"][location], body
    assert f"{location}.{field}" in body["message"]
    return body["message"]


def test_nested_json_is_400_even_unauthenticated(client):
    deep = "[" * 100_000 + "]" * 100_000  # RecursionError in the standard json module
    r = _post(client, "/api/v1/accounts", deep)
    assert r.status_code == 400 and r.json["code"] == 400 and "nested deeper" in r.json["message"]
    just_too_deep = '{"name": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}"
    r = _post(client, "/api/v1/accounts", just_too_deep)
    assert r.status_code == 400 and "json.name" in r.json["message"]


def test_huge_integer_names_the_field(client, accounts):
    org = accounts.organizer("org")
    raw = '{"ruleset": "million_doubt", "participants": [' + "9" * 5000 + "]}"
    message = _field_error(_post(client, "/api/v1/tournaments", raw, org), 422, "json", "participants.0")
    assert "more than 19 digits" in message
    raw = '{"ruleset": "million_doubt", "participants": [1], "seed": 99999999999999999999}'
    _field_error(_post(client, "/api/v1/tournaments", raw, org), 422, "json", "seed")


@pytest.mark.parametrize(
    "name, reason",
    [
        ('"a\\u0000b"', "NUL"),
        ('"a\\ud800b"', "surrogate"),
        ('"' + "x" * 10_000 + '"', "longer than"),
    ],
)
def test_bad_strings_name_the_field(client, accounts, name, reason):
    r = _post(client, "/api/v1/accounts", '{"name": ' + name + "}")
    assert reason in _field_error(r, 422, "json", "name")
    headers = accounts.contestant("alice")
    r = _post(
        client,
        "/api/v1/bots",
        '{"name": ' + name + ', "url": "http://127.0.0.1:9/", "rulesets": ["million_doubt"]}',
        headers,
    )
    assert reason in _field_error(r, 422, "json", "name")


def test_nan_and_infinity_are_refused(client, accounts):
    org = accounts.organizer("org")
    for number in ("NaN", "Infinity", "1e400"):
        raw = '{"ruleset": "million_doubt", "participants": [1], "time_rules": {"initial": ' + number + "}}"
        r = _post(client, "/api/v1/tournaments", raw, org)
        assert r.status_code in (400, 422) and r.json["code"] == r.status_code, r.json


def test_query_strings_are_checked(client, accounts):
    headers = accounts.contestant("alice")
    _field_error(client.get("/api/v1/bots?page=1%00", headers=headers), 422, "query", "page")
    _field_error(client.get("/api/v1/bots?page=" + "9" * 5000, headers=headers), 422, "query", "page")
    r = client.get("/api/v1/leaderboard?ruleset=" + "x" * 5000)
    assert r.status_code == 422 and "query.ruleset" in r.json["message"]
    r = client.get("/api/v1/bots?page=%ED%A0%80", headers=headers)  # an encoded lone surrogate
    assert r.status_code == 422


def test_non_utf8_body_is_400(client):
    r = _post(client, "/api/v1/accounts", b'{"name": "\xff\xfe"}')
    assert r.status_code == 400 and "UTF-8" in r.json["message"]


def test_limited_parser_names_paths():
    with pytest.raises(JsonLimitError) as exc:
        loads_limited('{"a": [1, {"b": "x\\u0000"}]}')
    assert exc.value.path == "a.1.b"
    assert loads_limited('{"a": [1, 2.5, "ok", null, true]}') == {"a": [1, 2.5, "ok", None, True]}


def test_health_check_answering_nested_json_is_a_failed_check():
    import http.server
    import threading

    class Deep(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            body = (b"[" * 30_000 + b"]" * 30_000) if self.path == "/deep" else b'{"name": "a\\u0000", "protocol": 1}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Deep)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        out = health_check(base + "/deep", allow_private=True)
        assert out["ok"] is False and "nested deeper" in out["error"]
        out = health_check(base + "/nul", allow_private=True)
        assert out["ok"] is False and "NUL" in out["error"]
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------- database outage


@pytest.fixture
def own_postgres(free_port):
    """A PostgreSQL server of this test only (infra/postgres.sh), so stopping it harms nobody."""
    env = {**os.environ, "ARENA_PG_PORT": str(free_port())}
    cmd = ["bash", str(REPO / "infra" / "postgres.sh")]
    started = subprocess.run([*cmd, "start"], env=env, capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    url = started.stdout.strip().splitlines()[-1]
    stop = lambda: subprocess.run([*cmd, "stop"], env=env, capture_output=True, text=True)  # noqa: E731
    yield url, stop
    stop()


@pytest.mark.services
def test_database_outage_is_503_json_on_every_endpoint(own_postgres, tmp_path, free_port):
    url, stop = own_postgres
    upgrade(url)
    engine = make_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": 2})
    app = create_app(
        Settings(
            data_dir=tmp_path,
            database_url=url,
            broker_url=f"redis://127.0.0.1:{free_port()}/0",
            allow_private_bot_urls=True,
        ),
        engine=engine,
    )
    with make_sessionmaker(engine)() as s:
        _, token = create_account(s, "org", "organizer")
    client = app.test_client()
    auth = {"Authorization": f"Bearer {token}"}
    requests = [
        ("GET", "/healthz", None),
        ("GET", "/api/v1/accounts/me", None),
        ("POST", "/api/v1/accounts", {"name": "bob"}),
        ("GET", "/api/v1/bots", None),
        ("POST", "/api/v1/bots", {"name": "b", "url": "http://127.0.0.1:9/", "rulesets": ["jdf"]}),
        ("GET", "/api/v1/bots/1", None),
        ("GET", "/api/v1/tournaments", None),
        ("GET", "/api/v1/tournaments/1", None),
        ("GET", "/api/v1/matches/1", None),
        ("GET", "/api/v1/leaderboard?ruleset=jdf", None),
    ]
    assert client.get("/api/v1/tournaments", headers=auth).status_code == 200
    stop()  # PostgreSQL goes away mid-test
    try:
        for method, path, body in requests:
            r = client.open(path, method=method, json=body, headers=auth)
            assert r.status_code == 503, (method, path, r.status_code, r.get_data(as_text=True)[:300])
            assert r.json["code"] == 503 and r.json["message"], (method, path)
            if path != "/healthz":
                assert r.headers["Retry-After"].isdigit()
        r = client.get("/ui/")
        assert r.status_code == 503 and "database unavailable" in r.get_data(as_text=True)
    finally:
        engine.dispose()
