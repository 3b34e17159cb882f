"""Match results: ``par_status`` (``pending``, ``done``, ``skipped``): whether the games of a
stored result have their luck-adjustment pars (``games[i].par``, docs/ranking.md). Results
stored before have none (NULL).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PAR_STATUSES = "par_status IN ('pending', 'done', 'skipped')"


def upgrade() -> None:
    with op.batch_alter_table("match_results", schema=None) as batch_op:
        batch_op.add_column(sa.Column("par_status", sa.String(length=16), nullable=True))
        batch_op.create_check_constraint(op.f("ck_match_results_par_status"), PAR_STATUSES)


def downgrade() -> None:
    """Drops the column; the pars stay in ``games`` (JSON) and in the logs, read by nothing."""
    with op.batch_alter_table("match_results", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_match_results_par_status"), type_="check")
        batch_op.drop_column("par_status")
