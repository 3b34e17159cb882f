"""What a new organizer or contestant reads agrees with the product (issue 18).

Every endpoint the README and docs/*.md name exists in the OpenAPI document the app serves;
that document's descriptions are Markdown (no reStructuredText double backticks); ``/`` sends
browsers to the pages and tells JSON clients where the API is; the error for a loopback bot
URL names the setting that allows it; the runner signs with the secret as UTF-8 text, as
docs/protocol.md says.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from api import create_app
from api.markdown import rst_to_markdown
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.runner.players import HttpPlayer
from arena.security import new_secret

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

#: ``GET /api/v1/x/{id}``, ``POST .../cancel``, ``POST /tournaments/{id}/resume``.
ENDPOINT = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE) ((?:\.\.\.)?/[^\s`'\"()<>\[\],;]*)")
#: First path segments of the REST API (paths written without ``/api/v1`` in the docs).
API_RESOURCES = ("accounts", "bots", "tournaments", "matches", "leaderboard")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data = tmp_path_factory.mktemp("docs-app")
    url = f"sqlite:///{data / 'arena.db'}"
    upgrade(url)
    app = create_app(
        Settings(data_dir=data, database_url=url, broker_url="redis://127.0.0.1:1/0", allow_private_bot_urls=False)
    )
    app.testing = True
    return app


@pytest.fixture(scope="module")
def spec(app) -> dict:
    return app.test_client().get("/openapi.json").json


def documented_endpoints(text: str) -> list[tuple[str, str, str]]:
    """``(method, path, as written)`` of every API endpoint named in a Markdown text.

    ``path`` is normalised for a look-up in the OpenAPI document: ``/api/v1`` added where the
    text leaves it out, the query string dropped, every ``{param}`` written ``{}``. A path
    starting ``...`` continues the resource of the last full path (``/api/v1/tournaments/{id}``).
    Raw HTTP request lines (``POST /bot HTTP/1.1``, a request *to* a bot) are not API calls.
    Pages and other non-API paths are returned with their path unchanged (checked elsewhere).
    """
    found: list[tuple[str, str, str]] = []
    base = ""
    for m in ENDPOINT.finditer(text):
        method, written = m.group(1), m.group(2)
        if text[m.end() : m.end() + 6] == " HTTP/":
            continue
        path = written.split("?", 1)[0].rstrip(".:")
        if path.startswith("..."):
            if not base:
                raise AssertionError(f"{method} {written}: '...' with no full path before it")
            path = base + path[3:]
        elif path.split("/")[1] in API_RESOURCES:
            path = "/api/v1" + path
        if path.startswith("/api/v1/"):
            parts = path.split("/")
            ids = [i for i, p in enumerate(parts) if p.startswith("{")]
            if not written.startswith("...") and ids:
                base = "/".join(parts[: ids[0] + 1])
        found.append((method, re.sub(r"\{[^}]*\}", "{}", path), written))
    return found


def test_the_extractor_reads_what_the_docs_write():
    text = (
        "`POST /api/v1/tournaments/{id}/start`, `GET .../standings`, `GET /api/v1/leaderboard/{ruleset}`, "
        "`GET /api/v1/leaderboard?ruleset=...`, `POST /tournaments/{id}/resume`, `POST <bot URL>`\n"
        "POST /bot HTTP/1.1\n`GET /healthz`"
    )
    assert [(m, p) for m, p, _ in documented_endpoints(text)] == [
        ("POST", "/api/v1/tournaments/{}/start"),
        ("GET", "/api/v1/tournaments/{}/standings"),
        ("GET", "/api/v1/leaderboard/{}"),
        ("GET", "/api/v1/leaderboard"),
        ("POST", "/api/v1/tournaments/{}/resume"),
        ("GET", "/healthz"),
    ]


def test_every_endpoint_in_the_readme_and_docs_is_in_the_openapi_document(app, spec):
    paths = {re.sub(r"\{[^}]*\}", "{}", p): {m.upper() for m in ops} for p, ops in spec["paths"].items()}
    urls = app.url_map.bind("localhost")
    checked, missing = 0, []
    for doc in DOCS:
        for method, path, written in documented_endpoints(doc.read_text()):
            where = f"{doc.relative_to(REPO)}: {method} {written}"
            if path.startswith("/api/") or path in paths:
                checked += 1
                if method not in paths.get(path, set()):
                    missing.append(where)
            else:  # a page or a file of the app (e.g. /ui/...): it must at least be routed
                try:
                    urls.match(path.replace("{}", "1"), method=method)
                except Exception as exc:  # NotFound, MethodNotAllowed, RequestRedirect
                    if type(exc).__name__ != "RequestRedirect":
                        missing.append(f"{where} ({type(exc).__name__})")
    assert not missing, "documented but not served:\n" + "\n".join(missing)
    assert checked >= 12  # the README's organizer section alone names more: the scan works


def test_openapi_descriptions_are_markdown(app, spec):
    text = app.test_client().get("/openapi.json").get_data(as_text=True)
    assert "``" not in text
    assert not re.search(r":(mod|func|class|meth|attr):`", text)
    post_bots = spec["paths"]["/api/v1/bots"]["post"]
    assert "`secret`" in post_bots["summary"] + post_bots.get("description", "")
    assert (
        rst_to_markdown("the ``secret`` (see :mod:`api.auth`) and ``a`` ``b``")
        == "the `secret` (see `api.auth`) and `a` `b`"
    )


def test_root_sends_browsers_to_the_pages_and_json_clients_to_the_api(app):
    client = app.test_client()
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    r = client.get("/", headers={"Accept": browser})
    assert r.status_code == 302 and r.headers["Location"] == "/ui/"
    assert client.get("/ui/", headers={"Accept": browser}).status_code in (200, 302)
    for accept in ("application/json", "*/*", None):
        r = client.get("/", headers={"Accept": accept} if accept else {})
        assert r.status_code == 200 and r.mimetype == "application/json"
        assert r.json["api"] == "/api/v1" and r.json["docs"] == "/docs" and r.json["openapi"] == "/openapi.json"
        assert client.get(r.json["openapi"]).status_code == 200


@pytest.mark.parametrize("url", ["http://127.0.0.1:9001/", "http://[::1]/", "http://10.1.2.3/", "http://localhost/"])
def test_loopback_or_private_bot_url_error_names_the_setting(app, url):
    client = app.test_client()
    token = client.post("/api/v1/accounts", json={"name": f"eve{abs(hash(url))}"}).json["token"]
    r = client.post(
        "/api/v1/bots",
        json={"name": "b", "url": url, "rulesets": ["jdf"]},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 422
    assert "ARENA_ALLOW_PRIVATE_BOT_URLS=1" in r.json["errors"]["json"]["url"][0]


def test_metadata_url_error_does_not_suggest_the_setting(app):
    client = app.test_client()
    token = client.post("/api/v1/accounts", json={"name": "mallory"}).json["token"]
    r = client.post(
        "/api/v1/bots",
        json={"name": "b", "url": "http://169.254.169.254/", "rulesets": ["jdf"]},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 422
    message = r.json["errors"]["json"]["url"][0]
    assert "metadata" in message and "ARENA_ALLOW_PRIVATE_BOT_URLS" not in message


def test_runner_signs_with_the_secret_as_utf8_text():
    """docs/protocol.md: the HMAC key is the 64 hex characters as UTF-8, not their 32 bytes."""
    seen: list[tuple[dict, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    secret = new_secret()
    assert re.fullmatch(r"[0-9a-f]{64}", secret)
    player = HttpPlayer(f"http://127.0.0.1:{httpd.server_address[1]}/", secret=secret)
    try:
        player.notify(b'{"type":"match_end"}')
    finally:
        player.close()
        httpd.shutdown()
        httpd.server_close()
    ((headers, body),) = seen
    mac_input = headers["x-arena-timestamp"].encode() + b"." + body
    as_text = "sha256=" + hmac.new(secret.encode("utf-8"), mac_input, hashlib.sha256).hexdigest()
    as_bytes = "sha256=" + hmac.new(bytes.fromhex(secret), mac_input, hashlib.sha256).hexdigest()
    assert headers["x-arena-signature"] == as_text != as_bytes
