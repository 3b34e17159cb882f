"""Ladders (docs/ladder.md): ``ladders``, ``ladder_members``, ``ladder_entries``, ``ladder_sets``,
``ladder_rating_history``, ``ladder_pairs``, ``ladder_fits``; ``tournaments.format`` (the match
source: ``round_robin``, ``until_settled`` for the tournaments played until settled,
``ladder``) and ``tournaments.separate_owners`` (false for every existing tournament: their
schedules are stored); ``bots.parent_id`` (a new version of a bot).

Downgrade: the ladders' tables are dropped, and so are the columns (a ladder's tournament and
its matches stay, as a running round-robin tournament).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
FORMATS = "format IN ('round_robin', 'until_settled', 'ladder')"


def upgrade() -> None:
    op.create_table(
        "ladders",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("ruleset", sa.String(length=32), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("open_ruleset", sa.String(length=32), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("config", JSON, nullable=False),
        sa.Column("last_tick", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("last_tick_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("status IN ('active', 'closed')", name=op.f("ck_ladders_status")),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["accounts.id"], name=op.f("fk_ladders_owner_id_accounts"), ondelete="RESTRICT"
        ),
        sa.ForeignKeyConstraint(
            ["tournament_id"],
            ["tournaments.id"],
            name=op.f("fk_ladders_tournament_id_tournaments"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ladders")),
        sa.UniqueConstraint("open_ruleset", name=op.f("uq_ladders_open_ruleset")),
        sa.UniqueConstraint("tournament_id", name=op.f("uq_ladders_tournament_id")),
    )
    with op.batch_alter_table("ladders", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ladders_owner_id"), ["owner_id"], unique=False)

    op.create_table(
        "ladder_entries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("ladder_id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=True),
        sa.Column("house_bot", sa.String(length=32), nullable=True),
        sa.Column("owner_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("paused_by", sa.String(length=16), nullable=True),
        sa.Column("paused_reason", sa.Text(), nullable=True),
        sa.Column("pause", JSON, nullable=True),
        sa.Column("paused_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("max_concurrent", sa.Integer(), server_default="1", nullable=False),
        sa.Column("max_sets_per_hour", sa.Integer(), server_default="30", nullable=False),
        sa.Column("parent_entry_id", sa.Integer(), nullable=True),
        sa.Column("mu", sa.Float(), nullable=False),
        sa.Column("sigma", sa.Float(), nullable=False),
        sa.Column("sets", sa.Integer(), server_default="0", nullable=False),
        sa.Column("games", sa.Integer(), server_default="0", nullable=False),
        sa.Column("faults", sa.Integer(), server_default="0", nullable=False),
        sa.Column("fault_streak", sa.Integer(), server_default="0", nullable=False),
        sa.Column("forfeits", sa.Integer(), server_default="0", nullable=False),
        sa.Column("res_n", sa.Integer(), server_default="0", nullable=False),
        sa.Column("res_sum", sa.Float(), server_default="0", nullable=False),
        sa.Column("res_sumsq", sa.Float(), server_default="0", nullable=False),
        sa.Column("recall_n", sa.Integer(), server_default="0", nullable=False),
        sa.Column("recall_sum", sa.Float(), server_default="0", nullable=False),
        sa.Column("recall_sumsq", sa.Float(), server_default="0", nullable=False),
        sa.Column("compare", JSON, nullable=True),
        sa.Column("probed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("probe_ok", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column("last_set_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("entered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("paused_by IN ('owner', 'health')", name=op.f("ck_ladder_entries_paused_by")),
        sa.CheckConstraint(
            "status IN ('active', 'paused', 'withdrawn', 'replaced', 'house')", name=op.f("ck_ladder_entries_status")
        ),
        sa.CheckConstraint("(bot_id IS NULL) <> (house_bot IS NULL)", name=op.f("ck_ladder_entries_bot_or_house")),
        sa.ForeignKeyConstraint(
            ["bot_id"], ["bots.id"], name=op.f("fk_ladder_entries_bot_id_bots"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_ladder_entries_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["accounts.id"], name=op.f("fk_ladder_entries_owner_id_accounts"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["parent_entry_id"],
            ["ladder_entries.id"],
            name=op.f("fk_ladder_entries_parent_entry_id_ladder_entries"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ladder_entries")),
        sa.UniqueConstraint("ladder_id", "bot_id", name="uq_ladder_entries_ladder_bot"),
        sa.UniqueConstraint("ladder_id", "house_bot", name="uq_ladder_entries_ladder_house"),
    )
    with op.batch_alter_table("ladder_entries", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ladder_entries_bot_id"), ["bot_id"], unique=False)
        batch_op.create_index("ix_ladder_entries_ladder_status", ["ladder_id", "status"], unique=False)

    op.create_table(
        "ladder_fits",
        sa.Column("ladder_id", sa.Integer(), nullable=False),
        sa.Column("sets", sa.Integer(), nullable=False),
        sa.Column("table", JSON, nullable=False),
        sa.Column("matrix", JSON, nullable=False),
        sa.Column("collusion", JSON, nullable=False),
        sa.Column("recall", JSON, nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_ladder_fits_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("ladder_id", name=op.f("pk_ladder_fits")),
    )
    op.create_table(
        "ladder_members",
        sa.Column("ladder_id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_ladder_members_account_id_accounts"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_ladder_members_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("ladder_id", "account_id", name=op.f("pk_ladder_members")),
    )
    op.create_table(
        "ladder_sets",
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("ladder_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("entries", JSON, nullable=False),
        sa.Column("tick", sa.BigInteger(), nullable=False),
        sa.Column("salt", sa.String(length=64), nullable=False),
        sa.Column("commitment", sa.String(length=64), nullable=False),
        sa.Column("rating", sa.String(length=16), nullable=False),
        sa.Column("placement", JSON, nullable=True),
        sa.Column("adjusted", sa.Boolean(), nullable=True),
        sa.Column("twin", sa.Integer(), nullable=True),
        sa.Column("refilled", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rated_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "rating IN ('pending', 'rated', 'unrated', 'void', 'comparison')", name=op.f("ck_ladder_sets_rating")
        ),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_ladder_sets_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_ladder_sets_match_id_matches"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("match_id", name=op.f("pk_ladder_sets")),
    )
    with op.batch_alter_table("ladder_sets", schema=None) as batch_op:
        batch_op.create_index("ix_ladder_sets_ladder_created", ["ladder_id", "created_at"], unique=False)
        batch_op.create_index("ix_ladder_sets_rating", ["rating", "ladder_id"], unique=False)

    op.create_table(
        "ladder_pairs",
        sa.Column("ladder_id", sa.Integer(), nullable=False),
        sa.Column("a", sa.Integer(), nullable=False),
        sa.Column("b", sa.Integer(), nullable=False),
        sa.Column("sets", sa.Integer(), nullable=False),
        sa.Column("a_wins", sa.Float(), nullable=False),
        sa.Column("res_a_sum", sa.Float(), nullable=False),
        sa.Column("res_a_sumsq", sa.Float(), nullable=False),
        sa.Column("res_b_sum", sa.Float(), nullable=False),
        sa.Column("res_b_sumsq", sa.Float(), nullable=False),
        sa.Column("last_met_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["a"], ["ladder_entries.id"], name=op.f("fk_ladder_pairs_a_ladder_entries"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["b"], ["ladder_entries.id"], name=op.f("fk_ladder_pairs_b_ladder_entries"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_ladder_pairs_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("ladder_id", "a", "b", name=op.f("pk_ladder_pairs")),
    )
    op.create_table(
        "ladder_rating_history",
        sa.Column("entry_id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("mu", sa.Float(), nullable=False),
        sa.Column("sigma", sa.Float(), nullable=False),
        sa.Column("sets", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["entry_id"],
            ["ladder_entries.id"],
            name=op.f("fk_ladder_rating_history_entry_id_ladder_entries"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_ladder_rating_history_match_id_matches"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("entry_id", "match_id", name=op.f("pk_ladder_rating_history")),
    )
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.add_column(sa.Column("parent_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_bots_parent_id_bots"), "bots", ["parent_id"], ["id"], ondelete="SET NULL"
        )

    with op.batch_alter_table("tournaments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("format", sa.String(length=16), server_default="round_robin", nullable=False))
        batch_op.add_column(sa.Column("separate_owners", sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.create_check_constraint(op.f("ck_tournaments_format"), FORMATS)
    op.execute(sa.text("UPDATE tournaments SET format = 'until_settled' WHERE until_settled IS NOT NULL"))


def downgrade() -> None:
    with op.batch_alter_table("tournaments", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_tournaments_format"), type_="check")
        batch_op.drop_column("separate_owners")
        batch_op.drop_column("format")

    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_bots_parent_id_bots"), type_="foreignkey")
        batch_op.drop_column("parent_id")

    op.drop_table("ladder_rating_history")
    op.drop_table("ladder_pairs")
    with op.batch_alter_table("ladder_sets", schema=None) as batch_op:
        batch_op.drop_index("ix_ladder_sets_rating")
        batch_op.drop_index("ix_ladder_sets_ladder_created")

    op.drop_table("ladder_sets")
    op.drop_table("ladder_members")
    op.drop_table("ladder_fits")
    with op.batch_alter_table("ladder_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_ladder_entries_ladder_status")
        batch_op.drop_index(batch_op.f("ix_ladder_entries_bot_id"))

    op.drop_table("ladder_entries")
    with op.batch_alter_table("ladders", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ladders_owner_id"))

    op.drop_table("ladders")
