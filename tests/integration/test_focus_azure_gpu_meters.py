"""Azure GPU-hours from FOCUS's standard columns when no provider column names the VM size.

Microsoft's FOCUS export names the meter in SkuMeter ("NC24ads A100 v4", "... Spot", "... Low
Priority") and the product in ChargeDescription ("Virtual Machines NCasT4 v3 Series Windows -
NC4as T4 v3 - US East"); the size as Azure Resource Manager spells it ("Standard_NC4as_T4_v3")
is only in the optional SkuPriceDetails / x_SkuDetails. Meter and product names follow the Azure
Retail Prices API (meterName, productName) and the EA cost-details samples; GPU counts follow
Microsoft's "GPU accelerated VM sizes" pages, written here independently of bot/ingest/gpu.py.
"""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend
from bot.ingest import gpu
from bot.ingest.ledger import ingest
from bot.ingest.sources.focus import FocusSource
from tests.conftest import DATA
from tests.support.sample_registry import load_registry

SAMPLE = DATA / "focus12_gcp_azure_sample.csv"
# ARM size: (meter name, product series, GPUs per VM).
PUBLISHED = {
    "Standard_NC6": ("NC6", "Virtual Machines NC Series", 1),
    "Standard_NC12": ("NC12", "Virtual Machines NC Series", 2),
    "Standard_NC24": ("NC24", "Virtual Machines NC Series", 4),
    "Standard_NC6s_v3": ("NC6s v3", "Virtual Machines NCv3 Series", 1),
    "Standard_NC12s_v3": ("NC12s v3", "Virtual Machines NCv3 Series", 2),
    "Standard_NC24s_v3": ("NC24s v3", "Virtual Machines NCv3 Series", 4),
    "Standard_NC24rs_v3": ("NC24rs v3", "Virtual Machines NCv3 Series", 4),
    "Standard_NC4as_T4_v3": ("NC4as T4 v3", "Virtual Machines NCasT4 v3 Series", 1),
    "Standard_NC8as_T4_v3": ("NC8as T4 v3", "Virtual Machines NCasT4 v3 Series", 1),
    "Standard_NC16as_T4_v3": ("NC16as T4 v3", "Virtual Machines NCasT4 v3 Series", 1),
    "Standard_NC64as_T4_v3": ("NC64as T4 v3", "Virtual Machines NCasT4 v3 Series", 4),
    "Standard_NC8ads_A10_v4": ("NC8ads A10 v4", "Virtual Machines NCadsA10 v4 Series", 1),
    "Standard_NC16ads_A10_v4": ("NC16ads A10 v4", "Virtual Machines NCadsA10 v4 Series", 1),
    "Standard_NC32ads_A10_v4": ("NC32ads A10 v4", "Virtual Machines NCadsA10 v4 Series", 2),
    "Standard_NC24ads_A100_v4": ("NC24ads A100 v4", "Virtual Machines NCadsA100v4 Series", 1),
    "Standard_NC48ads_A100_v4": ("NC48ads A100 v4", "Virtual Machines NCadsA100v4 Series", 2),
    "Standard_NC96ads_A100_v4": ("NC96ads A100 v4", "Virtual Machines NCadsA100v4 Series", 4),
    "Standard_NC40ads_H100_v5": ("NC40ads H100 v5", "Virtual Machines NCadsH100v5 Series", 1),
    "Standard_NC80adis_H100_v5": ("NC80adis H100 v5", "Virtual Machines NCadsH100v5 Series", 2),
    "Standard_ND40rs_v2": ("ND40rs v2", "Virtual Machines NDv2 Series", 8),
    # The 40GB A100 size's ARM name has no "A100"; its meter has.
    "Standard_ND96asr_v4": ("ND96asr A100 v4", "Virtual Machines NDasrA100v4 Series", 8),
    "Standard_ND96amsr_A100_v4": ("ND96amsr A100 v4", "Virtual Machines NDamsrA100v4 Series", 8),
    "Standard_ND96isr_H100_v5": ("ND96isr H100 v5", "Virtual Machines NDisrH100v5 Series", 8),
    "Standard_ND96isr_H200_v5": ("ND96isr H200 v5", "Virtual Machines NDisrH200v5 Series", 8),
    "Standard_NV6": ("NV6", "Virtual Machines NV Series", 1),
    "Standard_NV12": ("NV12", "Virtual Machines NV Series", 2),
    "Standard_NV24": ("NV24", "Virtual Machines NV Series", 4),
    "Standard_NV36ads_A10_v5": ("NV36ads A10 v5", "Virtual Machines NVadsA10 v5 Series", 1),
    "Standard_NV72ads_A10_v5": ("NV72ads A10 v5", "Virtual Machines NVadsA10 v5 Series", 2),
}
# Where the size is written, as Azure writes it; every other size column is blank.
PLACES = {
    "meter": lambda arm, meter, series: {"SkuMeter": meter},
    "spot meter": lambda arm, meter, series: {"SkuMeter": f"{meter} Spot"},
    "low-priority meter": lambda arm, meter, series: {"SkuMeter": f"{meter} Low Priority"},
    "ARM name as meter": lambda arm, meter, series: {"SkuMeter": arm},
    "product": lambda arm, meter, series: {"ChargeDescription": f"{series} - {meter} - US East"},
    "Windows spot product": lambda arm, meter, series: {
        "ChargeDescription": f"{series} Windows - {meter} Spot Hours - US East"
    },
}
BLANK = {"SkuMeter": "", "ChargeDescription": "", "SkuPriceDetails": "", "x_SkuDetails": ""}


def template() -> tuple[list[str], dict[str, str]]:
    """The sample's columns and one of its Azure VM rows (a real FOCUS 1.2 shape)."""
    with SAMPLE.open(newline="") as handle:
        reader = csv.DictReader(handle)
        row = next(r for r in reader if r["ServiceName"] == "Virtual Machines")
        return list(reader.fieldnames or []), row


def vm_row(base: dict[str, str], n: int, hours: Decimal, **values: str) -> dict[str, str]:
    """One VM's usage row: its own resource, `hours` instance-hours, the given columns."""
    return {
        **base,
        **BLANK,
        "ResourceId": f"/subscriptions/s/resourcegroups/rg/providers/microsoft.compute/vm-{n}",
        "ResourceName": f"vm-{n}",
        "ConsumedQuantity": str(hours),
        "PricingQuantity": str(hours),
        "BilledCost": "10.00",
        "EffectiveCost": "10.00",
        "ContractedCost": "10.00",
        "ListCost": "10.00",
        "PricingCurrencyEffectiveCost": "10.00",
        "Tags": "",
        **values,
    }


def write(path: Path, columns: list[str], rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def by_resource(session: Session) -> dict[str, tuple[str | None, Decimal]]:
    rows = session.execute(
        select(DailySpend.resource_id, DailySpend.instance_type, DailySpend.gpu_hours)
    )
    return {str(r): (i, Decimal(g or 0)) for r, i, g in rows}


def test_every_azure_gpu_size_in_the_gpu_table_is_tested_here() -> None:
    assert {size.lower() for size in PUBLISHED} == {
        size for size in gpu._AZURE_GPUS if size.startswith("standard_")
    }


@pytest.mark.parametrize("place", list(PLACES))
def test_gpu_hours_from_the_size_in_a_standard_column_for_every_family(
    session: Session, tmp_path: Path, place: str
) -> None:
    load_registry(session)
    columns, base = template()
    rows, expected = [], {}
    for n, (arm, (meter, series, gpus)) in enumerate(PUBLISHED.items()):
        hours = Decimal("1.5") + n
        row = vm_row(base, n, hours, **PLACES[place](arm, meter, series))
        rows.append(row)
        expected[row["ResourceId"]] = (arm, hours * gpus)

    ingest(FocusSource([str(write(tmp_path / "azure.csv", columns, rows))]), session=session)

    got = by_resource(session)
    for resource, (arm, gpu_hours) in expected.items():
        instance, hours = got[resource]
        assert (instance, hours) == (arm, gpu_hours), (place, arm)


def test_non_gpu_sizes_and_look_alikes_get_no_gpu_hours(session: Session, tmp_path: Path) -> None:
    load_registry(session)
    columns, base = template()
    texts = [
        {"SkuMeter": "D4s v5"},
        {"SkuMeter": "D2 v3/D2s v3"},
        {"ChargeDescription": "Virtual Machines Dv5 Series - D4s v5 - US East"},
        {"ChargeDescription": "Virtual Machines NCadsA100v4 Series - US East"},  # no size
        {"SkuMeter": "NV12s v3"},  # NVv3 is not in the table: not NV12
        {"SkuMeter": "NC24ads A100 v5"},  # no such size: not NC24
        {"SkuMeter": "NC6s v3x"},
        {"SkuMeter": "XNC24ads A100 v4"},
        {"SkuMeter": "NP10s"},  # FPGA, not GPU
        {"ChargeDescription": "Premium SSD Managed Disks - P4 LRS - US East"},
    ]
    rows = [vm_row(base, n, Decimal(3), **text) for n, text in enumerate(texts)]
    # A row from another provider whose text looks like an Azure meter is not read as one.
    rows.append(vm_row(base, 99, Decimal(3), SkuMeter="NC24ads A100 v4", ProviderName="Other"))

    ingest(FocusSource([str(write(tmp_path / "azure.csv", columns, rows))]), session=session)

    got = by_resource(session)
    assert len(got) == len(rows)
    assert all(hours == 0 for _i, hours in got.values()), got


def test_the_provider_columns_win_over_the_standard_columns(
    session: Session, tmp_path: Path
) -> None:
    load_registry(session)
    columns, base = template()
    details = '{"ServiceType": "Standard_ND96asr_v4", "UsageType": "ComputeHR"}'
    cpu = '{"ServiceType": "Standard_D4s_v5", "UsageType": "ComputeHR"}'
    rows = [
        vm_row(base, 0, Decimal(2), SkuPriceDetails=details, SkuMeter="NC24ads A100 v4"),
        vm_row(base, 1, Decimal(2), x_SkuDetails=details, ChargeDescription="NC6 - US East"),
        vm_row(base, 2, Decimal(2), SkuPriceDetails=cpu, SkuMeter="NC24ads A100 v4"),
    ]

    ingest(FocusSource([str(write(tmp_path / "azure.csv", columns, rows))]), session=session)

    got = by_resource(session)
    assert got[rows[0]["ResourceId"]] == ("Standard_ND96asr_v4", Decimal(16))
    assert got[rows[1]["ResourceId"]] == ("Standard_ND96asr_v4", Decimal(16))
    assert got[rows[2]["ResourceId"]] == ("Standard_D4s_v5", Decimal(0))
