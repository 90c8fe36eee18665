"""The AWS Spot Instance Advisor feed: how much Spot saves, and how often it is interrupted.

The feed gives, per region, OS and instance type, the saving against on-demand (`s`, percent) and
an interruption band (`r`, 0–4). mlcost bundles a snapshot (bot/waste/data/spot-advisor.json.gz) and
reads a fresher copy of the feed from a file when one is configured.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from bot.errors import UsageError

BUNDLED = Path(__file__).parent / "data" / "spot-advisor.json.gz"
DEFAULT_BANDS = ("<5%", "5-10%", "10-15%", "15-20%", ">20%")


@dataclass(frozen=True)
class SpotOffer:
    """Spot capacity for one instance type in one region."""

    instance_type: str
    region: str
    savings_pct: int  # percent below on-demand
    band: int  # interruption frequency band, 0 (least) to 4
    band_label: str

    @property
    def price_ratio(self) -> Decimal:
        """Return the Spot price as a fraction of on-demand."""
        return Decimal(100 - self.savings_pct) / 100


class SpotAdvisor:
    """Look up Spot savings and interruption bands (Linux) by region and instance type."""

    def __init__(self, feed: dict[str, Any]) -> None:
        try:
            regions = feed["spot_advisor"]
            self._table: dict[str, dict[str, Any]] = {
                region: dict((oses or {}).get("Linux") or {}) for region, oses in regions.items()
            }
            ranges = sorted(feed.get("ranges") or [], key=lambda r: int(r["index"]))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise UsageError(f"not a Spot Instance Advisor feed: {exc}") from exc
        self._labels = tuple(str(r["label"]) for r in ranges) or DEFAULT_BANDS

    def offer(self, region: str | None, instance_type: str | None) -> SpotOffer | None:
        """Return the Spot offer for an EC2 (or SageMaker `ml.`) instance type, if known."""
        if not region or not instance_type:
            return None
        name = instance_type.removeprefix("ml.")
        entry = self._table.get(region, {}).get(name)
        if not entry:
            return None
        band = int(entry["r"])
        label = self._labels[band] if 0 <= band < len(self._labels) else str(band)
        return SpotOffer(name, region, int(entry["s"]), band, label)


def load_spot_advisor(path: Path | None = None) -> SpotAdvisor:
    """Read a feed (plain or gzipped JSON); the bundled snapshot when no path is given."""
    return _load(str(path or BUNDLED))


@lru_cache(maxsize=4)
def _load(path: str) -> SpotAdvisor:
    try:
        raw = Path(path).read_bytes()
        text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        feed = json.loads(text)
    except (OSError, EOFError, ValueError) as exc:
        raise UsageError(f"cannot read the Spot Instance Advisor feed {path}: {exc}") from exc
    if not isinstance(feed, dict):
        raise UsageError(f"{path} is not a Spot Instance Advisor feed")
    return SpotAdvisor(feed)
