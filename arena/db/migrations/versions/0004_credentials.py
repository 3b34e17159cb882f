"""Credentials: bot secrets encrypted at rest (and a previous secret with its grace period),
token expiry, server-side web sessions.

Existing bot secrets are encrypted with the first key of ``ARENA_ENCRYPTION_KEYS`` (or the
key file, see arena.crypto); the downgrade writes them back in plain text.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-10
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from arena import crypto

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _rewrite_secrets(convert) -> None:
    conn = op.get_bind()
    bots = sa.table("bots", sa.column("id", sa.Integer), sa.column("secret", sa.Text))
    for bot_id, secret in conn.execute(sa.select(bots.c.id, bots.c.secret)).all():
        conn.execute(bots.update().where(bots.c.id == bot_id).values(secret=convert(secret)))


def upgrade() -> None:
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.alter_column("secret", existing_type=sa.String(length=128), type_=sa.Text(), existing_nullable=False)
        batch_op.add_column(sa.Column("previous_secret", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("previous_secret_until", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("accounts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("token_expires_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "ui_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_ui_sessions_account_id_accounts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id_hash", name=op.f("pk_ui_sessions")),
    )
    with op.batch_alter_table("ui_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ui_sessions_account_id"), ["account_id"], unique=False)
    _rewrite_secrets(lambda s: s if s.startswith(crypto.PREFIX) else crypto.encrypt(s))


def downgrade() -> None:
    _rewrite_secrets(crypto.decrypt)
    with op.batch_alter_table("ui_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ui_sessions_account_id"))
    op.drop_table("ui_sessions")
    with op.batch_alter_table("accounts", schema=None) as batch_op:
        batch_op.drop_column("token_expires_at")
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.drop_column("previous_secret_until")
        batch_op.drop_column("previous_secret")
        batch_op.alter_column("secret", existing_type=sa.Text(), type_=sa.String(length=128), existing_nullable=False)
