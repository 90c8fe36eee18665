"""Every setting (its environment variable) is documented in .env.example."""

from __future__ import annotations

from pathlib import Path

from bot.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_is_in_env_example() -> None:
    text = (ROOT / ".env.example").read_text()
    names = [str(f.validation_alias) for f in Settings.model_fields.values() if f.validation_alias]
    assert len(names) == len(Settings.model_fields)
    assert [n for n in names if n not in text] == []
