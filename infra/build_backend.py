"""The build backend of daifugo-arena (``[build-system]`` of pyproject.toml): setuptools', with
mypy (it ships mypyc) among the build requirements when the compiled engine is asked for
(``ARENA_ENGINE_BUILD=compiled``, setup.py); the pure build requires nothing more.
"""

from __future__ import annotations

import os
from typing import Any

from setuptools.build_meta import *  # noqa: F403 - the whole PEP 517 / 660 interface of setuptools

#: What the compiled build adds to the build requirements (the dev extra's mypy).
COMPILER = "mypy>=2.4,<3"


def _requires() -> list[str]:
    return [COMPILER] if os.environ.get("ARENA_ENGINE_BUILD") == "compiled" else []


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _requires()


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _requires()


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []
