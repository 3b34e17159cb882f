"""The Celery task names: each written once, in arena.queue, and the worker registers exactly
those (a task sent by a name the worker does not know would wait in Redis forever)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from arena import queue
from worker import tasks  # noqa: F401 - registers the tasks on the app
from worker.celery_app import app

REPO = Path(__file__).resolve().parents[2]
TASK_NAMES = {getattr(queue, name) for name in queue.__all__ if name.endswith("_TASK")}


def test_the_worker_registers_every_task_of_arena_queue_and_no_other():
    """All but the ladders' tick and batch fit, which the beat process runs itself (worker.beat)."""
    registered = {name for name in app.tasks if not name.startswith("celery.")}
    assert registered == TASK_NAMES - {queue.LADDER_TICK_TASK, queue.LADDER_FIT_TASK}


def test_no_source_writes_a_task_name_but_arena_queue():
    """A task's name written out beside its constant (in ``@app.task(name=...)`` or
    ``send_task(...)``) would let the two drift apart: the product, the tests and the benches
    name the constants."""
    names = "|".join(re.escape(n) for n in sorted(TASK_NAMES))
    literal = re.compile(rf"""["']({names})["']""")
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True)
    found = [
        f"{path}:{n}: {line.strip()}"
        for path in tracked.stdout.split()
        if path != "arena/queue.py"
        for n, line in enumerate((REPO / path).read_text(encoding="utf-8").splitlines(), 1)
        if literal.search(line)
    ]
    assert found == []
