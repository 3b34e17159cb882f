"""The light install for real: the project's wheel in a fresh virtual environment, without
extras (dependencies from the package index), then from that environment only: a local match
with a log, its verification, a sample bot served over HTTP and played against, a server
command naming its extra, and no server library installed.

Slow (a wheel build and a pip install: about a minute); the fast check of the light modules'
imports is tests/cli/test_light_imports.py. Install times: bench/light_install.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from arena import __version__
from bots_sdk import examples, protocol
from tests import children
from tests.helpers import wait_until

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
#: What the wheel is built from (the packages of pyproject.toml's packages.find, and its files).
SOURCES = [
    "pyproject.toml",
    "README.md",
    "setup.py",
    "infra/build_backend.py",
    "engine",
    "bots_sdk",
    "arena",
    "api",
    "worker",
    "daifugo_arena",
]
#: Distributions a light install must not bring (normalized names).
SERVER_DISTRIBUTIONS = {"flask", "celery", "sqlalchemy", "psycopg", "psycopg-binary", "gunicorn", "alembic"}
SERVER_DISTRIBUTIONS |= {"cryptography", "kombu", "redis", "flask-smorest", "marshmallow", "openskill"}
PIP_TIMEOUT_S = 600


@dataclass
class LightVenv:
    root: Path  # the venv
    work: Path  # a folder outside the repository, the commands' working directory

    def bin(self, name: str) -> str:
        return str(self.root / "bin" / name)

    def env(self) -> dict[str, str]:
        """The environment of a user's shell: no PYTHONPATH into the repository, no test settings."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ARENA_", "PYTHON", "VIRTUAL_ENV"))}
        env["PATH"] = f"{self.root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return env

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), cwd=self.work, env=self.env(), capture_output=True, text=True, timeout=timeout, check=False
        )


def _copy_sources(dest: Path) -> None:
    """The wheel's sources in ``dest``: a build in place would leave build/ in the repository."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "*.so", "_compiled.py")  # a build in place
    dest.mkdir(parents=True)
    for name in SOURCES:
        src = REPO / name
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)


def build_wheel(tmp: Path) -> Path:
    """Build the project's wheel (pip wheel --no-deps, isolated build) into ``tmp/dist``."""
    src, dist = tmp / "src", tmp / "dist"
    _copy_sources(src)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)],
        env={k: v for k, v in os.environ.items() if k != "ARENA_ENGINE_BUILD"},  # a plain pip install: pure
        check=True,
        timeout=PIP_TIMEOUT_S,
        capture_output=True,
    )
    (wheel,) = dist.glob("daifugo_arena-*.whl")
    return wheel


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LightVenv]:
    tmp = tmp_path_factory.mktemp("light-install")
    wheel = build_wheel(tmp)
    venv = LightVenv(tmp / "venv", tmp / "work")
    venv.work.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv.root)], check=True, timeout=120)
    pip = venv.run(venv.bin("python"), "-m", "pip", "install", "-q", str(wheel), timeout=PIP_TIMEOUT_S)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    yield venv


def test_the_light_wheel_is_the_pure_engine_for_any_platform(light):
    wheels = list((light.root.parent / "dist").glob("*.whl"))
    assert [w.name.endswith("-py3-none-any.whl") for w in wheels] == [True]  # no compiler was asked for
    build = light.run(light.bin("python"), "-c", "import engine; print(engine.BUILD)")
    assert (build.returncode, build.stdout.strip(), build.stderr) == (0, "pure", "")


def test_the_wheel_ships_the_typed_packages_markers(light):
    """PEP 561: ``py.typed`` in the wheel and the installed engine and SDK, so a contestant's
    type checker reads their types (the fast check of the package data: tests/infra/test_package_data.py)."""
    (wheel,) = (light.root.parent / "dist").glob("*.whl")
    assert {"engine/py.typed", "bots_sdk/py.typed"} <= set(zipfile.ZipFile(wheel).namelist())
    found = light.run(
        light.bin("python"),
        "-c",
        "import importlib.resources as r; "
        "print([r.files(p).joinpath('py.typed').is_file() for p in ('engine', 'bots_sdk')])",
    )
    assert (found.returncode, found.stdout.strip(), found.stderr) == (0, "[True, True]", "")


def test_the_wheel_installs_the_design_cards_folders_and_one_name_of_its_own(light):
    """No generic top-level name (``cli``, ``gateway``) in site-packages: the command line and the
    gateway are ``daifugo_arena``'s (the fast check of pyproject.toml: tests/infra/test_package_data.py)."""
    (wheel,) = (light.root.parent / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    packages = {n.partition("/")[0] for n in names if not n.partition("/")[0].startswith("daifugo_arena-")}
    assert packages == {"engine", "bots_sdk", "arena", "api", "worker", "daifugo_arena"}
    (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
    assert set(zipfile.ZipFile(wheel).read(top_level).decode().split()) == packages


def test_the_wheel_installs_no_server_library(light):
    listed = light.run(light.bin("python"), "-m", "pip", "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    names = {d["name"].lower().replace("_", "-") for d in json.loads(listed.stdout)}
    assert "daifugo-arena" in names
    assert {"click", "httpx", "orjson", "waitress"} <= names
    assert names & SERVER_DISTRIBUTIONS == set()


def test_a_local_match_plays_and_its_log_verifies(light):
    played = light.run(
        light.bin("arena"), "play", "random", "heuristic", "-n", "4", "--seed", "11", "-q", "--logs", "logs"
    )
    assert played.returncode == 0, played.stdout + played.stderr
    assert "million_doubt: 4 game(s)" in played.stdout
    assert sorted(p.name for p in (light.work / "logs").iterdir()) == ["match-0000.json.gz", "match-0001.json.gz"]
    verified = light.run(light.bin("arena"), "logs", "verify", "logs")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.splitlines()[-1] == "2 verified, 0 failed"


def test_a_served_sample_bot_answers_and_plays(light, free_port):
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    server = children.spawn(
        [light.bin("arena"), "bots", "serve", "random", "--port", str(port), "--seed", "3"],
        cwd=light.work,
        env=light.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        def health() -> dict | None:
            assert server.poll() is None, server.stderr.read().decode() if server.stderr else "exited"
            try:
                return httpx.get(url, timeout=2).json()
            except httpx.TransportError:
                return None

        assert wait_until(health, f"answering on port {port}") == protocol.health("random")
        example = examples.million_doubt_turn()
        answer = httpx.post(url, content=json.dumps(example["request"]), headers=example["headers"], timeout=10)
        assert answer.status_code == 200, answer.text
        assert protocol.schema_errors("action-response", answer.json()) == []
        played = light.run(light.bin("arena"), "play", url, "greedy", "-n", "2", "--seed", "5", "-q")
        assert played.returncode == 0, played.stdout + played.stderr
        assert url in played.stdout and "million_doubt: 2 game(s)" in played.stdout
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_server_command_names_the_server_extra(light):
    for name in ("worker", "api", "db"):
        proc = light.run(light.bin("arena"), name)
        assert proc.returncode == 1, (name, proc.stdout, proc.stderr)
        assert proc.stderr == f"Error: 'arena {name}' needs the server extra: pip install 'daifugo-arena[server]'\n"
    helped = light.run(light.bin("arena"), "--help")
    assert helped.returncode == 0, helped.stderr
    assert re.search(r"^  worker +\(needs the server extra", helped.stdout, re.M), helped.stdout
    assert light.run(light.bin("arena"), "version").stdout.strip() == __version__
