"""Where the data folder is when ``ARENA_DATA_DIR`` is unset (docs/operations.md, settings)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena import config


def test_a_checkout_keeps_its_data_in_its_own_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    monkeypatch.setattr(config, "PROJECT_DIR", tmp_path)
    assert config._default_data_dir() == tmp_path / "data"


def test_an_installed_package_keeps_its_data_in_the_users_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not inside site-packages, where a new virtualenv would lose the database and the keys."""
    site = tmp_path / "site-packages"  # no pyproject.toml beside the package
    monkeypatch.setattr(config, "PROJECT_DIR", site)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert config._default_data_dir() == tmp_path / "xdg" / "daifugo-arena"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert config._default_data_dir() == tmp_path / "home" / ".local" / "share" / "daifugo-arena"
