"""Initial schema: accounts, bots, tournaments, matches, results, logs, ratings.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "accounts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("role IN ('contestant', 'organizer')", name=op.f("ck_accounts_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_accounts")),
        sa.UniqueConstraint("name", name=op.f("uq_accounts_name")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_accounts_token_hash")),
    )
    op.create_table(
        "bots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("rulesets", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
        sa.Column("secret", sa.String(length=128), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("last_check_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_check", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("status IN ('unchecked', 'ready', 'failed', 'deleted')", name=op.f("ck_bots_status")),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["accounts.id"], name=op.f("fk_bots_owner_id_accounts"), ondelete="RESTRICT"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bots")),
    )
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_bots_owner_id"), ["owner_id"], unique=False)

    op.create_table(
        "tournaments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("organizer_id", sa.Integer(), nullable=False),
        sa.Column("ruleset", sa.String(length=32), nullable=False),
        sa.Column("options", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
        sa.Column("time_rules", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
        sa.Column("games_per_pairing", sa.Integer(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("max_faults", sa.Integer(), nullable=False),
        sa.Column("fill_with_house_bots", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status IN ('created', 'running', 'finished', 'cancelled')", name=op.f("ck_tournaments_status")
        ),
        sa.CheckConstraint("games_per_pairing >= 1", name=op.f("ck_tournaments_games_per_pairing")),
        sa.CheckConstraint("max_faults >= 1", name=op.f("ck_tournaments_max_faults")),
        sa.ForeignKeyConstraint(
            ["organizer_id"], ["accounts.id"], name=op.f("fk_tournaments_organizer_id_accounts"), ondelete="RESTRICT"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tournaments")),
    )
    with op.batch_alter_table("tournaments", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tournaments_organizer_id"), ["organizer_id"], unique=False)

    op.create_table(
        "matches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("table", sa.Integer(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'queued', 'running', 'finished', 'cancelled')", name=op.f("ck_matches_status")
        ),
        sa.ForeignKeyConstraint(
            ["tournament_id"], ["tournaments.id"], name=op.f("fk_matches_tournament_id_tournaments"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_matches")),
        sa.UniqueConstraint("tournament_id", "index", name="uq_matches_tournament_index"),
    )
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.create_index("ix_matches_tournament_status", ["tournament_id", "status"], unique=False)

    op.create_table(
        "ratings",
        sa.Column("ruleset", sa.String(length=32), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("mu", sa.Float(), nullable=False),
        sa.Column("sigma", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_ratings_bot_id_bots"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("ruleset", "bot_id", name=op.f("pk_ratings")),
    )
    op.create_table(
        "tournament_participants",
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["bot_id"], ["bots.id"], name=op.f("fk_tournament_participants_bot_id_bots"), ondelete="RESTRICT"
        ),
        sa.ForeignKeyConstraint(
            ["tournament_id"],
            ["tournaments.id"],
            name=op.f("fk_tournament_participants_tournament_id_tournaments"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tournament_id", "bot_id", name=op.f("pk_tournament_participants")),
    )
    with op.batch_alter_table("tournament_participants", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tournament_participants_bot_id"), ["bot_id"], unique=False)

    op.create_table(
        "match_logs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_match_logs_match_id_matches"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_match_logs")),
        sa.UniqueConstraint("match_id", name=op.f("uq_match_logs_match_id")),
    )
    op.create_table(
        "match_results",
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("scores", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
        sa.Column("places", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
        sa.Column("faults", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
        sa.Column("games", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
        sa.Column("timings", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_match_results_match_id_matches"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("match_id", name=op.f("pk_match_results")),
    )
    op.create_table(
        "match_seats",
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=True),
        sa.Column("house_bot", sa.String(length=32), nullable=True),
        sa.CheckConstraint("(bot_id IS NULL) <> (house_bot IS NULL)", name=op.f("ck_match_seats_bot_or_house")),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_match_seats_bot_id_bots"), ondelete="RESTRICT"),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_match_seats_match_id_matches"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("match_id", "seat", name=op.f("pk_match_seats")),
    )
    with op.batch_alter_table("match_seats", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_match_seats_bot_id"), ["bot_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("match_seats", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_match_seats_bot_id"))

    op.drop_table("match_seats")
    op.drop_table("match_results")
    op.drop_table("match_logs")
    with op.batch_alter_table("tournament_participants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tournament_participants_bot_id"))

    op.drop_table("tournament_participants")
    op.drop_table("ratings")
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.drop_index("ix_matches_tournament_status")

    op.drop_table("matches")
    with op.batch_alter_table("tournaments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tournaments_organizer_id"))

    op.drop_table("tournaments")
    with op.batch_alter_table("bots", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_bots_owner_id"))

    op.drop_table("bots")
    op.drop_table("accounts")
