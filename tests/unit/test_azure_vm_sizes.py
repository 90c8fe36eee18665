"""Azure GPU VM sizes read from meter and product names, as Azure's cost exports write them."""

from __future__ import annotations

import pytest

from bot.ingest.gpu import find_azure_gpu_size, gpu_count


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("ND96amsr A100 v4", "Standard_ND96amsr_A100_v4"),
        ("NC24ads A100 v4 Spot", "Standard_NC24ads_A100_v4"),
        ("ND96amsr A100 v4 Low Priority", "Standard_ND96amsr_A100_v4"),
        ("ND96asr A100 v4", "Standard_ND96asr_v4"),  # the meter names the A100; ARM does not
        ("Standard_ND96asr_v4", "Standard_ND96asr_v4"),
        ("standard_nc24ads_a100_v4", "standard_nc24ads_a100_v4"),  # as written
        ("NC8ads A10 v4", "Standard_NC8ads_A10_v4"),  # A10, not A100
        ("NC6", "Standard_NC6"),
        ("ND96asr v4", "Standard_ND96asr_v4"),
        ("Virtual Machines NDasrA100v4 Series - ND96asr A100 v4.", "Standard_ND96asr_v4"),
        ("NC6s v3/NC6s v3 Promo", "Standard_NC6s_v3"),
        (
            "Virtual Machines NCasT4 v3 Series Windows - NC64as T4 v3 Spot Hours - US East",
            "Standard_NC64as_T4_v3",
        ),
        ("Virtual Machines NV Series - NV24 - EU West", "Standard_NV24"),
    ],
)
def test_gpu_sizes_in_meter_and_product_names(text: str, size: str) -> None:
    assert find_azure_gpu_size(text) == size
    assert gpu_count(size) > 0


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "D4s v5",
        "D2 v3/D2s v3",
        "Virtual Machines NCv3 Series - US East",  # a series, no size
        "Virtual Machines NCadsA100v4 Series",
        "NV12s v3",  # NVv3 is not in the table, and is not NV12
        "NC24ads A100 v5",  # no such size, and not NC24
        "NC6s v3x",
        "NC24 v3x",  # not NC24
        "XNC24ads A100 v4",
        "NC24ads-A100-v4",
        "NP10s",
        "NV4as v4",  # a fractional GPU, not in the table
        "Premium SSD Managed Disks - P4 LRS - US East",
    ],
)
def test_non_gpu_sizes_and_look_alikes_are_not_sizes(text: str | None) -> None:
    assert find_azure_gpu_size(text) is None
