"""The two builds of the engine (docs/engine.md, "Two builds"): the one asked for is the one
loaded, a compiled build asked for and missing or stale fails loudly, and the pure and the
compiled build refuse the same hostile actions with the same rule, play the same games and
load only the standard library.

The cross-build tests run each build in a process of its own (``ARENA_ENGINE``); they skip
when the compiled build is not built here, unless this run asks for it (``ARENA_ENGINE=compiled``,
as CI does): then its absence fails them.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from functools import cache
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

import pytest

import engine
from engine import _build

REPO = Path(__file__).resolve().parents[2]
ASKED = os.environ.get("ARENA_ENGINE") or "auto"


def run_engine(build: str, code: str, stdin: str = "", cwd: Path = REPO, extra_env: dict[str, str] | None = None):
    """``python -S -c code`` with ``ARENA_ENGINE=build`` in ``cwd`` (no site: the standard
    library and the folder only)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update({"ARENA_ENGINE": build, **(extra_env or {})})
    return subprocess.run(
        [sys.executable, "-S", "-c", code], input=stdin, capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


@cache
def compiled_available() -> bool:
    return run_engine("compiled", "import engine").returncode == 0


def in_both_builds(code: str, stdin: str = "") -> dict[str, str]:
    """``code`` run by :func:`run_engine` in each build (skipped as :func:`both_builds` says):
    its standard output per build; a build that exits non-zero fails the test."""
    both_builds()
    outs = {}
    for build in ("pure", "compiled"):
        out = run_engine(build, code, stdin=stdin)
        assert out.returncode == 0, out.stderr[-2000:]
        outs[build] = out.stdout
    return outs


def both_builds() -> None:
    """Skip unless both builds can run (fail, when this run asks for the compiled one)."""
    if not compiled_available():
        if ASKED == "compiled":
            pytest.fail("ARENA_ENGINE=compiled, but the compiled engine does not load in a fresh process")
        pytest.skip("the compiled engine is not built here (bash infra/build_engine.sh)")


def test_the_build_asked_for_is_the_one_loaded():
    native = [sys.modules[f"engine.{name}"].__file__ or "" for name in _build.NATIVE_MODULES]
    compiled = [path.endswith(tuple(EXTENSION_SUFFIXES)) for path in native]
    assert engine.BUILD in ("pure", "compiled")
    if ASKED != "auto":
        assert engine.BUILD == ASKED, f"ARENA_ENGINE={ASKED} but the {engine.BUILD} engine is loaded"
    assert compiled == [engine.BUILD == "compiled"] * len(native), native


def test_an_unknown_choice_of_build_is_refused():
    out = run_engine("fast", "import engine")
    assert out.returncode != 0 and "ARENA_ENGINE='fast': expected auto, pure or compiled" in out.stderr


def test_a_compiled_build_asked_for_and_missing_fails_loudly(tmp_path):
    shutil.copytree(REPO / "engine", tmp_path / "engine", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    out = run_engine("compiled", "import engine", cwd=tmp_path)
    assert out.returncode != 0
    assert "ARENA_ENGINE=compiled asks for the compiled engine, but in" in out.stderr and "it is missing" in out.stderr
    quiet = run_engine("auto", "import engine; print(engine.BUILD)", cwd=tmp_path)  # nothing to warn about
    assert (quiet.returncode, quiet.stdout.strip(), quiet.stderr) == (0, "pure", "")


def test_a_stale_compiled_build_is_never_loaded(tmp_path):
    both_builds()
    shutil.copytree(REPO / "engine", tmp_path / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    game = tmp_path / "engine" / "game.py"
    game.write_text(game.read_text() + "\n# edited after the build\n")
    out = run_engine("compiled", "import engine", cwd=tmp_path)
    assert out.returncode != 0 and "it is stale" in out.stderr
    auto = run_engine("auto", "import engine, engine.game; print(engine.BUILD, engine.game.__file__)", cwd=tmp_path)
    assert auto.returncode == 0 and auto.stdout.split()[0] == "pure" and auto.stdout.split()[1].endswith("game.py")
    assert "was built from other sources: running the pure engine" in auto.stderr
    game.write_text(game.read_text().removesuffix("\n# edited after the build\n"))
    (tmp_path / "engine" / f"selfplay{EXTENSION_SUFFIXES[0]}").write_bytes(b"")  # an older build's leftover
    assert "it is stale" in run_engine("compiled", "import engine", cwd=tmp_path).stderr


# -- the same refusals, games and imports in both builds -----------------------------------------
def hostile_actions() -> list[list[Any]]:
    """``[seat, action]`` pairs a contestant or a buggy caller may send (JSON: the wire)."""
    seats = [0, 1, 3, -1, 7, "0", 0.0, True, None, [0]]
    fixed = [
        None,
        [],
        "play",
        5,
        {},
        {"type": None},
        {"type": 5},
        {"type": "fold"},
        {"type": ["play"]},
        {"type": "play"},
        {"type": "play", "cards": None},
        {"type": "play", "cards": "5H"},
        {"type": "play", "cards": {"5H": 1}},
        {"type": "play", "cards": []},
        {"type": "play", "cards": [5]},
        {"type": "play", "cards": [None]},
        {"type": "play", "cards": [["5H"]]},
        {"type": "play", "cards": ["5H", 3.5]},
        {"type": "play", "cards": ["ZZ"]},
        {"type": "play", "cards": ["5h"]},
        {"type": "play", "cards": ["JK"], "jokers": 5},
        {"type": "play", "cards": ["JK"], "jokers": ["5"]},
        {"type": "play", "cards": ["JK"], "jokers": [5]},
        {"type": "play", "cards": ["JK", "JK"], "jokers": ["5", "55"]},
        {"type": "play", "cards": ["5H"], "face_down": "5H"},
        {"type": "play", "cards": ["5H"], "face_down": [7]},
        {"type": "play", "cards": ["5H"], "face_down": ["6H"]},
        {"type": "pass", "cards": [1]},
        {"type": "doubt"},
        {"type": "through", "extra": {"x": [1, 2]}},
        {"type": "penalty", "cards": "all"},
        {"type": "penalty", "cards": [1.5]},
        {"type": "exchange"},
        {"type": "exchange", "accept": "yes"},
        {"type": "exchange", "accept": 1},
        {"type": "rate", "rate": 1.5},
        {"type": "rate", "rate": True},
        {"type": "rate", "rate": "2"},
        {"type": "rate", "rate": 99},
        {"type": "give", "cards": {}},
        {"type": "give", "cards": [0]},
        {"type": "discard", "cards": ["2C", "2C", "2C"]},
    ]
    rng = random.Random(41)
    leaves: list[Any] = [None, True, 0, -1, 2**40, 1.5, "", "5H", "JK", "3S", "play", "pass", [], {}]
    keys = ["type", "cards", "face_down", "jokers", "accept", "rate"]
    junk = []
    for _ in range(300):
        action: dict[str, Any] = {"type": rng.choice(["play", "pass", "penalty", "give", "rate", "exchange", 3])}
        for k in rng.sample(keys[1:], rng.randint(0, 3)):
            action[k] = (
                rng.choice(leaves) if rng.random() < 0.4 else [rng.choice(leaves) for _ in range(rng.randint(1, 3))]
            )
        junk.append(action)
    return (
        [[0, a] for a in fixed + junk]
        + [[s, {"type": "pass"}] for s in seats]
        + [[s, {"type": "play", "cards": ["5H"]}] for s in seats]
    )


REFUSALS = """
import json, random, sys
import engine
from engine.selfplay import random_action
cases = json.load(sys.stdin)
out = []
for ruleset in engine.RULESETS:
    g = engine.new_game(ruleset, None, 7)
    rng = random.Random(7)
    for step in range(60):  # states along a game: leads, follows, doubts, penalties, exchanges...
        if g.over:
            break
        if step % 6 == 0:
            for seat, action in cases:
                for call in ("apply", "check", "is_legal"):
                    c = g.copy()
                    try:
                        r = getattr(c, call)(seat, action)
                        out.append([call, "ok", repr(r), c.actions[-1:] if call == "apply" else None])
                    except engine.InvalidAction as e:
                        out.append([call, "InvalidAction", e.rule, str(e)])
                    except Exception as e:
                        out.append([call, type(e).__name__, str(e), None])
        g.apply(*random_action(g, rng))
print(json.dumps(out))
"""


def test_both_builds_refuse_hostile_actions_with_the_same_rule_act():
    outs = in_both_builds(REFUSALS, stdin=json.dumps(hostile_actions()))
    results = {build: json.loads(out) for build, out in outs.items()}
    assert len(results["pure"]) > 10_000
    outcomes = {r[1] for r in results["pure"]}
    assert outcomes <= {"ok", "InvalidAction"}, outcomes  # never a TypeError or a crash
    for i, (p, c) in enumerate(zip(results["pure"], results["compiled"])):
        assert p == c, f"case {i}: pure {p} but compiled {c}"
    assert len(results["pure"]) == len(results["compiled"])


GAMES = """
import hashlib, json, random
import engine
from engine.selfplay import random_game
h = hashlib.sha256()
for ruleset in engine.RULESETS:
    for seed in range(12):
        options = {name: seed % 2 == 1 for name in engine.LOCAL_RULES} if ruleset != "million_doubt" else None
        g = engine.new_game(ruleset, options, seed)
        random_game(g, random.Random(seed))
        h.update(json.dumps(g.log(), sort_keys=True).encode())
        w = engine.replay(g.log())
        h.update(json.dumps([w.observation(s) for s in range(w.seats)], sort_keys=True).encode())
import sys
std = set(sys.stdlib_module_names) | {"engine", "__main__"}
print(h.hexdigest(), ",".join(sorted(m for m in sys.modules if m.split(".")[0] not in std)))
"""


def test_both_builds_play_the_same_games_with_the_standard_library_alone():
    outs = {}
    for build, out in in_both_builds(GAMES).items():
        digest, third_party = (out.strip().split(" ") + [""])[:2]
        assert third_party == "", f"the {build} engine loaded {third_party}"
        outs[build] = digest
    assert outs["pure"] == outs["compiled"]
    assert len(outs["pure"]) == len(hashlib.sha256().hexdigest())
