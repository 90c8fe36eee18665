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

_INSTANCE_RE = re.compile(
    r"\b(?:ml\.)?((?:p|g|trn|inf|gr)[0-9][a-z0-9-]*)\.([0-9]*x?large|metal)\b", re.IGNORECASE
)
_AZURE_RE = re.compile(r"\bStandard_N[CDV][A-Za-z0-9_]*", re.IGNORECASE)
_AZURE_GPUS = {
    "standard_nc6": 1,
    "standard_nc12": 2,
    "standard_nc24": 4,
    "standard_nc4as_t4_v3": 1,
    "standard_nc8as_t4_v3": 1,
    "standard_nc16as_t4_v3": 1,
    "standard_nc64as_t4_v3": 4,
    "standard_nc24ads_a100_v4": 1,
    "standard_nc48ads_a100_v4": 2,
    "standard_nc96ads_a100_v4": 4,
    "standard_nd96asr_v4": 8,
    "standard_nd96amsr_a100_v4": 8,
    "standard_nd96isr_h100_v5": 8,
    "standard_nv6": 1,
    "standard_nv12": 2,
}


def find_instance_type(text: str | None) -> str | None:
    """Find a GPU instance type (`g5.4xlarge`, `ml.p4d.24xlarge`) inside free text."""
    if not text:
        return None
    match = _INSTANCE_RE.search(text)
    if match:
        return f"{match.group(1).lower()}.{match.group(2).lower()}"
    azure = _AZURE_RE.search(text)
    return azure.group(0) if azure else None


def gpu_count(instance_type: str | None) -> int:
    """Return the accelerators in one instance of this type, 0 for CPU-only or unknown types."""
    if not instance_type:
        return 0
    name = instance_type.strip().lower()
    if name.startswith("ml."):
        name = name[3:]
    if name.startswith("standard_"):
        return _AZURE_GPUS.get(name, 0)
    family, _, size = name.partition(".")
    return _AWS_FAMILY_SIZES.get(family, {}).get(size, 0)


def gpu_hours(instance_type: str | None, usage_hours: Decimal) -> Decimal:
    """Return GPU-hours for usage hours of an instance type."""
    count = gpu_count(instance_type)
    return usage_hours * count if count else Decimal(0)
