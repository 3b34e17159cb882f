"""examples/env_play.py: the SDK's sample bots play whole (small) units through the
environment, their answers turned into indices; the rewards add up to the engine's scores."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("pettingzoo")

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "env_play.py"
LOCAL = {k: True for k in ("eleven_back", "stairs_revolution", "number_lock", "five_skip", "seven_pass", "ten_discard")}


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("env_play", EXAMPLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    ("ruleset", "bots", "options", "seeds"),
    [
        ("million_doubt", ["random", "heuristic"], {}, range(6)),
        ("trump_millionaire", ["random", "heuristic", "greedy"], dict(LOCAL, target_score=20), range(2)),
        ("jdf", ["heuristic", "random", "greedy"], dict(LOCAL, sets=1, games_per_set=2), range(1)),
    ],
)
def test_sample_bots_play_through_the_environment(
    ruleset: str, bots: list[str], options: dict[str, Any], seeds: range
) -> None:
    play = _example().play
    for seed in seeds:
        out = play(ruleset, bots, seed, options)
        assert out["steps"] > 0
        assert out["rewards"] == {f"seat_{s}": float(v) for s, v in out["result"]["scores"].items()}


def test_the_example_runs_from_the_command_line() -> None:
    run = subprocess.run(
        [sys.executable, str(EXAMPLE), "--ruleset", "million_doubt", "--seed", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("million_doubt: ") and "scores {" in run.stdout
