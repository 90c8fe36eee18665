"""Cost text is read exactly from what is written, and rounded once, half to even, to 10 places."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from bot.ingest.sources.base import RowError, as_decimal


def read(*cells: str | None) -> list[Decimal]:
    return as_decimal(pa.array(list(cells), pa.string()), len(cells), "BilledCost").to_pylist()


def test_plain_text_is_read_as_before() -> None:
    assert read("1.5", " 2.25 ", None, "", "-0.00000080000", "+3", ".5") == [
        Decimal("1.5"),
        Decimal("2.25"),
        Decimal(0),
        Decimal(0),
        Decimal("-0.0000008"),
        Decimal(3),
        Decimal("0.5"),
    ]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2.5893953072562468e-05", "0.0000258940"),
        ("0.1209620000000000001", "0.1209620000"),
        ("1.2345E+2", "123.45"),
        ("5.2E-9", "0.0000000052"),  # as AWS writes a CUR cost
        ("7.5e-005", "0.000075"),
        ("0.00000000005", "0"),  # half to even: down to 0
        ("0.00000000015", "0.0000000002"),  # half to even: up to 2
        ("0.00000000005000000000000000000001", "0.0000000001"),  # beyond half: up
        # more digits than Arrow keeps (38): read from the text, not cut
        ("0.1234567890" + "5" + "0" * 40 + "1", "0.1234567891"),
        ("0" * 40 + "7.25", "7.25"),
        # a huge negative exponent crashed Arrow's cast (pyarrow 26.0.1); it is zero
        ("1e-999999999", "0"),
        ("99999999999999999999.9999999999", "99999999999999999999.9999999999"),
    ],
)
def test_text_arrow_cannot_read_exactly_is_read_by_decimal(text: str, value: str) -> None:
    assert read("1", text) == [Decimal(1), Decimal(value)]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("abc", "'abc' is not a number"),
        ("NaN", "'NaN' is not a number (NaN and infinity are no amount)"),
        ("-inf", "'-inf' is not a number (NaN and infinity are no amount)"),
        ("1_000", "'1_000' is not a number"),  # Python's Decimal alone would take it
        ("\u0661\u0662", "is not a number"),  # Arabic-Indic digits: likewise
        ("1e20", "'1e20' is too large for the ledger (at most 20 digits before the point)"),
        ("99999999999999999999.99999999995", "is too large"),  # rounds up to 10^20
    ],
)
def test_a_cell_that_is_no_number_is_named_with_its_row(text: str, problem: str) -> None:
    with pytest.raises(RowError) as caught:
        read("1", "2", text)
    assert caught.value.row == 2
    assert str(caught.value).startswith("row 3, column BilledCost: ")
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("kind", "cell", "value"),
    [
        (pa.decimal128(38, 18), "1.000000000050000001", "1.0000000001"),
        (pa.decimal128(38, 18), "-0.000000000050000000", "0"),
        (pa.decimal128(20, 12), "99999999.999999999999", "100000000"),  # carries over its type
        (pa.decimal128(38, 28), "9999999999.9999999999999999999999999999", "10000000000"),
        (pa.float64(), "2.5893953072562468e-05", "0.0000258940"),
    ],
)
def test_typed_columns_are_rounded_once_half_to_even(
    kind: pa.DataType, cell: str, value: str
) -> None:
    number = float(cell) if pa.types.is_floating(kind) else Decimal(cell)
    column = pa.chunked_array([pa.array([number, None], kind)])
    assert as_decimal(column, 2, "cost").to_pylist() == [Decimal(value), Decimal(0)]


def test_a_decimal_that_rounds_past_the_ledger_is_refused_not_wrapped() -> None:
    # Arrow's round of a decimal(38, 18) this large wrapped to 0 without a word
    column = pa.array([Decimal(1), Decimal("99999999999999999999.999999999999999999")])
    with pytest.raises(RowError, match=r"row 2, column cost: .* is too large for the ledger"):
        as_decimal(column.cast(pa.decimal128(38, 18)), 2, "cost")


def test_a_bad_cell_among_repeated_exponents_is_named_by_its_own_row() -> None:
    cells = ["2.5893953072562468e-05", "5.2E-9", "2.5893953072562468e-05", "1e", "5.2E-9", "1e"]
    with pytest.raises(RowError, match=r"^row 4, column BilledCost: '1e' is not a number$"):
        read(*cells)
