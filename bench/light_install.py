"""What a bot author's install costs: the wheel without extras against the wheel with [server].

    python bench/light_install.py [--keep DIR]

Builds the project's wheel once (pip wheel --no-deps, from a copy of the sources), then for
each of ``light`` (no extras) and ``server`` (``[server]``) creates a fresh virtual environment
and times ``pip install --no-cache-dir`` of the wheel (dependencies from the package index,
nothing from pip's cache). Prints one line each (issue 26):

    install light: 10.3 s, 19 distributions
    install server: 43.4 s, 63 distributions

The distributions are those ``pip list`` shows in the new venv, less pip itself and the
project. Wall-clock seconds: they vary with the network and the machine's load.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: What the wheel is built from (as tests/infra/test_light_install.py: the build, its backend, the packages).
SOURCES = ["pyproject.toml", "README.md", "setup.py", "infra/build_backend.py"]
SOURCES += ["engine", "bots_sdk", "arena", "api", "worker", "daifugo_arena"]
#: Installed by ``python -m venv`` itself, not by the project.
VENV_OWN = {"pip", "setuptools", "daifugo-arena"}


def build_wheel(tmp: Path) -> Path:
    """The project's wheel, built in ``tmp`` from a copy of the sources."""
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "*.so", "_compiled.py")  # a build in place
    for name in SOURCES:
        path = REPO / name
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"), str(src)],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp / "dist").glob("daifugo_arena-*.whl")
    return wheel


def measure(tmp: Path, wheel: Path, extra: str | None) -> tuple[float, int]:
    """``(seconds, distributions)`` of installing ``wheel`` (with ``extra``) into a new venv."""
    venv = tmp / f"venv-{extra or 'light'}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    target = f"{wheel}[{extra}]" if extra else str(wheel)
    start = time.perf_counter()
    pip = subprocess.run(
        [python, "-m", "pip", "install", "--no-cache-dir", "-q", target], capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if pip.returncode != 0:  # pip's output only on failure (the index's warnings are noise here)
        sys.exit(f"pip install {target} failed:\n{pip.stdout}{pip.stderr}")
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format", "json"], check=True, capture_output=True, text=True
    ).stdout
    names = {d["name"].lower().replace("_", "-") for d in json.loads(listed)}
    return seconds, len(names - VENV_OWN)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None, help="Build and install in DIR and keep it.")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="light-install-", dir=args.keep))
    try:
        wheel = build_wheel(tmp)
        for label, extra in (("light", None), ("server", "server")):
            seconds, count = measure(tmp, wheel, extra)
            print(f"install {label}: {seconds:.1f} s, {count} distributions", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
