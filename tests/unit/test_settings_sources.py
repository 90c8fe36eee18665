"""Where settings come from: arguments, then the environment, then `.env`, then the defaults.

mlcost reads them itself (bot/config.py `read_environment`), as pydantic-settings did before
(issue 24: it cost a report about 0.05 s of imports): variables in any case, the working
directory's `.env` parsed by python-dotenv, names that are no setting ignored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Settings, SettingsError


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory and an environment without mlcost's or Slack's variables."""
    monkeypatch.chdir(tmp_path)
    import os

    for name in list(os.environ):
        if name.upper().startswith(("MLCOST_", "SLACK_")):
            monkeypatch.delenv(name)
    return tmp_path


def test_without_environment_or_file_the_defaults_hold(workdir: Path) -> None:
    settings = Settings()
    assert settings.currency == "USD"
    assert settings.database_url == "sqlite:///mlcost.db"
    assert settings.scan_regions == Settings.setting_fields()["scan_regions"].default


def test_the_env_file_is_read_as_python_dotenv_reads_it(workdir: Path) -> None:
    (workdir / ".env").write_text(
        "# a comment\n"
        "export MLCOST_CURRENCY=eur\n"
        "MLCOST_TIMEZONE='Europe/Paris'\n"
        'MLCOST_SCAN_REGIONS="us-east-1, eu-west-1"\n'
        "MLCOST_DATABASE_URL=sqlite:///${MLCOST_HOME_FOR_TEST:-/srv}/ledger.db\n"
        "NOT_A_SETTING=ignored\n",
        encoding="utf-8",
    )
    settings = Settings()
    assert settings.currency == "EUR"
    assert settings.timezone == "Europe/Paris"
    assert settings.scan_regions == ["us-east-1", "eu-west-1"]
    assert settings.database_url == "sqlite:////srv/ledger.db"


def test_the_environment_wins_over_the_file_and_names_match_in_any_case(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workdir / ".env").write_text("MLCOST_CURRENCY=EUR\nmlcost_timezone=Asia/Tokyo\n")
    monkeypatch.setenv("mlcost_currency", "gbp")
    settings = Settings()
    assert settings.currency == "GBP"
    assert settings.timezone == "Asia/Tokyo"


def test_arguments_win_over_the_environment_by_field_name_or_variable(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLCOST_CURRENCY", "GBP")
    monkeypatch.setenv("MLCOST_TIMEZONE", "Asia/Tokyo")
    settings = Settings(currency="JPY", MLCOST_TIMEZONE="UTC")
    assert (settings.currency, settings.timezone) == ("JPY", "UTC")


def test_an_env_file_value_that_fails_is_named_by_its_variable_and_not_echoed(
    workdir: Path,
) -> None:
    (workdir / ".env").write_text("MLCOST_CHART_WORKERS=lots-of-xoxb-secret\n")
    with pytest.raises(SettingsError) as caught:
        Settings()
    (problem,) = caught.value.problems
    assert problem[0] == "MLCOST_CHART_WORKERS"


def test_an_empty_variable_is_a_value_not_an_absence(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as before: MLCOST_CHART_WORKERS= is an empty value, refused, not the default
    monkeypatch.setenv("MLCOST_CHART_WORKERS", "")
    with pytest.raises(SettingsError):
        Settings()
    monkeypatch.setenv("SLACK_BOT_TOKEN", "")
    monkeypatch.delenv("MLCOST_CHART_WORKERS")
    token = Settings().slack_bot_token
    assert token is not None and token.get_secret_value() == ""
