"""The catalogs' marker, apart so that any module of the pages can mark its messages without
importing :mod:`api.ui.i18n` (which reads some of them: :mod:`api.ui.rulesets`)."""

from __future__ import annotations


def N_(message: str) -> str:  # noqa: N802 - the gettext convention; marks a message for extraction
    """Mark ``message`` for extraction (``pybabel extract -k N_``) without translating it now."""
    return message
