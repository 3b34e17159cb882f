"""The rule-set gate: no module outside the descriptors branches on a rule set.

Every fact about a rule set is reached through its descriptors (docs/architecture.md, "How to
add a rule set"): ``engine.RULESETS`` (engine facts), ``bots_sdk.env.rulesets`` (observation
encoding), ``arena.rulesets`` (the arena's facts), ``api.ui.rulesets`` (the pages'). This
gate reads the product's modules (:data:`PACKAGES`, less :data:`DESCRIPTORS` and
:data:`EXEMPT`) and fails on any branch that names a rule set: a rule-set id (``"jdf"``), its
constant (``engine.JDF``), its game class (``Jdf``) or option class (``JdfOptions``) in

* a comparison (``==``, ``!=``, ``in``, ``not in``, ``is``), or a literal tuple, list or set
  compared against;
* ``isinstance`` / ``issubclass``;
* a ``match`` statement's ``case``;
* a key of a dict literal, or a subscript (``TABLE["jdf"]``).

Templates and scripts of the pages (``.html``, ``.js``) are read too: a quoted rule-set id
beside ``==``, ``!=``, ``===``, ``!==`` or ``in`` fails (:func:`scan_text`).

Naming a rule set elsewhere (a default argument, a docstring, a call ``new_game("jdf")``) is
not a branch and passes. Tests, benches, docs and examples are not scanned.

Usage: ``python infra/ruleset_gate.py [ROOT]`` (exit 1 and one line per finding, ``path:line:
what``); :func:`scan_source` checks one module's text.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: The product's packages the gate reads.
PACKAGES = ("engine", "bots_sdk", "arena", "api", "worker", "daifugo_arena")
#: The descriptors: the only modules that may branch on a rule set (paths from the root;
#: a path ending in ``/`` is a folder).
DESCRIPTORS = (
    "engine/rulesets.py",  # the registry of engine facts
    "engine/options.py",  # the rule sets' option classes
    "engine/million_doubt.py",  # the rule sets themselves
    "engine/trump_millionaire.py",
    "engine/jdf.py",
    "bots_sdk/env/rulesets.py",  # the environment's observation encoding per rule set
    "arena/rulesets/",  # the arena's facts per rule set
    "api/ui/rulesets.py",  # the pages' facts per rule set (display names, hints)
)
#: The suffixes of the pages' templates and scripts (:func:`scan_text`).
TEXT_SUFFIXES = (".html", ".js")
#: Not product branching: the sample bots are contestants' code (a bot knows what it plays);
#: the protocol's worked examples label docs/protocol.md's examples by rule set.
EXEMPT = ("bots_sdk/samples/", "bots_sdk/examples.py")


@dataclass(frozen=True)
class Finding:
    """One branch on a rule set: ``path:line: what``."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def rule_set_names() -> tuple[frozenset[str], frozenset[str]]:
    """``(ids, identifiers)``: the rule-set ids (string literals), and the names that stand for
    a rule set in code (the id constants, the game and option classes), from ``engine.RULESETS``."""
    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    import engine  # the registry is the list of what to look for

    ids = frozenset(engine.RULESETS)
    names = {rs.name.upper() for rs in engine.RULESETS.values()}
    names |= {rs.game_class.__name__ for rs in engine.RULESETS.values()}
    names |= {rs.option_class.__name__ for rs in engine.RULESETS.values()}
    return ids, frozenset(names)


class _Visitor(ast.NodeVisitor):
    def __init__(self, path: str, ids: frozenset[str], names: frozenset[str]) -> None:
        self.path, self.ids, self.names = path, ids, names
        self.found: list[Finding] = []

    def _names_rule_set(self, node: ast.AST | None) -> str | None:
        """The rule set ``node`` names (an id literal, a constant or class, or a literal
        collection or union holding one), else None."""
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in self.ids:
            return repr(node.value)
        if isinstance(node, ast.Name) and node.id in self.names:
            return node.id
        if isinstance(node, ast.Attribute) and node.attr in self.names:
            return node.attr
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            for elt in node.elts:
                hit = self._names_rule_set(elt)
                if hit:
                    return hit
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self._names_rule_set(node.left) or self._names_rule_set(node.right)
        return None

    def _add(self, node: ast.AST, what: str) -> None:
        self.found.append(Finding(self.path, getattr(node, "lineno", 0), what))

    def visit_Compare(self, node: ast.Compare) -> None:
        for operand in (node.left, *node.comparators):
            hit = self._names_rule_set(operand)
            if hit:
                self._add(node, f"compares with the rule set {hit}")
                break
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id in ("isinstance", "issubclass") and len(node.args) == 2:
            hit = self._names_rule_set(node.args[1])
            if hit:
                self._add(node, f"{fn.id} with the rule set's class {hit}")
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        for key in node.keys:
            hit = self._names_rule_set(key)
            if hit:
                self._add(node, f"a dict keyed by the rule set {hit}")
                break
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        hit = self._names_rule_set(node.slice)
        if hit:
            self._add(node, f"a lookup by the rule set {hit}")
        self.generic_visit(node)

    def visit_match_case(self, node: ast.match_case) -> None:
        for sub in ast.walk(node.pattern):
            hit = None
            if isinstance(sub, ast.MatchValue):
                hit = self._names_rule_set(sub.value)
            elif isinstance(sub, ast.MatchClass):
                hit = self._names_rule_set(sub.cls)
            if hit:
                self._add(node.pattern, f"a case of the rule set {hit}")
                break
        self.generic_visit(node)


def scan_source(
    source: str, path: str = "<string>", names: tuple[frozenset[str], frozenset[str]] | None = None
) -> list[Finding]:
    """The branches on a rule set in one module's ``source`` (``path`` names it in findings).

    Raises:
        SyntaxError: ``source`` is not Python.
    """
    ids, idents = names or rule_set_names()
    visitor = _Visitor(path, ids, idents)
    visitor.visit(ast.parse(source, filename=path))
    return visitor.found


def scan_text(source: str, path: str = "<string>", ids: frozenset[str] | None = None) -> list[Finding]:
    """The comparisons with a quoted rule-set id in a template or script's ``source``."""
    ids = ids if ids is not None else rule_set_names()[0]
    quoted = "[\"'](?:" + "|".join(re.escape(i) for i in sorted(ids)) + ")[\"']"
    pattern = re.compile(rf"(?:[=!]==?|\bin\b)\s*[\(\[]?\s*{quoted}|{quoted}\s*(?:[=!]==?)")
    found = []
    for n, line in enumerate(source.splitlines(), 1):
        m = pattern.search(line)
        if m:
            found.append(Finding(path, n, f"compares with the rule set: {m.group(0).strip()}"))
    return found


def product_modules(root: Path, suffixes: tuple[str, ...] = (".py",)) -> Iterator[Path]:
    """The files of these ``suffixes`` the gate reads under ``root``: :data:`PACKAGES` less
    the descriptors and the exempt folders."""
    for package in PACKAGES:
        for path in sorted(p for p in (root / package).rglob("*") if p.suffix in suffixes and p.is_file()):
            rel = path.relative_to(root).as_posix()
            if any(rel == d or (d.endswith("/") and rel.startswith(d)) for d in DESCRIPTORS + EXEMPT):
                continue
            yield path


def scan(root: Path) -> list[Finding]:
    """Every finding in the product under ``root``."""
    names = rule_set_names()
    found: list[Finding] = []
    for path in product_modules(root):
        found += scan_source(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix(), names)
    for path in product_modules(root, TEXT_SUFFIXES):
        found += scan_text(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix(), names[0])
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    found = scan(root.resolve())
    for f in found:
        print(f, file=sys.stderr)
    if found:
        print(
            f"ruleset_gate: {len(found)} branch(es) on a rule set outside its descriptors: read the fact from "
            'the descriptor instead (docs/architecture.md, "How to add a rule set")',
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
