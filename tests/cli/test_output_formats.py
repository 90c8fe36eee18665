"""Every command's terminal output reads one way (issue 23, item 11): money as `$1,234.56`
(one precision per list), days as `YYYY-MM-DD` in tables and arguments' echoes, real plurals,
no trailing spaces, no Slack markup. Each command runs against the demo's database."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bot.cli import main
from tests.cli.conftest import DemoRun

COMMANDS = [
    ["report", "spend", "--month", "2026-11", "--by", "model,stage"],
    ["report", "spend", "--month", "2026-11", "--by", "team"],
    ["report", "spend", "--month", "2026-11", "--by", "day"],
    ["report", "spend", "--month", "2026-11", "--by", "provider,service"],
    ["report", "spend", "--month", "2026-11", "--by", "run", "--model", "recsys"],
    ["report", "chargeback", "--month", "2026-11", "--detail", "account"],
    ["report", "waste", "--as-of", "2026-11-30"],
    ["review", "show", "--month", "2026-11"],
    ["gate", "recsys", "--as-of", "2026-11-30"],
    ["gate", "search-ranker", "--as-of", "2026-11-30"],
    ["audit", "--limit", "40"],
    ["poll", "--as-of", "2026-11-25", "--dry-run", "--no-fetch"],
]
MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
# $1,234 or $1,234.56 (or $0.0292 for a unit cost), optionally negative
MONEY = re.compile(r"-?\$(?:[0-9]{1,3}(?:,[0-9]{3})*)(?:\.[0-9]{2,4})?(?![0-9,])")


@pytest.fixture(scope="module")
def outputs(demo_run: DemoRun, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Run each command on a copy of the demo's database; return what each printed."""
    folder = tmp_path_factory.mktemp("formats")
    db = folder / "demo.db"
    shutil.copy(Path(demo_run.folder) / "mlcost-demo.db", db)
    printed = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
        for command in COMMANDS:
            import contextlib
            import io

            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                main(["--database-url", f"sqlite:///{db}", "-q", *command])
            printed[" ".join(command)] = buffer.getvalue()
    return printed


def test_every_command_prints_something(outputs: dict[str, str]) -> None:
    assert all(out.strip() for out in outputs.values()), [k for k, v in outputs.items() if not v]


def test_no_trailing_spaces_and_no_plural_markers(outputs: dict[str, str]) -> None:
    for command, out in outputs.items():
        assert not [line for line in out.splitlines() if line != line.rstrip()], command
        assert not re.findall(r"\b[0-9][0-9,]* [a-zA-Z -]+\(s\)", out), command
        assert not re.findall(r"\b1 [a-z]+s (?:evaluated|due|found|open)\b", out), command


def test_money_reads_as_money(outputs: dict[str, str]) -> None:
    for command, out in outputs.items():
        # no bare `1234.56 USD` and no amount without its thousands separators
        assert not re.findall(r"[0-9]\.[0-9]{2} (?:USD|EUR|GBP)\b", out), command
        assert not re.findall(r"\$[0-9]{4,}", out), command
        for amount in re.findall(r"-?\$[0-9][0-9,.]*[0-9]", out):
            assert MONEY.fullmatch(amount), (command, amount)


def test_days_read_one_way(outputs: dict[str, str]) -> None:
    for command, out in outputs.items():
        assert not re.findall(rf"\b[0-9]{{1,2}} (?:{MONTHS})\b", out), command  # `18 Nov`
        assert not re.findall(rf"\b(?:{MONTHS}) 0[0-9]\b", out), command  # `Nov 01`
        assert not re.findall(rf"\b({MONTHS}) [0-9]+–\1\b", out), command  # `Nov 2–Nov 8`


def test_gate_reports_show_one_money_precision(outputs: dict[str, str]) -> None:
    for command in ("gate recsys --as-of 2026-11-30", "gate search-ranker --as-of 2026-11-30"):
        amounts = MONEY.findall(outputs[command])
        assert amounts and all(re.search(r"\.[0-9]{2}$", a) for a in amounts), amounts


def test_no_slack_markup_on_the_terminal(outputs: dict[str, str]) -> None:
    for command, out in outputs.items():
        assert not re.findall(r"<@U|<#C|&lt;|&gt;|&amp;|:[a-z_]+:(?= )", out), command


def test_no_output_ends_in_a_blank_line(outputs: dict[str, str]) -> None:
    for command, out in outputs.items():
        assert out.endswith("\n") and not out.endswith("\n\n"), command
