"""Every scenario under tests/scenarios (and ../shared/scenarios, when it lies beside the
clone) passes through the runner."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.scenarios import ScenarioFailure, iter_files, run_scenario

REPO = Path(__file__).resolve().parents[2]
OURS = REPO / "tests" / "scenarios"
#: The public scenarios published with the rule book, copied into the repository unchanged.
PUBLIC = OURS / "public"
#: How many public scenarios were copied: a deletion must be noticed.
PUBLIC_COPIED = 39
#: The organizers' folder, when a checkout has it beside the clone (never needed).
SHARED = REPO.parent / "shared" / "scenarios"

OUR_FILES = iter_files([str(OURS)])  # sub-folders included
SHARED_FILES = iter_files([str(SHARED)]) if SHARED.is_dir() else []


def _id(path: Path) -> str:
    return path.relative_to(OURS).with_suffix("").as_posix()


def test_public_scenarios_are_in_the_repository():
    public = sorted(PUBLIC.glob("*.json"))
    assert len(public) >= PUBLIC_COPIED, f"{len(public)} public scenarios in {PUBLIC}, {PUBLIC_COPIED} were copied"
    assert set(public) <= set(OUR_FILES)  # the runner finds them in the sub-folder
    ids = [json.loads(p.read_text())["id"] for p in OUR_FILES]
    assert len(ids) == len(set(ids)), "two scenarios share an id"


@pytest.mark.parametrize("path", OUR_FILES, ids=_id)
def test_scenario(path):
    run_scenario(json.loads(path.read_text()))


_NO_SHARED = pytest.param(None, marks=pytest.mark.skip(reason=f"no {SHARED} beside the clone (optional)"))


@pytest.mark.parametrize("path", SHARED_FILES or [_NO_SHARED], ids=lambda p: p.stem if p else "absent")
def test_shared_scenario(path):
    run_scenario(json.loads(path.read_text()))


def test_local_rule_scenarios_cover_each_rule_twice_with_an_invalid_action():
    by_rule = {}
    for p in OUR_FILES:
        if p.parent == PUBLIC:
            continue  # this coverage rule is about the project's own scenarios
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
