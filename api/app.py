"""The Flask application factory."""

from __future__ import annotations

from flask import Flask, jsonify, redirect, request, send_from_directory

from api.database import close_db
from api.errors import ArenaApi, install_core_errors, install_guards
from api.markdown import MarkdownPlugin, markdown_tag
from api.ratelimit import init_rate_limits
from api.resources import accounts, bots, health, ladders, leaderboard, matches, tables, tournaments
from api.ui import init_ui
from arena import __version__
from arena.config import Settings
from arena.db.session import make_engine, make_sessionmaker
from arena.dispatch import Dispatcher
from arena.queue import CeleryDispatcher

MAX_BODY_BYTES = 1024 * 1024


def create_app(settings: Settings | None = None, *, engine=None, dispatcher: Dispatcher | None = None) -> Flask:
    """Build the API app for ``settings`` (default ``Settings.from_env()``).

    The database must already be migrated (``arena db upgrade``). ``engine`` may be passed
    to share one SQLAlchemy engine (tests); otherwise one is made from ``settings.database_url``.
    ``dispatcher`` sends the matches, checks and launches (:mod:`arena.dispatch`); default: a
    :class:`arena.queue.CeleryDispatcher` of ``settings.broker_url``. Eager mode
    (``settings.celery_eager``) needs one passed in, an :class:`arena.inprocess.InProcessDispatcher`
    (``daifugo_arena.cli`` composes it): this package never imports the runner.

    Raises:
        ValueError: eager mode without a ``dispatcher``.
    """
    settings = settings or Settings.from_env()
    if dispatcher is None:
        if settings.celery_eager:
            raise ValueError("eager mode (ARENA_CELERY_EAGER) needs dispatcher=InProcessDispatcher(settings)")
        dispatcher = CeleryDispatcher(settings.broker_url)
    app = Flask("arena-api")
    app.config.update(
        API_TITLE="Daifugo Arena",
        API_VERSION=__version__,
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        OPENAPI_SWAGGER_UI_PATH="/docs",
        # Swagger UI's files are served from the swagger-ui-bundle package, not a CDN: the
        # page must work on machines without internet access
        OPENAPI_SWAGGER_UI_URL="/docs-assets/",
        MAX_CONTENT_LENGTH=MAX_BODY_BYTES,
        JSON_SORT_KEYS=False,
        API_SPEC_OPTIONS={
            "info": {
                "description": "REST API of Daifugo Arena: accounts, bots, round-robin "
                "tournaments, matches, logs and ratings. Authenticate with "
                "`Authorization: Bearer <token>`."
            },
            "components": {"securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}}},
        },
    )
    engine = engine if engine is not None else make_engine(settings.database_url)
    app.extensions["arena"] = {
        "settings": settings,
        "engine": engine,
        "sessionmaker": make_sessionmaker(engine),
        "dispatcher": dispatcher,
    }
    app.teardown_appcontext(close_db)
    api = ArenaApi(app, spec_kwargs={"extra_plugins": [MarkdownPlugin()]})
    install_core_errors(app, api)

    for module in (health, accounts, bots, tournaments, matches, leaderboard, ladders, tables):
        module.blp.description = markdown_tag(module.blp.description)
        api.register_blueprint(module.blp)
    _serve_swagger_assets(app)
    _serve_root(app)

    init_ui(app)
    init_rate_limits(app, settings)
    install_guards(app)  # after the limits: a client over its limit costs no parse of its body
    return app


#: What ``GET /`` answers a client that does not ask for HTML.
ROOT_LINKS = {
    "name": "Daifugo Arena",
    "api": "/api/v1",
    "openapi": "/openapi.json",
    "docs": "/docs",
    "ui": "/ui/",
    "health": "/healthz",
}


def _serve_root(app: Flask) -> None:
    """``GET /``: a browser (``Accept`` prefers ``text/html`` to JSON) is redirected (302) to
    the pages at ``/ui/``; any other client gets 200 with :data:`ROOT_LINKS` (where the API,
    its OpenAPI document, Swagger UI and the pages are)."""

    @app.get("/")
    def root():
        accept = request.accept_mimetypes
        if accept.quality("text/html") > accept.quality("application/json"):
            return redirect("/ui/", code=302)
        return jsonify(ROOT_LINKS)


def _serve_swagger_assets(app: Flask) -> None:
    """``/docs-assets/<file>``: Swagger UI's JS and CSS from the ``swagger_ui_bundle`` package."""
    from swagger_ui_bundle import swagger_ui_path

    folder = str(swagger_ui_path)

    @app.get("/docs-assets/<path:filename>")
    def swagger_assets(filename: str):
        return send_from_directory(folder, filename, max_age=86400)
