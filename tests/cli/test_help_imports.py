"""`mlcost --help` and each command's --help load none of the heavy libraries (issue 12, item 5)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bot.cli import build_cli

# What made --help take over a second: none of them is needed to describe the commands.
HEAVY = (
    "pandas",
    "matplotlib",
    "boto3",
    "botocore",
    "pyarrow",
    "numpy",
    "sqlalchemy",
    "alembic",
    "slack_sdk",
    "slack_bolt",
    "pydantic",
    "apscheduler",
)


def imported_by(*argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `python -X importtime -m bot.cli ARGV`; return the process and what it imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLCOST_", "SLACK_"))}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bot.cli", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }
    return done, modules


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def command_paths() -> list[list[str]]:
    """Return every command's words, nested ones included (`report spend`, `ingest cur`...)."""
    return [list(command.words) for command in build_cli()[1]]


def test_help_lists_every_command_without_importing_heavy_libraries() -> None:
    done, modules = imported_by("--help")
    assert done.returncode == 0, done.stderr
    assert "import time:" in done.stderr  # the measurement itself worked
    for command in ("db", "registry", "ingest", "report", "serve", "demo", "poll", "review"):
        assert command in done.stdout
    assert heavy_in(modules) == []


def test_the_check_really_sees_heavy_imports() -> None:
    # a command that runs loads SQLAlchemy: the parsing above would see it too
    done, modules = imported_by("--database-url", "sqlite://", "db", "upgrade")
    assert done.returncode == 0, done.stderr
    assert "sqlalchemy" in modules


@pytest.mark.parametrize("words", command_paths(), ids=" ".join)
def test_each_command_help_imports_no_heavy_library(words: list[str]) -> None:
    done, modules = imported_by(*words, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: mlcost " + " ".join(words))
    assert heavy_in(modules) == []


def test_version_and_a_bad_command_line_stay_light() -> None:
    done, modules = imported_by("--version")
    assert done.returncode == 0 and done.stdout.startswith("mlcost ")
    assert heavy_in(modules) == []
    done, modules = imported_by("report", "spend", "--by")
    assert done.returncode == 2 and "expected one argument" in done.stderr
    assert heavy_in(modules) == []


def test_every_subcommand_parser_takes_the_global_options() -> None:
    for command in build_cli()[1]:
        # what a subcommand takes shows in its usage line (argparse keeps its options private)
        usage = command.parser.format_usage()
        assert "--database-url DATABASE_URL" in usage and "[-v]" in usage, usage


def test_each_command_either_runs_or_holds_subcommands() -> None:
    commands = build_cli()[1]
    assert len({c.words for c in commands}) == len(commands)
    for command in commands:
        holds = any(other.words[:-1] == command.words for other in commands)
        assert command.runnable != holds, command.words


def test_poll_lists_the_planners_checks() -> None:
    from bot.cli.poll_cmd import CHECKS
    from bot.poll.plan import ALL_CHECKS

    assert CHECKS == ALL_CHECKS
