"""Composition: the dispatcher and the API app the commands run with.

:func:`dispatcher_for` picks the :class:`arena.dispatch.Dispatcher` of ``settings``: in eager
mode (``ARENA_CELERY_EAGER``) an :class:`arena.inprocess.InProcessDispatcher` (the matches
and checks run in this process), else an :class:`arena.queue.CeleryDispatcher` of
``ARENA_BROKER_URL``. :func:`make_app` builds the API app with it (``arena api``,
``arena demo``).
"""

from __future__ import annotations

from typing import Any

from flask import Flask

from api import create_app
from arena.config import Settings
from arena.dispatch import Dispatcher
from arena.inprocess import InProcessDispatcher
from arena.queue import CeleryDispatcher


def dispatcher_for(settings: Settings) -> Dispatcher:
    """In-process in eager mode, else Celery (module docstring)."""
    if settings.celery_eager:
        return InProcessDispatcher(settings)
    return CeleryDispatcher(settings.broker_url)


def make_app(settings: Settings, *, engine: Any = None) -> Flask:
    """``api.create_app(settings, engine=engine)`` with :func:`dispatcher_for` ``settings``."""
    return create_app(settings, engine=engine, dispatcher=dispatcher_for(settings))
