"""The engine is pure: standard library only, and nothing of api/, worker/ or bots_sdk/."""

import ast
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def _runtime_nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node but those under ``if TYPING:`` (engine._build.TYPING, False at run time: the
    compiler's view of ``mypy_extensions.mypyc_attr``, never imported)."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPING":
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return [n for n in ast.walk(tree) if id(n) not in skip]


def test_engine_modules_import_only_the_standard_library():
    allowed = set(sys.stdlib_module_names) | {"engine", "__future__"}
    for path in ENGINE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in _runtime_nodes(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"


def test_importing_engine_loads_no_third_party_module():
    code = (
        "import sys, engine, engine.scenarios, engine.frames, engine.selfplay;"
        "import engine.million_doubt, engine.trump_millionaire, engine.jdf;"
        "std = set(sys.stdlib_module_names);"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] not in std | {'engine', '__main__'});"
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=ENGINE.parent, check=True
    )
    assert out.stdout.strip() == ""
