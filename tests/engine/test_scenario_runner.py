"""Every scenario of ../shared/scenarios and tests/scenarios passes through the runner."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.scenarios import ScenarioFailure, iter_files, run_scenario

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "scenarios"
OURS = REPO / "tests" / "scenarios"

SHARED_FILES = iter_files([str(SHARED)]) if SHARED.is_dir() else []
OUR_FILES = iter_files([str(OURS)])


def test_shared_scenarios_are_present():
    # CI lays ../shared beside the clone; a missing folder must fail loudly, not skip.
    assert len(SHARED_FILES) >= 38, f"expected the shared scenarios in {SHARED}"


@pytest.mark.parametrize("path", SHARED_FILES, ids=lambda p: p.stem)
def test_shared_scenario(path):
    run_scenario(json.loads(path.read_text()))


@pytest.mark.parametrize("path", OUR_FILES, ids=lambda p: p.stem)
def test_local_rule_scenario(path):
    run_scenario(json.loads(path.read_text()))


def test_local_rule_scenarios_cover_each_rule_twice_with_an_invalid_action():
    by_rule = {}
    for p in OUR_FILES:
        d = json.loads(p.read_text())
        for r in d["rules"]:
            by_rule.setdefault(r, []).append(d)
    for rule in ("LR-1", "LR-2", "LR-3", "LR-4", "LR-5", "LR-6"):
        files = by_rule.get(rule, [])
        assert len(files) >= 2, rule
        assert any(any(s.get("invalid") for s in d["steps"]) for d in files), rule


def _scenario(**over):
    base = {
        "id": "t",
        "ruleset": "million_doubt",
        "rules": [],
        "options": {},
        "setup": {"hands": {"0": ["AH", "3S"], "1": ["KD", "4C"]}, "leader": 0},
        "steps": [
            {"seat": 0, "action": {"type": "play", "cards": ["3S"]}},
            {"expect": {"to_act": 1, "decision": "play"}},
        ],
    }
    base.update(over)
    return base


def test_runner_reports_the_first_difference():
    bad = _scenario(steps=[{"seat": 0, "action": {"type": "play", "cards": ["3S"]}}, {"expect": {"to_act": 0}}])
    with pytest.raises(ScenarioFailure) as e:
        run_scenario(bad)
    assert str(e.value) == "step 1: expected to_act=0 got 1"
    accepted = _scenario(steps=[{"seat": 0, "action": {"type": "play", "cards": ["3S"]}, "invalid": True}])
    with pytest.raises(ScenarioFailure, match="to be refused got accepted"):
        run_scenario(accepted)


def test_runner_command_lines_and_exit_status(tmp_path):
    (tmp_path / "good.json").write_text(json.dumps(_scenario(id="good")))
    (tmp_path / "bad.json").write_text(json.dumps(_scenario(id="bad", steps=[{"expect": {"to_act": 1}}])))
    run = subprocess.run(
        [sys.executable, "-m", "engine.scenarios", str(tmp_path)], capture_output=True, text=True, cwd=REPO
    )
    assert run.returncode == 1
    assert run.stdout.splitlines() == ["FAIL bad step 0: expected to_act=1 got 0", "PASS good", "1 passed, 1 failed"]
    ok = subprocess.run(
        [sys.executable, "-m", "engine.scenarios", str(tmp_path / "good.json")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert ok.returncode == 0 and ok.stdout.strip().endswith("1 passed, 0 failed")
