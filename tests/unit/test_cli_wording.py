"""What the CLI prints reads right: real plurals, tiny unit costs, no trailing spaces
(issue 23, item 11)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from bot.cli.review_cmd import render_economics
from bot.counts import counted
from bot.economics.unit_costs import ModelEconomics, PeriodUsage
from bot.economics.verdicts import Verdict, VerdictKind
from bot.periods import month_period


def test_counted_says_one_thing_and_many_things() -> None:
    assert counted(1, "finding") == "1 finding"
    assert counted(0, "finding") == "0 findings"
    assert counted(2, "team") == "2 teams"
    assert counted(1_204, "row") == "1,204 rows"
    assert counted(3, "team review") == "3 team reviews"
    assert counted(2, "entry", "entries") == "2 entries"


def economics(serving: Decimal) -> ModelEconomics:
    nov, oct_ = month_period("2026-11"), month_period("2026-10")
    usage = PeriodUsage(
        nov,
        cost=Decimal("100") + serving,
        cost_by_stage={"training": Decimal("100"), "serving": serving},
        units=Decimal("10000000"),
    )
    healthy = Verdict(VerdictKind.HEALTHY, "Healthy", "")
    return ModelEconomics("ocr", "vision", "predictions", usage, PeriodUsage(oct_), healthy)


def row_of(table: str, model: str) -> str:
    return next(line for line in table.splitlines() if line.startswith(model))


def test_a_unit_cost_that_rounds_to_nothing_says_it_is_under_the_last_place() -> None:
    table = render_economics([economics(Decimal("0.0004"))], month_period("2026-11"))
    assert "< $0.0001" in row_of(table, "ocr")  # $0.0004 over 10M units: $0.00004 per 1k
    assert "$0.0000" not in table


def test_a_unit_cost_of_exactly_nothing_is_zero_not_a_rounded_amount() -> None:
    table = render_economics([economics(Decimal(0))], month_period("2026-11"))
    assert "$0.0000" not in table and "< $" not in table
    assert " $0 " in row_of(table, "ocr") + " "


def test_the_economics_table_has_no_trailing_spaces_and_numbers_align_right() -> None:
    table = render_economics(
        [economics(Decimal("5")), economics(Decimal("12345.67"))], month_period("2026-11")
    )
    lines = table.splitlines()
    assert all(line == line.rstrip() for line in lines)
    header, rule = lines[1], lines[2]
    cost_end = header.index("cost") + len("cost")
    assert rule[cost_end - 1] == "-" and rule[cost_end] == " "  # the title ends with its column


def test_days_read_one_way() -> None:
    import datetime as dt

    from bot.periods import day_words, days_words, period_words

    nov = [dt.date(2026, 11, d) for d in (1, 18, 20)]
    assert day_words(nov[1]) == "Nov 18" and day_words(nov[0], year=True) == "Nov 1, 2026"
    assert days_words(nov[1], nov[2]) == "Nov 18–20"
    assert days_words(nov[1], nov[2], year=True) == "Nov 18–20, 2026"
    assert days_words(dt.date(2026, 10, 26), nov[0]) == "Oct 26–Nov 1"
    assert days_words(dt.date(2026, 12, 28), dt.date(2027, 1, 3)) == "Dec 28, 2026–Jan 3, 2027"
    assert days_words(nov[1], nov[1]) == "Nov 18"
    assert period_words("w2026-11-16") == "week of Nov 16, 2026"
    assert period_words("d2026-11-18") == "Nov 18, 2026"
    assert period_words("2026-11") == "2026-11"


def test_an_ingestion_of_one_row_says_row(capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli.ingest_cmd import print_report
    from bot.ingest.ledger import CurrencyTotals, IngestReport

    one = Decimal(1)
    totals = [CurrencyTotals("USD", one, one, one, Decimal(0))]
    print_report(IngestReport(1, "cost-explorer", "ce", 1, 1, totals, 0, 1))
    first = capsys.readouterr().out.splitlines()[0]
    assert first == "cost-explorer ce: read 1 row, wrote 1 daily row (replaced 0), 1 API request"
