"""AWS Cost Explorer `get_cost_and_usage`, daily, grouped by the model tag and one more key."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

from bot.errors import IngestError, aws_error_reason
from bot.ingest.attribution import normalize_tag_key
from bot.ingest.sources.base import (
    COST_TYPE,
    DEFAULT_CURRENCY,
    KEY_COLUMNS,
    TAG_PREFIX,
    VALUE_COLUMNS,
    GroupedCharges,
    Progress,
    ReplaceScope,
    SourceData,
    month_start,
    source_data,
)
from bot.money import parse_money

METRICS = ["UnblendedCost", "AmortizedCost", "UsageQuantity"]
_DIMENSIONS = {
    "SERVICE": "service",
    "USAGE_TYPE": "usage_type",
    "REGION": "region",
    "LINKED_ACCOUNT": "sub_account",
    "INSTANCE_TYPE": "instance_type",
}


# Cost Explorer has one endpoint, in us-east-1, whatever region the account works in.
CE_REGION = "us-east-1"


def parse_group_by(spec: str) -> dict[str, str]:
    """Parse `SERVICE`, `USAGE_TYPE` or `TAG:ml:stage` into a CE GroupBy entry."""
    if spec.upper().startswith("TAG:"):
        return {"Type": "TAG", "Key": spec[4:]}
    if spec.upper() in _DIMENSIONS:
        return {"Type": "DIMENSION", "Key": spec.upper()}
    raise IngestError(
        f"cost-explorer: cannot group by {spec!r}; use SERVICE, USAGE_TYPE, "
        "REGION, LINKED_ACCOUNT, INSTANCE_TYPE or TAG:<key>"
    )


class CostExplorerSource:
    """Poll Cost Explorer for [start, end); the window replaces those days for the account."""

    kind = "cost-explorer"

    def __init__(
        self,
        client: Any,
        start: dt.date,
        end: dt.date,
        *,
        model_tag_key: str,
        second_group: str = "SERVICE",
        billing_account: str = "aws",
        default_currency: str = DEFAULT_CURRENCY,
    ) -> None:
        if end <= start:
            raise IngestError(f"cost-explorer: end {end} must be after start {start}")
        self.client = client
        self.start, self.end = start, end
        self.model_tag_key = model_tag_key
        self.group_by = [{"Type": "TAG", "Key": model_tag_key}, parse_group_by(second_group)]
        self.billing_account = billing_account
        self.default_currency = default_currency
        self.location = f"cost-explorer:{start}..{end}"

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        requests = 0
        token: str | None = None
        # each cost metric carries its currency as its Unit ("USD")
        grouped = GroupedCharges(
            default_currency=self.default_currency, currency_field="the cost metrics' Unit"
        )
        if progress is not None:
            progress.set_total(None, "pages")
        while True:
            params: dict[str, Any] = {
                "TimePeriod": {"Start": self.start.isoformat(), "End": self.end.isoformat()},
                "Granularity": "DAILY",
                "Metrics": METRICS,
                "GroupBy": self.group_by,
            }
            if token:
                params["NextPageToken"] = token
            try:
                page = self.client.get_cost_and_usage(**params)
            except Exception as exc:
                raise IngestError(
                    f"cost-explorer: request failed ({aws_error_reason(exc)})"
                ) from None
            requests += 0 if isinstance(self.client, SavedResponses) else 1
            table = response_to_table(page, self.billing_account)
            grouped.add(table)
            if progress is not None:
                progress.advance(1, rows=table.num_rows)
            token = page.get("NextPageToken")
            if not token:
                break
        return source_data(grouped, self._day_scopes, api_requests=requests)

    def _day_scopes(self, charges: pa.Table) -> list[ReplaceScope]:
        start, end = self.start, self.end
        if charges.num_rows:
            # Replace every day the response carried, even outside the asked window.
            days = charges["day"].to_pylist()
            start, end = min(start, min(days)), max(end, max(days) + dt.timedelta(days=1))
        return [ReplaceScope("AWS", self.billing_account, "day", start, end)]


def response_to_table(page: dict[str, Any], billing_account: str) -> pa.Table:
    """Turn one GetCostAndUsage response into canonical charge rows."""
    definitions = page.get("GroupDefinitions") or []
    rows: dict[str, list[Any]] = {name: [] for name in (*KEY_COLUMNS, *VALUE_COLUMNS)}
    tag_rows: dict[str, list[str]] = {}
    for result in page.get("ResultsByTime", []):
        day = dt.date.fromisoformat(result["TimePeriod"]["Start"])
        estimated = bool(result.get("Estimated", False))
        groups = result.get("Groups") or []
        if not groups and result.get("Total"):
            groups = [{"Keys": [], "Metrics": result["Total"]}]
        for group in groups:
            row, tags = _group_row(group, definitions, day, billing_account, estimated)
            for name, value in row.items():
                rows[name].append(value)
            for key in tags:
                tag_rows.setdefault(key, [""] * (len(rows["day"]) - 1))
            for key, column in tag_rows.items():
                column.append(tags.get(key, ""))
    return _rows_table(rows, tag_rows)


def _group_row(
    group: dict[str, Any],
    definitions: list[dict[str, Any]],
    day: dt.date,
    billing_account: str,
    estimated: bool,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Return one group's canonical row and its tags (normalised key -> value)."""
    row: dict[str, Any] = {
        "service": "",
        "usage_type": "",
        "region": "",
        "sub_account": "",
        "instance_type": "",
    }
    tags: dict[str, str] = {}
    for definition, key in zip(definitions, group.get("Keys", []), strict=False):
        if definition["Type"] == "TAG":
            _, _, value = key.partition("$")
            tags[normalize_tag_key(definition["Key"])] = value
        elif definition["Key"] in _DIMENSIONS:
            row[_DIMENSIONS[definition["Key"]]] = key
    metrics = group.get("Metrics", {})
    billed = _amount(metrics, "UnblendedCost", "BlendedCost", "NetUnblendedCost")
    effective = (
        _amount(metrics, "AmortizedCost", "NetAmortizedCost")
        if any(m in metrics for m in ("AmortizedCost", "NetAmortizedCost"))
        else billed
    )
    row.update(
        day=day,
        billing_period=month_start(day),
        provider="AWS",
        billing_account=billing_account,
        service_category="",
        resource_id="",
        charge_category="Usage",
        currency=_unit(metrics, "UnblendedCost", "BlendedCost", "NetUnblendedCost"),
        unit=metrics.get("UsageQuantity", {}).get("Unit", "") or "",
        estimated=estimated,
        billed=billed,
        effective=effective,
        quantity=_amount(metrics, "UsageQuantity"),
    )
    return row, tags


def _rows_table(rows: dict[str, list[Any]], tag_rows: dict[str, list[str]]) -> pa.Table:
    """Build the Arrow table: typed key columns, then the tag columns, then the amounts."""
    table: dict[str, Any] = {k: v for k, v in rows.items() if k not in VALUE_COLUMNS}
    table["day"] = pa.array(rows["day"], pa.date32())
    table["billing_period"] = pa.array(rows["billing_period"], pa.date32())
    table["estimated"] = pa.array(rows["estimated"], pa.bool_())
    for key, column in sorted(tag_rows.items()):
        table[TAG_PREFIX + key] = pa.array(column, pa.string())
    for name in VALUE_COLUMNS:
        table[name] = pa.array(rows[name], COST_TYPE)
    return pa.table(
        {k: (pa.array(v, pa.string()) if isinstance(v, list) else v) for k, v in table.items()}
    )


def _unit(metrics: dict[str, Any], *names: str) -> str:
    for name in names:
        if name in metrics:
            return str(metrics[name].get("Unit") or "")
    return ""


def _amount(metrics: dict[str, Any], *names: str) -> Decimal:
    for name in names:
        if name in metrics:
            return parse_money(metrics[name].get("Amount")).quantize(Decimal("1e-10"))
    return Decimal(0)


class SavedResponses:
    """GetCostAndUsage answers saved as JSON files, served in order as the pages of one answer.

    Save them with `aws ce get-cost-and-usage ... > page1.json` (one file per page). The window
    they cover is the span of their results' time periods.
    """

    def __init__(self, paths: list[str]) -> None:
        loaded = [_load_saved_page(path) for path in paths]
        self.pages = [page for page, _spans in loaded]
        spans = [span for _page, page_spans in loaded for span in page_spans]
        if not spans:
            raise IngestError(f"{paths[0]}: no ResultsByTime in the saved response(s)")
        self.start = min(start for start, _end in spans)
        self.end = max(end for _start, end in spans)
        self.longer_than_a_day = any(end - start > dt.timedelta(days=1) for start, end in spans)

    def get_cost_and_usage(self, **params: Any) -> dict[str, Any]:
        """Return the next saved page, pointing at the one after it."""
        index = int(params.get("NextPageToken") or 0)
        page = dict(self.pages[index])
        page.pop("NextPageToken", None)
        if index + 1 < len(self.pages):
            page["NextPageToken"] = str(index + 1)
        return page


def _load_saved_page(path: str) -> tuple[dict[str, Any], list[tuple[dt.date, dt.date]]]:
    """Read one saved GetCostAndUsage answer and its results' (start, end) days.

    IngestError names the file and the problem.
    """
    try:
        page = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise IngestError(f"{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise IngestError(f"{path}: not JSON ({exc})") from None
    if not isinstance(page, dict) or not isinstance(page.get("ResultsByTime"), list):
        raise IngestError(
            f"{path}: not a Cost Explorer GetCostAndUsage response (no ResultsByTime)"
        )
    spans = []
    for result in page["ResultsByTime"]:
        try:
            period = result["TimePeriod"]
            spans.append(
                (dt.date.fromisoformat(period["Start"]), dt.date.fromisoformat(period["End"]))
            )
        except (KeyError, TypeError, ValueError):
            raise IngestError(f"{path}: a result without a valid TimePeriod") from None
    return page, spans
