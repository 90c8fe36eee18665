"""CUR in Athena: the grouping pushed down as SQL, polled with start_query_execution."""

from __future__ import annotations

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

_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MONTH_RE = re.compile(r"^\d{4}-\d{2}$")


def build_query(database: str, table: str, month: str, tag_columns: dict[str, str]) -> str:
    """Return the SQL that groups one CUR month by day, account, service, resource and tags."""
    for ident in (database, table, *tag_columns.values()):
        if not _IDENT_RE.match(ident):
            raise IngestError(f"athena: {ident!r} is not a plain SQL identifier")
    if not _MONTH_RE.match(month):
        raise IngestError(f"athena: month {month!r} must look like 2026-11")
    tags = "".join(
        f",\n  coalesce({col}, '') AS \"tag_{key}\"" for key, col in sorted(tag_columns.items())
    )
    group_count = 12 + len(tag_columns)
    return f"""SELECT
  CAST(date(line_item_usage_start_date) AS varchar) AS day,
  CAST(date(bill_billing_period_start_date) AS varchar) AS billing_period,
  bill_payer_account_id AS billing_account,
  line_item_usage_account_id AS sub_account,
  coalesce(nullif(product_product_name, ''), line_item_product_code) AS service,
  coalesce(line_item_usage_type, '') AS usage_type,
  coalesce(product_region, '') AS region,
  coalesce(line_item_resource_id, '') AS resource_id,
  coalesce(product_instance_type, '') AS instance_type,
  coalesce(line_item_line_item_type, '') AS line_item_type,
  coalesce(line_item_currency_code, '') AS currency,
  coalesce(pricing_unit, '') AS unit{tags},
  CAST(sum(line_item_unblended_cost) AS decimal(30, 10)) AS billed,
  CAST(sum(CASE line_item_line_item_type
      WHEN 'SavingsPlanCoveredUsage' THEN savings_plan_savings_plan_effective_cost
      WHEN 'SavingsPlanNegation' THEN 0
      WHEN 'SavingsPlanUpfrontFee' THEN 0
      WHEN 'DiscountedUsage' THEN reservation_effective_cost
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

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        tags = self.tag_columns(tag_keys)
        sql = build_query(self.database, self.table, self.month, tags)
        params: dict[str, Any] = {
            "QueryString": sql,
            "QueryExecutionContext": {"Database": self.database},
        }
        if self.output:
            params["ResultConfiguration"] = {"OutputLocation": self.output}
        if self.workgroup:
            params["WorkGroup"] = self.workgroup
        requests = 0
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
