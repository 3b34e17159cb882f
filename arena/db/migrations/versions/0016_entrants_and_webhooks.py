"""A start that waits for offline entrants, and owners' webhooks (issue 42, point 2).

``tournaments``: ``roll_call`` (JSON: the last check of whether each entrant is online,
``{"checked_at", "offline": [...]}``), ``waiting_until`` (set while a start waits for offline
entrants: the tournament is still ``created``), ``end_notified_at`` (when the owners were told
of its end; every tournament already over counts as told, so none is announced now).
``accounts``: ``webhook_url``, ``webhook_secret`` (encrypted like a bot's secret) and
``webhook_last`` (JSON: the last delivery's outcome).

Downgrade: the columns are dropped (a waiting tournament stays ``created``).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-12
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("tournaments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("roll_call", JSON, nullable=True))
        batch_op.add_column(sa.Column("waiting_until", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("end_notified_at", sa.DateTime(timezone=True), nullable=True))
    op.execute(
        sa.text(
            "UPDATE tournaments SET end_notified_at = COALESCE(finished_at, created_at) "
            "WHERE status IN ('finished', 'cancelled')"
        )
    )
    with op.batch_alter_table("accounts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("webhook_url", sa.String(length=2048), nullable=True))
        batch_op.add_column(sa.Column("webhook_secret", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("webhook_last", JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("accounts", schema=None) as batch_op:
        batch_op.drop_column("webhook_last")
        batch_op.drop_column("webhook_secret")
        batch_op.drop_column("webhook_url")
    with op.batch_alter_table("tournaments", schema=None) as batch_op:
        batch_op.drop_column("end_notified_at")
        batch_op.drop_column("waiting_until")
        batch_op.drop_column("roll_call")
