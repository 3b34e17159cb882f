"""Bot checks served fairly per client: ``bot_checks.client`` and ``bot_checks.run_by``.

``client``: the client that asked for the check (:func:`arena.clients.client_key` of its
address; NULL for checks asked before, or not through the API). ``run_by``: the id of the check
whose task message runs this check (a delivery runs the fairest queued check, not always its
own: :func:`arena.lifecycle.checks.claim_check`); NULL while queued.

Downgrade: the columns are dropped.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-20
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("bot_checks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("client", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("run_by", sa.Integer(), nullable=True))
        batch_op.create_index("ix_bot_checks_status_created", ["status", "created_at"])


def downgrade() -> None:
    with op.batch_alter_table("bot_checks", schema=None) as batch_op:
        batch_op.drop_index("ix_bot_checks_status_created")
        batch_op.drop_column("run_by")
        batch_op.drop_column("client")
