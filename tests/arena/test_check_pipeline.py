"""The one check pipeline (arena.conformance.pipeline.run_pipeline) over any transport: a
target whose player is an in-process sample bot goes through the same stages as an HTTP bot
or a bot that dials out (issue 39, point 3), and each stage's failure ends the check. Pure:
no server, no services."""

from __future__ import annotations

from typing import Any

import pytest

import engine
from arena.conformance import CheckTarget, run_pipeline
from arena.rulesets import ARENA_RULESETS, arena_ruleset
from arena.runner.players import LocalPlayer, Player
from bots_sdk.bot import Bot
from bots_sdk.samples import SAMPLE_BOTS


class LocalTarget:
    """A transport for the test: a sample bot in this process; every stage's outcome given."""

    def __init__(self, *, first_stage: str = "url", url_error: str | None = None, healthy: bool = True, bot="greedy"):
        self.first_stage, self._url_error, self._healthy, self._bot = first_stage, url_error, healthy, bot
        self.calls: list[str] = []

    def url_error(self) -> str | None:
        self.calls.append("url")
        return self._url_error

    def health(self) -> dict[str, Any]:
        self.calls.append("health")
        return {"ok": self._healthy, "status": 200 if self._healthy else None, "error": None}

    def signature(self) -> dict[str, Any]:
        self.calls.append("signature")
        return {"ok": False, "status": 200, "warning": "not refused", "warning_code": {"code": "x", "params": {}}}

    def player(self) -> Player:
        self.calls.append("player")
        return LocalPlayer(SAMPLE_BOTS[self._bot](seed=3), "bot")

    def finish(self, result: dict[str, Any], deadline: float | None) -> None:
        self.calls.append("finish")
        result["warnings"].append("finished")


def _run(target: LocalTarget, rulesets: list[str]) -> tuple[dict[str, Any], list[str]]:
    stages: list[str] = []
    checked: CheckTarget = target  # the protocol the pipeline asks for
    result = run_pipeline(checked, rulesets, on_progress=lambda p: stages.append(p["stage"]), limit_s=600)
    return result, [s for i, s in enumerate(stages) if i == 0 or stages[i - 1] != s]


def test_a_sample_bot_in_process_passes_every_rule_set_through_the_stages():
    target = LocalTarget()
    result, stages = _run(target, list(engine.RULESETS))
    assert stages == ["url", "health", "signature", "conformance", "done"]
    assert target.calls == ["url", "health", "signature", "player", "player", "player", "finish"]
    assert result["ok"] is True
    assert [c["ruleset"] for c in result["conformance"]] == list(engine.RULESETS)
    for c in result["conformance"]:  # the probes of each rule set's descriptor, after the random match
        assert [g["probe"] for g in c["games"]] == ["random", *(p.name for p in arena_ruleset(c["ruleset"]).probes)]
        assert set(c["kinds"]) == set(engine.RULESETS[c["ruleset"]].decision_kinds)
        assert all(row["asked"] > 0 for row in c["kinds"].values())
    assert result["warnings"] == ["not refused", "finished"]  # the signature's, then the target's finish


def test_a_target_without_url_starts_at_health():
    result, stages = _run(LocalTarget(first_stage="health"), ["million_doubt"])
    assert stages == ["health", "signature", "conformance", "done"] and result["ok"] is True
    assert result["url"] == {"ok": True, "error": None}


@pytest.mark.parametrize(
    ("target", "calls", "field"),
    [
        (LocalTarget(url_error="private address"), ["url"], "url"),
        (LocalTarget(healthy=False), ["url", "health"], "health"),
    ],
)
def test_a_failing_stage_ends_the_check(target, calls, field):
    result, stages = _run(target, ["jdf"])
    assert stages[-1] == "done" and "conformance" not in stages
    assert target.calls == calls and result["ok"] is False and result["conformance"] == []
    assert result[field]["ok"] is False


def test_the_first_failing_rule_set_ends_the_games():
    """A bot that answers nonsense fails the first rule set (FAULT-1); the next is not played."""

    class Nonsense(LocalTarget):
        def player(self) -> Player:
            self.calls.append("player")
            return LocalPlayer(_Nonsense(), "bot")

    target = Nonsense()
    result, _stages = _run(target, ["trump_millionaire", "jdf"])
    assert target.calls.count("player") == 1 and result["ok"] is False
    assert [c["ruleset"] for c in result["conformance"]] == ["trump_millionaire"]
    assert result["conformance"][0]["faults"][0]["kind"] == "invalid_action"


class _Nonsense(Bot):
    name = "nonsense"

    def decide(self, request: Any) -> dict:
        return {"type": "play", "cards": ["XX"]}


def test_every_rule_set_has_its_arena_facts():
    assert tuple(ARENA_RULESETS) == tuple(engine.RULESETS)
    for name, rs in ARENA_RULESETS.items():
        assert rs.name == name and arena_ruleset(name) is rs
        forced = {k for p in rs.probes for k in p.forces}
        assert forced == set(engine.RULESETS[name].decision_kinds), name
    with pytest.raises(engine.OptionsError):
        arena_ruleset("chess")
