"""Helpers shared by several test folders (import as ``tests.helpers``)."""

from __future__ import annotations

import uuid

from sqlalchemy import create_engine, text

from arena.db.session import normalize_url


def create_pg_database(pg_url: str, prefix: str = "t") -> str:
    """CREATE a new empty database on the test PostgreSQL server; returns its URL.

    Each test gets its own database, so tests never see each other's rows.
    """
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(normalize_url(pg_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return normalize_url(pg_url).rsplit("/", 1)[0] + "/" + name
