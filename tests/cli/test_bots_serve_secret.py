"""``arena bots serve`` against a bot author's slip: an empty signing secret (``ARENA_BOT_SECRET=``,
set from an unset variable) must not start a server that verifies nothing (click reads an
empty variable as unset)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from daifugo_arena import cli


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    calls: list[str | None] = []
    monkeypatch.setattr(cli.play, "serve", lambda bot, host, port, secret: calls.append(secret))
    return calls


@pytest.mark.parametrize(
    ("env", "args"), [({"ARENA_BOT_SECRET": ""}, []), ({"ARENA_BOT_SECRET": "  "}, []), ({}, ["--secret", ""])]
)
def test_an_empty_secret_is_refused_not_served_unverified(served, env, args) -> None:
    result = CliRunner().invoke(cli.main, ["bots", "serve", "greedy", *args], env=env)
    assert result.exit_code == 2, result.output
    assert "the signing secret is empty" in result.output
    assert served == []


def test_a_secret_from_the_environment_is_served_and_none_is_still_allowed(served) -> None:
    assert CliRunner().invoke(cli.main, ["bots", "serve", "greedy"], env={"ARENA_BOT_SECRET": "s3"}).exit_code == 0
    assert CliRunner().invoke(cli.main, ["bots", "serve", "greedy"], env={"ARENA_BOT_SECRET": None}).exit_code == 0
    assert served == ["s3", None]
