"""Migration 0018 (tables where people play, docs/tables.md) on SQLite and PostgreSQL: existing
seats and bots keep what they were, a seat holds exactly one occupant (a bot, a house bot or a
person), the ``table`` format is accepted; the downgrade removes the tables' tournaments."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from arena.db.migrate import alembic_config, upgrade
from arena.db.models import utcnow
from arena.db.session import make_engine


def _insert(conn, sql: str, **params) -> None:
    conn.execute(text(sql), params)


def test_migration_0018_seats_people_and_keeps_every_older_seat(database_url):
    engine = make_engine(database_url)
    try:
        upgrade(engine=engine, revision="0017")
        with engine.begin() as conn:
            _insert(
                conn,
                "INSERT INTO accounts (id, name, role, token_hash, created_at)"
                " VALUES (1, 'ann', 'contestant', :h, :now)",
                h="a" * 64,
                now=utcnow(),
            )
            _insert(
                conn,
                "INSERT INTO bots (id, owner_id, name, transport, url, rulesets, secret, status, created_at,"
                " updated_at) VALUES (1, 1, 'b', 'http', 'http://x/', '[]', 'x', 'ready', :now, :now)",
                now=utcnow(),
            )
            _insert(
                conn,
                "INSERT INTO tournaments (id, name, organizer_id, ruleset, options, time_rules, games_per_pairing,"
                " max_faults, fill_with_house_bots, status, created_at)"
                " VALUES (1, 'cup', 1, 'million_doubt', '{}', '{}', 1, 3, :no, 'running', :now)",
                no=False,
                now=utcnow(),
            )
            _insert(
                conn,
                'INSERT INTO matches (id, tournament_id, "index", "table", seed, status, attempts, created_at)'
                " VALUES (1, 1, 0, 0, 7, 'pending', 0, :now)",
                now=utcnow(),
            )
            _insert(conn, "INSERT INTO match_seats (match_id, seat, bot_id) VALUES (1, 0, 1)")
            _insert(conn, "INSERT INTO match_seats (match_id, seat, house_bot) VALUES (1, 1, 'house-1')")
        upgrade(engine=engine)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT play_people FROM bots")).scalar() in (False, 0)
            seats = conn.execute(
                text("SELECT seat, bot_id, house_bot, account_id FROM match_seats ORDER BY seat")
            ).all()
        assert [tuple(s) for s in seats] == [(0, 1, None, None), (1, None, "house-1", None)]
        with engine.begin() as conn:  # a person's seat, and a table's tournament
            _insert(conn, "UPDATE tournaments SET format = 'table' WHERE id = 1")
            _insert(conn, "INSERT INTO match_seats (match_id, seat, account_id) VALUES (1, 2, 1)")
        for bad in ("(1, 3, NULL, NULL, NULL)", "(1, 3, 1, NULL, 1)", "(1, 3, NULL, 'house-2', 1)"):
            with pytest.raises(IntegrityError), engine.begin() as conn:  # none, or two occupants
                _insert(conn, f"INSERT INTO match_seats (match_id, seat, bot_id, house_bot, account_id) VALUES {bad}")
        with pytest.raises(IntegrityError), engine.begin() as conn:
            _insert(conn, "UPDATE tournaments SET format = 'gauntlet' WHERE id = 1")
        command.downgrade(alembic_config(engine=engine), "0017")
        assert "account_id" not in {c["name"] for c in inspect(engine).get_columns("match_seats")}
        assert "tables" not in inspect(engine).get_table_names()
        with engine.connect() as conn:  # the table's tournament went with its seats
            assert conn.execute(text("SELECT count(*) FROM tournaments")).scalar() == 0
    finally:
        engine.dispose()
