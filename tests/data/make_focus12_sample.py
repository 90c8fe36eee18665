"""Write focus12_gcp_azure_sample.csv: a FOCUS 1.2 export with Google Cloud and Azure ML rows.

The columns and allowed values come from the FOCUS validator's column model
(focus-validator-model-1.2.json, next to this script): every column the model says a dataset must
or should carry, in the model's order, then a few provider extension (x_) columns where the
providers' real exports put the machine type and labels. The rows are synthetic; their shapes
follow the providers' exports (see README.md). Run it from the repository root to rebuild the
file byte for byte:

    python tests/data/make_focus12_sample.py
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
MODEL = HERE / "focus-validator-model-1.2.json"
OUTPUT = HERE / "focus12_gcp_azure_sample.csv"
EXTENSIONS = ("x_SkuDetails", "x_SystemLabels", "x_Labels", "x_ServiceId", "x_ResourceGroupName")
PERIOD = dt.date(2026, 11, 1)
DAYS = 3
CENT6 = Decimal("0.000001")

GCP = {
    "ProviderName": "Google Cloud",
    "PublisherName": "Google Cloud",
    "InvoiceIssuerName": "Google Cloud",
    "BillingAccountId": "01A2B3-C4D5E6-F7A8B9",
    "BillingAccountName": "Acme ML billing",
    "BillingAccountType": "Billing Account",
    "SubAccountType": "Project",
    "InvoiceId": "5410029384",
    "RegionId": "us-central1",
    "RegionName": "Iowa",
    "AvailabilityZone": "us-central1-a",
}
AZURE = {
    "ProviderName": "Microsoft",
    "PublisherName": "Microsoft",
    "InvoiceIssuerName": "Microsoft",
    "BillingAccountId": "8611537",
    "BillingAccountName": "Acme Corp EA",
    "BillingAccountType": "Billing Account",
    "SubAccountId": "/subscriptions/3f9c2a1e-7b44-4d7e-9a51-2c8e1d0f6a42",
    "SubAccountName": "ml-platform-prod",
    "SubAccountType": "Subscription",
    "InvoiceId": "G081234567",
    "RegionId": "eastus",
    "RegionName": "East US",
}
GCP_PROJECTS = {"recsys-train": "recsys-train-318204", "llm": "llm-research-552190"}
COMPUTE_ENGINE = "6F81-5844-456A"

# Google Cloud GPU machines: (machine type, vCPUs, memory GiB, GPUs, series SKU word, GPU SKU
# description, project, labels, hours run each day). The GPU SKU's usage is per GPU.
GCP_MACHINES: list[tuple[str, int, int, int, str, str, str, dict[str, str], list[int]]] = [
    (
        "a2-highgpu-1g",
        12,
        85,
        1,
        "A2",
        "Nvidia Tesla A100 GPU",
        "recsys-train",
        {"ml_model": "recsys", "ml_stage": "training", "team": "ranking"},
        [24, 24, 12],
    ),
    (
        "a2-ultragpu-2g",
        24,
        340,
        2,
        "A2",
        "Nvidia Tesla A100 80GB GPU",
        "recsys-train",
        {"ml_model": "recsys"},
        [8, 0, 16],
    ),
    (
        "a3-highgpu-8g",
        208,
        1872,
        8,
        "A3",
        "Nvidia H100 80GB GPU",
        "llm",
        {"ml_model": "llm-chat", "ml_stage": "training"},
        [24, 10, 24],
    ),
    ("a4-highgpu-8g", 224, 3968, 8, "A4", "Nvidia B200 GPU", "llm", {}, [6, 6, 0]),
    (
        "g2-standard-8",
        8,
        32,
        1,
        "G2",
        "Nvidia L4 GPU",
        "recsys-train",
        {"ml_model": "search-ranker", "ml_stage": "serving"},
        [24, 24, 24],
    ),
    ("g2-standard-48", 48, 192, 4, "G2", "Nvidia L4 GPU", "llm", {}, [0, 20, 4]),
]
# Hourly prices (USD) per vCPU, per GiB of RAM and per GPU, by series.
GCP_PRICES = {
    "A2": (Decimal("0.031611"), Decimal("0.004237"), None),
    "A3": (Decimal("0.029563"), Decimal("0.003963"), None),
    "A4": (Decimal("0.030101"), Decimal("0.004035"), None),
    "G2": (Decimal("0.024988"), Decimal("0.002927"), None),
}
GPU_PRICES = {
    "Nvidia Tesla A100 GPU": Decimal("2.933908"),
    "Nvidia Tesla A100 80GB GPU": Decimal("3.932694"),
    "Nvidia H100 80GB GPU": Decimal("9.796210"),
    "Nvidia B200 GPU": Decimal("11.062500"),
    "Nvidia L4 GPU": Decimal("0.560040"),
    "Nvidia Tesla T4 GPU": Decimal("0.350000"),
}

# Azure VMs: (size, hourly price, service, resource path under the subscription, meter, tags,
# hours each day). Azure bills a VM per instance-hour; SkuPriceDetails carries its size.
AZURE_VMS: list[tuple[str, Decimal, str, str, str, dict[str, str], list[int]]] = [
    (
        "Standard_ND96asr_v4",
        Decimal("27.197"),
        "Virtual Machines",
        "resourceGroups/llm-rg/providers/Microsoft.Compute/virtualMachines/nd-a100-01",
        "ND96asr A100 v4",
        {"ml:model": "llm-chat", "ml:stage": "training"},
        [24, 24, 24],
    ),
    (
        "Standard_ND96isr_H100_v5",
        Decimal("98.32"),
        "Virtual Machines",
        "resourceGroups/llm-rg/providers/Microsoft.Compute/virtualMachines/nd-h100-01",
        "ND96isr H100 v5",
        {},
        [12, 24, 0],
    ),
    (
        "Standard_NC24ads_A100_v4",
        Decimal("3.673"),
        "Azure Machine Learning",
        "resourceGroups/ml-rg/providers/Microsoft.MachineLearningServices/workspaces/ml-ws/"
        "computes/a100-cluster",
        "NC24ads A100 v4",
        {"ml:model": "recsys"},
        [20, 24, 24],
    ),
    (
        "Standard_NC4as_T4_v3",
        Decimal("0.526"),
        "Azure Machine Learning",
        "resourceGroups/ml-rg/providers/Microsoft.MachineLearningServices/workspaces/ml-ws/"
        "onlineEndpoints/search-ranker-ep/deployments/blue",
        "NC4as T4 v3",
        {"ml:model": "search-ranker"},
        [24, 24, 24],
    ),
    (
        "Standard_NC64as_T4_v3",
        Decimal("4.352"),
        "Azure Machine Learning",
        "resourceGroups/ml-rg/providers/Microsoft.MachineLearningServices/workspaces/ml-ws/"
        "onlineEndpoints/batch-scorer/deployments/green",
        "NC64as T4 v3",
        {},
        [0, 6, 6],
    ),
]


def model_columns() -> tuple[list[str], dict[str, list[str]], set[str]]:
    """Return the model's dataset columns (in order), allowed values, and decimal columns."""
    rules = json.loads(MODEL.read_text())["ModelRules"]
    columns: list[str] = []
    allowed: dict[str, list[str]] = {}
    decimals: set[str] = set()
    for rule in rules.values():
        requirement = rule["ValidationCriteria"]["Requirement"]
        check = requirement.get("CheckFunction")
        if check == "ColumnPresent" and rule["EntityType"] == "Dataset":
            name = requirement["ColumnName"]
            if name not in columns:
                columns.append(name)
        elif check == "TypeDecimal":
            decimals.add(requirement["ColumnName"])
        elif check == "OR":
            items = requirement.get("Items", [])
            names = {i.get("ColumnName") for i in items}
            values_only = all(i.get("CheckFunction") == "CheckValue" for i in items)
            if items and values_only and len(names) == 1:
                allowed[names.pop() or ""] = [i["Value"] for i in items]
    # The model's CommitmentDiscountStatus-C-005-M lists Active/Expired/Pending, but its own
    # ConsumedQuantity rules and the FOCUS 1.2 specification use "Used" and "Unused".
    allowed["CommitmentDiscountStatus"] = ["Used", "Unused"]
    return columns, allowed, decimals


def stamp(day: dt.date) -> str:
    """Format a date as FOCUS DateTimeFormat (ISO 8601, UTC)."""
    return f"{day.isoformat()}T00:00:00Z"


def money(value: Decimal) -> str:
    """Format an amount with six decimal places."""
    return str(value.quantize(CENT6))


def base_row(provider: dict[str, str], day: dt.date, category: str = "Usage") -> dict[str, Any]:
    """Return the columns every row of a provider shares."""
    period_end = (PERIOD.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
    row: dict[str, Any] = dict(provider)
    row.update(
        BillingCurrency="USD",
        PricingCurrency="USD",
        BillingPeriodStart=stamp(PERIOD),
        BillingPeriodEnd=stamp(period_end),
        ChargePeriodStart=stamp(day),
        ChargePeriodEnd=stamp(day + dt.timedelta(days=1)),
        ChargeCategory=category,
        ChargeFrequency="Usage-Based" if category == "Usage" else "One-Time",
    )
    return row


def usage(
    row: dict[str, Any],
    *,
    quantity: Decimal,
    unit: str,
    pricing_quantity: Decimal,
    pricing_unit: str,
    unit_price: Decimal,
    sku: str,
) -> dict[str, Any]:
    """Fill the usage, price and cost columns of an on-demand usage row."""
    cost = (pricing_quantity * unit_price).quantize(CENT6)
    row.update(
        ConsumedQuantity=str(quantity),
        ConsumedUnit=unit,
        PricingQuantity=str(pricing_quantity),
        PricingUnit=pricing_unit,
        PricingCategory="Standard",
        ListUnitPrice=str(unit_price),
        ContractedUnitPrice=str(unit_price),
        PricingCurrencyListUnitPrice=str(unit_price),
        PricingCurrencyContractedUnitPrice=str(unit_price),
        ListCost=money(cost),
        ContractedCost=money(cost),
        BilledCost=money(cost),
        EffectiveCost=money(cost),
        PricingCurrencyEffectiveCost=money(cost),
        SkuId=sku,
        SkuPriceId=f"{sku}-ondemand",
    )
    return row


def gcp_rows() -> list[dict[str, Any]]:
    """Return the Google Cloud rows: GPU VMs (core, RAM, GPU SKUs), Vertex AI, GKE, storage."""
    rows: list[dict[str, Any]] = []
    for offset in range(DAYS):
        day = PERIOD + dt.timedelta(days=offset)
        for machine, cpus, ram, gpus, series, gpu_sku, project, labels, hours in GCP_MACHINES:
            run = hours[offset]
            if not run:
                continue
            seconds = Decimal(run * 3600)
            core_price, ram_price, _ = GCP_PRICES[series]
            parts = [
                (f"{series} Instance Core running in Americas", cpus, "seconds", core_price),
                (f"{series} Instance Ram running in Americas", ram, "byte-seconds", ram_price),
                (f"{gpu_sku} running in Americas", gpus, "seconds", GPU_PRICES[gpu_sku]),
            ]
            for description, count, unit, price in parts:
                quantity = seconds * count * (2**30 if unit == "byte-seconds" else 1)
                row = usage(
                    base_row(GCP, day),
                    quantity=quantity,
                    unit=unit,
                    pricing_quantity=Decimal(run * count),
                    pricing_unit="hour" if unit == "seconds" else "gibibyte hour",
                    unit_price=price,
                    sku=_gcp_sku(description),
                )
                row.update(
                    ChargeDescription=description,
                    ServiceName="Compute Engine",
                    ServiceCategory="Compute",
                    ServiceSubcategory="Virtual Machines",
                    SkuMeter=description,
                    SubAccountId=GCP_PROJECTS[project],
                    SubAccountName=project,
                    ResourceId=(
                        f"//compute.googleapis.com/projects/{GCP_PROJECTS[project]}/zones/"
                        f"us-central1-a/instances/{machine}-{project}"
                    ),
                    ResourceName=f"{machine}-{project}",
                    ResourceType="Compute Instance",
                    x_ServiceId=COMPUTE_ENGINE,
                    x_SystemLabels=_gcp_pairs(
                        {
                            "compute.googleapis.com/machine_spec": machine,
                            "compute.googleapis.com/cores": str(cpus),
                        }
                    ),
                )
                _gcp_tags(row, labels)
                rows.append(row)
        rows.extend(_gcp_services(day))
    rows.extend(_gcp_billing_rows())
    return rows


def _gcp_services(day: dt.date) -> list[dict[str, Any]]:
    """Vertex AI training and prediction, GKE, Cloud Storage and BigQuery for one day."""
    services = [
        # (service, id, category, subcategory, description, quantity, unit, price, labels, project)
        (
            "Vertex AI",
            "C7E2-9256-1C43",
            "AI and Machine Learning",
            "Machine Learning",
            "Custom Training: Nvidia Tesla A100 GPU running in Americas",
            8,
            "hour",
            GPU_PRICES["Nvidia Tesla A100 GPU"],
            {"ml_model": "recsys"},
            "recsys-train",
        ),
        (
            "Vertex AI",
            "C7E2-9256-1C43",
            "AI and Machine Learning",
            "Machine Learning",
            "Custom Training: A2 Instance Core running in Americas",
            96,
            "hour",
            Decimal("0.036353"),
            {"ml_model": "recsys"},
            "recsys-train",
        ),
        (
            "Vertex AI",
            "C7E2-9256-1C43",
            "AI and Machine Learning",
            "Machine Learning",
            "Online Prediction: Nvidia Tesla T4 GPU running in Americas",
            48,
            "hour",
            GPU_PRICES["Nvidia Tesla T4 GPU"],
            {"ml_model": "search-ranker"},
            "recsys-train",
        ),
        (
            "Vertex AI",
            "C7E2-9256-1C43",
            "AI and Machine Learning",
            "Machine Learning",
            "Online Prediction: N1 Predefined Instance Core running in Americas",
            192,
            "hour",
            Decimal("0.036489"),
            {},
            "llm",
        ),
        (
            "Kubernetes Engine",
            "CCD8-9BF1-090E",
            "Compute",
            "Containers",
            "Regional Kubernetes Clusters",
            24,
            "hour",
            Decimal("0.1"),
            {},
            "llm",
        ),
        (
            "Cloud Storage",
            "95FF-2EF5-5EA1",
            "Storage",
            "Object Storage",
            "Standard Storage US Multi-region",
            812,
            "gibibyte month",
            Decimal("0.026"),
            {"ml_model": "llm-chat"},
            "llm",
        ),
        (
            "BigQuery",
            "24E6-581D-38E5",
            "Analytics",
            "Data Warehouses",
            "Analysis",
            Decimal("3.25"),
            "tebibyte",
            Decimal("6.25"),
            {},
            "recsys-train",
        ),
    ]
    rows = []
    for service, sid, category, sub, description, qty, unit, price, labels, project in services:
        quantity = Decimal(qty) / (30 if unit == "gibibyte month" else 1)
        row = usage(
            base_row(GCP, day),
            quantity=quantity.quantize(CENT6),
            unit=unit,
            pricing_quantity=quantity.quantize(CENT6),
            pricing_unit=unit,
            unit_price=price,
            sku=_gcp_sku(description),
        )
        row.update(
            ChargeDescription=description,
            ServiceName=service,
            ServiceCategory=category,
            ServiceSubcategory=sub,
            SkuMeter=description,
            SubAccountId=GCP_PROJECTS[project],
            SubAccountName=project,
            ResourceId=f"projects/{GCP_PROJECTS[project]}/{service.lower().replace(' ', '-')}",
            ResourceName=service.lower().replace(" ", "-"),
            x_ServiceId=sid,
        )
        _gcp_tags(row, labels)
        rows.append(row)
    return rows


def _gcp_billing_rows() -> list[dict[str, Any]]:
    """A month's tax and a promotional credit (no usage quantity, no price)."""
    tax = base_row(GCP, PERIOD, "Tax")
    tax.update(
        ChargeDescription="Sales tax",
        ChargeFrequency="Recurring",
        ServiceName="Compute Engine",
        ServiceCategory="Compute",
        ServiceSubcategory="Virtual Machines",
        BilledCost="418.730000",
        EffectiveCost="418.730000",
        ListCost="418.730000",
        ContractedCost="418.730000",
        PricingCurrencyEffectiveCost="418.730000",
        x_ServiceId=COMPUTE_ENGINE,
    )
    credit = base_row(GCP, PERIOD + dt.timedelta(days=1), "Credit")
    credit.update(
        ChargeDescription="Promotional credit: AI startup program",
        ServiceName="Vertex AI",
        ServiceCategory="AI and Machine Learning",
        ServiceSubcategory="Machine Learning",
        SubAccountId=GCP_PROJECTS["recsys-train"],
        SubAccountName="recsys-train",
        BilledCost="-250.000000",
        EffectiveCost="-250.000000",
        ListCost="0.000000",
        ContractedCost="0.000000",
        PricingCurrencyEffectiveCost="-250.000000",
        x_ServiceId="C7E2-9256-1C43",
    )
    return [tax, credit]


def _gcp_sku(description: str) -> str:
    """A stable SKU id in Google's XXXX-XXXX-XXXX shape, derived from the description."""
    digits = f"{abs(hash_text(description)):012X}"[-12:]
    return f"{digits[:4]}-{digits[4:8]}-{digits[8:]}"


def hash_text(text: str) -> int:
    """A small stable hash (Python's hash() is salted per process)."""
    value = 1469598103934665603
    for char in text.encode():
        value = ((value ^ char) * 1099511628211) % (1 << 64)
    return value


def _gcp_pairs(mapping: dict[str, str]) -> str:
    """GCP's repeated key/value records, as BigQuery's TO_JSON_STRING writes them."""
    return json.dumps([{"key": k, "value": v} for k, v in mapping.items()]) if mapping else ""


def _gcp_tags(row: dict[str, Any], labels: dict[str, str]) -> None:
    row["Tags"] = json.dumps(labels, sort_keys=True) if labels else ""
    row["x_Labels"] = _gcp_pairs(labels)


def azure_rows() -> list[dict[str, Any]]:
    """Return the Azure rows: ND/NC VMs and Azure ML compute, AKS, Blob, Data Factory, Synapse."""
    rows: list[dict[str, Any]] = []
    for offset in range(DAYS):
        day = PERIOD + dt.timedelta(days=offset)
        for size, price, service, path, meter, tags, hours in AZURE_VMS:
            run = hours[offset]
            if not run:
                continue
            series = meter.split(" ", 1)[1]
            row = usage(
                base_row(AZURE, day),
                quantity=Decimal(run),
                unit="Hours",
                pricing_quantity=Decimal(run),
                pricing_unit="1 Hour",
                unit_price=price,
                sku=f"DZH318Z0{abs(hash_text(size)) % 10000:04d}",
            )
            details = json.dumps({"ServiceType": size, "UsageType": "ComputeHR", "VCPUs": 0})
            row.update(
                ChargeDescription=f"Virtual Machines {series} Series - {meter} - US East",
                ServiceName=service,
                ServiceCategory=(
                    "AI and Machine Learning" if "Machine Learning" in service else "Compute"
                ),
                ServiceSubcategory=(
                    "Machine Learning" if "Machine Learning" in service else "Virtual Machines"
                ),
                SkuMeter=meter,
                SkuPriceDetails=details,
                x_SkuDetails=details,
                ResourceId=f"{AZURE['SubAccountId']}/{path}".lower(),
                ResourceName=path.rsplit("/", 1)[1],
                ResourceType=(
                    "Azure Machine Learning workspace"
                    if "Machine Learning" in service
                    else "Virtual machine"
                ),
                x_ResourceGroupName=path.split("/")[1],
                Tags=json.dumps(tags, sort_keys=True) if tags else "",
            )
            rows.append(row)
        rows.extend(_azure_services(day))
    rows.extend(_azure_billing_rows())
    return rows


def _azure_services(day: dt.date) -> list[dict[str, Any]]:
    services = [
        (
            "Azure Kubernetes Service",
            "Compute",
            "Containers",
            "Standard Uptime SLA",
            24,
            "Hours",
            "1 Hour",
            Decimal("0.1"),
            "aks-ml",
            {"team": "platform"},
        ),
        (
            "Storage Accounts",
            "Storage",
            "Object Storage",
            "Hot LRS Data Stored",
            Decimal("1520.5"),
            "GB/Month",
            "1 GB/Month",
            Decimal("0.0208"),
            "mlartifacts",
            {"ml:model": "recsys", "ml:stage": "checkpoints"},
        ),
        (
            "Storage Accounts",
            "Storage",
            "Object Storage",
            "Hot LRS Write Operations",
            Decimal("4.2"),
            "10K",
            "10K",
            Decimal("0.065"),
            "mlartifacts",
            {},
        ),
        (
            "Azure Data Factory v2",
            "Analytics",
            "Data Processing",
            "Cloud Data Movement",
            Decimal("41.5"),
            "DIU-hours",
            "1 Hour",
            Decimal("0.25"),
            "adf-features",
            {"ml:model": "recsys"},
        ),
        (
            "Azure Synapse Analytics",
            "Analytics",
            "Data Warehouses",
            "Serverless SQL Data Processed",
            Decimal("1.8"),
            "TB",
            "1 TB",
            Decimal("5"),
            "synapse-ml",
            {},
        ),
    ]
    rows = []
    for service, category, sub, meter, qty, unit, punit, price, name, tags in services:
        daily = (Decimal(qty) / (30 if unit == "GB/Month" else 1)).quantize(CENT6)
        row = usage(
            base_row(AZURE, day),
            quantity=daily,
            unit=unit,
            pricing_quantity=daily,
            pricing_unit=punit,
            unit_price=price,
            sku=f"DZH317F{abs(hash_text(meter)) % 100000:05d}",
        )
        row.update(
            ChargeDescription=f"{service} - {meter} - US East",
            ServiceName=service,
            ServiceCategory=category,
            ServiceSubcategory=sub,
            SkuMeter=meter,
            ResourceId=f"{AZURE['SubAccountId']}/resourcegroups/ml-rg/{name}",
            ResourceName=name,
            x_ResourceGroupName="ml-rg",
            Tags=json.dumps(tags, sort_keys=True) if tags else "",
        )
        rows.append(row)
    return rows


def _azure_billing_rows() -> list[dict[str, Any]]:
    """A savings-plan covered H100 day, a month's tax and a refund (adjustment)."""
    covered = usage(
        base_row(AZURE, PERIOD + dt.timedelta(days=2)),
        quantity=Decimal(24),
        unit="Hours",
        pricing_quantity=Decimal(24),
        pricing_unit="1 Hour",
        unit_price=Decimal("98.32"),
        sku="DZH318Z0H100",
    )
    details = json.dumps({"ServiceType": "Standard_ND96isr_H100_v5", "UsageType": "ComputeHR"})
    covered.update(
        ChargeDescription="Virtual Machines ND H100 v5 Series - ND96isr H100 v5 - US East",
        ServiceName="Virtual Machines",
        ServiceCategory="Compute",
        ServiceSubcategory="Virtual Machines",
        SkuMeter="ND96isr H100 v5",
        SkuPriceDetails=details,
        x_SkuDetails=details,
        ResourceId=(
            f"{AZURE['SubAccountId']}/resourcegroups/llm-rg/providers/microsoft.compute/"
            "virtualmachines/nd-h100-01"
        ),
        ResourceName="nd-h100-01",
        ResourceType="Virtual machine",
        PricingCategory="Committed",
        BilledCost="0.000000",
        ContractedCost="2359.680000",
        EffectiveCost="1533.792000",
        PricingCurrencyEffectiveCost="1533.792000",
        CommitmentDiscountId=(
            "/providers/Microsoft.BillingBenefits/savingsPlanOrders/7c1e/savingsPlans/a91f"
        ),
        CommitmentDiscountName="ml-compute-savings-plan",
        CommitmentDiscountCategory="Spend",
        CommitmentDiscountType="Savings Plan",
        CommitmentDiscountStatus="Used",
        CommitmentDiscountQuantity="1533.792000",
        CommitmentDiscountUnit="USD",
        x_ResourceGroupName="llm-rg",
    )
    tax = base_row(AZURE, PERIOD, "Tax")
    tax.update(
        ChargeDescription="Tax",
        ChargeFrequency="Recurring",
        ServiceName="Virtual Machines",
        ServiceCategory="Compute",
        ServiceSubcategory="Virtual Machines",
        BilledCost="612.400000",
        EffectiveCost="612.400000",
        ListCost="612.400000",
        ContractedCost="612.400000",
        PricingCurrencyEffectiveCost="612.400000",
    )
    refund = base_row(AZURE, PERIOD + dt.timedelta(days=1), "Adjustment")
    refund.update(
        ChargeDescription="Service level agreement credit: Virtual Machines",
        ChargeClass="Correction",
        ServiceName="Virtual Machines",
        ServiceCategory="Compute",
        ServiceSubcategory="Virtual Machines",
        BilledCost="-120.550000",
        EffectiveCost="-120.550000",
        ListCost="0.000000",
        ContractedCost="0.000000",
        PricingCurrencyEffectiveCost="-120.550000",
    )
    return [covered, tax, refund]


def check(rows: list[dict[str, Any]], allowed: dict[str, list[str]], decimals: set[str]) -> None:
    """Refuse to write a row the model would reject on an allowed value or a decimal."""
    for row in rows:
        for column, values in allowed.items():
            value = row.get(column)
            if value not in (None, "") and value not in values:
                raise SystemExit(f"{column}={value!r} is not an allowed FOCUS 1.2 value")
        for column in decimals:
            if row.get(column) not in (None, ""):
                Decimal(row[column])


def main() -> None:
    """Write the sample next to this script."""
    columns, allowed, decimals = model_columns()
    rows = gcp_rows() + azure_rows()
    check(rows, allowed, decimals)
    header = [*columns, *EXTENSIONS]
    with OUTPUT.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({c: row.get(c, "") for c in header})
    print(f"wrote {OUTPUT.name}: {len(rows)} rows x {len(header)} columns")


if __name__ == "__main__":
    main()
