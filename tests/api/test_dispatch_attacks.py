"""The failing machine against the dispatcher port (arena.dispatch): the API never plays a
match itself, and a broker it cannot reach is a 503 that leaves nothing half-started."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from api import create_app
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.models import Bot, BotCheck
from arena.db.session import make_engine, make_sessionmaker
from arena.queue import CeleryDispatcher
from arena.security import new_secret
from arena.status import BotStatus, CheckStatus


def test_eager_settings_never_make_the_api_play_in_process(tmp_path, monkeypatch):
    """Only a composition that passes an in-process dispatcher (cli, tests) plays in the API."""
    eager = Settings(
        data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'a.db'}", broker_url="memory://", celery_eager=True
    )
    with pytest.raises(ValueError, match="eager mode"):
        create_app(eager)
    monkeypatch.setenv("ARENA_CELERY_EAGER", "1")
    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="eager mode"):
        create_app()  # the settings of the environment


def test_an_unreachable_broker_is_never_replaced_silently(tmp_path, free_port):
    broker = f"redis://127.0.0.1:{free_port()}/0"
    app = create_app(Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'a.db'}", broker_url=broker))
    sent = app.extensions["arena"]["dispatcher"]
    assert type(sent) is CeleryDispatcher and sent.broker_url == broker


@pytest.mark.slow  # the broker connection gives up after its retries (about 6 s)
def test_a_check_with_the_broker_unreachable_is_503_with_retry_after_and_changes_nothing(tmp_path, free_port):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    upgrade(url)
    sessions = make_sessionmaker(make_engine(url))
    with sessions() as s:
        account, token = create_account(s, "alice")
        bot = Bot(
            owner_id=account.id,
            name="b",
            url="http://127.0.0.1:9/",
            rulesets=["million_doubt"],
            secret=new_secret(),
            status=BotStatus.READY,
        )
        s.add(bot)
        s.commit()
        bot_id = bot.id
    settings = Settings(
        data_dir=tmp_path, database_url=url, broker_url=f"redis://127.0.0.1:{free_port()}/0", rate_limits=False
    )
    client = create_app(settings).test_client()
    auth = {"Authorization": f"Bearer {token}"}
    for _ in range(3):  # again and again: never a 409 (no check left queued) nor a 429 (none counted running)
        r = client.post(f"/api/v1/bots/{bot_id}/check", headers=auth)
        assert r.status_code == 503 and r.headers["Retry-After"] == "5"
        assert r.json["message"].startswith("the check could not be started: cannot reach the task broker")
    with sessions() as s:
        assert s.get(Bot, bot_id).status == BotStatus.READY
        assert set(s.scalars(select(BotCheck.status))) == {CheckStatus.ERROR}
    assert client.get(f"/api/v1/bots/{bot_id}", headers=auth).json["status"] == "ready"
