"""Web pages of Daifugo Arena under ``/ui`` (server-rendered Jinja templates, one small plain
JavaScript file for the replay, no build step).

======================================= ==================================================
``/ui/``                                tournaments you may see
``/ui/tournaments/<id>``                status, progress, standings (settled or not), chart, matches
``/ui/leaderboard``                     ratings across tournaments per rule set (``?ruleset=``)
``/ui/ladders``, ``/ui/ladders/<id>``   ladders; one ladder's live table, sets, official table
                                        (api.ui.ladders; a bot's ladder profile: api.ui.profiles)
``/ui/tournaments/<id>/logs.jsonl``     all readable match logs (JSON Lines download)
``/ui/matches/<id>``                    seats, result, faults, step-by-step replay
``/ui/matches/<id>/log.json``           the match log (JSON download)
``/ui/matches/<id>/replay.json``        the replay data of the page (api.ui.replay)
``/ui/matches/<id>/live``               live view stream (SSE; api.ui.live)
``/ui/tournaments/<id>/live``           tournament events (SSE; also ``live.html``)
``/ui/login``, ``/ui/logout``           sign in with an API token / sign out
``/ui/lang/<en|ja>``                    language switch (cookie; default: Accept-Language)
``/ui/guides/``, ``/ui/guides/<name>``  the guides, docs/*.md rendered (api.ui.guides)
``/ui/play``, ``/ui/tables/<id>``       play at a table against bots, or a class's (api.ui.tables)
``/ui/account``                         your tables and your rating in the people's pool
======================================= ==================================================

Access: see :mod:`api.ui.access` (public once finished if the organizer allows it; else an
API token, given through the login form (a form POST: never in an address), for a
server-side session that logout ends).

The session cookie is signed with ``ARENA_SECRET_KEY`` when set, else with a random key kept
in ``<data dir>/ui-secret-key`` (created on first use, mode 0600), so every worker process of
one installation shares it.
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from flask import Flask

from api.ui import bot_forms, forms, guides, ladders, lang, live, tables  # noqa: F401 - register their routes on bp
from api.ui.i18n import init_i18n
from api.ui.views import bp

log = logging.getLogger(__name__)

SECRET_FILE = "ui-secret-key"


def _secret_key(data_dir: Path) -> str:
    env = os.environ.get("ARENA_SECRET_KEY", "").strip()
    if env:
        return env
    path = Path(data_dir) / SECRET_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            key = path.read_text().strip()
            if len(key) >= 32:
                return key
            raise OSError(f"{path} holds no usable key") from None
        key = secrets.token_hex(32)
        with os.fdopen(fd, "w") as f:
            f.write(key + "\n")
        return key
    except OSError as exc:
        log.warning("ui: no secret key file (%s); sessions last until this process exits", exc)
        return secrets.token_hex(32)


def init_ui(app: Flask) -> None:
    """Register the ``/ui`` pages on ``app`` (made by :func:`api.create_app`)."""

    settings = app.extensions["arena"]["settings"]
    if not app.secret_key:
        app.secret_key = _secret_key(settings.data_dir)
    app.config["SESSION_COOKIE_NAME"] = "arena_ui"
    app.config["SESSION_COOKIE_SAMESITE"] = "Lax"
    app.config["SESSION_COOKIE_HTTPONLY"] = True
    app.config["SESSION_COOKIE_PATH"] = "/ui"
    app.config["SESSION_COOKIE_SECURE"] = settings.cookie_secure
    init_i18n(app)
    app.register_blueprint(bp)
