"""``arena gateway`` and the limit of open files (one file per connection): the soft limit is
raised as far as the hard one allows, and the connection cap lowered to fit it, with a warning,
rather than a process that fails every accept past it."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests import children

pytestmark = pytest.mark.services


def start(tmp_path: Path, redis_url: str, soft: int, hard: int, *args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "ARENA_DATABASE_URL": f"sqlite:///{tmp_path / 'arena.db'}",
        "ARENA_BROKER_URL": redis_url,
        "ARENA_DATA_DIR": str(tmp_path),
    }

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return children.spawn(
        [sys.executable, "-m", "daifugo_arena.cli", "gateway", "--port", "0", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit,
    )


def open_files_limit(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open files limit")


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    _, err = proc.communicate(timeout=10)
    return err


def test_the_soft_limit_is_raised_for_the_connections(tmp_path: Path, redis_url: str) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 5100:
        pytest.skip(f"the hard limit of open files here is {hard}")
    proc = start(tmp_path, redis_url, 256, hard, "--max-connections", "5000")
    try:
        assert proc.stdout is not None and " listening on " in proc.stdout.readline()
        assert open_files_limit(proc.pid) == 5100
    finally:
        assert "warning" not in stop(proc)


def test_a_low_hard_limit_lowers_the_connection_cap_with_a_warning(tmp_path: Path, redis_url: str) -> None:
    proc = start(tmp_path, redis_url, 150, 150)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert " listening on " in line
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 200
    finally:
        err = stop(proc)
    assert "the limit of open files allows 50 connections, not 20000" in err
