"""Tournaments: ``salt`` and ``commitment`` of the seed (arena.fairness).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tournaments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("salt", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("commitment", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tournaments", schema=None) as batch_op:
        batch_op.drop_column("commitment")
        batch_op.drop_column("salt")
