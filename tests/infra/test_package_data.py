"""The package data of pyproject.toml, without building a wheel (the wheel itself, built and
installed: tests/infra/test_light_install.py, slow)."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: The packages contestants import, whose types their type checker reads (PEP 561).
TYPED_PACKAGES = ("engine", "bots_sdk")


def test_the_typed_packages_ship_their_py_typed_marker():
    """``py.typed`` is in the engine's and the SDK's folders and in the package data that puts
    it in the wheel (setuptools leaves out a data file it is not told of)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    package_data = config["tool"]["setuptools"]["package-data"]
    for package in TYPED_PACKAGES:
        assert "py.typed" in package_data.get(package, []), package
        assert (REPO / package / "py.typed").is_file(), package
