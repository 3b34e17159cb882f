"""Daifugo Arena REST API (Flask + flask-smorest), mounted at ``/api/v1``.

``create_app(settings=None)`` builds the app; OpenAPI 3 at ``/openapi.json``, Swagger UI at
``/docs``, ``GET /healthz``. Resources (one blueprint each): accounts, bots, tournaments,
matches, leaderboard, health (``api/resources``). Run with ``arena api`` (gunicorn) or
``arena api --dev`` (Flask development server).
"""

from api.app import create_app  # noqa: F401
