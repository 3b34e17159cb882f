"""The declarative base of the models (:mod:`arena.db.models`, :mod:`arena.db.ladder_models`):
its naming convention, the JSON column type and the helpers every model module uses."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, DateTime, MetaData
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase

from arena.status import values

#: JSON on every database, JSONB on PostgreSQL.
JSONType = JSON().with_variant(JSONB(), "postgresql")

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def in_check(column: str, allowed: type[StrEnum] | tuple[str, ...]) -> str:
    """The text of a ``CHECK`` constraint: ``column IN ('a', 'b')``, the values in order
    (for a status, its :mod:`arena.status` enum: the text the migrations created)."""
    names = allowed if isinstance(allowed, tuple) else values(allowed)
    return f"{column} IN ({', '.join(repr(v) for v in names)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: DateTime(timezone=True), dict[str, Any]: JSONType}
