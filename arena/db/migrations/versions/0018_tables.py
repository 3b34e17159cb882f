"""Tables where people play (docs/tables.md): ``tables``, ``person_ratings``;
``match_seats.account_id`` (a person's seat; the seat's CHECK becomes "exactly one occupant"),
``bots.play_people`` (the owner lets people play the bot; false for every existing bot) and the
``table`` format of ``tournaments``.

Downgrade: the tables' tournaments and their matches are deleted first (their seats hold
people, which the older CHECK cannot hold), then the tables, columns and constraints.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-20
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
FORMATS = "format IN ('round_robin', 'until_settled', 'ladder', 'table')"
OLD_FORMATS = "format IN ('round_robin', 'until_settled', 'ladder')"
ONE_OCCUPANT = (
    "(CASE WHEN bot_id IS NULL THEN 0 ELSE 1 END) + (CASE WHEN house_bot IS NULL THEN 0 ELSE 1 END)"
    " + (CASE WHEN account_id IS NULL THEN 0 ELSE 1 END) = 1"
)
BOT_OR_HOUSE = "(bot_id IS NULL) <> (house_bot IS NULL)"


def upgrade() -> None:
    op.create_table(
        "tables",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("opened_by", sa.Integer(), nullable=False),
        sa.Column("seats", JSON, nullable=False),
        sa.Column("person_time_rules", JSON, nullable=False),
        sa.Column("join_key", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("kind IN ('solo', 'class')", name=op.f("ck_tables_kind")),
        sa.ForeignKeyConstraint(
            ["opened_by"], ["accounts.id"], name=op.f("fk_tables_opened_by_accounts"), ondelete="RESTRICT"
        ),
        sa.ForeignKeyConstraint(
            ["tournament_id"], ["tournaments.id"], name=op.f("fk_tables_tournament_id_tournaments"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tables")),
        sa.UniqueConstraint("tournament_id", name=op.f("uq_tables_tournament_id")),
    )
    with op.batch_alter_table("tables", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tables_opened_by"), ["opened_by"], unique=False)

    op.create_table(
        "person_ratings",
        sa.Column("ruleset", sa.String(length=32), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("mu", sa.Float(), nullable=False),
        sa.Column("sigma", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("last_played_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_person_ratings_account_id_accounts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("ruleset", "account_id", name=op.f("pk_person_ratings")),
    )

    with op.batch_alter_table("match_seats", schema=None) as batch_op:
        batch_op.add_column(sa.Column("account_id", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_match_seats_account_id"), ["account_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_match_seats_account_id_accounts"), "accounts", ["account_id"], ["id"], ondelete="RESTRICT"
        )
        batch_op.drop_constraint(op.f("ck_match_seats_bot_or_house"), type_="check")
        batch_op.create_check_constraint(op.f("ck_match_seats_one_occupant"), ONE_OCCUPANT)

    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.add_column(sa.Column("play_people", sa.Boolean(), server_default=sa.false(), nullable=False))

    with op.batch_alter_table("tournaments", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_tournaments_format"), type_="check")
        batch_op.create_check_constraint(op.f("ck_tournaments_format"), FORMATS)


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM tournaments WHERE format = 'table'"))
    op.execute(sa.text("DELETE FROM match_seats WHERE account_id IS NOT NULL"))
    with op.batch_alter_table("tournaments", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_tournaments_format"), type_="check")
        batch_op.create_check_constraint(op.f("ck_tournaments_format"), OLD_FORMATS)

    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.drop_column("play_people")

    with op.batch_alter_table("match_seats", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_match_seats_one_occupant"), type_="check")
        batch_op.create_check_constraint(op.f("ck_match_seats_bot_or_house"), BOT_OR_HOUSE)
        batch_op.drop_constraint(batch_op.f("fk_match_seats_account_id_accounts"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_match_seats_account_id"))
        batch_op.drop_column("account_id")

    op.drop_table("person_ratings")
    with op.batch_alter_table("tables", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tables_opened_by"))

    op.drop_table("tables")
