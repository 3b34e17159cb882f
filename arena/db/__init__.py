"""Persistence of Daifugo Arena, shared by ``api/`` and ``worker/``.

- :mod:`arena.db.models`: SQLAlchemy 2 models (tables listed there).
- :mod:`arena.db.session`: ``make_engine(url)``, ``make_sessionmaker(engine)``.
- :mod:`arena.db.migrate`: ``upgrade(url)`` runs the Alembic migrations (no alembic.ini).
- results and logs are written by :func:`arena.lifecycle.store_result` (exactly once).
"""

from arena.db.models import (  # noqa: F401
    Account,
    Base,
    Bot,
    Match,
    MatchLog,
    MatchResult,
    MatchSeat,
    Rating,
    Tournament,
    TournamentParticipant,
    utcnow,
)
from arena.db.session import make_engine, make_sessionmaker, normalize_url  # noqa: F401
