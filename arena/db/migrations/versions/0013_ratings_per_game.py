"""Ratings per game: ``ratings.matches`` and ``ratings.last_played_at`` (the leaderboard's
columns, kept by arena.standings.rebuild_ratings), and ``match_results.changes`` (updates of
a stored result, such as a par added later: the standings cache's check).

The ratings of every rule set are rebuilt by the worker at the next finished tournament
(one update per game from then on); until then ``matches`` is 0 and ``last_played_at`` null.

Revision ID: 0013
Revises: 0011
Create Date: 2026-12-10
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("ratings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("matches", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("last_played_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("match_results", schema=None) as batch_op:
        batch_op.add_column(sa.Column("changes", sa.Integer(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("match_results", schema=None) as batch_op:
        batch_op.drop_column("changes")
    with op.batch_alter_table("ratings", schema=None) as batch_op:
        batch_op.drop_column("last_played_at")
        batch_op.drop_column("matches")
