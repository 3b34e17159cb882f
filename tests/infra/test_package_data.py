"""The package data of pyproject.toml, without building a wheel (the wheel itself, built and
installed: tests/infra/test_light_install.py, slow)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from setuptools import find_packages

REPO = Path(__file__).resolve().parents[2]
#: The packages contestants import, whose types their type checker reads (PEP 561).
TYPED_PACKAGES = ("engine", "bots_sdk")
#: The top-level names installed: the design card's folders, and one name of the project's own
#: for the rest (the command line and the gateway), never a generic ``cli`` (issue 39).
TOP_LEVEL = {"engine", "bots_sdk", "arena", "api", "worker", "daifugo_arena"}


def test_the_typed_packages_ship_their_py_typed_marker():
    """``py.typed`` is in the engine's and the SDK's folders and in the package data that puts
    it in the wheel (setuptools leaves out a data file it is not told of)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    package_data = config["tool"]["setuptools"]["package-data"]
    for package in TYPED_PACKAGES:
        assert "py.typed" in package_data.get(package, []), package
        assert (REPO / package / "py.typed").is_file(), package


def test_the_wheel_installs_the_design_cards_folders_and_one_name_of_its_own():
    """The packages setuptools finds with pyproject.toml's ``include`` have these top-level
    names only; the ``arena`` script is the command line's; ``daifugo_arena`` itself holds a
    docstring and no import (the light install loads it before any command)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    found = find_packages(str(REPO), include=config["tool"]["setuptools"]["packages"]["find"]["include"])
    assert {name.partition(".")[0] for name in found} == TOP_LEVEL
    assert {"daifugo_arena.cli", "daifugo_arena.gateway"} <= set(found)
    assert config["project"]["scripts"] == {"arena": "daifugo_arena.cli:main"}
    body = ast.parse((REPO / "daifugo_arena" / "__init__.py").read_text(encoding="utf-8")).body
    assert [type(node) for node in body] == [ast.Expr] and isinstance(body[0].value, ast.Constant)
