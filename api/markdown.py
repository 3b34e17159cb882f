"""OpenAPI descriptions in Markdown (what Swagger UI renders), from reStructuredText docstrings.

The API's docstrings are written for Sphinx-style readers: ``code`` in double backticks and
roles such as :mod:`arena.schedule`. OpenAPI descriptions are CommonMark, where double
backticks show literally in Swagger UI. :func:`rst_to_markdown` turns both into single
backtick code spans; :class:`MarkdownPlugin` (an apispec plugin) applies it to every
``description`` and ``summary`` of the operations, parameters, responses, headers and schema
components of the spec; :func:`markdown_tag` does it for a blueprint's tag description.
"""

from __future__ import annotations

import re
from typing import Any

from apispec import BasePlugin

#: ``:role:`text``` (Sphinx roles such as :mod:, :func:, :class:) -> `text`.
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`([^`]+)`")
#: ``text`` (reStructuredText inline literal) -> `text`.
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)
_TEXT_KEYS = frozenset({"description", "summary"})


def rst_to_markdown(text: str) -> str:
    """``text`` with reStructuredText inline literals and roles as Markdown code spans.

    Example: ``"the ``secret`` (see :mod:`api.auth`)"`` -> ``"the `secret` (see `api.auth`)"``.
    """
    return _LITERAL.sub(r"`\1`", _ROLE.sub(r"`\1`", text))


def markdown_descriptions(node: Any) -> Any:
    """Convert, in place, every string under a ``description``/``summary`` key of a nested
    dict/list structure (an OpenAPI fragment); returns ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _TEXT_KEYS and isinstance(value, str):
                node[key] = rst_to_markdown(value)
            else:
                markdown_descriptions(value)
    elif isinstance(node, list):
        for item in node:
            markdown_descriptions(item)
    return node


def markdown_tag(description: str | None) -> str | None:
    """A blueprint's description (its OpenAPI tag) in Markdown; None stays None."""
    return None if description is None else rst_to_markdown(description)


class MarkdownPlugin(BasePlugin):
    """apispec plugin: every description of the spec in Markdown (see the module docstring).

    Register it after the marshmallow plugin (flask-smorest's ``extra_plugins`` are), so it
    sees the descriptions that plugin fills in from field metadata.
    """

    def schema_helper(self, name: str, definition: dict, **kwargs: Any) -> dict | None:
        markdown_descriptions(definition)
        return None

    def parameter_helper(self, parameter: dict, **kwargs: Any) -> dict | None:
        markdown_descriptions(parameter)
        return None

    def response_helper(self, response: dict, **kwargs: Any) -> dict | None:
        markdown_descriptions(response)
        return None

    def header_helper(self, header: dict, **kwargs: Any) -> dict | None:
        markdown_descriptions(header)
        return None

    def operation_helper(self, path: str | None = None, operations: dict | None = None, **kwargs: Any) -> None:
        if operations:
            markdown_descriptions(operations)
