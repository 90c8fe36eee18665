"""Dates typed by people: ISO days, `today`, `yesterday`, and a message that says what a date is."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.cli import main
from bot.errors import UsageError
from bot.periods import parse_day

TODAY = dt.date(2026, 12, 3)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30", dt.date(2026, 11, 30)),
        ("today", TODAY),
        ("Today", TODAY),
        (" yesterday ", dt.date(2026, 12, 2)),
        ("2026-03-01", dt.date(2026, 3, 1)),
    ],
)
def test_a_day_is_iso_today_or_yesterday(text: str, expected: dt.date) -> None:
    assert parse_day(text, TODAY) == expected


@pytest.mark.parametrize("text", ["notadate", "2026-13-01", "2026-02-30", "", "tomorrow"])
def test_anything_else_says_what_a_date_looks_like(text: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse_day(text, TODAY)
    assert str(refused.value) == f"{text!r} is not a date; use YYYY-MM-DD, today or yesterday"


@pytest.mark.parametrize(
    "argv",
    [
        ["poll", "--as-of", "notadate"],
        ["gate", "recsys", "--as-of", "notadate"],
        ["report", "waste", "--as-of", "notadate"],
        ["ingest", "cost-explorer", "--start", "notadate"],
    ],
)
def test_the_command_line_refuses_a_bad_date_in_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith("'notadate' is not a date; use YYYY-MM-DD, today or yesterday")
    assert "fromisoformat" not in err
