"""The guides (``docs/*.md``) rendered as pages: ``/ui/guides/`` and ``/ui/guides/<name>``.

The pages link the guide a reader needs at that point (writing a bot, the protocol, a rule
id, how to verify logs); the site serves them itself, so a link works on an installation
with no access to the repository. Markdown is rendered by markdown-it-py (CommonMark and
tables, raw HTML off); headings get GitHub's ids (``rules.md#tm-5`` -> ``/ui/guides/rules#tm-5``),
links between guides point to their pages, other relative links (source files, folders)
are shown as their text. Guides are in English (docs/ is; the page says so in Japanese).

Where the guides are read from: ``ARENA_DOCS_DIR`` when set, else ``docs/`` of the checkout
the code runs from, else ``<prefix>/share/daifugo-arena/docs`` (a wheel install, where
pyproject's ``data-files`` puts them). A guide that is not there is a 404.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

from flask import abort, render_template, url_for
from flask_babel import gettext as _
from markdown_it import MarkdownIt
from markdown_it.token import Token

from api.ui.views import bp

#: The guides the index lists, in its order (file name without ``.md``).
GUIDES = (
    "tables",
    "writing-a-bot",
    "protocol",
    "rules",
    "fairness",
    "ladder",
    "ui",
    "env",
    "search-bot",
    "operations",
    "webhooks",
)
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_REPO = Path(__file__).resolve().parents[2]


def guide_titles() -> dict[str, str]:
    """Display names of the listed guides in the current locale."""
    return {
        "tables": _("Learn the game by playing"),
        "writing-a-bot": _("Writing a bot"),
        "protocol": _("Bot protocol"),
        "rules": _("Rule book"),
        "fairness": _("Fair competition and verifying logs"),
        "ladder": _("How the ladder works"),
        "ui": _("The web pages"),
        "env": _("Training environment"),
        "search-bot": _("The search bot"),
        "operations": _("Running the service"),
        "webhooks": _("Webhooks"),
    }


def docs_dir() -> Path | None:
    """The folder the guides are read from (module docstring), or None when none exists."""
    env = os.environ.get("ARENA_DOCS_DIR", "").strip()
    for cand in ([Path(env)] if env else []) + [_REPO / "docs", Path(sys.prefix) / "share" / "daifugo-arena" / "docs"]:
        if (cand / "writing-a-bot.md").is_file():
            return cand
    return None


def slug(text: str, seen: dict[str, int]) -> str:
    """GitHub's heading id: lower case, punctuation dropped (letters, digits, ``-`` and ``_``
    kept), spaces as ``-``; a repeated id gets ``-1``, ``-2``..."""
    base = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
    n = seen.get(base, 0)
    seen[base] = n + 1
    return base if n == 0 else f"{base}-{n}"


def _link(href: str) -> str | None:
    """Where a guide's link points on the site: another guide's page, an anchor, an absolute
    URL as it is; None for a link into the repository (a source file, a folder)."""
    parts = urlsplit(href)
    if parts.scheme in ("http", "https", "mailto") or href.startswith("#"):
        return href
    if parts.scheme or parts.netloc:
        return None
    name = parts.path.rsplit("/", 1)[-1]
    if parts.path.count("/") == 0 and name.endswith(".md") and _NAME.match(name[:-3]):
        return url_for("ui.guide", name=name[:-3]) + (f"#{parts.fragment}" if parts.fragment else "")
    return None


def _rewrite(tokens: list[Token]) -> None:
    """Heading ids, and links as the site serves them (:func:`_link`), in place."""
    seen: dict[str, int] = {}
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and i + 1 < len(tokens):
            tok.attrSet("id", slug(tokens[i + 1].content, seen))
        opened: list[Token] = []
        for child in tok.children or []:
            if child.type == "link_open":
                target = _link(str(child.attrGet("href") or ""))
                if target is None:  # shown as its text: a span, not a dead link
                    child.tag, child.attrs = "span", {"class": "repo-link"}
                else:
                    child.attrSet("href", target)
                opened.append(child)
            elif child.type == "link_close" and opened:
                child.tag = opened.pop().tag


_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
_cache: dict[tuple[str, int], tuple[str, str]] = {}
_cache_lock = threading.Lock()


def render_guide(path: Path) -> tuple[str, str]:
    """``(title, HTML)`` of the Markdown file ``path`` (module docstring); cached per file
    and modification time."""
    key = (str(path), path.stat().st_mtime_ns)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    text = path.read_text("utf-8")
    tokens = _MD.parse(text)
    _rewrite(tokens)
    title = next((tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"), path.stem)
    html = _MD.renderer.render(tokens, _MD.options, {})
    with _cache_lock:
        _cache[key] = (title, html)
    return title, html


@bp.route("/guides/")
def guides():
    """The list of guides."""
    found = docs_dir()
    titles = guide_titles()
    items = [(name, titles[name]) for name in GUIDES if found is not None and (found / f"{name}.md").is_file()]
    return render_template("guides.html", items=items, title=None, html=None, name=None)


@bp.route("/guides/<name>")
def guide(name: str):
    """One guide, ``docs/<name>.md`` rendered (404 when there is none)."""
    found = docs_dir()
    if not _NAME.match(name) or found is None or not (found / f"{name}.md").is_file():
        abort(404, _("There is no guide %(name)s.", name=name[:64]))
    title, html = render_guide(found / f"{name}.md")
    titles = guide_titles()
    items = [(n, titles[n]) for n in GUIDES if (found / f"{n}.md").is_file()]
    return render_template("guides.html", items=items, title=title, html=html, name=name)


@bp.app_context_processor
def _guide_globals():
    def guide_url(name: str, anchor: str | None = None) -> str:
        """The page of guide ``name`` (``#anchor``: a heading id, e.g. a rule id ``tm-5``)."""
        return url_for("ui.guide", name=name) + (f"#{anchor.lower()}" if anchor else "")

    return {"guide_url": guide_url}
