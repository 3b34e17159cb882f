"""Credentials: token rotation and expiry, bot secret rotation with the SDK's grace period,
bot secrets encrypted at rest (read back raw from the database); a wrong, missing or malformed
encryption key is a 503 naming it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text

from arena import crypto
from arena.db.models import Account, Bot, utcnow
from bots_sdk import protocol


def test_rotating_the_token_stops_the_old_one(client, accounts):
    old = accounts.contestant("alice")
    r = client.post("/api/v1/accounts/me/token", headers=old)
    assert r.status_code == 200 and r.json["token"].startswith("arena_") and r.json["token_expires_at"] is None
    new = {"Authorization": f"Bearer {r.json['token']}"}
    assert client.get("/api/v1/accounts/me", headers=old).status_code == 401
    assert client.get("/api/v1/accounts/me", headers=new).json["name"] == "alice"


def test_token_expiry(client, accounts, sessionmaker):
    headers = accounts.contestant("bob")
    r = client.post("/api/v1/accounts/me/token", json={"expires_in_days": 30}, headers=headers)
    assert r.status_code == 200 and r.json["token_expires_at"]
    headers = {"Authorization": f"Bearer {r.json['token']}"}
    assert client.get("/api/v1/accounts/me", headers=headers).status_code == 200
    with sessionmaker() as s:
        s.get(Account, r.json["id"]).token_expires_at = utcnow() - timedelta(seconds=1)
        s.commit()
    r = client.get("/api/v1/accounts/me", headers=headers)
    assert r.status_code == 401 and "expired" in r.json["message"]
    r = client.post("/api/v1/accounts/me/token", json={"expires_in_days": 0}, headers=accounts.contestant("c"))
    assert r.status_code == 422 and "json.expires_in_days" in r.json["message"]


def test_bot_secret_is_encrypted_at_rest_and_rotates_with_a_grace_period(client, accounts, sessionmaker, engine):
    headers = accounts.contestant("dora")
    r = client.post(
        "/api/v1/bots", json={"name": "b", "url": "http://127.0.0.1:9/", "rulesets": ["jdf"]}, headers=headers
    )
    bot_id, first = r.json["id"], r.json["secret"]
    with engine.connect() as conn:
        raw = conn.execute(text("SELECT secret FROM bots WHERE id = :i"), {"i": bot_id}).scalar_one()
    assert raw.startswith(crypto.PREFIX) and first not in raw
    assert crypto.decrypt(raw) == first

    r = client.post(f"/api/v1/bots/{bot_id}/secret", headers=headers)
    assert r.status_code == 200
    second = r.json["secret"]
    assert second != first and "previous_secret" not in r.json
    with sessionmaker() as s:
        bot = s.get(Bot, bot_id)
        assert bot.secret == second and bot.grace_secret() == first
        assert bot.grace_secret(utcnow() + timedelta(days=2)) is None

    # what the arena sends during the grace period verifies with the old and the new secret
    body = b'{"protocol": 1}'
    headers_sent = protocol.sign(second, body, previous=first)
    protocol.verify(second, body, headers_sent)
    protocol.verify(first, body, headers_sent)
    # after the grace period only the new secret signs: the old one is refused
    import pytest

    with pytest.raises(protocol.SignatureError):
        protocol.verify(first, body, protocol.sign(second, body))
    other = client.post(f"/api/v1/bots/{bot_id}/secret", headers=accounts.contestant("eve"))
    assert other.status_code == 403


def test_key_rotation_with_the_cli(database_url, monkeypatch):
    from click.testing import CliRunner

    from arena.db.migrate import upgrade
    from daifugo_arena.cli import main

    old, new = crypto.new_key(), crypto.new_key()
    monkeypatch.setenv("ARENA_DATABASE_URL", database_url)
    monkeypatch.setenv(crypto.ENV_KEYS, old)
    upgrade(database_url)
    from arena.accounts import create_account
    from arena.db.session import make_engine, make_sessionmaker

    engine = make_engine(database_url)
    with make_sessionmaker(engine)() as s:
        account, _ = create_account(s, "k")
        s.add(Bot(owner_id=account.id, name="b", url="http://127.0.0.1:9/", rulesets=["jdf"], secret="plain-secret"))
        s.commit()
    monkeypatch.setenv(crypto.ENV_KEYS, f"{new},{old}")
    r = CliRunner().invoke(main, ["secrets", "reencrypt"])
    assert r.exit_code == 0 and "re-encrypted 1 secrets" in r.output, r.output
    assert "database: " in r.output and "@" in r.output or "sqlite" in r.output
    monkeypatch.setenv(crypto.ENV_KEYS, new)  # the old key is gone: the secret still reads
    with make_sessionmaker(engine)() as s:
        assert s.query(Bot).one().secret == "plain-secret"
    engine.dispose()


@pytest.mark.parametrize("key", ["wrong", "missing", "malformed"])
def test_a_key_problem_is_a_503_naming_it_and_changes_nothing(
    client, accounts, sessionmaker, monkeypatch, tmp_path, key
):
    """The API's ARENA_ENCRYPTION_KEYS cannot decrypt the stored secrets (another key; none, so
    its own key file; not a Fernet key): rotating a secret is a 503 with a JSON message naming
    the problem, not a 500; the bot reads on (no secret needed) and nothing is changed."""
    good = crypto.new_key()
    monkeypatch.setenv(crypto.ENV_KEYS, good)
    headers = accounts.contestant("fay")
    r = client.post(
        "/api/v1/bots", json={"name": "b", "url": "http://127.0.0.1:9/", "rulesets": ["jdf"]}, headers=headers
    )
    assert r.status_code == 201
    bot_id, secret = r.json["id"], r.json["secret"]
    if key == "wrong":
        monkeypatch.setenv(crypto.ENV_KEYS, crypto.new_key())
    elif key == "missing":
        monkeypatch.setenv(crypto.ENV_KEYS, "")
        monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path / "another-data-dir"))
    else:
        monkeypatch.setenv(crypto.ENV_KEYS, "not-a-fernet-key")
    r = client.post(f"/api/v1/bots/{bot_id}/secret", headers=headers)
    assert r.status_code == 503 and r.json["code"] == 503 and r.headers["Retry-After"].isdigit()
    assert r.json["message"].startswith(crypto.KEY_PROBLEM), r.json
    assert f"ARENA_ENCRYPTION_KEYS is {key}" in r.json["message"] and "on this API server" in r.json["message"]
    assert client.get(f"/api/v1/bots/{bot_id}", headers=headers).status_code == 200
    if key == "malformed":  # a new secret cannot be encrypted either
        r = client.post(
            "/api/v1/bots", json={"name": "c", "url": "http://127.0.0.1:9/", "rulesets": ["jdf"]}, headers=headers
        )
        assert r.status_code == 503 and "ARENA_ENCRYPTION_KEYS is malformed" in r.json["message"]
    monkeypatch.setenv(crypto.ENV_KEYS, good)
    with sessionmaker() as s:
        bot = s.get(Bot, bot_id)
        assert bot.secret == secret and bot.previous_secret is None
        assert [b.name for b in s.query(Bot)] == ["b"]
