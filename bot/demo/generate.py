"""Generate the bundled sample billing (FOCUS 1.0 CSV) for a realistic ML organisation.

Run `python -m bot.demo.generate` to rebuild `bot/demo/data/billing-focus.csv.gz`; the output is
deterministic (seeded), so the committed file only changes when this script does.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import json
import random
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
START = dt.date(2026, 9, 1)
END = dt.date(2026, 12, 1)  # exclusive
ACCOUNT = "210987654321"
COLUMNS = [
    "BilledCost",
    "EffectiveCost",
    "BillingAccountId",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ChargeDescription",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ProviderName",
    "RegionId",
    "ResourceId",
    "ServiceCategory",
    "ServiceName",
    "SkuId",
    "SubAccountId",
    "Tags",
    "x_UsageType",
    "x_InstanceType",
]


@dataclass(frozen=True)
class Resource:
    """One billed resource of a model (or of nobody)."""

    resource_id: str
    service: str
    category: str
    usage_type: str
    unit: str
    rate: Decimal  # per unit
    daily_units: float
    tags: dict[str, str]
    instance_type: str = ""
    weekday_factor: float = 1.0
    growth: float = 0.0  # per day, relative
    sub_account: str = "345678901234"


def _model_resources(model: str, team: str, scale: float, gpu: str, host: str) -> list[Resource]:
    def tags(stage: str) -> dict[str, str]:
        return {"ml:model": model, "ml:stage": stage, "team": team}

    rate = {
        "p4d.24xlarge": "32.7726",
        "g5.12xlarge": "5.672",
        "g5.2xlarge": "1.212",
        "p5.48xlarge": "98.32",
        "g6.xlarge": "0.805",
    }
    host_rate = {
        "ml.g5.2xlarge": "1.515",
        "ml.g4dn.xlarge": "0.7364",
        "ml.inf2.xlarge": "0.99",
        "ml.c6i.2xlarge": "0.408",
    }
    return [
        Resource(
            f"i-{model[:6]}train01",
            "Amazon Elastic Compute Cloud",
            "Compute",
            f"USE1-BoxUsage:{gpu}",
            "Hours",
            Decimal(rate[gpu]),
            6 * scale,
            tags("training"),
            instance_type=gpu,
            weekday_factor=1.6,
        ),
        Resource(
            f"arn:aws:sagemaker:us-east-1:345678901234:endpoint/{model}-prod",
            "Amazon SageMaker",
            "AI and Machine Learning",
            f"USE1-Host:{host}",
            "Hours",
            Decimal(host_rate[host]),
            24 * max(1, round(2 * scale)),
            tags("serving"),
            instance_type=host.removeprefix("ml."),
            growth=0.002,
        ),
        Resource(
            f"arn:aws:s3:::{model}-checkpoints",
            "Amazon Simple Storage Service",
            "Storage",
            "USE1-TimedStorage-ByteHrs",
            "GB-Mo",
            Decimal("0.023"),
            1800 * scale,
            tags("storage"),
            growth=0.004,
        ),
        Resource(
            f"arn:aws:glue:us-east-1:345678901234:job/{model}-features",
            "AWS Glue",
            "Analytics",
            "USE1-ETL-DPU-Hour",
            "Hours",
            Decimal("0.44"),
            30 * scale,
            tags("data"),
            weekday_factor=1.3,
        ),
    ]


MODELS = [
    ("recsys", "ranking", 1.6, "p4d.24xlarge", "ml.g5.2xlarge"),
    ("search-ranker", "ranking", 0.9, "g5.12xlarge", "ml.g4dn.xlarge"),
    ("ads-ctr", "ranking", 0.7, "g5.12xlarge", "ml.c6i.2xlarge"),
    ("img-classifier", "vision", 0.5, "g5.2xlarge", "ml.g4dn.xlarge"),
    ("moderation", "vision", 0.8, "g5.12xlarge", "ml.g5.2xlarge"),
    ("chat-assistant", "nlp", 1.4, "p5.48xlarge", "ml.g5.2xlarge"),
    ("summarizer", "nlp", 0.6, "g5.12xlarge", "ml.inf2.xlarge"),
    ("embeddings", "nlp", 0.5, "g5.2xlarge", "ml.inf2.xlarge"),
    ("fraud-detector", "risk", 0.6, "g5.2xlarge", "ml.c6i.2xlarge"),
    ("churn-predictor", "risk", 0.3, "g6.xlarge", "ml.c6i.2xlarge"),
    ("forecasting", "risk", 0.4, "g6.xlarge", "ml.c6i.2xlarge"),
]


def resources() -> list[Resource]:
    """Return every resource of the sample organisation."""
    items: list[Resource] = []
    for model, team, scale, gpu, host in MODELS:
        items += _model_resources(model, team, scale, gpu, host)
    # ocr carries no ml:model tag: the registry claims it by its `application` tag.
    items.append(
        Resource(
            "i-ocrbatch0001",
            "Amazon Elastic Compute Cloud",
            "Compute",
            "USE1-BoxUsage:g5.2xlarge",
            "Hours",
            Decimal("1.212"),
            20,
            {"application": "ocr-pipeline"},
            instance_type="g5.2xlarge",
        )
    )
    items.append(
        Resource(
            "arn:aws:s3:::ocr-scans",
            "Amazon Simple Storage Service",
            "Storage",
            "USE1-TimedStorage-ByteHrs",
            "GB-Mo",
            Decimal("0.023"),
            900,
            {"application": "ocr-pipeline"},
        )
    )
    # Unallocated: an untagged dev GPU box, a bucket of an unregistered model, a NAT gateway.
    items.append(
        Resource(
            "i-devbox9f3a",
            "Amazon Elastic Compute Cloud",
            "Compute",
            "USE1-BoxUsage:g5.12xlarge",
            "Hours",
            Decimal("5.672"),
            14,
            {},
            instance_type="g5.12xlarge",
            weekday_factor=1.8,
        )
    )
    items.append(
        Resource(
            "arn:aws:s3:::legacy-ranker-ckpt",
            "Amazon Simple Storage Service",
            "Storage",
            "USE1-TimedStorage-ByteHrs",
            "GB-Mo",
            Decimal("0.023"),
            5200,
            {"ml:model": "legacy-ranker", "team": "ranking"},
        )
    )
    items.append(
        Resource(
            "nat-0a1b2c3d",
            "Amazon Virtual Private Cloud",
            "Networking",
            "USE1-NatGateway-Hours",
            "Hours",
            Decimal("0.045"),
            24,
            {},
        )
    )
    return items


def _spike(resource: Resource, day: dt.date) -> float:
    """recsys training runs away for three days in November (the demo's incident)."""
    if resource.resource_id.startswith("i-recsys") and dt.date(2026, 11, 18) <= day <= dt.date(
        2026, 11, 20
    ):
        return 3.5
    return 1.0


# recsys's training runs (the `ml:run` tag on its training instance): name, first day, last day.
RECSYS_RUNS = (
    ("recsys-v38-baseline", dt.date(2026, 9, 1), dt.date(2026, 9, 14)),
    ("recsys-v39-two-tower", dt.date(2026, 9, 15), dt.date(2026, 10, 4)),
    ("recsys-v40-longer-context", dt.date(2026, 10, 5), dt.date(2026, 10, 25)),
    ("recsys-v41-hpo-sweep", dt.date(2026, 10, 26), dt.date(2026, 11, 9)),
    ("recsys-v42-full-retrain", dt.date(2026, 11, 10), dt.date(2026, 11, 17)),
    # the runaway: a retry loop relaunching the job, three days at 3.5x (see _spike)
    ("recsys-v42-retry", dt.date(2026, 11, 18), dt.date(2026, 11, 20)),
    ("recsys-v43-distill", dt.date(2026, 11, 21), dt.date(2026, 11, 30)),
)


def _tags(resource: Resource, day: dt.date) -> dict[str, str]:
    """Return a resource's tags on a day: recsys's training instance also names its run."""
    if resource.resource_id != "i-recsystrain01":
        return resource.tags
    run = next(name for name, first, last in RECSYS_RUNS if first <= day <= last)
    return {**resource.tags, "ml:run": run}


def generate_rows() -> list[dict[str, str]]:
    """Return the FOCUS rows, one per resource and day."""
    rng = random.Random(20261202)
    rows = []
    day = START
    index = 0
    while day < END:
        period = day.replace(day=1)
        period_end = (period + dt.timedelta(days=32)).replace(day=1)
        for res in resources():
            weekday = res.weekday_factor if day.weekday() < 5 else 1 / res.weekday_factor
            trend = (1 + res.growth) ** index
            units = res.daily_units * weekday * trend * rng.uniform(0.85, 1.15) * _spike(res, day)
            quantity = Decimal(f"{units:.6f}")
            billed = (quantity * res.rate).quantize(Decimal("0.000001"))
            tags = _tags(res, day)
            # Savings Plans cover GPU training at about 28 % off in effective cost.
            effective = billed * Decimal("0.72") if "BoxUsage:p" in res.usage_type else billed
            rows.append(
                {
                    "BilledCost": str(billed),
                    "EffectiveCost": str(effective.quantize(Decimal("0.000001"))),
                    "BillingAccountId": ACCOUNT,
                    "BillingCurrency": "USD",
                    "BillingPeriodStart": f"{period} 00:00:00",
                    "BillingPeriodEnd": f"{period_end} 00:00:00",
                    "ChargePeriodStart": f"{day} 00:00:00",
                    "ChargePeriodEnd": f"{day + dt.timedelta(days=1)} 00:00:00",
                    "ChargeCategory": "Usage",
                    "ChargeDescription": f"${res.rate} per {res.unit} {res.usage_type}",
                    "ConsumedQuantity": str(quantity),
                    "ConsumedUnit": res.unit,
                    "ProviderName": "AWS",
                    "RegionId": "us-east-1",
                    "ResourceId": res.resource_id,
                    "ServiceCategory": res.category,
                    "ServiceName": res.service,
                    "SkuId": res.usage_type,
                    "SubAccountId": res.sub_account,
                    "Tags": json.dumps(tags) if tags else "NULL",
                    "x_UsageType": res.usage_type,
                    "x_InstanceType": res.instance_type or "NULL",
                }
            )
        day += dt.timedelta(days=1)
        index += 1
    return rows + monthly_rows(rows)


SALES_TAX = Decimal("0.06")
# AWS Business Support: 10 % of the first $10K of usage, 7 % to $80K, 5 % to $250K, 3 % above
SUPPORT_TIERS = (
    (Decimal(10_000), Decimal("0.10")),
    (Decimal(80_000), Decimal("0.07")),
    (Decimal(250_000), Decimal("0.05")),
    (None, Decimal("0.03")),
)


def business_support_fee(usage: Decimal) -> Decimal:
    """Return AWS Business Support's monthly fee on a month's usage (at least $100)."""
    fee, floor = Decimal(0), Decimal(0)
    for ceiling, rate in SUPPORT_TIERS:
        top = usage if ceiling is None else min(usage, ceiling)
        if top > floor:
            fee += (top - floor) * rate
        if ceiling is None or usage <= ceiling:
            break
        floor = ceiling
    return max(fee, Decimal(100)).quantize(Decimal("0.01"))


def monthly_rows(usage: list[dict[str, str]]) -> list[dict[str, str]]:
    """Each month's support plan fee and sales tax, charged on its first day as AWS does.

    Nobody owns them: `mlcost report chargeback` splits them among the teams.
    """
    rows = []
    for period in sorted({r["BillingPeriodStart"] for r in usage}):
        spent = sum(
            (Decimal(r["BilledCost"]) for r in usage if r["BillingPeriodStart"] == period),
            Decimal(0),
        )
        support = business_support_fee(spent)
        tax = ((spent + support) * SALES_TAX).quantize(Decimal("0.01"))
        start = dt.date.fromisoformat(period[:10])
        end = next(r["BillingPeriodEnd"] for r in usage if r["BillingPeriodStart"] == period)
        for cost, category, service, description in (
            (support, "Purchase", "AWS Support (Business)", "AWS Support (Business) monthly fee"),
            (tax, "Tax", "Tax", "Sales tax on usage and support"),
        ):
            rows.append(
                {
                    "BilledCost": str(cost),
                    "EffectiveCost": str(cost),
                    "BillingAccountId": ACCOUNT,
                    "BillingCurrency": "USD",
                    "BillingPeriodStart": period,
                    "BillingPeriodEnd": end,
                    "ChargePeriodStart": f"{start} 00:00:00",
                    "ChargePeriodEnd": f"{start + dt.timedelta(days=1)} 00:00:00",
                    "ChargeCategory": category,
                    "ChargeDescription": description,
                    "ConsumedQuantity": "NULL",
                    "ConsumedUnit": "NULL",
                    "ProviderName": "AWS",
                    "RegionId": "NULL",
                    "ResourceId": "NULL",
                    "ServiceCategory": "Other",
                    "ServiceName": service,
                    "SkuId": "NULL",
                    "SubAccountId": ACCOUNT,
                    "Tags": "NULL",
                    "x_UsageType": "NULL",
                    "x_InstanceType": "NULL",
                }
            )
    return rows


def value_rows() -> list[dict[str, str]]:
    """Return daily predictions served per model (the value side of unit economics)."""
    rng = random.Random(7)
    base = {
        "recsys": 2_400_000,
        "search-ranker": 1_500_000,
        "ads-ctr": 3_100_000,
        "img-classifier": 400_000,
        "moderation": 900_000,
        "chat-assistant": 260_000,
        "summarizer": 120_000,
        "embeddings": 2_000_000,
        "fraud-detector": 700_000,
        "churn-predictor": 0,
        "forecasting": 15_000,
        "ocr": 80_000,
    }
    rows = []
    day = START
    while day < END:
        for model, daily in base.items():
            if daily == 0:
                continue
            growth = 1.0 + (0.25 if model == "embeddings" else 0.02) * (day - START).days / 90
            # chat-assistant serves office hours: busy on weekdays, quiet at weekends (and its
            # endpoint does not scale, which the waste report notices)
            week = (1.3 if day.weekday() < 5 else 0.45) if model == "chat-assistant" else 1.0
            rows.append(
                {
                    "date": day.isoformat(),
                    "model": model,
                    "metric": "predictions",
                    "units": str(int(daily * growth * week * rng.uniform(0.9, 1.1))),
                    "revenue": "",
                }
            )
        day += dt.timedelta(days=1)
    return rows


def write(directory: Path = DATA_DIR) -> Path:
    """Write the compressed FOCUS CSV and the value CSV; return the billing path."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "billing-focus.csv.gz"
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, quoting=csv.QUOTE_MINIMAL)
    writer.writeheader()
    writer.writerows(generate_rows())
    with gzip.GzipFile(target, "wb", mtime=0) as handle:
        handle.write(buffer.getvalue().encode("utf-8"))
    values = io.StringIO()
    value_writer = csv.DictWriter(
        values, fieldnames=["date", "model", "metric", "units", "revenue"]
    )
    value_writer.writeheader()
    value_writer.writerows(value_rows())
    (directory / "value-metrics.csv").write_text(values.getvalue(), encoding="utf-8")
    return target


if __name__ == "__main__":  # pragma: no cover
    print(write())
