"""Matches: status ``failed`` and its ``failure`` reason (arena.lifecycle).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NEW = "status IN ('pending', 'queued', 'running', 'finished', 'cancelled', 'failed')"
OLD = "status IN ('pending', 'queued', 'running', 'finished', 'cancelled')"


def upgrade() -> None:
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.add_column(sa.Column("failure", sa.Text(), nullable=True))
        batch_op.drop_constraint(op.f("ck_matches_status"), type_="check")
        batch_op.create_check_constraint(op.f("ck_matches_status"), NEW)


def downgrade() -> None:
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_matches_status"), type_="check")
        batch_op.create_check_constraint(op.f("ck_matches_status"), OLD)
        batch_op.drop_column("failure")
