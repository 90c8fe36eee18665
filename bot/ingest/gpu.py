"""Accelerator counts per instance type, for GPU-hours."""

from __future__ import annotations

import re
from decimal import Decimal

# GPUs (or accelerator chips) per instance, from the providers' instance-type pages.
# g4dn, g5, g6 and g6e share one size ladder: 1 GPU up to 16xlarge, 4 at 12xlarge; g5, g6 and
# g6e add 4 at 24xlarge and 8 at 48xlarge, g4dn 8 on metal.
_G4DN_G5_SIZES = {
    "xlarge": 1,
    "2xlarge": 1,
    "4xlarge": 1,
    "8xlarge": 1,
    "16xlarge": 1,
    "12xlarge": 4,
}
_G5_SIZES = {**_G4DN_G5_SIZES, "24xlarge": 4, "48xlarge": 8}
_AWS_FAMILY_SIZES: dict[str, dict[str, int]] = {
    "p3": {"2xlarge": 1, "8xlarge": 4, "16xlarge": 8},
    "p3dn": {"24xlarge": 8},
    "p4d": {"24xlarge": 8},
    "p4de": {"24xlarge": 8},
    "p5": {"4xlarge": 1, "48xlarge": 8},
    "p5e": {"48xlarge": 8},
    "p5en": {"48xlarge": 8},
    "p6-b200": {"48xlarge": 8},
    "g3": {"4xlarge": 1, "8xlarge": 2, "16xlarge": 4},
    "g3s": {"xlarge": 1},
    "g4dn": {**_G4DN_G5_SIZES, "metal": 8},
    "g4ad": {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 2, "16xlarge": 4},
    "g5": _G5_SIZES,
    "g5g": {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 2, "metal": 2},
    "g6": _G5_SIZES,
    "g6e": _G5_SIZES,
    "gr6": {"4xlarge": 1, "8xlarge": 1},
    "trn1": {"2xlarge": 1, "32xlarge": 16},
    "trn1n": {"32xlarge": 16},
    "trn2": {"48xlarge": 16},
    "inf1": {"xlarge": 1, "2xlarge": 1, "6xlarge": 4, "24xlarge": 16},
    "inf2": {"xlarge": 1, "8xlarge": 1, "24xlarge": 6, "48xlarge": 12},
}

# Google Cloud accelerator-optimised machine types: the GPUs come attached, a fixed number per
# machine type (cloud.google.com/compute/docs/accelerator-optimized-machines and
# /compute/docs/gpus). a2-highgpu and a2-megagpu: A100 40GB; a2-ultragpu: A100 80GB; a3-highgpu,
# a3-megagpu and a3-edgegpu: H100; a3-ultragpu: H200; a4-highgpu: B200; a4x-highgpu: GB200
# (4 B200 per machine); g2-standard: L4, one up to g2-standard-32 except g2-standard-24 (2).
_GCP_GPUS: dict[str, int] = {
    **{f"a2-highgpu-{n}g": n for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": 16,
    **{f"a2-ultragpu-{n}g": n for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": n for n in (1, 2, 4, 8)},
    "a3-megagpu-8g": 8,
    "a3-edgegpu-8g": 8,
    "a3-ultragpu-8g": 8,
    "a4-highgpu-8g": 8,
    "a4x-highgpu-4g": 4,
    **{f"g2-standard-{n}": 1 for n in (4, 8, 12, 16, 32)},
    "g2-standard-24": 2,
    "g2-standard-48": 4,
    "g2-standard-96": 8,
}

_INSTANCE_RE = re.compile(
    r"\b(?:ml\.)?((?:p|g|trn|inf|gr)[0-9][a-z0-9-]*)\.([0-9]*x?large|metal)\b", re.IGNORECASE
)
_GCP_RE = re.compile(r"\b(?:a2|a3|a4|a4x|g2)-(?:high|mega|ultra|edge)?(?:gpu|standard)-[0-9]+g?\b")
_AZURE_RE = re.compile(r"\bStandard_N[CDV][A-Za-z0-9_]*", re.IGNORECASE)
# Azure N-series sizes (learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/*):
# NC (K80, retired), NCv3 (V100), NCasT4_v3 (T4), NC A100 v4, NC H100 v5, NVadsA10 v5 / NV, ND
# A100 v4 (ND96asr_v4: 40GB, ND96amsr_A100_v4: 80GB), ND H100 v5 / H200 v5, NDv2 (V100).
_AZURE_GPUS = {
    "standard_nc6": 1,
    "standard_nc12": 2,
    "standard_nc24": 4,
    "standard_nc6s_v3": 1,
    "standard_nc12s_v3": 2,
    "standard_nc24s_v3": 4,
    "standard_nc24rs_v3": 4,
    "standard_nc4as_t4_v3": 1,
    "standard_nc8as_t4_v3": 1,
    "standard_nc16as_t4_v3": 1,
    "standard_nc64as_t4_v3": 4,
    "standard_nc8ads_a10_v4": 1,
    "standard_nc16ads_a10_v4": 1,
    "standard_nc32ads_a10_v4": 2,
    "standard_nc24ads_a100_v4": 1,
    "standard_nc48ads_a100_v4": 2,
    "standard_nc96ads_a100_v4": 4,
    "standard_nc40ads_h100_v5": 1,
    "standard_nc80adis_h100_v5": 2,
    "standard_nd40rs_v2": 8,
    "standard_nd96asr_v4": 8,
    "standard_nd96amsr_a100_v4": 8,
    "standard_nd96isr_h100_v5": 8,
    "standard_nd96isr_h200_v5": 8,
    "standard_nv6": 1,
    "standard_nv12": 2,
    "standard_nv24": 4,
    "standard_nv36ads_a10_v5": 1,
    "standard_nv72ads_a10_v5": 2,
}
# Azure's meter and product names write a size without "Standard_" and with spaces ("NC24ads A100
# v4", then " Spot", " Low Priority"; "Virtual Machines NCadsA100v4 Series Windows - NC24ads A100 v4
# - US East"), and ND96asr_v4's meter names its A100 ("ND96asr A100 v4"). Only the sizes above are
# read: a look-alike ("NV12s v3", "NC24ads A100 v5") is no size at all, never a shorter one (the
# atomic group keeps "NC24 v3x" from being read as NC24).
_AZURE_METER_SIZES = {
    **{size.removeprefix("standard_").replace("_", " "): size for size in _AZURE_GPUS},
    "nd96asr a100 v4": "standard_nd96asr_v4",
}
_AZURE_SIZE_IN_TEXT = re.compile(
    r"(?<!\w)(?P<arm>Standard_)?(?P<size>(?>N[CDV][0-9]+[a-z]*"
    r"(?:[ _](?:A100|A10|H100|H200|T4))?(?:[ _]v[0-9]+)?))(?!\w)",
    re.IGNORECASE,
)
# Usage hours of one instance (GPU-hours = hours x GPUs per instance).
HOUR_UNITS = frozenset({"hrs", "hours", "hour", "hr", "h", "1 hour"})
# Usage already counted per GPU (a GPU SKU's hours, as Google Cloud bills them).
GPU_HOUR_UNITS = frozenset({"gpu-hours", "gpu-hour"})


def find_instance_type(text: str | None) -> str | None:
    """Find a GPU instance type (`g5.4xlarge`, `Standard_ND96asr_v4`, `a3-highgpu-8g`) in text."""
    if not text:
        return None
    match = _INSTANCE_RE.search(text)
    if match:
        return f"{match.group(1).lower()}.{match.group(2).lower()}"
    azure = _AZURE_RE.search(text)
    if azure:
        return azure.group(0)
    gcp = _GCP_RE.search(text.lower())
    return gcp.group(0) if gcp else None


def find_azure_gpu_size(text: str | None) -> str | None:
    """Find an Azure GPU VM size in a meter or product name (`NC24ads A100 v4 Spot`)."""
    for match in _AZURE_SIZE_IN_TEXT.finditer(text or ""):
        key = _AZURE_METER_SIZES.get(match["size"].replace("_", " ").lower())
        if key is None:
            continue
        if match["arm"]:
            return match.group(0)
        if key == "standard_nd96asr_v4":
            return "Standard_ND96asr_v4"
        return "Standard_" + match["size"].replace(" ", "_")
    return None


def gpu_count(instance_type: str | None) -> int:
    """Return the accelerators in one instance of this type, 0 for CPU-only or unknown types."""
    if not instance_type:
        return 0
    name = instance_type.strip().lower()
    if name.startswith("ml."):
        name = name[3:]
    if name.startswith("standard_"):
        return _AZURE_GPUS.get(name, 0)
    if name in _GCP_GPUS:
        return _GCP_GPUS[name]
    family, _, size = name.partition(".")
    return _AWS_FAMILY_SIZES.get(family, {}).get(size, 0)


def gpus_per_unit(instance_type: str | None, unit: str | None) -> int:
    """Return what one unit of usage counts in GPU-hours: GPUs per instance-hour, 1 per GPU-hour."""
    name = (unit or "").strip().lower()
    if name in GPU_HOUR_UNITS:
        return 1
    return gpu_count(instance_type) if name in HOUR_UNITS else 0


def gpu_hours(instance_type: str | None, usage_hours: Decimal) -> Decimal:
    """Return GPU-hours for usage hours of an instance type."""
    count = gpu_count(instance_type)
    return usage_hours * count if count else Decimal(0)
