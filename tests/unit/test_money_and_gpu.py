import datetime as dt
from decimal import Decimal

import pytest

from bot.errors import UsageError
from bot.ingest.gpu import find_instance_type, gpu_count, gpu_hours
from bot.money import MoneyError, format_money, format_percent, parse_money, percent_of
from bot.periods import month_period, parse_window


def test_money_parsing_is_exact() -> None:
    assert parse_money("0.00000080000") == Decimal("8E-7")
    assert parse_money("NULL") == 0
    assert parse_money(0.1) == Decimal("0.1")
    with pytest.raises(MoneyError):
        parse_money("12abc")


def test_finance_formatting() -> None:
    assert format_money(Decimal("12345.4")) == "$12,345"
    assert format_money(Decimal("-3.456")) == "-$3.46"
    assert format_percent(percent_of(Decimal(81), Decimal(100))) == "81 %"
    assert percent_of(Decimal(1), Decimal(0)) is None


def test_gpu_counts() -> None:
    assert gpu_count("p4d.24xlarge") == 8
    assert gpu_count("ml.g5.12xlarge") == 4
    assert gpu_count("m5.large") == 0
    assert gpu_hours("g5.48xlarge", Decimal("2.5")) == Decimal("20.0")
    assert find_instance_type("$1.624 per On Demand Linux g5.4xlarge Instance Hour") == "g5.4xlarge"


def test_periods() -> None:
    nov = month_period("2026-11")
    assert (nov.start, nov.end, nov.days) == (dt.date(2026, 11, 1), dt.date(2026, 12, 1), 30)
    window = parse_window("30d", dt.date(2026, 11, 30))
    assert (window.start, window.end) == (dt.date(2026, 11, 1), dt.date(2026, 12, 1))
    for bad in ("2026-13", "nov", "0d", "9999d"):
        with pytest.raises(UsageError):
            parse_window(bad, dt.date(2026, 11, 30))
