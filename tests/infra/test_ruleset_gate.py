"""The rule-set gate (infra/ruleset_gate.py, run by infra/lint.sh): no module outside the
descriptors branches on a rule set (issue 39, point 1). Fast: it reads source, runs nothing
but itself."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ruleset_gate", ROOT / "infra" / "ruleset_gate.py")
assert _spec is not None and _spec.loader is not None
gate = importlib.util.module_from_spec(_spec)
sys.modules["ruleset_gate"] = gate
_spec.loader.exec_module(gate)


@pytest.mark.slow  # infra/lint.sh runs the same scan
def test_the_product_branches_on_no_rule_set():
    assert [str(f) for f in gate.scan(ROOT)] == []


def test_a_planted_branch_in_a_copy_of_arena_fails_the_gate(tmp_path):
    """The issue's case: ``if ruleset == "jdf"`` planted in arena/ (a copy) makes the gate, as
    infra/lint.sh runs it, exit 1 and name the line."""
    shutil.copytree(ROOT / "arena", tmp_path / "arena", ignore=shutil.ignore_patterns("__pycache__"))
    limits = tmp_path / "arena" / "limits.py"
    text = limits.read_text()
    limits.write_text(
        text + '\n\ndef planted(ruleset: str) -> int:\n    if ruleset == "jdf":\n        return 1\n    return 0\n'
    )
    line = len(text.splitlines()) + 4  # two blank lines, the def, then the if
    done = subprocess.run(
        [sys.executable, str(ROOT / "infra" / "ruleset_gate.py"), str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 1, done.stderr
    assert f"arena/limits.py:{line}: compares with the rule set 'jdf'" in done.stderr


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ('if ruleset == "jdf":\n    pass', "compares with the rule set 'jdf'"),
        ('x = 1 if g.ruleset != "million_doubt" else 2', "compares with the rule set 'million_doubt'"),
        ('ok = rs in ("jdf", "trump_millionaire")', "compares with the rule set 'jdf'"),
        ("if ruleset == engine.TRUMP_MILLIONAIRE:\n    pass", "compares with the rule set TRUMP_MILLIONAIRE"),
        ("if ruleset is JDF:\n    pass", "compares with the rule set JDF"),
        ("if isinstance(g, Jdf):\n    pass", "isinstance with the rule set's class Jdf"),
        ("if isinstance(o, engine.JdfOptions):\n    pass", "isinstance with the rule set's class JdfOptions"),
        ("ok = isinstance(g, TrumpMillionaire | Jdf)", "isinstance with the rule set's class TrumpMillionaire"),
        ("ok = issubclass(c, (MillionDoubt,))", "issubclass with the rule set's class MillionDoubt"),
        ('match ruleset:\n    case "jdf":\n        pass', "a case of the rule set 'jdf'"),
        ("match g:\n    case Jdf():\n        pass", "a case of the rule set Jdf"),
        ('SIZES = {"jdf": 4}', "a dict keyed by the rule set 'jdf'"),
        ("SIZES = {engine.MILLION_DOUBT: 2}", "a dict keyed by the rule set MILLION_DOUBT"),
        ('n = SIZES["trump_millionaire"]', "a lookup by the rule set 'trump_millionaire'"),
    ],
)
def test_every_form_of_branch_is_found(source, what):
    found = gate.scan_source(source, "arena/x.py")
    assert [f.what for f in found][:1] == [what]
    assert found[0].path == "arena/x.py" and found[0].line >= 1


@pytest.mark.parametrize(
    "source",
    [
        'g = engine.new_game("jdf", None, 1)',  # a call names a rule set, asks nothing
        'def f(ruleset: str = "million_doubt") -> None:\n    """For ``jdf`` too."""',
        "facts = arena_ruleset(ruleset)\nif facts.unit_bound is None:\n    pass",
        'if kind == "give":\n    pass',
        "n = limits.max_units_per_game(engine.JDF)",
    ],
)
def test_naming_a_rule_set_without_branching_passes(source):
    assert gate.scan_source(source) == []


@pytest.mark.parametrize(
    ("line", "hit"),
    [
        ('var u = R.ruleset === "trump_millionaire" ? 1 : 2;', True),
        ('if (R.ruleset !== "million_doubt") {', True),
        ("{% if t.ruleset == 'jdf' %}x{% endif %}", True),
        ("{% if ladder.ruleset in ('jdf', 'trump_millionaire') %}", True),
        ('if ("jdf" === rs) {', True),
        ('var u = R.scoring_unit === "deal" ? 1 : 2;', False),
        ('<option value="jdf">JDF</option>', False),
    ],
)
def test_templates_and_scripts_are_read_for_comparisons_with_an_id(line, hit):
    found = gate.scan_text("<p>\n" + line, "api/ui/static/x.js")
    assert [f.line for f in found] == ([2] if hit else [])


def test_the_descriptors_are_not_read_and_the_rest_of_the_product_is():
    read = {p.relative_to(ROOT).as_posix() for p in gate.product_modules(ROOT)}
    assert "arena/limits.py" in read and "api/ui/i18n.py" in read and "bots_sdk/env/aec.py" in read
    assert "engine/game.py" in read and "daifugo_arena/cli/demo.py" in read
    assert "daifugo_arena/gateway/server.py" in read
    assert not {p for p in read if p.startswith("arena/rulesets/")}
    assert not {"engine/rulesets.py", "bots_sdk/env/rulesets.py", "engine/jdf.py"} & read
    assert not {p for p in read if p.startswith("tests/") or p.startswith("bench/")}
    pages = {p.relative_to(ROOT).as_posix() for p in gate.product_modules(ROOT, gate.TEXT_SUFFIXES)}
    assert {"api/ui/static/replay.js", "api/ui/templates/match.html"} <= pages
