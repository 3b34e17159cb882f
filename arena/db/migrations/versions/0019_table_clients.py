"""The client that opened a table (``tables.client``, :func:`arena.clients.client_key`): the
site's tables are a shared pool, counted per client too (``ARENA_TABLES_PER_CLIENT``).
Existing tables get NULL (no client known: not counted).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tables") as batch:
        batch.add_column(sa.Column("client", sa.String(length=100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tables") as batch:
        batch.drop_column("client")
