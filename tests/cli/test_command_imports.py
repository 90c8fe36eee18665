"""Each command imports only what it runs (issue 24, item 1).

A report, the gate or the audit trail on a database at head loads no Slack SDK, no charts, no
AWS SDK, no scheduler, no pandas or pyarrow, no Alembic and no ORM; an ingestion of a local
file loads no Slack SDK, charts, AWS SDK, scheduler, Alembic, pandas, pydantic or ORM (issue 24,
item 2: pandas alone took about 0.2 s and 50 MB of `ingest cur`, which reads with pyarrow only).
Measured as `python -X importtime` of the real command line, like the --help test, on the demo's
database.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.conftest import DemoRun
from tests.cli.test_help_imports import imported_by
from tests.conftest import DATA

# none of these is needed to read the ledger and print an answer
NOT_FOR_READING = (
    "matplotlib",
    "boto3",
    "botocore",
    "slack_sdk",
    "slack_bolt",
    "apscheduler",
    "alembic",
    "waitress",
    "pandas",
    "pyarrow",
    "numpy",
    "bot.slack",
    "bot.notify.outbox",
    # on SQLite, PostgreSQL's dialect (and its drivers' modules, 40 ms) is not needed either
    "sqlalchemy.dialects.postgresql",
    "psycopg",
    # settings are read by bot/config.py itself (pydantic's import took about 0.08 s)
    "pydantic",
    # the tables are read on a Core Connection (bot/db/reading.py): importing the ORM, declaring
    # its classes and configuring their mappers took about 0.12 s of every reading command
    "sqlalchemy.orm",
    "bot.db.schema",
)
# an ingestion reads with pyarrow and numpy, and nothing of pandas (pyarrow would import it on its
# first conversion of a Python value, were it not told there is none: bot/cli/ingest_cmd.py).
# pyarrow's refused attempt shows in the log as `pandas` alone; loading it runs pandas.core.
NOT_FOR_INGESTING = (
    "pandas.core",
    "matplotlib",
    "boto3",
    "botocore",
    "slack_sdk",
    "slack_bolt",
    "apscheduler",
    "alembic",
    "waitress",
    "bot.slack",
    # the stored registry is read by bot/registry/stored.py, its shapes checked by hand
    # (pydantic's import and the registry file's models took about 0.07 s of `ingest cur`)
    "pydantic",
    "bot.registry.spec",
    # the ledger is written on a Core Connection in a transaction (CliContext.writing): importing
    # the ORM, declaring its classes and configuring their mappers took about 0.1 s of an ingest
    "sqlalchemy.orm",
    "bot.db.schema",
)


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Return the modules in `modules` that are, or are inside, one of `names`."""
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.fixture
def demo_database(demo_run: DemoRun, tmp_path: Path) -> str:
    """A copy of the shared demo's database (at head), as a --database-url."""
    copy = tmp_path / "demo.db"
    shutil.copy(demo_run.folder / "mlcost-demo.db", copy)
    return f"sqlite:///{copy}"


READING_COMMANDS = [
    ["report", "spend", "--month", "2026-11"],
    ["report", "spend", "--month", "2026-11", "--format", "csv"],
    ["report", "chargeback", "--month", "2026-11"],
    ["gate", "recsys", "--as-of", "2026-11-30"],
    ["audit"],
    ["review", "show", "--month", "2026-11"],
]


@pytest.mark.parametrize("words", READING_COMMANDS, ids=" ".join)
def test_reading_commands_load_no_slack_charts_aws_or_migrations(
    demo_database: str, words: list[str]
) -> None:
    done, modules = imported_by("--database-url", demo_database, *words)
    assert done.returncode in (0, 1), done.stderr  # the gate exits 1 when it says no
    assert "sqlalchemy" in modules  # it did read the database
    assert loaded(modules, NOT_FOR_READING) == []


def test_the_waste_report_loads_no_slack_sdk_charts_scheduler_migrations_or_orm(
    demo_database: str,
) -> None:
    # the waste report's text shares its words with the Slack list (bot.slack.blocks.waste), and
    # its checks name the scanners, which catch botocore's errors; neither needs the Slack SDK
    done, modules = imported_by(
        "--database-url", demo_database, "report", "waste", "--as-of", "2026-11-30"
    )
    assert done.returncode == 0, done.stderr
    assert "bot.waste.findings" in modules  # it did build the report
    heavy = (
        "matplotlib",
        "slack_sdk",
        "slack_bolt",
        "apscheduler",
        "alembic",
        "waitress",
        "pandas",
        # the Block Kit helpers it shares name the reports' window as a type only
        # (bot.spend.daily imported pydantic's registry spec and the ORM: 0.14 s of 0.64 s)
        "pydantic",
        "bot.spend.daily",
        # the waste checks and lists read the tables on a Core Connection (CliContext.reading)
        "sqlalchemy.orm",
        "bot.db.schema",
    )
    assert loaded(modules, heavy) == []


INGESTING_COMMANDS = [
    ["focus", str(DATA / "focus_sample.csv")],
    ["cur", *map(str, sorted(DATA.glob("*2018-WorkshopCUR-*.parquet")))],
]


@pytest.mark.parametrize("words", INGESTING_COMMANDS, ids=lambda words: words[0])
def test_ingesting_a_file_loads_no_slack_charts_aws_migrations_pandas_pydantic_or_orm(
    demo_database: str, words: list[str]
) -> None:
    done, modules = imported_by("--database-url", demo_database, "ingest", *words)
    assert done.returncode == 0, done.stderr
    assert "reconciliation OK" in done.stdout
    assert "pyarrow" in modules
    assert loaded(modules, NOT_FOR_INGESTING) == []


def test_a_new_database_is_migrated_with_alembic(tmp_path: Path) -> None:
    # the check above is not blind: the first use of a database does load Alembic
    done, modules = imported_by("--database-url", f"sqlite:///{tmp_path / 'new.db'}", "audit")
    assert done.returncode == 0, done.stderr
    assert "alembic" in modules
