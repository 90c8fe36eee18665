"""What every scanner is given besides AWS clients: the policy, the ledger's view and the prices.

All plain values, so scanners need no database session: `ledger.ledger_view()` builds the
`LedgerView` from the ledger, tests build it by hand.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from bot.config import ScanSettings
from bot.ingest.attribution import DEFAULT_MODEL_TAG_KEYS, DEFAULT_TEAM_TAG_KEYS
from bot.waste.pricing import PriceTable
from bot.waste.scan.model import Resource


@dataclass(frozen=True)
class ScanPolicy:
    """Thresholds and windows (from ScanSettings: MLCOST_SCAN_*)."""

    window_days: int = 7
    gpu_idle_pct: Decimal = Decimal(5)
    gpu_low_pct: Decimal = Decimal(30)
    cpu_idle_pct: Decimal = Decimal(5)
    network_idle_mb_per_day: Decimal = Decimal(100)
    snapshot_days: int = 90
    s3_patterns: tuple[str, ...] = ()
    s3_stale_days: int = 30
    # bucket -> its S3 Inventory's destination, s3://dest-bucket/dest-prefix/source-bucket/config-id/
    s3_inventory: tuple[tuple[str, str], ...] = ()
    training_overrun_factor: Decimal = Decimal(3)
    training_min_completed: int = 3
    model_tag_keys: tuple[str, ...] = DEFAULT_MODEL_TAG_KEYS
    team_tag_keys: tuple[str, ...] = DEFAULT_TEAM_TAG_KEYS


@dataclass(frozen=True)
class LedgerView:
    """What the ledger and registry say, for pricing and ownership.

    `run_rates`: monthly run-rate per ledger resource id (lower-cased; ARNs also indexed by their
    `type/name` part); `models`: registered model -> team; `killed`: models decided Kill;
    `spending_models`: models with training or serving spend in the window; `has_spend`: whether
    the ledger holds any spend in the window at all (if not, "no spend" says nothing).
    """

    run_rates: Mapping[str, Decimal] = field(default_factory=dict)
    models: Mapping[str, str | None] = field(default_factory=dict)
    killed: frozenset[str] = frozenset()
    spending_models: frozenset[str] = frozenset()
    has_spend: bool = False
    currency: str = "USD"

    def run_rate(self, *ids: str) -> Decimal | None:
        """Return the ledger's monthly run-rate for the first id it knows, or None."""
        for rid in ids:
            rate = self.run_rates.get(rid.lower())
            if rate is not None:
                return rate
        return None


@dataclass(frozen=True)
class ScanContext:
    """Everything a scanner needs besides its clients, and where it leaves its notes.

    `notes` collects what a scanner says that is neither a finding nor a failure (a resource it
    could not judge, a signal it had to fall back to); `scan_account` gives each scanner run its
    own list and files the notes under the scanner's kind and region.
    """

    account: str
    now: dt.datetime
    policy: ScanPolicy
    ledger: LedgerView
    prices: PriceTable
    notes: list[str] = field(default_factory=list, compare=False, repr=False)

    def note(self, message: str) -> None:
        """Say something about this scan that is neither a finding nor a failure."""
        self.notes.append(message)

    def owner(self, tags: tuple[tuple[str, str], ...]) -> tuple[str | None, str | None, str | None]:
        """Return (model tag value, registered model, team) from a resource's tags."""
        values = dict(tags)
        tag_value = next((values[k] for k in self.policy.model_tag_keys if values.get(k)), None)
        model = None
        if tag_value is not None:
            model = next((m for m in self.ledger.models if m.lower() == tag_value.lower()), None)
        team = self.ledger.models.get(model) if model else None
        if team is None:
            team = next((values[k] for k in self.policy.team_tag_keys if values.get(k)), None)
        return tag_value, model, team

    def owned(self, resource: Resource) -> Resource:
        """Return the resource with its model and team filled in from its tags."""
        _, model, team = self.owner(resource.tags)
        return replace(resource, model=model, team=team)


def policy_from_settings(
    settings: ScanSettings,
    *,
    model_tag_keys: Sequence[str] | None = None,
    team_tag_keys: Sequence[str] | None = None,
) -> ScanPolicy:
    """Return the scan policy the operator configured (MLCOST_SCAN_*); the tag keys given (the
    registry's attribution, see scan_policy) win over the settings'."""
    return ScanPolicy(
        window_days=settings.scan_idle_days,
        gpu_idle_pct=settings.scan_gpu_idle_pct,
        gpu_low_pct=settings.scan_gpu_low_pct,
        cpu_idle_pct=settings.scan_cpu_idle_pct,
        network_idle_mb_per_day=settings.scan_network_idle_mb_per_day,
        snapshot_days=settings.scan_snapshot_days,
        s3_patterns=tuple(settings.scan_s3_patterns),
        s3_stale_days=settings.scan_s3_stale_days,
        s3_inventory=tuple(sorted(settings.scan_s3_inventory.items())),
        model_tag_keys=tuple(model_tag_keys or settings.model_tag_keys),
        team_tag_keys=tuple(team_tag_keys or settings.team_tag_keys),
    )
