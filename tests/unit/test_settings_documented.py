"""Every setting (its environment variable) is documented in .env.example."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_is_in_env_example() -> None:
    text = (ROOT / ".env.example").read_text()
    names = [str(f.validation_alias) for f in Settings.model_fields.values() if f.validation_alias]
    assert len(names) == len(Settings.model_fields)
    assert [n for n in names if n not in text] == []


def test_the_currency_setting_is_an_upper_case_iso_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLCOST_CURRENCY", "eur")
    assert Settings().currency == "EUR"
    monkeypatch.setenv("MLCOST_CURRENCY", "euro")
    with pytest.raises(ValueError, match="MLCOST_CURRENCY"):
        Settings()
