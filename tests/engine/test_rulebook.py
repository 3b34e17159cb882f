"""The rule book docs/rules.md defines every rule id the product cites, and every id of
../shared/RULES.md when that file lies beside the clone.

A rule id is defined by a heading that is exactly the id (``### TM-5``), so its anchor is the
lowercase id (``rules.md#tm-5``); the heading is followed by a paragraph that starts with the
rule's name in bold.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "docs" / "rules.md"
SHARED_RULES = REPO.parent / "shared" / "RULES.md"

#: A rule id as the product cites it: a known prefix and a number, or the action shapes' ACT.
CITED_ID = re.compile(r"\b(?:C|MD|TM|JDF|LR|TIME|FAULT)-\d+\b|\bACT\b")
#: A definition: a heading that is the id alone.
DEFINITION = re.compile(r"^### ((?:C|MD|TM|JDF|LR|TIME|FAULT)-\d+|ACT)$", re.MULTILINE)
HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.MULTILINE)
LINK_TARGET = re.compile(r"\]\(([^)\s]*)\)")

#: Where the product cites rule ids: (folder, glob) pairs under the repository.
CITING = (
    ("docs", "*.md"),
    ("docs/schema", "*.json"),
    ("api/ui/templates", "**/*.html"),
    ("api/ui/translations", "**/*.po"),
    ("engine", "**/*.py"),
    ("bots_sdk", "**/*.py"),
    ("bots_sdk/schema", "*.json"),
    ("arena", "**/*.py"),
    ("api", "**/*.py"),
    ("worker", "**/*.py"),
    ("daifugo_arena", "**/*.py"),
    ("tests/scenarios", "**/*.json"),
    ("tests/scenarios", "README.md"),
    (".", "README.md"),
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def defined_ids() -> list[str]:
    """The ids docs/rules.md defines, in page order."""
    return DEFINITION.findall(_text(RULES))


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lowercase, punctuation dropped but ``-`` and
    ``_``, spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Anchors of every heading of a Markdown page (GitHub numbers repeats ``-1``, ``-2``)."""
    seen: dict[str, int] = {}
    out = set()
    for h in HEADING.findall(_text(path)):
        a = github_anchor(h)
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else f"{a}-{n}")
    return out


def citing_files() -> list[Path]:
    files = []
    for folder, pattern in CITING:
        files.extend(p for p in sorted((REPO / folder).glob(pattern)) if p.is_file() and ".venv" not in p.parts)
    return files


def test_each_rule_is_defined_once_with_its_name():
    ids = defined_ids()
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    text = _text(RULES)
    for rule in ids:
        body = text.split(f"\n### {rule}\n", 1)[1].lstrip("\n")
        assert body.startswith("**"), f"{rule}: the definition must start with the rule's name in bold"


def test_every_rule_set_section_is_complete():
    ids = set(defined_ids())
    expected = {f"C-{n}" for n in range(1, 14)}
    expected |= {f"MD-{n}" for n in range(1, 18)}
    expected |= {f"TM-{n}" for n in range(1, 8)}
    expected |= {f"JDF-{n}" for n in range(1, 14)}
    expected |= {f"LR-{n}" for n in range(1, 7)}
    expected |= {"TIME-1", "TIME-2", "TIME-3", "FAULT-1", "FAULT-2", "FAULT-3", "ACT"}
    assert sorted(expected - ids) == []


def test_every_cited_rule_id_is_defined_in_the_rule_book():
    defined = set(defined_ids())
    files = citing_files()
    assert len(files) > 100  # the globs found the product
    missing = {}
    for path in files:
        for rule in set(CITED_ID.findall(_text(path))) - defined:
            missing.setdefault(rule, []).append(str(path.relative_to(REPO)))
    assert missing == {}


def test_the_shared_rule_book_ids_are_all_in_the_product():
    if not SHARED_RULES.is_file():
        pytest.skip(f"no {SHARED_RULES} beside the clone: nothing to compare (docs/rules.md is the rule book)")
    text = _text(SHARED_RULES)
    ids = set(re.findall(r"\b[A-Z]+-\d+\b", text))
    if re.search(r"^## ACT\b", text, re.MULTILINE):
        ids.add("ACT")
    assert len(ids) >= 60
    assert sorted(ids - set(defined_ids())) == []


def test_links_into_the_rule_book_resolve():
    """Every ``rules.md#anchor`` of the docs and the README, and every ``#anchor`` or
    ``page.md#anchor`` of the rule book itself, names a heading that exists."""
    rule_anchors = anchors(RULES)
    assert {"tm-5", "md-7", "jdf-10", "lr-6", "act"} <= rule_anchors
    bad = []
    for page in [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]:
        for target in LINK_TARGET.findall(_text(page)):
            path, _, anchor = target.partition("#")
            if page == RULES and not path:
                path = "rules.md"
            if Path(path).name != "rules.md" or not anchor:
                continue
            if anchor not in rule_anchors:
                bad.append(f"{page.name}: {target}")
    for target in LINK_TARGET.findall(_text(RULES)):
        path, _, anchor = target.partition("#")
        if path and anchor and not path.startswith(("http:", "https:")):
            if anchor not in anchors(RULES.parent / path):
                bad.append(f"rules.md: {target}")
    assert bad == []
