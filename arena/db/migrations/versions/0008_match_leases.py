"""Matches: a lease held by the worker playing a match, and when a match was last queued
(arena.lifecycle: claim_match, renew_lease, reap_expired, lost_queued).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_owner", sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("queued_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index("ix_matches_status_lease", ["status", "lease_expires_at"])


def downgrade() -> None:
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.drop_index("ix_matches_status_lease")
        batch_op.drop_column("queued_at")
        batch_op.drop_column("lease_expires_at")
        batch_op.drop_column("lease_owner")
