import datetime as dt
from decimal import Decimal

import pytest

from bot.errors import UsageError
from bot.ingest.gpu import find_instance_type, gpu_count, gpu_hours, gpus_per_unit
from bot.money import MoneyError, format_money, format_percent, parse_money, percent_of
from bot.periods import month_period, parse_window


def test_money_parsing_is_exact() -> None:
    assert parse_money("0.00000080000") == Decimal("8E-7")
    assert parse_money("NULL") == 0
    assert parse_money(0.1) == Decimal("0.1")
    with pytest.raises(MoneyError):
        parse_money("12abc")


def test_finance_formatting() -> None:
    assert format_money(Decimal("12345.4")) == "$12,345"
    assert format_money(Decimal("-3.456")) == "-$3.46"
    assert format_percent(percent_of(Decimal(81), Decimal(100))) == "81 %"
    assert percent_of(Decimal(1), Decimal(0)) is None


def test_gpu_counts() -> None:
    assert gpu_count("p4d.24xlarge") == 8
    assert gpu_count("ml.g5.12xlarge") == 4
    assert gpu_count("m5.large") == 0
    assert gpu_hours("g5.48xlarge", Decimal("2.5")) == Decimal("20.0")
    assert find_instance_type("$1.624 per On Demand Linux g5.4xlarge Instance Hour") == "g5.4xlarge"


# Published GPU counts: Google Cloud "GPU machine types" / "Accelerator-optimized machine family"
# (cloud.google.com/compute/docs/gpus, /compute/docs/accelerator-optimized-machines); Microsoft
# "GPU accelerated VM sizes" (learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated).
GCP_FAMILIES = {
    "a2": {
        "a2-highgpu-1g": 1,
        "a2-highgpu-2g": 2,
        "a2-highgpu-4g": 4,
        "a2-highgpu-8g": 8,
        "a2-megagpu-16g": 16,
        "a2-ultragpu-1g": 1,
        "a2-ultragpu-2g": 2,
        "a2-ultragpu-4g": 4,
        "a2-ultragpu-8g": 8,
    },
    "a3": {
        "a3-highgpu-1g": 1,
        "a3-highgpu-2g": 2,
        "a3-highgpu-4g": 4,
        "a3-highgpu-8g": 8,
        "a3-megagpu-8g": 8,
        "a3-ultragpu-8g": 8,
        "a3-edgegpu-8g": 8,
    },
    "a4": {"a4-highgpu-8g": 8, "a4x-highgpu-4g": 4},
    "g2": {
        "g2-standard-4": 1,
        "g2-standard-8": 1,
        "g2-standard-12": 1,
        "g2-standard-16": 1,
        "g2-standard-24": 2,
        "g2-standard-32": 1,
        "g2-standard-48": 4,
        "g2-standard-96": 8,
    },
}
AZURE_FAMILIES = {
    "ND": {
        "Standard_ND96asr_v4": 8,
        "Standard_ND96amsr_A100_v4": 8,
        "Standard_ND96isr_H100_v5": 8,
        "Standard_ND96isr_H200_v5": 8,
        "Standard_ND40rs_v2": 8,
    },
    "NC": {
        "Standard_NC24ads_A100_v4": 1,
        "Standard_NC48ads_A100_v4": 2,
        "Standard_NC96ads_A100_v4": 4,
        "Standard_NC4as_T4_v3": 1,
        "Standard_NC8as_T4_v3": 1,
        "Standard_NC16as_T4_v3": 1,
        "Standard_NC64as_T4_v3": 4,
        "Standard_NC6s_v3": 1,
        "Standard_NC12s_v3": 2,
        "Standard_NC24s_v3": 4,
        "Standard_NC40ads_H100_v5": 1,
        "Standard_NC80adis_H100_v5": 2,
    },
}


@pytest.mark.parametrize("family", [*GCP_FAMILIES, *AZURE_FAMILIES])
def test_gpu_counts_for_gcp_and_azure_families(family: str) -> None:
    sizes = {**GCP_FAMILIES, **AZURE_FAMILIES}[family]
    for size, gpus in sizes.items():
        assert gpu_count(size) == gpus, size
        assert gpu_count(size.lower()) == gpus, size
        assert gpu_hours(size, Decimal("1.5")) == Decimal("1.5") * gpus
    assert gpu_count("n2-standard-8") == 0
    assert gpu_count("Standard_D2s_v3") == 0


def test_gpu_hours_per_unit_and_machine_types_in_text() -> None:
    assert gpus_per_unit("a3-highgpu-8g", "Hours") == 8
    assert gpus_per_unit("Standard_NC24ads_A100_v4", "1 Hour") == 1
    assert gpus_per_unit("a3-highgpu-8g", "seconds") == 0  # core-seconds are not GPU time
    assert gpus_per_unit(None, "GPU-hours") == 1  # a GPU SKU's hours count one to one
    assert find_instance_type("machine a3-highgpu-8g in us-central1") == "a3-highgpu-8g"
    assert find_instance_type("size Standard_NC40ads_H100_v5") == "Standard_NC40ads_H100_v5"


def test_periods() -> None:
    nov = month_period("2026-11")
    assert (nov.start, nov.end, nov.days) == (dt.date(2026, 11, 1), dt.date(2026, 12, 1), 30)
    window = parse_window("30d", dt.date(2026, 11, 30))
    assert (window.start, window.end) == (dt.date(2026, 11, 1), dt.date(2026, 12, 1))
    for bad in ("2026-13", "nov", "0d", "9999d"):
        with pytest.raises(UsageError):
            parse_window(bad, dt.date(2026, 11, 30))
