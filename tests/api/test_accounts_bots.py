"""Accounts and bots: success and failure paths, access rules, the health check over real HTTP."""

from __future__ import annotations

import pytest

from arena.accounts import create_account
from arena.db.models import Account
from tests.api.conftest import Accounts, register_checked_bot, run_check


def test_create_account_returns_token_once_and_me_works(client, accounts):
    r = client.post("/api/v1/accounts", json={"name": "alice"})
    assert r.status_code == 201
    body = r.json
    assert body["name"] == "alice" and body["role"] == "contestant" and body["token"].startswith("arena_")
    me = client.get("/api/v1/accounts/me", headers={"Authorization": f"Bearer {body['token']}"})
    assert me.status_code == 200 and me.json["id"] == body["id"] and "token" not in me.json


def test_duplicate_account_is_409(client):
    assert client.post("/api/v1/accounts", json={"name": "bob"}).status_code == 201
    r = client.post("/api/v1/accounts", json={"name": "bob"})
    assert r.status_code == 409 and "taken" in r.json["message"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "name"),
        ({"name": "ok", "role": "organizer"}, "role"),
        ({"name": ""}, "name"),
        ({"name": "has space"}, "name"),
        ({"name": 5}, "name"),
    ],
)
def test_account_body_errors_name_the_field(client, body, field):
    r = client.post("/api/v1/accounts", json=body)
    assert r.status_code == 422
    assert field in r.json["errors"]["json"]
    assert f"json.{field}" in r.json["message"]


def test_malformed_json_is_a_json_4xx(client):
    r = client.post("/api/v1/accounts", data="{nope", content_type="application/json")
    assert 400 <= r.status_code < 500 and r.json["code"] == r.status_code and r.json["message"]


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer wrong", "Basic abc", "Bearer " + "x" * 300])
def test_missing_or_wrong_token_is_401(client, header):
    headers = {"Authorization": header} if header else {}
    r = client.get("/api/v1/accounts/me", headers=headers)
    assert r.status_code == 401
    assert r.json["status"] == "Unauthorized" and r.json["message"]
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


def test_405_has_allow_header_and_json_body(client):
    r = client.delete("/api/v1/accounts")
    assert r.status_code == 405
    assert set(m.strip() for m in r.headers["Allow"].split(",")) >= {"POST"}
    assert r.json["code"] == 405 and r.json["message"]


def test_unknown_route_is_json_404(client):
    r = client.get("/api/v1/nothing-here")
    assert r.status_code == 404 and r.json["code"] == 404


def test_bot_lifecycle_owner(client, accounts, bot_server):
    h = accounts.contestant("carol")
    r = client.post(
        "/api/v1/bots",
        json={"name": "b1", "url": bot_server.url + "/", "rulesets": ["jdf", "million_doubt"]},
        headers=h,
    )
    assert r.status_code == 201
    bot = r.json
    assert len(bot["secret"]) == 64 and bot["status"] == "unchecked"
    assert bot["rulesets"] == ["million_doubt", "jdf"]  # docs/rules.md order
    got = client.get(f"/api/v1/bots/{bot['id']}", headers=h)
    assert got.status_code == 200 and "secret" not in got.json
    listing = client.get("/api/v1/bots", headers=h).json
    assert listing["total"] == 1 and listing["items"][0]["id"] == bot["id"]

    check, checked = run_check(client, bot["id"], h)
    assert check["status"] == "passed" and checked["status"] == "ready"
    assert checked["last_check"] == check["result"]
    assert checked["last_check"]["health"]["name"] == "tiny"
    assert checked["last_check"]["health"]["protocols"] == [1]
    assert bot_server.hits == ["/"]
    # the tiny server ignores signatures: passed, with the warning on the check and the bot
    assert check["result"]["signature"] == {
        "ok": False,
        "status": 200,
        "warning": check["warnings"][0],
        "warning_code": {"code": "signature_not_refused", "params": {"status": 200}},
    }
    assert check["result"]["warning_codes"] == [check["result"]["signature"]["warning_code"]]
    assert "not 401" in checked["warnings"][0]
    assert client.get(f"/api/v1/bots/{bot['id']}/check", headers=h).json == check

    r = client.patch(f"/api/v1/bots/{bot['id']}", json={"name": "renamed"}, headers=h)
    assert r.status_code == 200 and r.json["name"] == "renamed" and r.json["status"] == "ready"
    r = client.patch(f"/api/v1/bots/{bot['id']}", json={"url": bot_server.url + "/protocols"}, headers=h)
    assert r.status_code == 200 and r.json["status"] == "unchecked"
    _, again = run_check(client, bot["id"], h)
    assert again["status"] == "ready" and again["last_check"]["health"]["protocols"] == [1, 2]

    assert client.delete(f"/api/v1/bots/{bot['id']}", headers=h).status_code == 204
    assert client.get(f"/api/v1/bots/{bot['id']}", headers=h).status_code == 404
    assert client.get("/api/v1/bots", headers=h).json["total"] == 0


@pytest.mark.parametrize(
    "path, error",
    [
        ("/error", "HTTP status 500"),
        ("/redirect", "redirect"),
        ("/text", "not JSON"),
        ("/noname", "name"),
    ],
)
def test_failed_health_check_is_recorded(client, accounts, bot_server, path, error):
    h = accounts.contestant("dave")
    bot_id = client.post(
        "/api/v1/bots", json={"name": "b", "url": bot_server.url + path, "rulesets": ["jdf"]}, headers=h
    ).json["id"]
    check, bot = run_check(client, bot_id, h)
    assert check["status"] == "failed" and bot["status"] == "failed"
    assert error in bot["last_check"]["health"]["error"]
    assert bot_server.hits == [path]  # the redirect was not followed


def test_check_of_a_bot_that_is_down(client, accounts, free_port):
    h = accounts.contestant("erin")
    bot_id = client.post(
        "/api/v1/bots", json={"name": "b", "url": f"http://127.0.0.1:{free_port()}/", "rulesets": ["jdf"]}, headers=h
    ).json["id"]
    _, bot = run_check(client, bot_id, h)
    assert bot["status"] == "failed" and "ConnectError" in bot["last_check"]["health"]["error"]


def test_bot_access_rules(client, accounts, bot_server):
    owner = accounts.contestant("owner")
    other = accounts.contestant("other")
    org = accounts.organizer("org")
    # a ready bot without playing its check (the check's own tests play it): the access rules
    # do not depend on how fast a loaded machine plays a conformance game
    bot_id = register_checked_bot(client, owner, bot_server.url + "/", ["jdf"])
    assert client.get(f"/api/v1/bots/{bot_id}").status_code == 401
    for method, kwargs in (("get", {}), ("patch", {"json": {"name": "x"}}), ("delete", {})):
        assert getattr(client, method)(f"/api/v1/bots/{bot_id}", headers=other, **kwargs).status_code == 403
    assert client.post(f"/api/v1/bots/{bot_id}/check", headers=other).status_code == 403
    assert client.get("/api/v1/bots", headers=other).json["total"] == 0
    assert client.get(f"/api/v1/bots?owner_id={accounts.ids['owner']}", headers=other).status_code == 403
    # Organizers see every bot but cannot change others' bots.
    assert client.get(f"/api/v1/bots/{bot_id}", headers=org).status_code == 200
    assert client.get(f"/api/v1/bots?owner_id={accounts.ids['owner']}", headers=org).json["total"] == 1
    assert client.patch(f"/api/v1/bots/{bot_id}", json={"name": "x"}, headers=org).status_code == 403
    assert client.get("/api/v1/bots/999999", headers=owner).status_code == 404


@pytest.mark.parametrize(
    "body, field",
    [
        ({"name": "b", "url": "http://127.0.0.1/"}, "rulesets"),
        ({"name": "b", "url": "http://127.0.0.1/", "rulesets": ["chess"]}, "rulesets"),
        ({"name": "b", "url": "http://127.0.0.1/", "rulesets": []}, "rulesets"),
        ({"name": "b", "url": "http://127.0.0.1/", "rulesets": ["jdf", "jdf"]}, "rulesets"),
        ({"name": "b", "url": "ftp://127.0.0.1/", "rulesets": ["jdf"]}, "url"),
        ({"name": "b", "url": "http://u:p@127.0.0.1/", "rulesets": ["jdf"]}, "url"),
        ({"name": "b", "url": "http://169.254.169.254/", "rulesets": ["jdf"]}, "url"),
        ({"name": "b", "url": "http://127.0.0.1/", "rulesets": ["jdf"], "secret": "x"}, "secret"),
    ],
)
def test_bot_body_errors_name_the_field(client, accounts, body, field):
    h = accounts.contestant("frank")
    r = client.post("/api/v1/bots", json=body, headers=h)
    assert r.status_code == 422, r.json
    assert field in r.json["errors"]["json"]


@pytest.mark.parametrize(
    "url, why",
    [
        ("http://127.0.0.1/", "loopback"),
        ("http://10.0.0.5/", "private"),
        ("http://169.254.169.254/", "metadata"),
        ("http://localhost:8000/", "loopback"),
        ("http://[::1]/", "loopback"),
        ("http://192.168.1.10/", "private"),
    ],
)
def test_ssrf_refusals_without_private_setting(make_app, url, why):
    client = make_app(allow_private=False).test_client()
    token = client.post("/api/v1/accounts", json={"name": "gina"}).json["token"]
    h = {"Authorization": f"Bearer {token}"}
    r = client.post("/api/v1/bots", json={"name": "b", "url": url, "rulesets": ["jdf"]}, headers=h)
    assert r.status_code == 422
    assert why in r.json["errors"]["json"]["url"][0]


def test_an_account_holds_at_most_max_bots_and_deleted_ones_do_not_count(make_app, sessionmaker):
    """A contestant flooding registrations is refused past ARENA_MAX_BOTS_PER_ACCOUNT (409,
    saying what to do); another account is not affected; a deleted bot frees its place."""
    client = make_app(max_bots_per_account=2).test_client()
    accounts = Accounts(client, sessionmaker)
    flood, other = accounts.contestant("flood"), accounts.contestant("other")
    body = {"transport": "connect", "rulesets": ["jdf"]}
    ids = [client.post("/api/v1/bots", json={"name": f"b{i}", **body}, headers=flood).json["id"] for i in range(2)]
    refused = client.post("/api/v1/bots", json={"name": "b2", **body}, headers=flood)
    assert refused.status_code == 409
    assert refused.json["message"] == (
        "an account holds at most 2 bots (deleted ones do not count): delete one before registering another"
    )
    assert client.get("/api/v1/bots", headers=flood).json["total"] == 2  # nothing stored
    assert client.post("/api/v1/bots", json={"name": "o", **body}, headers=other).status_code == 201
    assert client.delete(f"/api/v1/bots/{ids[0]}", headers=flood).status_code == 204
    assert client.post("/api/v1/bots", json={"name": "b2", **body}, headers=flood).status_code == 201


def test_concurrent_registrations_cannot_pass_the_cap(engine, sessionmaker):
    """Eight registrations at once against a cap of 3, on PostgreSQL and on SQLite (served by
    several threads): the account's row is written before its bots are counted, so exactly 3
    are stored. Each INSERT is held until the others have had the chance to count: without
    the lock every registration would count 0."""
    import threading

    from sqlalchemy import event

    from arena import lifecycle
    from arena.db.models import Bot
    from arena.usecases.bots import register_bot

    with sessionmaker() as s:
        account, _ = create_account(s, "racer")
        account_id = account.id
    barrier = threading.Barrier(8)
    outcomes: list[str] = []
    inserts = threading.Barrier(2, timeout=2)

    @event.listens_for(engine, "before_cursor_execute")
    def _hold_insert(conn, cursor, statement, params, context, executemany):
        if statement.lstrip().upper().startswith("INSERT INTO BOTS"):
            try:  # two INSERTs met here: both counted before either stored (the race)
                inserts.wait()
            except threading.BrokenBarrierError:
                pass  # the others wait on the account's row: serialized, as they should be

    def register(i: int) -> None:
        with sessionmaker() as s:
            acct = s.get(Account, account_id)
            barrier.wait()
            try:
                register_bot(
                    s, acct, name=f"r{i}", rulesets=["jdf"], allow_private=True, transport="connect", max_bots=3
                )
                outcomes.append("stored")
            except lifecycle.Conflict:
                outcomes.append("refused")

    threads = [threading.Thread(target=register, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    event.remove(engine, "before_cursor_execute", _hold_insert)
    assert sorted(outcomes) == ["refused"] * 5 + ["stored"] * 3
    with sessionmaker() as s:
        assert s.query(Bot).filter(Bot.owner_id == account_id).count() == 3


def test_the_bot_cap_reads_its_variable():
    from arena.config import DEFAULT_MAX_BOTS_PER_ACCOUNT, ConfigError, Settings

    assert Settings.from_env({}).max_bots_per_account == DEFAULT_MAX_BOTS_PER_ACCOUNT == 50
    assert Settings.from_env({"ARENA_MAX_BOTS_PER_ACCOUNT": "7"}).max_bots_per_account == 7
    with pytest.raises(ConfigError, match="ARENA_MAX_BOTS_PER_ACCOUNT"):
        Settings.from_env({"ARENA_MAX_BOTS_PER_ACCOUNT": "many"})


def test_the_browser_form_is_capped_too(make_app, sessionmaker):
    """/ui/bots runs the same use case: past the cap a 409 page, nothing stored, and the
    account's row is free again at once (a registration after a delete goes through)."""
    import re

    app = make_app(max_bots_per_account=1)
    client = app.test_client()
    accounts = Accounts(client, sessionmaker)
    accounts.contestant("flood")
    browser = app.test_client()
    assert browser.post("/ui/login", data={"token": accounts.tokens["flood"]}).status_code == 303
    csrf = re.search(r'name="csrf" value="([^"]+)"', browser.get("/ui/bots").get_data(as_text=True)).group(1)
    form = {"csrf": csrf, "transport": "connect", "rulesets": ["jdf"]}
    assert browser.post("/ui/bots", data={**form, "name": "a", "form_id": "f1"}).status_code == 201
    refused = browser.post("/ui/bots", data={**form, "name": "b", "form_id": "f2"})
    assert refused.status_code == 409 and "an account holds at most 1 bots" in refused.get_data(as_text=True)
    listed = client.get("/api/v1/bots", headers=accounts.headers("flood")).json
    assert listed["total"] == 1
    assert (
        client.delete(f"/api/v1/bots/{listed['items'][0]['id']}", headers=accounts.headers("flood")).status_code == 204
    )
    assert browser.post("/ui/bots", data={**form, "name": "c", "form_id": "f3"}).status_code == 201
