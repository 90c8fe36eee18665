"""CUR in Athena: the grouping pushed down as SQL, polled with start_query_execution."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from bot.errors import IngestError, aws_error_reason
from bot.ingest.attribution import normalize_tag_key
from bot.ingest.sources.base import (
    DEFAULT_CURRENCY,
    TAG_PREFIX,
    GroupedCharges,
    Progress,
    RowError,
    SourceData,
    as_date,
    as_decimal,
    source_data,
)

log = logging.getLogger(__name__)

_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MONTH_RE = re.compile(r"^\d{4}-\d{2}$")


# Columns a CUR table holds only when the bill has them: resource IDs only when the report
# includes them, savings_plan_* only once the account has Savings Plans, reservation_* only with
# reservations, each tag column only once its tag is activated. A query naming a column its
# table lacks fails (COLUMN_NOT_FOUND), so each is named only when the table has it.
_OPTIONAL_TEXT = (
    ("usage_type", "line_item_usage_type"),
    ("region", "product_region"),
    ("resource_id", "line_item_resource_id"),
    ("instance_type", "product_instance_type"),
    ("line_item_type", "line_item_line_item_type"),
    ("currency", "line_item_currency_code"),
    ("unit", "pricing_unit"),
)
_REQUIRED = (
    "line_item_usage_start_date",
    "bill_billing_period_start_date",
    "bill_payer_account_id",
    "line_item_usage_account_id",
    "line_item_product_code",
    "line_item_unblended_cost",
    "line_item_usage_amount",
)


def build_query(
    database: str,
    table: str,
    month: str,
    tag_columns: dict[str, str],
    columns: set[str] | None = None,
) -> str:
    """Return the SQL that groups one CUR month by day, account, service, resource and tags.

    `columns` are the table's (from its metadata): an optional column it lacks is read as empty,
    and a discount column it lacks (no Savings Plans or reservations on this bill) leaves its
    line items at their unblended cost. None: the table is taken to have every column.
    """
    for ident in (database, table, *tag_columns.values()):
        if not _IDENT_RE.match(ident):
            raise IngestError(f"athena: {ident!r} is not a plain SQL identifier")
    if not _MONTH_RE.match(month):
        raise IngestError(f"athena: month {month!r} must look like 2026-11")
    known = None if columns is None else {c.lower() for c in columns}
    if known is not None:
        missing = [c for c in _REQUIRED if c not in known]
        if missing:
            raise IngestError(
                f"athena: {database}.{table} is not a CUR table: it has no {', '.join(missing)}"
            )

    def has(column: str) -> bool:
        return known is None or column.lower() in known

    def text(column: str) -> str:
        return f"coalesce({column}, '')" if has(column) else "''"

    product = "nullif(product_product_name, ''), " if has("product_product_name") else ""
    selected = "".join(f",\n  {text(col)} AS {name}" for name, col in _OPTIONAL_TEXT)
    tags = "".join(f',\n  {text(col)} AS "tag_{key}"' for key, col in sorted(tag_columns.items()))
    discounts = [
        ("SavingsPlanCoveredUsage", "savings_plan_savings_plan_effective_cost"),
        ("SavingsPlanNegation", "0"),
        ("SavingsPlanUpfrontFee", "0"),
        ("DiscountedUsage", "reservation_effective_cost"),
    ]
    cases = "".join(
        f"\n      WHEN '{item}' THEN {value}"
        for item, value in discounts
        if value == "0" or has(value)
    )
    type_column = (
        "line_item_line_item_type" if has("line_item_line_item_type") else "CAST(NULL AS varchar)"
    )
    group_count = 12 + len(tag_columns)
    return f"""SELECT
  CAST(date(line_item_usage_start_date) AS varchar) AS day,
  CAST(date(bill_billing_period_start_date) AS varchar) AS billing_period,
  bill_payer_account_id AS billing_account,
  line_item_usage_account_id AS sub_account,
  coalesce({product}line_item_product_code) AS service{selected}{tags},
  CAST(sum(line_item_unblended_cost) AS decimal(30, 10)) AS billed,
  CAST(sum(CASE {type_column}{cases}
      ELSE line_item_unblended_cost END) AS decimal(30, 10)) AS effective,
  CAST(sum(line_item_usage_amount) AS decimal(30, 10)) AS quantity
FROM "{database}"."{table}"
WHERE bill_billing_period_start_date = timestamp '{month}-01 00:00:00'
GROUP BY {", ".join(str(i) for i in range(1, group_count + 1))}"""


class AthenaSource:
    """Run the grouping query in Athena and read the (small) result."""

    kind = "athena"

    def __init__(
        self,
        client: Any,
        *,
        database: str,
        table: str,
        month: str,
        output: str | None,
        workgroup: str | None = None,
        tag_columns: dict[str, str] | None = None,
        poll_seconds: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
        timeout_seconds: float = 1800,
        default_currency: str = DEFAULT_CURRENCY,
    ) -> None:
        self.client = client
        self.database, self.table, self.month = database, table, month
        self.output, self.workgroup = output, workgroup
        self.explicit_tags = tag_columns or {}
        self.poll_seconds, self.sleep, self.timeout = poll_seconds, sleep, timeout_seconds
        self.location = f"athena:{database}.{table}/{month}"
        self.default_currency = default_currency

    def tag_columns(self, tag_keys: set[str]) -> dict[str, str]:
        """Map each wanted tag key to its CUR column (`resource_tags_user_<key>`)."""
        columns = {normalize_tag_key(k): v for k, v in self.explicit_tags.items()}
        for key in tag_keys:
            columns.setdefault(key, f"resource_tags_user_{key}")
        return columns

    def table_columns(self) -> set[str] | None:
        """Return the CUR table's columns from its metadata; None when they cannot be read."""
        params: dict[str, Any] = {
            "CatalogName": "AwsDataCatalog",
            "DatabaseName": self.database,
            "TableName": self.table,
        }
        if self.workgroup:
            params["WorkGroup"] = self.workgroup
        try:
            table = self.client.get_table_metadata(**params)["TableMetadata"]
        except Exception as exc:  # e.g. no glue:GetTable permission: query as before
            log.warning(
                "%s: could not read the table's columns (%s); the query names every CUR column",
                self.location,
                aws_error_reason(exc),
            )
            return None
        return {c["Name"] for c in [*table.get("Columns", []), *table.get("PartitionKeys", [])]}

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        tags = self.tag_columns(tag_keys)
        columns = self.table_columns()
        sql = build_query(self.database, self.table, self.month, tags, columns)
        params: dict[str, Any] = {
            "QueryString": sql,
            "QueryExecutionContext": {"Database": self.database},
        }
        if self.output:
            params["ResultConfiguration"] = {"OutputLocation": self.output}
        if self.workgroup:
            params["WorkGroup"] = self.workgroup
        requests = 1  # the table's metadata
        try:
            query_id = self.client.start_query_execution(**params)["QueryExecutionId"]
            requests += 1
            waited = 0.0
            while True:
                status = self.client.get_query_execution(QueryExecutionId=query_id)
                requests += 1
                state = status["QueryExecution"]["Status"]["State"]
                if state == "SUCCEEDED":
                    break
                if state in ("FAILED", "CANCELLED"):
                    reason = status["QueryExecution"]["Status"].get("StateChangeReason", state)
                    raise IngestError(f"{self.location}: query {state.lower()}: {reason}")
                if waited >= self.timeout:
                    raise IngestError(f"{self.location}: query still {state} after {waited:.0f}s")
                self.sleep(self.poll_seconds)
                waited += self.poll_seconds
            header: list[str] | None = None
            grouped = GroupedCharges(
                default_currency=self.default_currency, currency_field="line_item_currency_code"
            )
            if progress is not None:
                progress.set_total(None, "pages")
            for page in self.client.get_paginator("get_query_results").paginate(
                QueryExecutionId=query_id
            ):
                requests += 1
                rows = [
                    [c.get("VarCharValue") for c in r["Data"]] for r in page["ResultSet"]["Rows"]
                ]
                if header is None and rows:
                    header, rows = [str(h) for h in rows[0]], rows[1:]
                if rows and header:
                    try:
                        grouped.add(_to_table(header, rows))
                    except RowError as exc:  # its row counts from the start of this page
                        where = None if exc.row is None else grouped.rows + exc.row + 1
                        raise IngestError(
                            f"{self.location}: query result {exc.describe(where)}"
                        ) from None
                if progress is not None:
                    progress.advance(1, rows=len(rows))
        except IngestError:
            raise
        except Exception as exc:
            raise IngestError(
                f"{self.location}: Athena request failed ({aws_error_reason(exc)})"
            ) from None
        return source_data(grouped, api_requests=requests)


def _to_table(header: list[str], rows: list[list[Any]]) -> pa.Table:
    n = len(rows)
    cols = {name: [r[i] if i < len(r) else None for r in rows] for i, name in enumerate(header)}

    def text(name: str) -> pa.Array:
        return pa.array([v or "" for v in cols.get(name, [""] * n)], pa.string())

    item_type = cols.get("line_item_type", [""] * n)
    category = [
        "Tax" if t == "Tax" else "Credit" if t in ("Credit", "Refund") else "Usage"
        for t in item_type
    ]
    table: dict[str, Any] = {
        "day": as_date(text("day"), "day"),
        "billing_period": as_date(text("billing_period"), "billing_period"),
        "provider": pa.array(["AWS"] * n),
        "billing_account": text("billing_account"),
        "sub_account": text("sub_account"),
        "service": text("service"),
        "service_category": pa.array([""] * n),
        "usage_type": text("usage_type"),
        "region": text("region"),
        "resource_id": text("resource_id"),
        "instance_type": text("instance_type"),
        "charge_category": pa.array(category, pa.string()),
        "currency": text("currency"),
        "unit": text("unit"),
        "estimated": pa.array([False] * n),
    }
    for name in header:
        if name.startswith("tag_"):
            table[TAG_PREFIX + name[4:]] = text(name)
    for name in ("billed", "effective", "quantity"):
        table[name] = as_decimal(pa.array(cols.get(name, [None] * n), pa.string()), n, name)
    return pa.table(table)
