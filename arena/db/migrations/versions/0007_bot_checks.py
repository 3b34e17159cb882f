"""Bot checks as tasks: the ``bot_checks`` table and the bot status ``checking``.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NEW = "status IN ('unchecked', 'checking', 'ready', 'failed', 'deleted')"
OLD = "status IN ('unchecked', 'ready', 'failed', 'deleted')"
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_bots_status"), type_="check")
        batch_op.create_check_constraint(op.f("ck_bots_status"), NEW)
    op.create_table(
        "bot_checks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("rulesets", JSON, nullable=False),
        sa.Column("previous_status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("progress", JSON, nullable=True),
        sa.Column("result", JSON, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('queued', 'running', 'passed', 'failed', 'error')", name=op.f("ck_bot_checks_status")
        ),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_bot_checks_account_id_accounts"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_bot_checks_bot_id_bots"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bot_checks")),
    )
    op.create_index("ix_bot_checks_bot_status", "bot_checks", ["bot_id", "status"], unique=False)
    op.create_index("ix_bot_checks_account_status", "bot_checks", ["account_id", "status"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_bot_checks_account_status", table_name="bot_checks")
    op.drop_index("ix_bot_checks_bot_status", table_name="bot_checks")
    op.drop_table("bot_checks")
    op.execute("UPDATE bots SET status = 'unchecked' WHERE status = 'checking'")
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_bots_status"), type_="check")
        batch_op.create_check_constraint(op.f("ck_bots_status"), OLD)
