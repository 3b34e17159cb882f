"""The starters of ``starters/`` (Java, C++, Go, Node.js) for the tests: what each needs, how it
is built (once per test run, shared by the pytest-xdist workers: a folder under the run's
temporary directory, keyed by the starter's sources, built under a file lock) and the command
that runs it.

A starter whose toolchain is missing is skipped, saying which package to install, on a
developer's machine; under ``CI=true`` it is not skipped, so the test fails (``infra/starters.sh``,
which ``.ci/run`` runs, installs every toolchain from Debian and npm).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STARTERS_DIR = REPO / "starters"
#: Every starter, by the name the tests use.
STARTERS = ("java", "cpp", "go", "node")
#: The name each starter gives in its health answer.
HEALTH_NAMES = {"java": "java-starter", "cpp": "cpp-starter", "go": "go-starter", "node": "node-starter"}
#: Seconds a build may take (the C++ one takes about 25 s on the 2-core machine, more under load).
BUILD_TIMEOUT_S = 600.0

#: Files a toolchain needs (a Debian package's file) -> the package that installs it.
_NEEDS: dict[str, list[tuple[str, str]]] = {
    "java": [("javac", "openjdk-17-jdk-headless"), ("java", "openjdk-17-jdk-headless")],
    "cpp": [
        ("g++", "g++"),
        ("make", "make"),
        ("/usr/include/websocketpp/client.hpp", "libwebsocketpp-dev"),
        ("/usr/include/asio.hpp", "libasio-dev"),
        ("/usr/include/nlohmann/json.hpp", "nlohmann-json3-dev"),
        ("/usr/include/openssl/hmac.h", "libssl-dev"),
    ],
    "go": [
        ("go", "golang-go"),
        ("/usr/share/gocode/src/github.com/gorilla/websocket/conn.go", "golang-github-gorilla-websocket-dev"),
    ],
    "node": [("node", "nodejs"), (str(STARTERS_DIR / "node" / "node_modules" / "ws"), "ws (npm ci in starters/node)")],
}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def missing(lang: str) -> str | None:
    """Why starter ``lang`` cannot be built or run here (the packages to install), or None."""
    absent = sorted(
        {pkg for need, pkg in _NEEDS[lang] if not (Path(need).exists() if "/" in need else shutil.which(need))}
    )
    if not absent:
        return None
    return f"the {lang} starter needs {', '.join(absent)}: bash infra/starters.sh installs them (root)"


def skip_unless(lang: str) -> pytest.MarkDecorator:
    """Skip a test of starter ``lang`` when its toolchain is missing, except under CI (it then fails)."""
    why = missing(lang)
    return pytest.mark.skipif(why is not None and not in_ci(), reason=why or "")


def _sources_key(lang: str) -> str:
    digest = hashlib.sha256()
    for path in sorted((STARTERS_DIR / lang).glob("*")):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    subprocess.run(argv, cwd=cwd, env=env, check=True, timeout=BUILD_TIMEOUT_S, capture_output=True, text=True)


def _build(lang: str, out: Path) -> list[str]:
    src = STARTERS_DIR / lang
    if lang == "java":
        _run(["javac", "-d", str(out), "Bot.java", "Json.java"], src)
        return ["java", "-cp", str(out), "Bot"]
    if lang == "cpp":
        _run(["make", "--no-print-directory", f"OUT={out / 'bot'}"], src)
        return [str(out / "bot")]
    if lang == "go":  # Debian's gorilla/websocket through go.mod's replace: no module proxy
        env = {**os.environ, "GOCACHE": str(out / "gocache"), "GOPATH": str(out / "gopath"), "GOPROXY": "off"}
        _run(["go", "build", "-o", str(out / "bot"), "."], src, env)
        return [str(out / "bot")]
    return ["node", str(src / "bot.js")]


def command(lang: str) -> list[str]:
    """The command that runs starter ``lang``, built first if need be (skipped or failed as
    :func:`skip_unless` says when its toolchain is missing).

    Raises:
        subprocess.CalledProcessError: the build failed (its output in the message).
    """
    why = missing(lang)
    if why is not None:
        if in_ci():
            pytest.fail(f"CI must run every starter: {why}")
        pytest.skip(why)
    if lang == "node":
        return _build(lang, STARTERS_DIR)
    root = Path(tempfile.gettempdir()) / "arena-starters"
    root.mkdir(exist_ok=True)
    out = root / f"{lang}-{_sources_key(lang)}"
    with open(root / f"{lang}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build for every xdist worker
        done = out / ".built"
        if done.exists():
            return done.read_text().split("\0")
        out.mkdir(exist_ok=True)
        try:
            argv = _build(lang, out)
        except subprocess.CalledProcessError as exc:
            raise AssertionError(f"building the {lang} starter failed:\n{exc.stdout}\n{exc.stderr}") from None
        done.write_text("\0".join(argv))
        return argv
