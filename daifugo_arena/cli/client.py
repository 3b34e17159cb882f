"""A small HTTP client of the Daifugo Arena REST API (``/api/v1``), used by the ``arena
tournament``, ``arena ladder`` and ``arena logs download`` commands and by ``arena demo``.

Every call goes over HTTP with httpx (keep-alive, ``Authorization: Bearer <token>``). Errors
are raised as :class:`ApiError` with a one-line message: the HTTP status, the method and path,
and the API's own ``message`` (which names the offending field on a 422).

Example::

    >>> c = ApiClient("http://127.0.0.1:8000", token)
    >>> t = c.create_tournament(ruleset="million_doubt", participants=[1, 2, 3, 4])
    >>> c.start_tournament(t["id"]); c.wait_finished(t["id"])
    >>> for match_id, log in c.iter_logs(t["id"]): ...
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from arena.matchlog import write_log

API_PREFIX = "/api/v1"
#: Seconds allowed per request (connect and read) unless a call says otherwise.
DEFAULT_TIMEOUT_S = 30.0
#: Tournament statuses after which nothing changes any more.
FINAL_STATUSES = ("finished", "cancelled")
_DEFAULT = object()


class ApiError(RuntimeError):
    """The API answered with an error status, or could not be reached (one-line message).

    Attributes:
        status: the HTTP status code, or None when no answer came (connection refused...).
        details: the error body's ``details`` (a 409 of a start: ``offline``, ``waiting_until``), or {}.
    """

    def __init__(self, message: str, status: int | None = None, details: dict | None = None):
        super().__init__(message)
        self.status = status
        self.details = details or {}


class ApiClient:
    """Client of one API server.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8000`` (a trailing ``/api/v1`` is accepted).
        token: bearer token of the account to act as (None for public calls only).
        timeout_s: seconds allowed per request (None: wait forever).
    """

    def __init__(self, base_url: str, token: str | None = None, *, timeout_s: float | None = DEFAULT_TIMEOUT_S):
        base = base_url.rstrip("/")
        if base.endswith(API_PREFIX):
            base = base[: -len(API_PREFIX)]
        if not base.startswith(("http://", "https://")):
            raise ApiError(f"API URL must start with http:// or https://, got {base_url!r}")
        self.base_url = base
        self.token = token
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(base_url=base, headers=headers, timeout=timeout_s, trust_env=False)

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def with_token(self, token: str) -> ApiClient:
        """A new client on the same server acting as another account."""
        return ApiClient(self.base_url, token, timeout_s=self._http.timeout.read)

    def request(
        self, method: str, path: str, *, json_body: Any = None, params: dict | None = None, timeout_s: Any = _DEFAULT
    ) -> Any:
        """``method path`` (``path`` relative to ``/api/v1``, unless it starts with ``/api/``,
        ``/healthz`` or ``/ui``); returns the decoded JSON body (None for 204).
        ``timeout_s``: seconds for this request (None: no limit; default: the client's).

        Raises:
            ApiError: connection failure, or a 4xx/5xx answer (message from the API's body).
        """
        url = path if path.startswith(("/api/", "/healthz", "/ui")) else API_PREFIX + path
        kwargs: dict[str, Any] = {}
        if json_body is not None:
            kwargs["json"] = json_body
        if params:
            kwargs["params"] = params
        if timeout_s is not _DEFAULT:
            kwargs["timeout"] = timeout_s
        try:
            resp = self._http.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise ApiError(f"{method} {self.base_url}{url}: {type(exc).__name__}: {exc}") from None
        if resp.status_code >= 400:
            raise ApiError(
                f"HTTP {resp.status_code} on {method} {url}: {_message(resp)}", resp.status_code, _details(resp)
            )
        if resp.status_code == 204 or not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            raise ApiError(f"{method} {url}: the answer is not JSON", resp.status_code) from None

    # ------------------------------------------------------------------ accounts and bots

    def create_account(self, name: str) -> dict:
        """``POST /accounts`` (public sign-up, contestant): ``{"id", "name", "role", "token", ...}``."""
        return self.request("POST", "/accounts", json_body={"name": name})

    def me(self) -> dict:
        return self.request("GET", "/accounts/me")

    def register_bot(self, name: str, url: str | None, rulesets: list[str], *, transport: str = "http") -> dict:
        """``POST /bots``: the bot with its signing ``secret`` (shown this once). ``transport``
        ``"http"`` (the arena calls ``url``) or ``"connect"`` (the bot dials out; ``url`` None)."""
        body: dict[str, Any] = {"name": name, "rulesets": rulesets, "transport": transport}
        if url is not None:
            body["url"] = url
        return self.request("POST", "/bots", json_body=body)

    def bots(self, *, page: int = 1, per_page: int = 100) -> dict:
        """``GET /bots``: ``{"items": [bot, ...], "total", "page", "per_page"}`` (your bots)."""
        return self.request("GET", "/bots", params={"page": page, "per_page": per_page})

    def bot(self, bot_id: int) -> dict:
        """``GET /bots/{id}``: the bot (``transport``, ``url``, ``presence``, ``status``...)."""
        return self.request("GET", f"/bots/{bot_id}")

    def start_check(self, bot_id: int, *, timeout_s: float | None = 120.0) -> dict:
        """``POST /bots/{id}/check``: the check just started (202; done already in eager
        mode): ``{"id", "status", "check_url", "progress", "result", ...}``."""
        return self.request("POST", f"/bots/{bot_id}/check", timeout_s=timeout_s)

    def get_check(self, bot_id: int, check_id: int) -> dict:
        """``GET /bots/{id}/checks/{check_id}``: status, progress per decision kind, result."""
        return self.request("GET", f"/bots/{bot_id}/checks/{check_id}")

    def check_bot(self, bot_id: int, *, wait_s: float = 600.0, poll_s: float = 0.5) -> dict:
        """Start a check and wait for it (polling every ``poll_s`` seconds, at most ``wait_s``
        seconds): the bot, ``status`` ``ready`` or ``failed`` with details in ``last_check``
        (its ``warnings`` too).

        Raises:
            ApiError: an API error, the check could not be run (``error``), or it did not
                finish within ``wait_s`` seconds.
        """
        check = self.start_check(bot_id)
        deadline = time.monotonic() + wait_s
        while check["status"] in ("queued", "running"):
            if time.monotonic() > deadline:
                raise ApiError(f"check {check['id']} of bot {bot_id} still {check['status']} after {wait_s:g} s")
            time.sleep(poll_s)
            check = self.get_check(bot_id, check["id"])
        if check["status"] == "error":
            raise ApiError(f"check {check['id']} of bot {bot_id} could not be run: {check.get('error')}")
        return self.request("GET", f"/bots/{bot_id}")

    # ------------------------------------------------------------------ tournaments

    def create_tournament(self, **body: Any) -> dict:
        """``POST /tournaments`` (organizers); ``body`` as in the API's TournamentCreate schema
        (``ruleset``, ``participants`` required; ``time_rules`` in seconds)."""
        return self.request("POST", "/tournaments", json_body=body)

    def start_tournament(
        self,
        tournament_id: int,
        *,
        timeout_s: float | None = 60.0,
        if_offline: str | None = None,
        wait_s: int | None = None,
    ) -> dict:
        """``POST /tournaments/{id}/start`` (organizers). With an in-process executor
        (``ARENA_CELERY_EAGER``) the matches are played inside this request: pass
        ``timeout_s=None``. ``if_offline``: ``ask`` (the API's default: a 409 whose
        ``ApiError.details["offline"]`` lists the offline entrants), ``wait`` (at most
        ``wait_s`` seconds), ``start``."""
        params: dict[str, Any] = {}
        if if_offline:
            params["if_offline"] = if_offline
        if wait_s is not None:
            params["wait_s"] = int(wait_s)
        return self.request("POST", f"/tournaments/{tournament_id}/start", params=params, timeout_s=timeout_s)

    def resume_tournament(self, tournament_id: int, *, include_running: bool = False) -> dict:
        """``POST /tournaments/{id}/resume`` (organizers): re-enqueue the matches without a
        result (after a broker restart)."""
        q = "?include_running=true" if include_running else ""
        return self.request("POST", f"/tournaments/{tournament_id}/resume{q}")

    def retry_tournament(self, tournament_id: int) -> dict:
        """``POST /tournaments/{id}/retry`` (organizers): play the ``failed`` matches again."""
        return self.request("POST", f"/tournaments/{tournament_id}/retry")

    def cancel_tournament(self, tournament_id: int) -> dict:
        return self.request("POST", f"/tournaments/{tournament_id}/cancel")

    def tournament(self, tournament_id: int) -> dict:
        """``GET /tournaments/{id}``: status and ``progress`` ``{"finished", "total"}``."""
        return self.request("GET", f"/tournaments/{tournament_id}")

    def standings(self, tournament_id: int) -> dict:
        """``GET /tournaments/{id}/standings``: ``{"rows": [...], "neighbours": [...], "settled",
        "top_settled", "order_by", "tie_break", ...}``."""
        return self.request("GET", f"/tournaments/{tournament_id}/standings")

    def leaderboard(self, ruleset: str) -> dict:
        """``GET /leaderboard?ruleset=...``, every page: ``{"ruleset", "total", "items": [...]}``
        (public: no token needed)."""
        items: list[dict] = []
        page = 1
        while True:
            body = self.request("GET", "/leaderboard", params={"ruleset": ruleset, "page": page, "per_page": 100})
            items += body["items"]
            if len(items) >= body["total"] or not body["items"]:
                return {"ruleset": ruleset, "total": body["total"], "items": items}
            page += 1

    # ------------------------------------------------------------------ ladders

    def ladders(self) -> list[dict]:
        """``GET /ladders``: the ladders you may read (open ones without a token)."""
        return self.request("GET", "/ladders")

    def ladder(self, ladder_id: int) -> dict:
        """``GET /ladders/{id}``: ``{"ladder": {...}, "rows": [...]}`` (the live table)."""
        return self.request("GET", f"/ladders/{ladder_id}")

    def create_ladder(self, **body: Any) -> dict:
        """``POST /ladders`` (organizers); ``body`` as in the API's LadderCreate schema."""
        return self.request("POST", "/ladders", json_body=body)

    def enter_ladder(self, ladder_id: int, bot_id: int, **limits: int) -> dict:
        """``POST /ladders/{id}/entries``: enter your ready bot (``max_concurrent``,
        ``max_sets_per_hour``); the entry."""
        return self.request("POST", f"/ladders/{ladder_id}/entries", json_body={"bot_id": bot_id, **limits})

    def ladder_entry(self, ladder_id: int, bot_id: int, action: str | None = None) -> dict:
        """``GET /ladders/{id}/entries/{bot}``, or ``POST .../{action}`` (``pause``, ``resume``,
        ``withdraw``): the entry."""
        path = f"/ladders/{ladder_id}/entries/{bot_id}"
        return self.request("POST", f"{path}/{action}") if action else self.request("GET", path)

    def ladder_sets(
        self, ladder_id: int, *, playing: bool = False, bot_id: int | None = None, limit: int = 20
    ) -> list[dict]:
        """``GET /ladders/{id}/sets``: the sets playing now (``playing``) or done, newest first."""
        params: dict[str, Any] = {"playing": "true" if playing else "false", "limit": limit}
        if bot_id is not None:
            params["bot_id"] = bot_id
        return self.request("GET", f"/ladders/{ladder_id}/sets", params=params)

    def ladder_official(self, ladder_id: int) -> dict:
        """``GET /ladders/{id}/official``: the last batch fit, ``{"computed_at", "sets", "table",
        "matrix"}``."""
        return self.request("GET", f"/ladders/{ladder_id}/official")

    def matches(self, tournament_id: int) -> list[dict]:
        """Every match of the tournament you may see (all pages), in schedule order."""
        out: list[dict] = []
        page = 1
        while True:
            body = self.request("GET", f"/tournaments/{tournament_id}/matches", params={"page": page, "per_page": 100})
            out += body["items"]
            if len(out) >= body["total"] or not body["items"]:
                return out
            page += 1

    def wait_finished(
        self,
        tournament_id: int,
        *,
        poll_s: float = 0.5,
        timeout_s: float | None = None,
        on_progress: Callable[[dict], None] | None = None,
    ) -> dict:
        """Poll ``GET /tournaments/{id}`` until its status is final; returns the last body.

        ``on_progress(tournament)`` is called after every poll. Raises :class:`ApiError` after
        ``timeout_s`` seconds (None: no limit).
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            t = self.tournament(tournament_id)
            if on_progress:
                on_progress(t)
            if t["status"] in FINAL_STATUSES:
                return t
            if deadline is not None and time.monotonic() > deadline:
                p = t["progress"]
                raise ApiError(
                    f"tournament {tournament_id} still {t['status']} after {timeout_s:g} s "
                    f"({p['finished']}/{p['total']} matches finished)"
                )
            time.sleep(poll_s)

    def iter_logs(self, tournament_id: int) -> Iterator[tuple[int, dict]]:
        """Stream ``GET /tournaments/{id}/logs`` (JSON Lines): yields ``(match_id, log)``
        (the first line, the tournament object, is skipped: :meth:`tournament` reads it)."""
        url = f"{API_PREFIX}/tournaments/{tournament_id}/logs"
        try:
            with self._http.stream("GET", url, timeout=httpx.Timeout(30.0, read=300.0)) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    raise ApiError(f"HTTP {resp.status_code} on GET {url}: {_message(resp)}", resp.status_code)
                for line in resp.iter_lines():
                    if not line.strip():
                        continue
                    item = json.loads(line)
                    if "match_id" not in item:  # the tournament line
                        continue
                    yield int(item["match_id"]), item["log"]
        except httpx.HTTPError as exc:
            raise ApiError(f"GET {self.base_url}{url}: {type(exc).__name__}: {exc}") from None


def _details(resp: httpx.Response) -> dict:
    """The error body's ``details`` object, or {}."""
    try:
        body = resp.json()
    except ValueError:
        return {}
    details = body.get("details") if isinstance(body, dict) else None
    return details if isinstance(details, dict) else {}


def _message(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        text = " ".join(resp.text.split())
        return text[:200] or resp.reason_phrase
    if isinstance(body, dict) and body.get("message"):
        return " ".join(str(body["message"]).split())
    return json.dumps(body)[:200]


def download_logs(
    client: ApiClient, tournament_id: int, out_dir: str | Path, on_log: Callable[[int, Path], None] | None = None
) -> list[Path]:
    """Write every log of the tournament you may read to ``out_dir/match-<id>.json.gz``
    (the :func:`arena.runner.match.write_log` format that ``arena logs verify`` reads),
    and the tournament object (its seed and salt once revealed) to ``out_dir/tournament.json``.

    Returns the written log paths in match id order; ``on_log(match_id, path)`` after each one.
    """

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tournament.json").write_text(json.dumps(client.tournament(tournament_id), indent=2) + "\n", "utf-8")
    paths: list[Path] = []
    for match_id, log in client.iter_logs(tournament_id):
        path = write_log(log, out / f"match-{match_id:05d}.json.gz")
        paths.append(path)
        if on_log:
            on_log(match_id, path)
    return paths
