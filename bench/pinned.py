"""Worker processes pinned to one core, asked in turn for CPU time (bench/engine_bench.py,
bench/env_bench.py).

A worker reads one JSON command a line (``{"ruleset": ..., "seconds": ...}``: play that rule
set for that much CPU time, ``time.process_time``) and answers one JSON line (``{"count": n,
"cpu": s}``); its first line names the build it loaded (``{"build": ...}``). The parent keeps
the totals per rule set and divides: a rate per CPU second, not per second of a shared machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field


@dataclass
class Worker:
    name: str
    proc: subprocess.Popen[str]
    build: str
    counts: dict[str, int] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)

    def run(self, ruleset: str, seconds: float) -> None:
        """Ask for ``seconds`` of CPU time of ``ruleset``; add the answer to the totals."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"ruleset": ruleset, "seconds": seconds}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.name} worker stopped: {self.proc.stderr.read() if self.proc.stderr else ''}")
        answer = json.loads(line)
        self.counts[ruleset] = self.counts.get(ruleset, 0) + answer["count"]
        self.cpu[ruleset] = self.cpu.get(ruleset, 0.0) + answer["cpu"]

    def rate(self, ruleset: str) -> float:
        """Count per CPU second of ``ruleset`` so far."""
        return self.counts[ruleset] / self.cpu[ruleset]

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def pinned(cpu: int, argv: list[str]) -> list[str]:
    """``argv`` under ``taskset -c cpu`` (when taskset is there)."""
    taskset = shutil.which("taskset")
    return [taskset, "-c", str(cpu), *argv] if taskset else argv


def start_worker(name: str, argv: list[str], env: dict[str, str], cpu: int) -> Worker | None:
    """Start a worker pinned to ``cpu``; None (and why, on stderr) when it cannot start or
    loaded another engine build than ``name`` (``pure``, ``compiled``)."""
    proc = subprocess.Popen(
        pinned(cpu, argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    if not first:
        err = proc.stderr.read().strip().splitlines()
        proc.wait()
        print(f"{name}: not run ({err[-1] if err else 'no answer'})", file=sys.stderr)
        return None
    build = json.loads(first)["build"]
    if name in ("pure", "compiled") and build != name:
        proc.kill()
        proc.wait()
        print(f"{name}: not run (the worker loaded the {build} engine)", file=sys.stderr)
        return None
    if sys.platform.startswith("linux") and not shutil.which("taskset"):
        os.sched_setaffinity(proc.pid, {cpu})
    return Worker(name, proc, build)


def engine_workers(argv: list[str], cpu: int) -> list[Worker]:
    """A worker per engine build (``ARENA_ENGINE=pure``, ``=compiled``) that starts."""
    env = {k: v for k, v in os.environ.items() if k != "ARENA_ENGINE"}
    workers = []
    for build in ("pure", "compiled"):
        w = start_worker(build, argv, {**env, "ARENA_ENGINE": build}, cpu)
        if w is not None:
            workers.append(w)
    return workers


def load_line(name: str, before: float, cpu: int, rounds: int, seconds: float, extra: str = "") -> str:
    """The bench's first line: the load average before and after (the machine is shared)."""
    after = os.getloadavg()[0]
    return (
        f"{name}: load average {before:.2f} before, {after:.2f} after, {os.cpu_count()} cores; "
        f"pinned to CPU {cpu}; {rounds} rounds of {seconds:g} CPU-s{extra}"
    )
