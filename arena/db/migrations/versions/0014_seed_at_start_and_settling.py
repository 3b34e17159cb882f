"""Tournaments: the seed drawn at the start (``seed`` nullable, ``seed_chosen``), and play until
settled (``until_settled``, ``rounds``, ``stop_reason``, ``settle``).

``seed`` is NULL until the start unless the organizer set it (``seed_chosen`` true: such a
tournament is marked and left out of the ratings). Tournaments still ``created`` lose the
seed drawn at their creation (it was shown to organizers, who could have picked it): a
fresh one is drawn when they start; existing rows are not marked ``seed_chosen`` (which seeds
were typed in is not recorded). ``rounds``: rounds of the schedule stored so far (1 for every
existing tournament); ``stop_reason``: ``settled`` or ``max_rounds`` for a tournament played
until settled, else NULL; ``settle``: the last verdict of the sequential test (JSON).

Downgrade: a NULL seed gets a random one (the old schema needs one); the columns are dropped
(a tournament's extra rounds stay as matches).

Revision ID: 0014
Revises: 0011
Create Date: 2026-12-10
"""

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
STOP_REASONS = "stop_reason IN ('settled', 'max_rounds')"


def upgrade() -> None:
    with op.batch_alter_table("tournaments", schema=None) as batch_op:
        batch_op.alter_column("seed", existing_type=sa.BigInteger(), nullable=True)
        batch_op.add_column(sa.Column("seed_chosen", sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column("until_settled", JSON, nullable=True))
        batch_op.add_column(sa.Column("rounds", sa.Integer(), server_default="1", nullable=False))
        batch_op.add_column(sa.Column("stop_reason", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("settle", JSON, nullable=True))
        batch_op.create_check_constraint(op.f("ck_tournaments_stop_reason"), STOP_REASONS)
    op.execute(sa.text("UPDATE tournaments SET seed = NULL WHERE status = 'created'"))


def downgrade() -> None:
    bind = op.get_bind()
    for (tid,) in bind.execute(sa.text("SELECT id FROM tournaments WHERE seed IS NULL")).all():
        bind.execute(sa.text("UPDATE tournaments SET seed = :s WHERE id = :id"), {"s": secrets.randbits(63), "id": tid})
    with op.batch_alter_table("tournaments", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_tournaments_stop_reason"), type_="check")
        batch_op.drop_column("settle")
        batch_op.drop_column("stop_reason")
        batch_op.drop_column("rounds")
        batch_op.drop_column("until_settled")
        batch_op.drop_column("seed_chosen")
        batch_op.alter_column("seed", existing_type=sa.BigInteger(), nullable=False)
