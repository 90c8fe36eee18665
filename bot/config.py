"""Settings read from the environment or a `.env` file."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.money import CostBasis

DEFAULT_SLACK_API_URL = "https://slack.com/api/"

# Read by our validators below, not decoded as JSON by pydantic-settings: a list setting may be
# written `us-east-1,eu-west-1` as well as `["us-east-1","eu-west-1"]`.
TextList = Annotated[list[str], NoDecode]
TextMapping = Annotated[dict[str, str], NoDecode]


class Settings(BaseSettings):
    """Every knob of mlcost; each field is documented in `.env.example`."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", populate_by_name=True
    )

    database_url: str = Field(default="sqlite:///mlcost.db", validation_alias="MLCOST_DATABASE_URL")
    slack_bot_token: SecretStr | None = Field(default=None, validation_alias="SLACK_BOT_TOKEN")
    slack_signing_secret: SecretStr | None = Field(
        default=None, validation_alias="SLACK_SIGNING_SECRET"
    )
    slack_app_token: SecretStr | None = Field(default=None, validation_alias="SLACK_APP_TOKEN")
    slack_api_url: str = Field(default=DEFAULT_SLACK_API_URL, validation_alias="SLACK_API_URL")

    # The organisation's currency: for budgets without one, and for billing rows without one.
    # Never a relabel: reports and the poll refuse it when the ledger holds no spend in it.
    currency: str = Field(default="USD", validation_alias="MLCOST_CURRENCY")
    timezone: str = Field(default="UTC", validation_alias="MLCOST_TIMEZONE")
    model_tag_keys: TextList = Field(
        default=["ml:model", "model"], validation_alias="MLCOST_MODEL_TAG_KEYS"
    )
    stage_tag_keys: TextList = Field(
        default=["ml:stage", "stage"], validation_alias="MLCOST_STAGE_TAG_KEYS"
    )
    team_tag_keys: TextList = Field(default=["team"], validation_alias="MLCOST_TEAM_TAG_KEYS")
    cost_explorer_group_key: str = Field(
        default="SERVICE", validation_alias="MLCOST_CE_SECOND_GROUP"
    )
    poll_interval_hours: float = Field(default=6.0, validation_alias="MLCOST_POLL_INTERVAL_HOURS")
    poll_lookback_days: int = Field(default=7, validation_alias="MLCOST_POLL_LOOKBACK_DAYS")
    aws_billing_account: str | None = Field(
        default=None, validation_alias="MLCOST_AWS_BILLING_ACCOUNT"
    )

    # Unit economics, the monthly review and the release gate.
    review_reminder_days: int = Field(default=3, validation_alias="MLCOST_REVIEW_REMINDER_DAYS")
    verdict_cost_rise_pct: Decimal = Field(
        default=Decimal(10), validation_alias="MLCOST_VERDICT_COST_RISE_PCT"
    )
    verdict_value_flat_pct: Decimal = Field(
        default=Decimal(5), validation_alias="MLCOST_VERDICT_VALUE_FLAT_PCT"
    )
    gate_max_unit_cost_rise_pct: Decimal = Field(
        default=Decimal(20), validation_alias="MLCOST_GATE_MAX_UNIT_COST_RISE_PCT"
    )
    # older than this, the ledger is stale: the gate gives no verdict, reports say so
    gate_max_data_age_days: int = Field(
        default=3, ge=0, le=366, validation_alias="MLCOST_GATE_MAX_DATA_AGE_DAYS"
    )

    poll_sources: str = Field(default="", validation_alias="MLCOST_POLL_SOURCES")
    # a poll gives up a source's read after this; OpenCost's whole fetch, and its answer's size
    poll_source_timeout_seconds: float = Field(
        default=900.0, gt=0, validation_alias="MLCOST_POLL_SOURCE_TIMEOUT_SECONDS"
    )
    opencost_timeout_seconds: float = Field(
        default=300.0, gt=0, validation_alias="MLCOST_OPENCOST_TIMEOUT_SECONDS"
    )
    opencost_max_bytes: int = Field(
        default=512 * 1024 * 1024, gt=0, validation_alias="MLCOST_OPENCOST_MAX_BYTES"
    )
    budget_cost_basis: CostBasis = Field(
        default=CostBasis.BILLED, validation_alias="MLCOST_BUDGET_COST_BASIS"
    )
    anomaly_min_dollars: Decimal = Field(
        default=Decimal(100), validation_alias="MLCOST_ANOMALY_MIN_DOLLARS"
    )
    unallocated_min_dollars: Decimal = Field(
        default=Decimal(100), validation_alias="MLCOST_UNALLOCATED_MIN_DOLLARS"
    )
    anomaly_hour: int = Field(default=9, ge=0, le=23, validation_alias="MLCOST_ANOMALY_HOUR")
    anomaly_recheck_days: int = Field(
        default=7, ge=1, le=60, validation_alias="MLCOST_ANOMALY_RECHECK_DAYS"
    )
    # covered days (with some source's data) a baseline needs; its window is the 28 days before
    anomaly_min_history_days: int = Field(
        default=14, ge=1, le=28, validation_alias="MLCOST_ANOMALY_MIN_HISTORY_DAYS"
    )
    spot_advisor_file: Path | None = Field(
        default=None, validation_alias="MLCOST_SPOT_ADVISOR_FILE"
    )
    spot_max_interruption_band: int = Field(
        default=2, ge=0, le=4, validation_alias="MLCOST_SPOT_MAX_INTERRUPTION_BAND"
    )
    delivery_interval_seconds: float = Field(
        default=60.0, gt=0, validation_alias="MLCOST_DELIVERY_INTERVAL_SECONDS"
    )
    outbox_lease_seconds: float = Field(
        default=120.0, gt=0, validation_alias="MLCOST_OUTBOX_LEASE_SECONDS"
    )
    leader_check_seconds: float = Field(
        default=10.0, gt=0, validation_alias="MLCOST_LEADER_CHECK_SECONDS"
    )
    max_body_bytes: int = Field(default=1024 * 1024, gt=0, validation_alias="MLCOST_MAX_BODY_BYTES")
    slack_timeout_seconds: float = Field(
        default=15.0, gt=0, validation_alias="MLCOST_SLACK_TIMEOUT_SECONDS"
    )
    # chart-render worker processes of `mlcost serve`; None: the CPUs this process may use, less one
    chart_workers: int | None = Field(
        default=None, ge=1, le=64, validation_alias="MLCOST_CHART_WORKERS"
    )
    # "human" lines, or "json": one object per line (time, level, logger, message, exc_info)
    log_format: Literal["human", "json"] = Field(
        default="human", validation_alias="MLCOST_LOG_FORMAT"
    )

    # Resource scan (`mlcost waste scan`): regions, windows, thresholds, S3 patterns, prices.
    scan_regions: TextList = Field(default=[], validation_alias="MLCOST_SCAN_REGIONS")
    scan_idle_days: int = Field(default=7, ge=1, le=63, validation_alias="MLCOST_SCAN_IDLE_DAYS")
    scan_snapshot_days: int = Field(default=90, ge=1, validation_alias="MLCOST_SCAN_SNAPSHOT_DAYS")
    scan_s3_patterns: TextList = Field(default=[], validation_alias="MLCOST_SCAN_S3_PATTERNS")
    scan_s3_stale_days: int = Field(default=30, ge=1, validation_alias="MLCOST_SCAN_S3_STALE_DAYS")
    # bucket -> S3 Inventory destination (s3://dest/prefix/bucket/config-id/): sized from it
    scan_s3_inventory: TextMapping = Field(default={}, validation_alias="MLCOST_SCAN_S3_INVENTORY")
    scan_gpu_idle_pct: Decimal = Field(
        default=Decimal(5), ge=0, le=100, validation_alias="MLCOST_SCAN_GPU_IDLE_PCT"
    )
    scan_gpu_low_pct: Decimal = Field(
        default=Decimal(30), ge=0, le=100, validation_alias="MLCOST_SCAN_GPU_LOW_PCT"
    )
    scan_cpu_idle_pct: Decimal = Field(
        default=Decimal(5), ge=0, le=100, validation_alias="MLCOST_SCAN_CPU_IDLE_PCT"
    )
    scan_network_idle_mb_per_day: Decimal = Field(
        default=Decimal(100), ge=0, validation_alias="MLCOST_SCAN_NETWORK_IDLE_MB_PER_DAY"
    )
    price_table_file: Path | None = Field(default=None, validation_alias="MLCOST_PRICE_TABLE_FILE")

    # "Stop it" on a resource finding changes AWS only when this is true (approvals are recorded
    # either way); the daily resource scan posts findings at this hour (MLCOST_TIMEZONE).
    actions_enabled: bool = Field(default=False, validation_alias="MLCOST_ACTIONS_ENABLED")
    scan_hour: int = Field(default=7, ge=0, le=23, validation_alias="MLCOST_SCAN_HOUR")
    # Posting policy of resource findings: below this monthly cost a finding is recorded (and
    # listed by reports) but never posted; at most this many findings are posted one by one per
    # channel per UTC day, the rest of that channel's in one summary post.
    scan_min_monthly: Decimal = Field(
        default=Decimal(50), ge=0, validation_alias="MLCOST_SCAN_MIN_MONTHLY"
    )
    scan_max_posts_per_channel: int = Field(
        default=10, ge=1, le=100, validation_alias="MLCOST_SCAN_MAX_POSTS_PER_CHANNEL"
    )

    @field_validator(
        "model_tag_keys",
        "stage_tag_keys",
        "team_tag_keys",
        "scan_regions",
        "scan_s3_patterns",
        mode="before",
    )
    @classmethod
    def _text_list(cls, value: Any) -> Any:
        """Read `a,b` or a JSON list `["a","b"]` from the environment; leave lists alone."""
        if not isinstance(value, str):
            return value
        text = value.strip()
        if not text.startswith("["):
            return [item.strip() for item in text.split(",") if item.strip()]
        try:
            items = json.loads(text)
        except json.JSONDecodeError:
            items = None
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            # the value itself is not repeated: a setting may hold a secret
            raise ValueError("expected a comma-separated list (a,b) or a JSON list of strings")
        return items

    @field_validator("scan_s3_inventory", mode="before")
    @classmethod
    def _text_mapping(cls, value: Any) -> Any:
        """Read a JSON object of strings from the environment; leave mappings alone."""
        if not isinstance(value, str):
            return value
        if not value.strip():
            return {}
        try:
            mapping = json.loads(value)
        except json.JSONDecodeError:
            mapping = None
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
            raise ValueError('expected a JSON object of strings, such as {"bucket": "s3://..."}')
        return mapping

    @field_validator("currency")
    @classmethod
    def _currency_code(cls, code: str) -> str:
        """Accept any case; refuse anything but a 3-letter ISO 4217 code."""
        upper = code.strip().upper()
        if not re.fullmatch(r"[A-Z]{3}", upper):
            # the value is not repeated: a misplaced secret would be printed
            raise ValueError("expected a 3-letter ISO 4217 currency code such as USD")
        return upper

    @field_validator("timezone")
    @classmethod
    def _time_zone(cls, name: str) -> str:
        """Refuse a zone the system's time zone database does not know."""
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                "expected an IANA time zone name such as UTC or Europe/Paris"
            ) from None
        return name

    def poll_source_specs(self) -> list[tuple[str, str | None]]:
        """Return (kind, location) for each source the scheduled poll reads.

        `MLCOST_POLL_SOURCES=cost-explorer,cur:s3://bucket/exports/,focus:s3://bucket/focus/`
        (or `opencost:http://opencost:9003`): the kind is case-insensitive; a location (S3
        prefix, folder or URL) is kept as written.
        """
        specs: list[tuple[str, str | None]] = []
        for entry in (e.strip() for e in self.poll_sources.split(",")):
            if not entry:
                continue
            kind, _, location = entry.partition(":")
            specs.append((kind.strip().lower(), location.strip() or None))
        return specs

    def slack_base_url(self) -> str:
        """Return the Web API base URL with the trailing slash slack_sdk needs."""
        return self.slack_api_url if self.slack_api_url.endswith("/") else self.slack_api_url + "/"
