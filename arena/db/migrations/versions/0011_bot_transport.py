"""Bots: ``transport`` (``http``, the arena calls the URL, as every existing bot; ``connect``,
the bot dials out to a gateway), and ``url`` nullable (a bot that connects has none; so has
its checks' ``url``).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TRANSPORTS = "transport IN ('http', 'connect')"


def upgrade() -> None:
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.add_column(sa.Column("transport", sa.String(length=8), server_default="http", nullable=False))
        batch_op.alter_column("url", existing_type=sa.String(length=2048), nullable=True)
        batch_op.create_check_constraint(op.f("ck_bots_transport"), TRANSPORTS)
    with op.batch_alter_table("bot_checks", schema=None) as batch_op:
        batch_op.alter_column("url", existing_type=sa.String(length=2048), nullable=True)


def downgrade() -> None:
    """Back to URL-only bots: refused while a bot that connects exists (it has no URL)."""
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT count(*) FROM bots WHERE transport <> 'http'")).scalar():
        raise RuntimeError("bots that connect exist: delete them (rows) before downgrading below 0011")
    bind.execute(sa.text("DELETE FROM bot_checks WHERE url IS NULL"))
    with op.batch_alter_table("bot_checks", schema=None) as batch_op:
        batch_op.alter_column("url", existing_type=sa.String(length=2048), nullable=False)
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_bots_transport"), type_="check")
        batch_op.alter_column("url", existing_type=sa.String(length=2048), nullable=False)
        batch_op.drop_column("transport")
