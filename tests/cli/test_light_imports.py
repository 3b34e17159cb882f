"""The light install (no extras) in the development venv: the light commands' modules import
only the project's own dependencies (never a library of the ``server`` extra), and with the
server libraries hidden the CLI still plays a match and names the extra for the rest.

The real light install (a wheel in a fresh venv) is tests/infra/test_light_install.py (slow).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from click.testing import CliRunner

from daifugo_arena.cli import COMMANDS, DISTRIBUTION, SERVER_MODULES, LazyGroup, missing_extra

REPO = Path(__file__).resolve().parents[2]
FIRST_PARTY = {"engine", "bots_sdk", "arena", "api", "worker", "daifugo_arena"}
#: The modules behind the light commands (arena play, bots serve, logs, tournament, ladder, config).
LIGHT_MODULES = [
    "daifugo_arena.cli",
    "daifugo_arena.cli.play",
    "daifugo_arena.cli.dialed",
    "daifugo_arena.cli.tournament",
    "daifugo_arena.cli.remote",
    "daifugo_arena.cli.display",
    "daifugo_arena.cli.bots",
    "daifugo_arena.cli.ladder",
    "daifugo_arena.cli.client",
    "bots_sdk",
    "bots_sdk.server",
    "bots_sdk.protocol",
    "bots_sdk.samples",
    "bots_sdk.examples",
    "arena.runner.match",
    "arena.runner.players",
    "arena.runner.local_gateway",
    "arena.runner.replay",
    "arena.matchlog",
    "arena.config",
    "engine",
]
LIGHT_COMMANDS = ["play", "bots", "logs", "tournament", "ladder"]
SERVER_COMMANDS = ["api", "db", "accounts", "secrets", "worker", "beat", "demo"]

# Run in a fresh interpreter: import the light modules, load the light commands through the
# CLI's own lazy table, print the third-party top-level modules now loaded.
_IMPORT_PROBE = """
import importlib, json, sys
for name in {modules!r}:
    importlib.import_module(name)
import click
from daifugo_arena import cli
ctx = click.Context(cli.main)
for name in {commands!r}:
    cmd = cli.main.get_command(ctx, name)
    assert "needs the" not in (cmd.help or "") and "unavailable" not in (cmd.help or ""), (name, cmd.help)
print(json.dumps(sorted({{m.partition(".")[0] for m in sys.modules}} - set(sys.stdlib_module_names))))
"""

# Run the CLI with the server extra's libraries made unimportable, as in a light install.
_HIDE_SERVER = """
import sys
import tomllib
HIDDEN = set({hidden!r})

class HideServer:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, HideServer())
from daifugo_arena import cli
sys.argv[0] = "arena"
sys.exit(cli.main())
"""


def _requirement(text: str) -> tuple[str, str]:
    """``(normalized name, marker)`` of a requirement string such as ``foo[x]>=1; extra == "y"``."""
    spec, _, marker = text.partition(";")
    name = re.match(r"[A-Za-z0-9._-]+", spec.strip())
    assert name, text
    return re.sub(r"[-_.]+", "-", name.group(0)).lower(), marker


def _light_closure() -> set[str]:
    """Normalized names of the distributions a light install brings (those installed here):
    the project's requirements without an extra marker, and theirs, transitively."""
    todo, seen = [DISTRIBUTION], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue  # a conditional dependency not installed here (another Python's)
        todo.extend(dep for dep, marker in map(_requirement, requires) if "extra" not in marker)
    return seen


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_light_modules_import_only_light_dependencies():
    proc = _run(_IMPORT_PROBE.format(modules=LIGHT_MODULES, commands=LIGHT_COMMANDS))
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout)) - FIRST_PARTY - {"__main__"}
    assert not loaded & set(SERVER_MODULES), sorted(loaded & set(SERVER_MODULES))
    dists = metadata.packages_distributions()
    light = _light_closure()
    outside = {m: dists.get(m) for m in loaded if not {_requirement(d)[0] for d in dists.get(m, [])} & light}
    # editable-install finders and setuptools' distutils shim are not the product's imports
    outside = {m: d for m, d in outside.items() if not m.startswith(("__editable__", "_distutils_hack"))}
    assert outside == {}, "light modules import libraries outside the light install"
    assert {"click", "httpx", "orjson", "waitress"} <= loaded  # the probe did load the light path


def test_server_modules_name_every_library_of_the_server_extra():
    """SERVER_MODULES (daifugo_arena.cli) holds the top-level modules of each distribution of the extra, but
    those the env extra shares (numpy: the training environment uses it too)."""
    requires = metadata.distribution(DISTRIBUTION).requires or []
    env = {dep for dep, marker in map(_requirement, requires) if re.search(r"extra\s*==\s*.env.", marker)}
    server = {dep for dep, marker in map(_requirement, requires) if re.search(r"extra\s*==\s*.server.", marker)} - env
    assert "flask" in server and "celery" in server
    modules = {
        module
        for module, dists in metadata.packages_distributions().items()
        if module.isidentifier() and not module.startswith("_") and {_requirement(d)[0] for d in dists} & server
    }
    assert modules == set(SERVER_MODULES)
    assert set(SERVER_MODULES.values()) == {"server"}


def test_a_server_command_without_the_server_libraries_names_the_extra():
    code = _HIDE_SERVER.format(hidden=sorted(SERVER_MODULES))
    for name in ("api", "worker", "demo"):  # one per module of the server's commands
        proc = _run(code, name, "--anything")
        assert proc.returncode == 1, (name, proc.stdout, proc.stderr)
        assert proc.stderr == f"Error: 'arena {name}' needs the server extra: pip install 'daifugo-arena[server]'\n"
        assert "Traceback" not in proc.stderr


def test_the_help_lists_every_command_without_the_server_libraries():
    proc = _run(_HIDE_SERVER.format(hidden=sorted(SERVER_MODULES)), "--help")
    assert proc.returncode == 0, proc.stderr
    listed = dict(re.findall(r"^  (\S+)\s+(.*)$", proc.stdout.split("Commands:")[1], re.MULTILINE))
    assert set(COMMANDS) | {"version", "config"} == set(listed)
    for name in SERVER_COMMANDS:
        assert listed[name].startswith("(needs the server extra"), (name, listed[name])
    for name in LIGHT_COMMANDS:
        assert "needs" not in listed[name], (name, listed[name])


def test_a_local_match_plays_without_the_server_libraries(tmp_path):
    code = _HIDE_SERVER.format(hidden=sorted(SERVER_MODULES))
    proc = _run(code, "play", "random", "greedy", "-n", "2", "--seed", "7", "-q", "--logs", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "million_doubt: 2 game(s)" in proc.stdout
    verify = _run(code, "logs", "verify", str(tmp_path))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert verify.stdout.splitlines()[-1] == "1 verified, 0 failed"


def test_the_import_contract_forbids_the_same_libraries():
    """pyproject.toml's light-install contract (lint-imports) and daifugo_arena.cli.SERVER_MODULES agree."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["name"].startswith("The light install")]
    assert contract["type"] == "forbidden"
    assert set(contract["forbidden_modules"]) == set(SERVER_MODULES)
    assert {
        "daifugo_arena.cli.play",
        "daifugo_arena.cli.tournament",
        "bots_sdk",
        "engine",
        "arena.runner.match",
    } <= set(contract["source_modules"])


def test_a_command_reaching_a_server_library_when_run_names_the_extra():
    group = LazyGroup(name="arena", lazy={"gone": "no_such_module_here:cmd"})

    @group.command("stats")
    def stats() -> None:
        raise ModuleNotFoundError("No module named 'sqlalchemy.orm'", name="sqlalchemy.orm")

    ran = CliRunner().invoke(group, ["stats"])
    assert ran.exit_code == 1
    assert ran.stderr == "Error: 'arena stats' needs the server extra: pip install 'daifugo-arena[server]'\n"
    other = CliRunner().invoke(group, ["gone"])  # not a library of an extra: the error itself
    assert other.exit_code == 1
    assert other.stderr == (
        "Error: command 'gone' is unavailable (no_such_module_here:cmd): No module named 'no_such_module_here'\n"
    )
    assert missing_extra(ModuleNotFoundError("x", name="flask_smorest.fields")) == "server"
    assert missing_extra(ImportError("cannot import name 'x' from 'flask'", name="flask")) is None
