"""Insert an Arrow table into a database table in bulk, inside the caller's transaction."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
from sqlalchemy import Connection, Date, Table, insert
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

from bot.db.tables import ExactDecimal

CHUNK_ROWS = 20_000
# SQLite's page cache for a bulk load, in KiB. At SQLite's default (2 MiB) a load larger than the
# cache spills dirty table and index pages mid-transaction: 750,941 ledger rows (a generated
# month of 1M CUR rows) took 8.7 s to insert, 6.7 s with 64 MiB; the 27,517 rows of the three
# test months fit either way (0.19 s). Pages are allocated as used; the setting is per connection.
SQLITE_LOAD_CACHE_KIB = 65_536


def insert_arrow(
    target: Table, rows: pa.Table, *, connection: Connection, chunk_rows: int = CHUNK_ROWS
) -> None:
    """Insert rows whose columns are named as the target's: COPY on psycopg, else executemany.

    Values are converted chunk by chunk, so memory stays bound by the chunk, not the table.
    """
    if rows.num_rows == 0:
        return
    batches = rows.to_batches(max_chunksize=chunk_rows)
    if connection.dialect.driver == "psycopg":
        _copy_csv(target, rows.column_names, batches, connection)
    elif connection.dialect.name == "sqlite":
        _sqlite_executemany(target, rows.column_names, batches, connection)
    else:
        statement = insert(target)
        for batch in batches:
            connection.execute(statement, batch.to_pylist())


def _copy_csv(
    target: Table, names: list[str], batches: list[pa.RecordBatch], connection: Connection
) -> None:
    # Every non-null value quoted, nulls bare: PostgreSQL's CSV reads "" as text, nothing as NULL.
    options = pcsv.WriteOptions(include_header=False, quoting_style="all_valid")
    quote = connection.dialect.identifier_preparer
    columns = ", ".join(quote.quote(name) for name in names)
    sql = f"COPY {quote.format_table(target)} ({columns}) FROM STDIN (FORMAT csv)"
    driver: Any = connection.connection.driver_connection
    with driver.cursor() as cursor, cursor.copy(sql) as copy:
        for batch in batches:
            sink = pa.BufferOutputStream()
            pcsv.write_csv(batch, sink, options)
            copy.write(sink.getvalue().to_pybytes())


def _sqlite_executemany(
    target: Table, names: list[str], batches: list[pa.RecordBatch], connection: Connection
) -> None:
    dialect = connection.dialect
    quote = dialect.identifier_preparer
    sqlite_load_cache(connection)
    sql = (
        f"INSERT INTO {quote.format_table(target)} ({', '.join(quote.quote(n) for n in names)}) "
        f"VALUES ({', '.join('?' * len(names))})"
    )
    types = [target.c[name].type for name in names]
    for batch in batches:
        columns = [sqlite_values(batch.column(i), types[i], dialect) for i in range(len(names))]
        connection.exec_driver_sql(sql, list(zip(*columns, strict=True)))


def sqlite_load_cache(connection: Connection) -> None:
    """Raise this SQLite connection's page cache to SQLITE_LOAD_CACHE_KIB, never lower it.

    Durability is unchanged: journal mode and synchronous stay as the engine set them (WAL, FULL),
    so a committed ingestion survives a crash and an interrupted one leaves nothing.
    """
    cache = int(connection.exec_driver_sql("PRAGMA cache_size").scalar_one())
    if cache > 0:  # pages, not KiB
        cache = -cache * int(connection.exec_driver_sql("PRAGMA page_size").scalar_one()) // 1024
    if -cache < SQLITE_LOAD_CACHE_KIB:
        connection.exec_driver_sql(f"PRAGMA cache_size = -{SQLITE_LOAD_CACHE_KIB}")


def sqlite_values(column: pa.Array, type_: TypeEngine[Any], dialect: Dialect) -> list[Any]:
    """Return a column's values as the column type binds them on SQLite.

    Exact decimals (scaled integers) and dates are converted in Arrow; anything else goes through
    the type's own bind processor, value by value.
    """
    if isinstance(type_, ExactDecimal) and pa.types.is_decimal(column.type):
        return scaled_integers(column, type_.scale).to_pylist()
    if isinstance(type_, Date) and pa.types.is_date32(column.type):
        return pc.cast(column, pa.string()).to_pylist()  # ISO, as SQLite's DATE stores it
    values = column.to_pylist()
    process = type_.dialect_impl(dialect).bind_processor(dialect)
    return values if process is None else [process(v) for v in values]


def scaled_integers(column: pa.Array, scale: int) -> pa.Array:
    """Round a decimal column half-even to `scale` places and return value * 10**scale as int64."""
    if column.type.scale > scale:
        column = pc.round(column, ndigits=scale, round_mode="half_to_even")
    exact = pc.cast(column, pa.decimal128(38, scale))
    return pc.cast(exact.view(pa.decimal128(38, 0)), pa.int64())
