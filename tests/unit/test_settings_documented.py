"""Every setting is documented: in its feature's model, the generated docs and .env.example."""

from __future__ import annotations

import re
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from bot.config import (
    FEATURES,
    EconomicsSettings,
    LedgerSettings,
    ScanSettings,
    Settings,
    SettingsError,
    own_fields,
)
from bot.config_doc import DOC_PATH, main, render_configuration_doc
from bot.economics.unit_costs import verdict_rules

ROOT = Path(__file__).resolve().parents[2]
# assigned in .env.example for compose.yaml, never read by mlcost itself
COMPOSE_ONLY = {"POSTGRES_PASSWORD"}


def variables(models: list[type]) -> list[str]:
    """Return the environment variable of every field of the models."""
    return [str(f.validation_alias) for model in models for f in model.setting_fields().values()]


def test_every_setting_belongs_to_exactly_one_feature() -> None:
    names = [name for feature in FEATURES for name in own_fields(feature.model)]
    assert sorted(names) == sorted(Settings.setting_fields())
    assert len(set(names)) == len(names)


def test_every_setting_has_an_environment_variable_and_a_description() -> None:
    fields = Settings.setting_fields()
    assert [n for n, f in fields.items() if not f.validation_alias or not f.description] == []


def test_each_feature_view_is_its_frozen_slice_of_the_settings() -> None:
    settings = Settings(MLCOST_SCAN_REGIONS="us-east-1", MLCOST_CURRENCY="eur", scan_hour=3)
    for feature in FEATURES:
        view = getattr(settings, feature.attribute)
        assert type(view) is feature.model
        assert view.as_dict() == {
            n: v for n, v in settings.as_dict().items() if n in feature.model.setting_fields()
        }
        name = next(iter(feature.model.setting_fields()))
        with pytest.raises(FrozenInstanceError):
            setattr(view, name, getattr(view, name))
    assert settings.scan.scan_regions == ["us-east-1"]
    assert settings.scan.scan_hour == 3
    assert settings.waste.currency == "EUR"  # the waste findings build on the ledger's settings


def test_a_view_follows_a_copy_of_the_settings() -> None:
    settings = Settings()
    assert settings.review.review_catch_up is False
    changed = settings.replace(review_catch_up=True)
    assert changed.review.review_catch_up is True


def test_the_configuration_doc_is_generated_from_the_models() -> None:
    assert DOC_PATH == ROOT / "docs" / "configuration.md"
    assert DOC_PATH.read_text(encoding="utf-8") == render_configuration_doc(), (
        "docs/configuration.md is out of date: run python -m bot.config_doc"
    )


def test_the_generator_checks_and_writes(tmp_path: Path) -> None:
    out = tmp_path / "configuration.md"
    assert main(["--check", "--output", str(out)]) == 1
    assert main(["--output", str(out)]) == 0
    assert main(["--check", "--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == render_configuration_doc()


def test_every_variable_is_in_the_configuration_doc_once() -> None:
    text = render_configuration_doc()
    for name in variables([Settings]):
        assert text.count(f"| `{name}` |") == 1, name


def test_env_example_assigns_exactly_the_settings() -> None:
    text = (ROOT / ".env.example").read_text()
    assigned = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]*)=", text, flags=re.MULTILINE))
    assert assigned - COMPOSE_ONLY == set(variables([Settings]))


def test_the_currency_setting_is_an_upper_case_iso_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLCOST_CURRENCY", "eur")
    assert Settings().currency == "EUR"
    monkeypatch.setenv("MLCOST_CURRENCY", "euro")
    with pytest.raises(ValueError, match="MLCOST_CURRENCY"):
        Settings()


def test_a_slice_is_built_by_field_name_without_reading_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MLCOST_SCAN_IDLE_DAYS", "30")
    scan = ScanSettings(scan_regions="us-east-1,eu-west-1", team_tag_keys='["squad"]')
    assert scan.scan_idle_days == 7
    assert scan.scan_regions == ["us-east-1", "eu-west-1"]
    assert scan.team_tag_keys == ["squad"]  # the scan builds on the attribution slice
    assert verdict_rules(EconomicsSettings(verdict_cost_rise_pct="15")).cost_rise_pct == 15
    with pytest.raises(SettingsError, match="ISO 4217"):
        LedgerSettings(currency="euro")


def test_settings_is_every_slice_so_whole_settings_still_type_check() -> None:
    settings = Settings()
    assert all(isinstance(settings, feature.model) for feature in FEATURES)
