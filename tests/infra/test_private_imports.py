"""The gate of private names (infra/private_imports.py; infra/lint.sh runs it on the product):
what it refuses and what it lets through."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("private_imports", REPO / "infra" / "private_imports.py")
assert _spec is not None and _spec.loader is not None
gate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gate)


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_private_name_taken_from_another_module_is_refused(tmp_path):
    _tree(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg._impl import build\n",  # a package uses its own private module
            "pkg/_impl.py": "def build(): ...\n",
            "pkg/views.py": "def _load(): ...\ndef page(): return _load()\n",  # its own private name
            "pkg/forms.py": "from pkg.views import _load, page\n",
            "pkg/live.py": "from pkg import views\nx = views._load()\ny = views.page()\n",
            "pkg/rel.py": "from .views import _load\n",
            "other/__init__.py": "",
            "other/use.py": "from pkg._impl import build\nimport pkg._impl\nfrom pkg import _impl\n",
        },
    )
    found = sorted(v for path in sorted(tmp_path.rglob("*.py")) for v in gate.violations(path, tmp_path))
    assert found == [
        "other/use.py:1: import from the private module pkg._impl",
        "other/use.py:2: import of the private module pkg._impl",
        "other/use.py:3: import of the private module pkg._impl",
        "pkg/forms.py:1: from pkg.views import _load",
        "pkg/live.py:2: views._load of the module pkg.views",
        "pkg/rel.py:1: from pkg.views import _load",
    ]
