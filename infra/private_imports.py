"""The gate of private names: no module reaches into another module's private names.

    python infra/private_imports.py [PACKAGE_OR_FILE ...]    # default: the product's packages

A private name (``_helper``, ``_CODES``; not ``__dunder__``) is its module's own: another
module that needs it gets it public, in the module where it belongs. Refused, each printed as
``path:line: what`` (exit status 1; 0 when there is none):

- ``from pkg.mod import _name`` (or ``import pkg.mod`` then ``mod._name``) in another module;
- a private module (``pkg._mod``, ``from pkg import _mod``) imported from outside ``pkg``.

Ruff's ``PLC2701`` (import-private-name, a preview rule) treats every module of the same
top-level package as one and so lets ``api.ui.forms`` import ``api.ui.views._load_log``: this
gate does not. Run by infra/lint.sh.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: What the gate reads by default: the product's packages (tests may reach into what they test).
PACKAGES = ("engine", "bots_sdk", "arena", "api", "worker", "daifugo_arena")


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_name(path: Path, root: Path = REPO) -> str:
    """``api.ui.views`` of ``root/api/ui/views.py``; ``api.ui`` of its ``__init__.py``."""
    parts = list(path.resolve().relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str, root: Path) -> bool:
    base = root.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _private_module_owner(dotted: str) -> str | None:
    """The package a private module of ``dotted`` belongs to (``engine`` of ``engine._build``)."""
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if is_private(part):
            return ".".join(parts[:i])
    return None


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


def _imported(node: ast.Import | ast.ImportFrom, me: str, root: Path) -> Iterator[tuple[str, str | None, str]]:
    """``(local name, module bound or None, refusal or "")`` of each name one import binds."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            owner = _private_module_owner(alias.name)
            refused = owner is not None and not _within(me, owner)
            bound = alias.name if _is_module(alias.name, root) else None
            what = f"import of the private module {alias.name}" if refused else ""
            yield alias.asname or alias.name.partition(".")[0], bound, what
        return
    package = me if (root.joinpath(*me.split(".")) / "__init__.py").is_file() else me.rpartition(".")[0]
    source = _absolute(node, package)
    owner = _private_module_owner(source)
    if owner is not None and not _within(me, owner):
        yield "", None, f"import from the private module {source}"
        return
    for alias in node.names:
        full = f"{source}.{alias.name}"
        if _is_module(full, root):
            private = is_private(alias.name) and not _within(me, source)
            yield alias.asname or alias.name, full, f"import of the private module {full}" if private else ""
        else:
            private = is_private(alias.name) and source != me
            yield alias.asname or alias.name, None, f"from {source} import {alias.name}" if private else ""


def violations(path: Path, root: Path = REPO) -> Iterator[str]:
    """``path:line: what`` for each private name ``path`` (a module under ``root``, the folder
    of the top-level packages) takes from another module."""
    root = root.resolve()
    me = module_name(path, root)
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    where = path.resolve().relative_to(root)
    modules: dict[str, str] = {}  # local name -> the module of this repository it is bound to
    private_attributes: list[ast.Attribute] = []  # name._private, checked once the imports are known
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and is_private(node.attr):
                private_attributes.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for name, bound, refusal in _imported(node, me, root):
                if refusal:
                    yield f"{where}:{node.lineno}: {refusal}"
                if bound is not None:
                    modules[name] = bound
    for node in private_attributes:
        assert isinstance(node.value, ast.Name)
        if node.value.id in modules and modules[node.value.id] != me:
            yield f"{where}:{node.lineno}: {node.value.id}.{node.attr} of the module {modules[node.value.id]}"


def files(args: list[str]) -> list[Path]:
    found: list[Path] = []
    for arg in args or PACKAGES:
        path = (REPO / arg) if not Path(arg).is_absolute() else Path(arg)
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return found


def main(argv: list[str]) -> int:
    found = [v for path in files(argv) for v in violations(path)]
    for line in found:
        print(line)
    if found:
        print(f"private_imports: {len(found)} private name(s) taken from another module", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
