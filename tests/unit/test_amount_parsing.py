"""What a person may type as a budget amount (/mlcost budget set, the Raise budget modal)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from bot.budgets.admin import parse_amount
from bot.errors import UsageError


@pytest.mark.parametrize(
    ("typed", "amount"),
    [
        ("45000", "45000"),
        ("$45,000", "45000"),
        ("45k", "45000"),
        ("45K", "45000"),
        ("$45k", "45000"),
        ("1.5m", "1500000"),
        ("4,500", "4500"),
        ("1,234,567.89", "1234567.89"),
        ("12000.50", "12000.50"),
        (" 3000 ", "3000"),
        ("0.5", "0.5"),
        ("999,999,999,999.99", "999999999999.99"),
        ("1000000000000", "1000000000000"),
    ],
)
def test_the_accepted_forms(typed: str, amount: str) -> None:
    assert parse_amount(typed) == Decimal(amount)


@pytest.mark.parametrize(
    "typed",
    [
        "12,,0,00",
        "１２３",  # fullwidth digits
        "٣٣",  # Arabic-Indic digits
        "1_000",
        "1E-4k",
        "1e3",
        "12,0000",
        ",500",
        "5.",
        "$",
        "k",
        "lots",
        "nan",
        "Infinity",
        "45 000",
        "45kk",
        "$$45",
        "",
    ],
)
def test_other_forms_are_refused_naming_the_accepted_ones(typed: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse_amount(typed)
    message = str(refused.value)
    assert "45000, $45,000, 45k, 1.5m" in message


def test_a_comma_before_one_or_two_digits_is_ambiguous_not_fifteen() -> None:
    for typed in ("1,5", "12,50"):
        with pytest.raises(UsageError, match="ambiguous"):
            parse_amount(typed)


@pytest.mark.parametrize("typed", ["0", "$0", "0.00", "0k", "-5", "-$5"])
def test_a_zero_or_negative_budget_is_refused(typed: str) -> None:
    with pytest.raises(UsageError, match="a budget is more than zero"):
        parse_amount(typed)


def test_beyond_one_trillion_is_refused_with_the_limit_named() -> None:
    for typed in ("1000000000000.01", "1,000,000,000,001", "1000001m", "1e40"):
        with pytest.raises(UsageError) as refused:
            parse_amount(typed)
        if typed != "1e40":
            assert "1,000,000,000,000" in str(refused.value)


def test_more_than_four_decimal_places_is_refused() -> None:
    with pytest.raises(UsageError, match="decimal places"):
        parse_amount("10.00001")


def test_a_refusal_quotes_what_was_typed_and_only_defuses_markup() -> None:
    with pytest.raises(UsageError) as refused:
        parse_amount("1_000")
    assert "`1_000`" in str(refused.value)  # a code span shows _ as it is
    with pytest.raises(UsageError) as refused:
        parse_amount("<!here>`5`")
    assert "`?!here??5?`" in str(refused.value)
