"""The engine's own tests on the other build, in a process of its own.

CI runs the whole suite on the compiled engine (the service's build: infra/test.sh exports
``ARENA_ENGINE=compiled``); this test runs the engine's tests (the scenarios and the property
tests among them), the search bot's, the pars', the runner's and the training environment's on
the pure engine (a bot author's ``pip install .``), and the other way round in a pure run when
the compiled engine is built here. The lane's Hypothesis tests run a quarter of their examples
(profile ``lane``) and the PPO learning test is left out (a statistical property of training;
the environment's own tests run): about 50 s instead of two minutes on 2 cores.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import engine
from tests.engine.test_builds import both_builds

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
#: What runs on the other build: the engine, its scenarios and property tests, and what rolls
#: games out through it or referees them.
LANE = [
    "tests/engine",
    "tests/bots_sdk/test_search_bot.py",
    "tests/bots_sdk/env",
    "tests/arena/test_par.py",
    "tests/arena/runner",
]
#: Left out of the lane (their subject does not depend on the build).
LEFT_OUT = ["tests/bots_sdk/env/test_single_agent.py::test_maskable_ppo_learning_moves_the_win_rate"]


def test_the_engine_tests_pass_on_the_other_build():
    if os.environ.get("ARENA_OTHER_BUILD_LANE"):
        pytest.skip("this is the lane")
    both_builds()
    other = "pure" if engine.BUILD == "compiled" else "compiled"
    env = {**os.environ, "ARENA_ENGINE": other, "ARENA_OTHER_BUILD_LANE": "1", "ARENA_HYPOTHESIS_PROFILE": "lane"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:schemathesis", "-p", "no:cacheprovider"]
        + ["-m", "not services and not browser", *LANE]
        + [f"--deselect={test}" for test in LEFT_OUT],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    tail = "\n".join(run.stdout.splitlines()[-40:])
    assert run.returncode == 0, f"the {other} engine's lane failed:\n{tail}\n{run.stderr[-2000:]}"
    assert " passed" in run.stdout.splitlines()[-1]
