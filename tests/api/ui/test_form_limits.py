"""The forms run the API's use cases in-process, under the same rate limits as the API
endpoints they stand for (api.ratelimit.UI_FORM_LIMITS)."""

from __future__ import annotations

import re

from api import create_app
from arena.config import Settings
from tests.helpers import migrated_sqlite_url


def test_sign_up_through_the_form_is_limited_like_the_api(tmp_path):
    url = migrated_sqlite_url(tmp_path / "arena.db")
    app = create_app(Settings(data_dir=tmp_path, database_url=url, broker_url="memory://", rate_limits=True))
    app.testing = True

    def sign_up(name: str):
        c = app.test_client()  # a new browser each time (signing in renews the session)
        token = re.search(r'name="csrf" value="([^"]+)"', c.get("/ui/signup").get_data(as_text=True)).group(1)
        return c.post("/ui/signup", data={"csrf": token, "name": name})

    assert [sign_up(f"f{i}").status_code for i in range(5)] == [201] * 5
    refused = sign_up("f5")
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert "5 per 1 minute" in refused.get_data(as_text=True)
