"""List settings read as AWS users write them (comma-separated) or as JSON."""

from __future__ import annotations

import pytest

from bot.config import Settings, SettingsError

LIST_SETTINGS = {
    "MLCOST_MODEL_TAG_KEYS": "model_tag_keys",
    "MLCOST_STAGE_TAG_KEYS": "stage_tag_keys",
    "MLCOST_TEAM_TAG_KEYS": "team_tag_keys",
    "MLCOST_SCAN_REGIONS": "scan_regions",
    "MLCOST_SCAN_S3_PATTERNS": "scan_s3_patterns",
}


def test_every_list_setting_is_listed_here() -> None:
    lists = {
        field.validation_alias
        for field in Settings.setting_fields().values()
        if getattr(field.annotation, "__origin__", None) is list
    }
    assert lists == set(LIST_SETTINGS)


@pytest.mark.parametrize("variable", sorted(LIST_SETTINGS))
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("us-east-1", ["us-east-1"]),
        ("us-east-1,eu-west-1", ["us-east-1", "eu-west-1"]),
        (" us-east-1 , eu-west-1 ,", ["us-east-1", "eu-west-1"]),
        ('["us-east-1","eu-west-1"]', ["us-east-1", "eu-west-1"]),
        (' ["a:b, c"] ', ["a:b, c"]),
        ("", []),
        ("[]", []),
    ],
)
def test_a_list_setting_reads_commas_or_json(
    monkeypatch: pytest.MonkeyPatch, variable: str, raw: str, expected: list[str]
) -> None:
    monkeypatch.setenv(variable, raw)
    assert getattr(Settings(), LIST_SETTINGS[variable]) == expected


def test_a_list_setting_still_takes_a_list_in_code() -> None:
    assert Settings(MLCOST_SCAN_REGIONS=["us-east-1"]).scan_regions == ["us-east-1"]


@pytest.mark.parametrize("raw", ['["us-east-1"', "[1, 2]", '["a", null]'])
def test_a_broken_json_list_is_a_validation_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("MLCOST_SCAN_REGIONS", raw)
    with pytest.raises(SettingsError) as caught:
        Settings()
    assert caught.value.problems[0][0] == "MLCOST_SCAN_REGIONS"


def test_a_broken_json_mapping_is_a_validation_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MLCOST_SCAN_S3_INVENTORY", "ml-artifacts=s3://inv/x/")
    with pytest.raises(SettingsError) as caught:
        Settings()
    assert caught.value.problems[0][0] == "MLCOST_SCAN_S3_INVENTORY"
