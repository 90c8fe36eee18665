"""Bulk inserts (COPY on PostgreSQL, executemany on SQLite) store what the ORM would."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from sqlalchemy import Boolean, select
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session

from bot.db import tables
from bot.db.bulk_insert import insert_arrow, sqlite_values
from bot.db.schema import DailySpend, IngestionRun
from bot.db.tables import ExactDecimal, Money, Quantity

AWKWARD_TEXT = ['comma, "quoted"', "line\nbreak", "", "naïve ☃", "\\N", "NULL"]


def test_arrow_rows_round_trip_exactly(session: Session) -> None:
    run = IngestionRun(source="test", location="-")
    session.add(run)
    session.flush()
    n = len(AWKWARD_TEXT)
    columns = {
        "run_id": pa.array([run.id] * n, pa.int64()),
        "day": pa.array([dt.date(2026, 11, d + 1) for d in range(n)], pa.date32()),
        "billing_period": pa.array([dt.date(2026, 11, 1)] * n, pa.date32()),
        "provider": pa.array(AWKWARD_TEXT),
        "billing_account": pa.array(["111"] * n),
        "sub_account": pa.array([None, "", "x", None, "y", "z"]),
        "estimated": pa.array([True, False] * 3),
        "stage": pa.array(["other"] * n),
        "attribution": pa.array(["unallocated"] * n),
        "currency": pa.array(["USD", "EUR", "JPY", "USD", "GBP", "CHF"]),
    }
    money = [
        Decimal("1E-10"),
        Decimal("-5E-7"),
        Decimal("123456789.0123456789"),
        Decimal(0),
        Decimal("-0.01"),
        Decimal("0.0000015"),
    ]
    for column in DailySpend.__table__.columns:
        if isinstance(column.type, ExactDecimal):
            columns[column.name] = pa.array(money, pa.decimal128(38, 10))
        elif column.name in columns or column.name == "id":
            continue
        elif isinstance(column.type, Boolean):
            columns[column.name] = pa.array([False, True] * 3)
        else:
            columns[column.name] = pa.array([f"{column.name}-{i}" for i in range(n)])
    insert_arrow(
        tables.daily_spend,
        pa.table(columns),
        connection=session.connection(),
    )
    stored = session.scalars(
        select(DailySpend).where(DailySpend.run_id == run.id).order_by(DailySpend.day)
    ).all()
    assert [r.provider for r in stored] == AWKWARD_TEXT
    assert [r.sub_account for r in stored] == [None, "", "x", None, "y", "z"]
    assert [r.estimated for r in stored] == [True, False] * 3
    assert [r.billed_cost for r in stored] == money
    # Quantities keep 6 places (-5E-7, a tie, is left out: SQLite's scaled integers round it
    # half-even, PostgreSQL's NUMERIC half away from zero, as with the ORM's inserts).
    quantities = [r.usage_quantity for r in stored]
    expected = [0, None, Decimal("123456789.012346"), 0, Decimal("-0.01"), Decimal("0.000002")]
    assert [q for q, e in zip(quantities, expected, strict=True) if e is not None] == [
        e for e in expected if e is not None
    ]
    assert stored[2].service == "service-2"
    assert [r.node_offset for r in stored] == [False, True] * 3


@pytest.mark.parametrize("column_type", [Money, Quantity])
def test_sqlite_values_match_the_column_types_bind_processor(column_type: Any) -> None:
    values = [
        Decimal("0.0000000001"),
        Decimal("-0.0000005"),
        Decimal("0.0000015"),
        Decimal("0.0000025"),
        Decimal("-12345.6789012345"),
        Decimal("922337203.6854775807"),
        Decimal(0),
        None,
    ]
    if column_type is Quantity:
        values[5] = Decimal("9223372036854.775807")
    dialect = sqlite.dialect()
    process = column_type.dialect_impl(dialect).bind_processor(dialect)
    expected = [process(v) for v in values]
    column = pa.array(values, pa.decimal128(38, 10))
    assert sqlite_values(column, column_type, dialect) == expected


def test_a_sqlite_load_gets_a_page_cache_that_holds_its_pages(session: Session) -> None:
    connection = session.connection()
    if connection.dialect.name != "sqlite":
        pytest.skip("SQLite's page cache")
    run = IngestionRun(source="test", location="-")
    session.add(run)
    session.flush()
    connection.exec_driver_sql("PRAGMA cache_size = -2000")  # SQLite's default, 2 MiB
    rows = {
        "run_id": pa.array([run.id], pa.int64()),
        "day": pa.array([dt.date(2026, 11, 1)], pa.date32()),
        "billing_period": pa.array([dt.date(2026, 11, 1)], pa.date32()),
        "provider": pa.array(["AWS"]),
        "billing_account": pa.array(["111"]),
        "service": pa.array(["Amazon S3"]),
        "charge_category": pa.array(["Usage"]),
        "stage": pa.array(["storage"]),
        "attribution": pa.array(["unallocated"]),
        "estimated": pa.array([False]),
        **{
            name: pa.array([Decimal("1.5")], pa.decimal128(38, 10))
            for name in ("billed_cost", "effective_cost", "usage_quantity", "gpu_hours")
        },
    }
    insert_arrow(
        tables.daily_spend,
        pa.table(rows),
        connection=connection,
    )
    assert connection.exec_driver_sql("PRAGMA cache_size").scalar_one() == -65_536  # KiB
    assert connection.exec_driver_sql("PRAGMA synchronous").scalar_one() == 2  # FULL, as before
    connection.exec_driver_sql("PRAGMA cache_size = -200000")
    insert_arrow(
        tables.daily_spend,
        pa.table(rows),
        connection=connection,
    )
    assert connection.exec_driver_sql("PRAGMA cache_size").scalar_one() == -200_000  # not lowered
    connection.exec_driver_sql("PRAGMA cache_size = -2000")
