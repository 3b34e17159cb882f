"""The API process never imports the match runner (issue 25): it sends matches, checks and
launches through the Celery dispatcher (arena.queue), by task name."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

#: Modules of the match runner, the bot check and the in-process dispatcher (eager mode).
RUNNER_MODULES = ("arena.runner", "arena.conformance", "arena.inprocess")


def test_creating_the_app_with_a_broker_loads_no_runner_module(tmp_path):
    script = textwrap.dedent(
        f"""
        import json, sys
        from api import create_app
        from arena.config import Settings
        from arena.db.migrate import upgrade

        url = "sqlite:///{tmp_path / "arena.db"}"
        upgrade(url)
        app = create_app(Settings(data_dir="{tmp_path}", database_url=url, broker_url="redis://127.0.0.1:1/0"))
        app.test_client().get("/api/v1/tournaments")
        loaded = sorted(sys.modules)
        # the runner service keeps its name wherever it lives (play_and_store), the check too
        players = sorted(
            name for name, mod in list(sys.modules.items())
            if name.startswith("arena") and (hasattr(mod, "play_and_store") or hasattr(mod, "run_check"))
        )
        print(json.dumps({{"loaded": loaded, "players": players}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert "api.app" in found["loaded"] and "arena.queue" in found["loaded"]
    assert [m for m in found["loaded"] if m.startswith(RUNNER_MODULES)] == []
    assert found["players"] == []
