"""Shared schemas and helpers of the resources: pagination (bounded) and error documentation."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import marshmallow as ma
from marshmallow import validate

MAX_PER_PAGE = 100
#: Largest row id (PostgreSQL INTEGER); larger ids in requests are refused with 422 or 404.
MAX_ID = 2**31 - 1


def _clean_text(value: str) -> None:
    if "\x00" in value:
        raise ma.ValidationError("must not contain a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ma.ValidationError("must be valid Unicode (no lone UTF-16 surrogates)") from None


def TextField(*, max_length: int, min_length: int = 0, validators: tuple = (), **kwargs) -> ma.fields.String:
    """A string argument of ``min_length..max_length`` characters without NUL or lone surrogates
    (what PostgreSQL and UTF-8 refuse); a 422 naming the field otherwise."""
    return ma.fields.String(
        validate=[validate.Length(min=min_length, max=max_length), _clean_text, *validators], **kwargs
    )


def IdField(**kwargs) -> ma.fields.Integer:
    """An id argument: integer in 1..MAX_ID (``strict`` for JSON bodies)."""
    return ma.fields.Integer(validate=validate.Range(min=1, max=MAX_ID), **kwargs)


class PageArgs(ma.Schema):
    """Query arguments ``page`` (from 1) and ``per_page`` (1..100, default 20)."""

    page = ma.fields.Integer(load_default=1, validate=validate.Range(min=1, max=1_000_000))
    per_page = ma.fields.Integer(load_default=20, validate=validate.Range(min=1, max=MAX_PER_PAGE))


def page_schema(item_schema: type[ma.Schema], name: str) -> type[ma.Schema]:
    """A ``{"items": [...], "total", "page", "per_page"}`` schema for ``item_schema``."""
    return ma.Schema.from_dict(
        {
            "items": ma.fields.List(ma.fields.Nested(item_schema), required=True),
            "total": ma.fields.Integer(required=True),
            "page": ma.fields.Integer(required=True),
            "per_page": ma.fields.Integer(required=True),
        },
        name=name,
    )


def errors(blp, *codes: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Document error responses ``codes`` (shared error body) on a view."""

    def decorator(func):
        for code in codes:
            func = blp.alt_response(code, response=HTTPStatus(code).name)(func)
        return func

    return decorator


def paginate_query(session, stmt, count_stmt, page: int, per_page: int) -> tuple[list, int]:
    """Run ``stmt`` limited to one page; returns ``(rows, total)``."""
    total = session.scalar(count_stmt) or 0
    rows = session.scalars(stmt.limit(per_page).offset((page - 1) * per_page)).all()
    return list(rows), total


class TimeRulesSchema(ma.Schema):
    """TIME-1 time bank, seconds."""

    initial = ma.fields.Float(
        load_default=60.0,
        validate=validate.Range(min=0.001, max=3600),
        metadata={"description": "bank at the start of a game, seconds"},
    )
    increment = ma.fields.Float(
        load_default=10.0,
        validate=validate.Range(min=0, max=3600),
        metadata={"description": "added after each action, seconds"},
    )
    cap = ma.fields.Float(
        load_default=60.0,
        validate=validate.Range(min=0.001, max=3600),
        metadata={"description": "largest bank, seconds"},
    )

    @ma.validates_schema
    def _cap(self, data, **_):
        if data["cap"] < data["initial"]:
            raise ma.ValidationError("cap must be >= initial", "cap")
