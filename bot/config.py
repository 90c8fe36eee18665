"""Settings read from the environment or a `.env` file, grouped by the feature that reads them.

Each feature's settings are one small frozen model (`ScanSettings`, `AlertSettings`, ...) that
declares its environment variables once. `Settings` is all of them together, read from the
environment; `settings.scan`, `settings.alerts`, ... give a feature its own slice, so a function
takes only what it reads (typed by its slice; `Settings` itself is every slice, so a caller
may still hand it over whole).

A new setting is one field in the slice of the feature that reads it, with its environment
variable as `validation_alias` and a `description`; then `python -m bot.config_doc` regenerates
docs/configuration.md and the variable goes into `.env.example` (tests check both).
"""

from __future__ import annotations

import enum
import json
import os
import re
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass
from dataclasses import field as dataclass_field
from dataclasses import fields as dataclass_fields
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.money import CostBasis

DEFAULT_SLACK_API_URL = "https://slack.com/api/"
ENV_FILE = ".env"

# Read from text by our validators below: a list setting may be written `us-east-1,eu-west-1` as
# well as `["us-east-1","eu-west-1"]`, a mapping as a JSON object.
TextList = list[str]
TextMapping = dict[str, str]


class SecretStr:
    """A secret setting's value: shown as stars, read only with get_secret_value()."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        """Return the secret itself."""
        return self._value

    def __repr__(self) -> str:
        return "SecretStr('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretStr) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class SettingsError(ValueError):
    """Settings that do not read: each bad variable and what it expects, never its value."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__(
            "invalid setting " + "; ".join(f"{variable}: {why}" for variable, why in problems)
        )


class _Invalid(ValueError):
    """One value that does not read (its message names what is expected)."""


@dataclass(frozen=True)
class SettingInfo:
    """A setting's environment variable, meaning, bounds and default as the docs show it."""

    variable: str
    description: str
    gt: float | None = None
    ge: float | None = None
    le: float | None = None
    shown_default: str | None = None


def Field(
    *,
    default: Any,
    validation_alias: str,
    description: str,
    gt: float | None = None,
    ge: float | None = None,
    le: float | None = None,
    json_schema_extra: dict[str, str] | None = None,
) -> Any:
    """Declare a setting: its default, its environment variable, its meaning and its bounds."""
    info = SettingInfo(
        validation_alias, description, gt, ge, le, (json_schema_extra or {}).get("shown_default")
    )
    if isinstance(default, (list, dict)):
        factory = default.copy
        return dataclass_field(default_factory=factory, metadata={"setting": info})
    return dataclass_field(default=default, metadata={"setting": info})


def field_validator(*names: str, mode: Literal["before", "after"] = "after") -> Callable[..., Any]:
    """Mark a function `(cls, value) -> value` that reads or checks the named fields.

    "before" runs on the value as given (text from the environment), "after" on the value read
    as the field's type; raising ValueError refuses it with the error's message.
    """

    def mark(function: Any) -> Any:
        function.__validates__ = (names, mode)
        return function

    return mark


@dataclass(frozen=True)
class SettingField:
    """One setting of a model: its name, type, default and `SettingInfo`."""

    name: str
    annotation: Any
    default: Any
    info: SettingInfo

    @property
    def validation_alias(self) -> str:
        """Return the setting's environment variable."""
        return self.info.variable

    @property
    def description(self) -> str:
        """Return what the setting means."""
        return self.info.description


BOOLEAN_WORDS = {
    **dict.fromkeys(("1", "true", "t", "yes", "y", "on"), True),
    **dict.fromkeys(("0", "false", "f", "no", "n", "off"), False),
}


def _bound(value: Any, info: SettingInfo) -> None:
    """Refuse a number outside the setting's bounds."""
    if info.gt is not None and not value > info.gt:
        raise _Invalid(f"Input should be greater than {info.gt}")
    if info.ge is not None and not value >= info.ge:
        raise _Invalid(f"Input should be greater than or equal to {info.ge}")
    if info.le is not None and not value <= info.le:
        raise _Invalid(f"Input should be less than or equal to {info.le}")


def _choices(values: list[Any]) -> str:
    words = [repr(v) for v in values]
    return ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else words[0]


def read_as(annotation: Any, value: Any) -> Any:
    """Return `value` read as the settings type `annotation`, or raise _Invalid saying why."""
    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return None if value is None else read_as(args[0], value)
    if origin is Literal:
        if value not in typing.get_args(annotation):
            raise _Invalid(f"Input should be {_choices(list(typing.get_args(annotation)))}")
        return value
    if origin is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _Invalid("Input should be a valid list of strings")
        return list(value)
    if origin is dict:
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise _Invalid("Input should be a valid object of strings")
        return dict(value)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        try:
            return annotation(value)
        except ValueError:
            raise _Invalid(f"Input should be {_choices([m.value for m in annotation])}") from None
    reader = READERS.get(annotation)
    if reader is None:
        raise TypeError(f"no reader for the settings type {annotation!r}")
    return reader(value)


def _read_str(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid("Input should be a valid string")
    return value


def _read_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in BOOLEAN_WORDS:
        return BOOLEAN_WORDS[value.strip().lower()]
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise _Invalid("Input should be a valid boolean, unable to interpret input")


def _read_int(value: Any) -> int:
    if isinstance(value, bool):
        raise _Invalid("Input should be a valid integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise _Invalid("Input should be a valid integer, unable to parse string as an integer")


def _read_float(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise _Invalid("Input should be a valid number, unable to parse string as a number")


def _read_decimal(value: Any) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            number = Decimal(str(value).strip())
        except InvalidOperation:
            pass
        else:
            if number.is_finite():
                return number
    raise _Invalid("Input should be a valid decimal")


def _read_path(value: Any) -> Path:
    if isinstance(value, (str, Path)):
        return Path(value)
    raise _Invalid("Input should be a valid path")


def _read_secret(value: Any) -> SecretStr:
    if isinstance(value, str):
        return SecretStr(value)
    if hasattr(value, "get_secret_value"):
        return SecretStr(value.get_secret_value())
    raise _Invalid("Input should be a valid string")


READERS: dict[Any, Callable[[Any], Any]] = {
    str: _read_str,
    bool: _read_bool,
    int: _read_int,
    float: _read_float,
    Decimal: _read_decimal,
    Path: _read_path,
    SecretStr: _read_secret,
}


def read_text_list(value: Any) -> Any:
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


def read_text_mapping(value: Any) -> Any:
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


SliceT = TypeVar("SliceT", bound="SettingsSlice")


class SettingsSlice:
    """One feature's settings: frozen; built from `Settings`, or by field name in tests.

    Each subclass is made a frozen dataclass of its fields (declared with `Field`), built by
    field name or by environment variable; every value is read as its field's type (text from
    the environment too), checked against its bounds and validators, and a value that does not
    read raises SettingsError naming its variable. A feature that builds on another inherits its
    slice (the poll plans alerts, so `PollSettings` is also an `AlertSettings`); each field is
    still declared once.
    """

    _setting_fields: ClassVar[dict[str, SettingField] | None] = None
    _field_of_variable: ClassVar[dict[str, str] | None] = None
    _validators: ClassVar[dict[tuple[str, str], list[Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(frozen=True, init=False)(cls)
        cls._setting_fields = None  # resolved on first use: annotations are text until then
        cls._field_of_variable = None
        validators: dict[tuple[str, str], list[Any]] = {}
        for klass in reversed(cls.__mro__):
            for function in vars(klass).values():
                names, mode = getattr(function, "__validates__", ((), ""))
                for name in names:
                    validators.setdefault((name, mode), []).append(function)
        cls._validators = validators

    def __init__(self, **values: Any) -> None:
        self._assign(values, fill_defaults=True)

    @classmethod
    def setting_fields(cls) -> dict[str, SettingField]:
        """Return the model's settings by field name, in declaration order."""
        if cls._setting_fields is None:
            hints = typing.get_type_hints(cls)
            found = {}
            for spec in dataclass_fields(cls):  # type: ignore[arg-type]
                if spec.default is not MISSING:
                    default = spec.default
                elif spec.default_factory is not MISSING:
                    default = spec.default_factory()
                else:
                    raise TypeError(f"setting {spec.name} has no default")
                found[spec.name] = SettingField(
                    spec.name, hints[spec.name], default, spec.metadata["setting"]
                )
            cls._setting_fields = found
        return cls._setting_fields

    @classmethod
    def field_of_variable(cls) -> dict[str, str]:
        """Return each setting's field name by its environment variable (worked out once)."""
        if cls._field_of_variable is None:
            fields = cls.setting_fields()
            cls._field_of_variable = {f.info.variable: name for name, f in fields.items()}
        return cls._field_of_variable

    def _assign(self, values: dict[str, Any], *, fill_defaults: bool) -> None:
        """Read `values` (by field name or variable) into this instance, or raise SettingsError."""
        fields = self.setting_fields()
        by_variable = self.field_of_variable()
        given: dict[str, Any] = {}
        for key, value in values.items():
            name = key if key in fields else by_variable.get(key)
            if name is None:
                raise TypeError(f"{type(self).__name__} has no setting {key!r}")
            if name not in given or key != name:  # a variable wins over its field's name
                given[name] = value
        problems: list[tuple[str, str]] = []
        for name, spec in fields.items():
            if name not in given:
                if fill_defaults:
                    default = spec.default
                    object.__setattr__(
                        self, name, default.copy() if isinstance(default, (list, dict)) else default
                    )
                continue
            try:
                value = self._read(spec, given[name])
            except ValueError as exc:
                problems.append((spec.info.variable, str(exc)))
                continue
            object.__setattr__(self, name, value)
        if problems:
            raise SettingsError(problems)

    def _read(self, spec: SettingField, value: Any) -> Any:
        cls = type(self)
        for function in cls._validators.get((spec.name, "before"), []):
            value = function(cls, value)
        value = read_as(spec.annotation, value)
        if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
            _bound(value, spec.info)
        for function in cls._validators.get((spec.name, "after"), []):
            value = function(cls, value)
        return value

    @classmethod
    def copied_from(cls: type[SliceT], source: SettingsSlice) -> SliceT:
        """Return this model holding `source`'s values of its fields (already read and checked)."""
        copy = object.__new__(cls)
        for name in cls.setting_fields():
            object.__setattr__(copy, name, getattr(source, name))
        return copy

    def replace(self: SliceT, **changes: Any) -> SliceT:
        """Return a copy with `changes` (by field name or variable) read and checked."""
        copy = type(self).copied_from(self)
        copy._assign(changes, fill_defaults=False)
        return copy

    def as_dict(self) -> dict[str, Any]:
        """Return every setting by field name."""
        return {name: getattr(self, name) for name in self.setting_fields()}


class DatabaseSettings(SettingsSlice):
    """Where the ledger, the registry and the outbox are kept."""

    database_url: str = Field(
        default="sqlite:///mlcost.db",
        validation_alias="MLCOST_DATABASE_URL",
        description="a SQLite file (`sqlite:///mlcost.db`), or PostgreSQL for production and "
        "several replicas (`postgresql+psycopg://mlcost:secret@db.internal:5432/mlcost`)",
    )


class SlackSettings(SettingsSlice):
    """The Slack app (created from slack/manifest.yaml, or slack/manifest-socket.yaml for Socket
    Mode) and its Web API. `mlcost serve` refuses a missing credential its mode needs, and the
    placeholders of `.env.example`."""

    slack_bot_token: SecretStr | None = Field(
        default=None,
        validation_alias="SLACK_BOT_TOKEN",
        description="the app's bot token (`xoxb-...`)",
    )
    slack_signing_secret: SecretStr | None = Field(
        default=None,
        validation_alias="SLACK_SIGNING_SECRET",
        description="the app's signing secret; HTTP mode only",
    )
    slack_app_token: SecretStr | None = Field(
        default=None,
        validation_alias="SLACK_APP_TOKEN",
        description="the app-level token (`xapp-...`); Socket Mode only",
    )
    slack_api_url: str = Field(
        default=DEFAULT_SLACK_API_URL,
        validation_alias="SLACK_API_URL",
        description="Web API base URL (GovSlack, a proxy, or a local fake in tests)",
    )
    slack_timeout_seconds: float = Field(
        default=15.0,
        gt=0,
        validation_alias="MLCOST_SLACK_TIMEOUT_SECONDS",
        description="a Slack Web API call is given up after this (a timed-out post may still "
        "have been posted: the outbox looks its key up in the channel before posting it again)",
    )

    def slack_base_url(self) -> str:
        """Return the Web API base URL with the trailing slash slack_sdk needs."""
        return self.slack_api_url if self.slack_api_url.endswith("/") else self.slack_api_url + "/"


class LedgerSettings(SettingsSlice):
    """How the ledger is read: in the organisation's currency and time zone, and when its data is
    too old to judge by. Every feature that reports spend builds on these."""

    currency: str = Field(
        default="USD",
        validation_alias="MLCOST_CURRENCY",
        description="the organisation's billing currency (ISO 4217, any case): budgets without "
        "a `currency:` get it, and billing rows without one are counted in it. It never converts "
        "or relabels: if the ledger holds no spend in it (EUR set, all spend USD), reports and the "
        "poll stop with an error (see [Guarantees](guarantees.md))",
    )
    timezone: str = Field(
        default="UTC",
        validation_alias="MLCOST_TIMEZONE",
        description="the organisation's time zone, an IANA name such as `Europe/Paris` (an "
        "unknown one is a bad setting): scheduled jobs run and days end in it",
    )

    gate_max_data_age_days: int = Field(
        default=3,
        ge=0,
        le=366,
        validation_alias="MLCOST_GATE_MAX_DATA_AGE_DAYS",
        description="a ledger whose newest usage day (fees, tax and credits do not count) is "
        "older is stale (billing data lags 1-2 days): `mlcost gate` exits 3 (could not "
        "evaluate); `report waste`, `/mlcost model|team|waste`, the weekly sign-off and the "
        "weekly waste digest say the data is stale",
    )

    @field_validator("currency")
    def _currency_code(cls, code: str) -> str:
        """Accept any case; refuse anything but a 3-letter ISO 4217 code."""
        upper = code.strip().upper()
        if not re.fullmatch(r"[A-Z]{3}", upper):
            # the value is not repeated: a misplaced secret would be printed
            raise ValueError("expected a 3-letter ISO 4217 currency code such as USD")
        return upper

    @field_validator("timezone")
    def _time_zone(cls, name: str) -> str:
        """Refuse a zone the system's time zone database does not know."""
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                "expected an IANA time zone name such as UTC or Europe/Paris"
            ) from None
        return name


class AttributionSettings(SettingsSlice):
    """The tag keys that carry a charge's model, stage and team, for ingestion, the poll, Cost
    Explorer's grouping and the resource scan. Each list the registry file's `attribution` names
    wins over its setting here."""

    model_tag_keys: TextList = Field(
        default=["ml:model", "model"],
        validation_alias="MLCOST_MODEL_TAG_KEYS",
        description="tag keys naming a resource's model, first match wins; the first is the "
        "key Cost Explorer groups by",
    )
    stage_tag_keys: TextList = Field(
        default=["ml:stage", "stage"],
        validation_alias="MLCOST_STAGE_TAG_KEYS",
        description="tag keys naming a resource's stage (training, inference, ...)",
    )
    team_tag_keys: TextList = Field(
        default=["team"],
        validation_alias="MLCOST_TEAM_TAG_KEYS",
        description="tag keys naming a resource's team",
    )

    # validator names are unique across the slices: `Settings` inherits them all by name
    @field_validator("model_tag_keys", "stage_tag_keys", "team_tag_keys", mode="before")
    def _tag_key_lists(cls, value: Any) -> Any:
        """Read a comma-separated or JSON list."""
        return read_text_list(value)


class DeliverySettings(SettingsSlice):
    """The outbox every Slack post goes through, and the scheduler's leader election."""

    delivery_interval_seconds: float = Field(
        default=60.0,
        gt=0,
        validation_alias="MLCOST_DELIVERY_INTERVAL_SECONDS",
        description="how often the outbox retries what is not yet delivered",
    )
    outbox_lease_seconds: float = Field(
        default=120.0,
        gt=0,
        validation_alias="MLCOST_OUTBOX_LEASE_SECONDS",
        description="a stuck post's lease, on every delivery path (timed by the database's clock)",
    )
    outbox_backoff_seconds: float = Field(
        default=30.0,
        gt=0,
        validation_alias="MLCOST_OUTBOX_BACKOFF_SECONDS",
        description="the first retry's wait after Slack failed without Retry-After "
        "(doubles with each attempt, at most an hour)",
    )
    leader_check_seconds: float = Field(
        default=10.0,
        gt=0,
        validation_alias="MLCOST_LEADER_CHECK_SECONDS",
        description="how often a replica checks or takes the scheduler's leadership",
    )


class IngestSettings(AttributionSettings, LedgerSettings):
    """How billing sources are read, by `mlcost ingest` and by the scheduled poll. OpenCost is
    fetched through the forward proxy of `HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` (either case;
    the process environment, not `.env`): an `http://[user:password@]host:port` proxy, https in
    a CONNECT tunnel, and the hosts reached directly
    ([ingestion](ingestion.md#kubernetes-via-opencost))."""

    cost_explorer_group_key: str = Field(
        default="SERVICE",
        validation_alias="MLCOST_CE_SECOND_GROUP",
        description="Cost Explorer's second GroupBy key: `SERVICE`, `USAGE_TYPE` or `TAG:key`",
    )
    poll_lookback_days: int = Field(
        default=7,
        validation_alias="MLCOST_POLL_LOOKBACK_DAYS",
        description="days back a poll's Cost Explorer and OpenCost reads start (restated spend "
        "is read again), and the default `--start` of `mlcost ingest cost-explorer` and "
        "`mlcost ingest cloudwatch`",
    )
    aws_billing_account: str | None = Field(
        default=None,
        validation_alias="MLCOST_AWS_BILLING_ACCOUNT",
        description="label of the AWS payer account for Cost Explorer rows in the ledger (CUR "
        "and Cost Explorer rows must agree), e.g. `123456789012`",
        json_schema_extra={"shown_default": "`aws`"},
    )
    opencost_timeout_seconds: float = Field(
        default=300.0,
        gt=0,
        validation_alias="MLCOST_OPENCOST_TIMEOUT_SECONDS",
        description="OpenCost: the deadline for a whole fetch (not per read)",
    )
    opencost_max_bytes: int = Field(
        default=512 * 1024 * 1024,
        gt=0,
        validation_alias="MLCOST_OPENCOST_MAX_BYTES",
        description="OpenCost: the largest answer read (512 MiB)",
    )


class WasteSettings(LedgerSettings, DeliverySettings):
    """Waste findings: Spot candidates, and how resource findings are posted (through the outbox)
    and acted on. The daily scan posts new and worse findings to the owner's channel, unowned
    ones to FinOps."""

    spot_advisor_file: Path | None = Field(
        default=None,
        validation_alias="MLCOST_SPOT_ADVISOR_FILE",
        description="a fresher AWS Spot Instance Advisor feed (plain or gzipped JSON, from "
        "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json) than the bundled "
        "snapshot",
        json_schema_extra={"shown_default": "the bundled snapshot"},
    )
    spot_max_interruption_band: int = Field(
        default=2,
        ge=0,
        le=4,
        validation_alias="MLCOST_SPOT_MAX_INTERRUPTION_BAND",
        description="highest Spot interruption band to recommend: 0 <5 %, 1 5–10 %, 2 10–15 %, "
        "3 15–20 %, 4 >20 %",
    )
    scan_min_monthly: Decimal = Field(
        default=Decimal(50),
        ge=0,
        validation_alias="MLCOST_SCAN_MIN_MONTHLY",
        description="resource findings under this monthly cost are recorded (reports list "
        "them) but never posted",
    )
    scan_max_posts_per_channel: int = Field(
        default=10,
        ge=1,
        le=100,
        validation_alias="MLCOST_SCAN_MAX_POSTS_PER_CHANNEL",
        description="resource findings posted one by one per channel per UTC day, largest "
        "first; the rest of that channel's go into one summary post (and are posted one by one "
        "on later days)",
    )
    actions_enabled: bool = Field(
        default=False,
        validation_alias="MLCOST_ACTIONS_ENABLED",
        description='"Stop it" on a resource finding records the owner\'s approval; it changes '
        "AWS (stops the instance, deletes the endpoint, stops the notebook, snapshots then "
        "deletes the volume, deletes the orphaned snapshot) only when this is true and the "
        "resource has no `mlcost:protect` tag. S3 lifecycle is never applied",
    )


class AlertSettings(WasteSettings):
    """Budget alerts, spend anomalies and the weekly unallocated-spend alert
    ([alerts](alerts.md)). The alerts also post the weekly waste digest."""

    budget_cost_basis: CostBasis = Field(
        default=CostBasis.BILLED,
        validation_alias="MLCOST_BUDGET_COST_BASIS",
        description="`billed` or `effective` (amortised) cost for budgets and anomalies",
    )
    anomaly_min_dollars: Decimal = Field(
        default=Decimal(100),
        validation_alias="MLCOST_ANOMALY_MIN_DOLLARS",
        description="a day's excess over its baseline below this is no anomaly",
    )
    unallocated_min_dollars: Decimal = Field(
        default=Decimal(100),
        validation_alias="MLCOST_UNALLOCATED_MIN_DOLLARS",
        description="a week's unallocated spend below this gets no alert",
    )
    anomaly_hour: int = Field(
        default=9,
        ge=0,
        le=23,
        validation_alias="MLCOST_ANOMALY_HOUR",
        description="hour (in `MLCOST_TIMEZONE`) of the daily anomaly check",
    )
    anomaly_recheck_days: int = Field(
        default=7,
        ge=1,
        le=60,
        validation_alias="MLCOST_ANOMALY_RECHECK_DAYS",
        description="trailing days, up to yesterday, every anomaly check judges again, so spend "
        "that arrives late or is restated is still caught; an anomaly already posted is never "
        "posted again",
    )
    anomaly_min_history_days: int = Field(
        default=14,
        ge=1,
        le=28,
        validation_alias="MLCOST_ANOMALY_MIN_HISTORY_DAYS",
        description="covered days (some source has usage in the ledger; a gap is unknown, not "
        "$0) among the 28 before a day that its baseline needs; fewer, and the day is not judged "
        "([alerts](alerts.md#anomaly-baselines))",
    )


class PollSettings(IngestSettings, AlertSettings, DeliverySettings):
    """The scheduled poll: what it re-reads, how often, and how long it waits. Each poll reads
    its sources, plans the alerts due and delivers them."""

    poll_sources: str = Field(
        default="",
        validation_alias="MLCOST_POLL_SOURCES",
        description="sources the scheduled poll re-reads, comma-separated: `cost-explorer`, "
        "`cur:s3://bucket/prefix/`, `focus:s3://bucket/prefix/`, `opencost:http://opencost:9003` "
        "(the kind in any case; a location kept as written)",
    )
    poll_interval_hours: float = Field(
        default=6.0,
        validation_alias="MLCOST_POLL_INTERVAL_HOURS",
        description="how often the scheduler polls and evaluates budgets",
    )
    poll_source_timeout_seconds: float = Field(
        default=900.0,
        gt=0,
        validation_alias="MLCOST_POLL_SOURCE_TIMEOUT_SECONDS",
        description="a poll reads its sources side by side and waits this long for them all "
        "(one deadline for all); a source still reading then is given up, reported, and alerts "
        "are planned from the ledger ([ingestion](ingestion.md#kubernetes-via-opencost))",
    )

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


class EconomicsSettings(LedgerSettings):
    """Unit economics: model verdicts and the release gate (`mlcost gate`)."""

    verdict_cost_rise_pct: Decimal = Field(
        default=Decimal(10),
        validation_alias="MLCOST_VERDICT_COST_RISE_PCT",
        description='cost rising more than this % is "cost up"',
    )
    verdict_value_flat_pct: Decimal = Field(
        default=Decimal(5),
        validation_alias="MLCOST_VERDICT_VALUE_FLAT_PCT",
        description='value within +/- this % is "flat"',
    )
    gate_max_unit_cost_rise_pct: Decimal = Field(
        default=Decimal(20),
        validation_alias="MLCOST_GATE_MAX_UNIT_COST_RISE_PCT",
        description="`mlcost gate` fails when unit cost rose more than this % (30 days vs the "
        "30 before) and value did not",
    )


class ReviewSettings(EconomicsSettings, DeliverySettings):
    """The monthly kill-or-keep review, posted from the month's first working day to the 7th."""

    review_reminder_days: int = Field(
        default=3,
        validation_alias="MLCOST_REVIEW_REMINDER_DAYS",
        description="undecided models in a review get one reminder in its thread after this "
        "many days",
    )
    review_catch_up: bool = Field(
        default=False,
        validation_alias="MLCOST_REVIEW_CATCH_UP",
        description="a database that never had a review waits for the next first working day "
        "instead of joining a round already under way, unless this is true (or `mlcost serve "
        "--catch-up`)",
    )


class ScanSettings(AttributionSettings, WasteSettings):
    """The resource scan (`mlcost waste scan`, read-only, and its daily job, which records and
    posts what it finds as waste findings): regions, windows, thresholds, S3 patterns and prices
    ([waste](waste.md))."""

    scan_regions: TextList = Field(
        default=[],
        validation_alias="MLCOST_SCAN_REGIONS",
        description="regions `mlcost waste scan` and its daily job read, e.g. "
        "`us-east-1,eu-west-1`; the daily job runs only when set",
    )
    scan_idle_days: int = Field(
        default=7,
        ge=1,
        le=63,
        validation_alias="MLCOST_SCAN_IDLE_DAYS",
        description="the window in days over which a resource must be idle",
    )
    scan_snapshot_days: int = Field(
        default=90,
        ge=1,
        validation_alias="MLCOST_SCAN_SNAPSHOT_DAYS",
        description="how old an orphaned snapshot must be",
    )
    scan_s3_patterns: TextList = Field(
        default=[],
        validation_alias="MLCOST_SCAN_S3_PATTERNS",
        description="checkpoint and dataset prefixes to check (`s3://bucket/prefix/*`), e.g. "
        "`s3://ml-artifacts/checkpoints/*,s3://ml-data/datasets/*`",
    )
    scan_s3_stale_days: int = Field(
        default=30,
        ge=1,
        validation_alias="MLCOST_SCAN_S3_STALE_DAYS",
        description="how many days unwritten makes an S3 prefix stale",
    )
    scan_s3_inventory: TextMapping = Field(
        default={},
        validation_alias="MLCOST_SCAN_S3_INVENTORY",
        description="bucket → its S3 Inventory folder (`destination-prefix/source-bucket/"
        'config-ID/`), read instead of listing the bucket, e.g. `{"ml-artifacts": '
        '"s3://inventory-bucket/ml-artifacts/daily-inventory/"}`; a missing or stale one (over '
        "2 days) falls back to listing, with a note in the scan's output "
        "([waste](waste.md#resources-in-the-account-mlcost-waste-scan))",
    )
    scan_gpu_idle_pct: Decimal = Field(
        default=Decimal(5),
        ge=0,
        le=100,
        validation_alias="MLCOST_SCAN_GPU_IDLE_PCT",
        description="a GPU instance is idle when its busiest GPU averages under this % over the "
        "window",
    )
    scan_gpu_low_pct: Decimal = Field(
        default=Decimal(30),
        ge=0,
        le=100,
        validation_alias="MLCOST_SCAN_GPU_LOW_PCT",
        description="a GPU instance is underused (a smaller GPU is recommended) under this %",
    )
    scan_cpu_idle_pct: Decimal = Field(
        default=Decimal(5),
        ge=0,
        le=100,
        validation_alias="MLCOST_SCAN_CPU_IDLE_PCT",
        description="without a GPU metric, idle means CPU under this % and network under "
        "`MLCOST_SCAN_NETWORK_IDLE_MB_PER_DAY`",
    )
    scan_network_idle_mb_per_day: Decimal = Field(
        default=Decimal(100),
        ge=0,
        validation_alias="MLCOST_SCAN_NETWORK_IDLE_MB_PER_DAY",
        description="the network half of the CPU fallback, in MB a day",
    )
    price_table_file: Path | None = Field(
        default=None,
        validation_alias="MLCOST_PRICE_TABLE_FILE",
        description="your own on-demand price table (the columns of "
        "bot/waste/data/gpu_prices.csv) instead of the bundled one",
        json_schema_extra={"shown_default": "the bundled table"},
    )
    scan_hour: int = Field(
        default=7,
        ge=0,
        le=23,
        validation_alias="MLCOST_SCAN_HOUR",
        description="hour (in `MLCOST_TIMEZONE`) of the daily resource scan, at :30",
    )

    @field_validator("scan_regions", "scan_s3_patterns", mode="before")
    def _scan_lists(cls, value: Any) -> Any:
        """Read a comma-separated or JSON list."""
        return read_text_list(value)

    @field_validator("scan_s3_inventory", mode="before")
    def _scan_inventory(cls, value: Any) -> Any:
        """Read a JSON object of strings."""
        return read_text_mapping(value)


class ServerSettings(SettingsSlice):
    """The `mlcost serve` process: its HTTP listener, chart workers and logs."""

    max_body_bytes: int = Field(
        default=1024 * 1024,
        gt=0,
        validation_alias="MLCOST_MAX_BODY_BYTES",
        description="`mlcost serve --http`: larger request bodies are refused with 413 before "
        "they are read or parsed (Slack's payloads are far smaller); 1 MiB",
    )
    chart_workers: int | None = Field(
        default=None,
        ge=1,
        le=64,
        validation_alias="MLCOST_CHART_WORKERS",
        description="chart-render worker processes of `mlcost serve`",
        json_schema_extra={
            "shown_default": "usable CPUs less one, at least 1, and no more than the "
            "container's memory limit holds"
        },
    )
    chart_worker_max_charts: int = Field(
        default=500,
        ge=0,
        validation_alias="MLCOST_CHART_WORKER_MAX_CHARTS",
        description="charts each chart worker renders before `mlcost serve` replaces the "
        "workers with fresh ones (the old ones finish their last chart first), giving back "
        "whatever memory they grew; 0: never",
    )
    log_format: Literal["human", "json"] = Field(
        default="human",
        validation_alias="MLCOST_LOG_FORMAT",
        description='logs on stderr: "human" lines, or "json" for one JSON object per line '
        "(time, level, logger, message, exc_info) for a log collector; secret values never "
        "appear in either",
    )


def own_fields(model: type[SettingsSlice]) -> list[str]:
    """Return the fields a slice declares itself, not those of the slices it builds on."""
    declared = vars(model).get("__annotations__", {})
    return [name for name in model.setting_fields() if name in declared]


@dataclass(frozen=True)
class Feature:
    """One group of settings: its `Settings` attribute, its model and its heading in the docs."""

    attribute: str
    model: type[SettingsSlice]
    title: str


FEATURES = (
    Feature("database", DatabaseSettings, "Database"),
    Feature("slack", SlackSettings, "Slack"),
    Feature("ledger", LedgerSettings, "Money, time and stale data"),
    Feature("attribution", AttributionSettings, "Attribution"),
    Feature("ingest", IngestSettings, "Billing sources"),
    Feature("poll", PollSettings, "Scheduled poll"),
    Feature("alerts", AlertSettings, "Budgets, anomalies and unallocated spend"),
    Feature("economics", EconomicsSettings, "Unit economics and the release gate"),
    Feature("review", ReviewSettings, "Monthly review"),
    Feature("delivery", DeliverySettings, "Outbox and scheduler"),
    Feature("scan", ScanSettings, "Resource scan"),
    Feature("waste", WasteSettings, "Waste findings and actions"),
    Feature("server", ServerSettings, "Server and logs"),
)


def read_environment(fields: dict[str, SettingField], env_file: str = ENV_FILE) -> dict[str, str]:
    """Return the raw values of `fields` set in the environment or the `.env` file, by variable.

    A variable's name is matched in any case (`mlcost_currency` sets MLCOST_CURRENCY); the
    environment wins over the `.env` file of the working directory, which is read as
    python-dotenv reads it (quotes, `export`, `${VAR}` expansion) and only when it exists.
    Variables that name no setting are ignored; values are validated by the models.
    """
    variables = {field.info.variable.lower(): field.info.variable for field in fields.values()}
    found: dict[str, str] = {}
    if os.path.isfile(env_file):
        from dotenv import dotenv_values  # only when there is a file: 20 ms of imports

        for name, value in dotenv_values(env_file, encoding="utf-8").items():
            if name.lower() in variables and value is not None:
                found[variables[name.lower()]] = value
    for name, value in os.environ.items():
        if name.lower() in variables:
            found[variables[name.lower()]] = value
    return found


class Settings(  # every slice, through the features that build on the others
    ServerSettings,
    ScanSettings,
    ReviewSettings,
    PollSettings,
    SlackSettings,
    DatabaseSettings,
):
    """Every setting of mlcost, read from the environment (or `.env`), with each feature's slice.

    Values given here, by field name or by variable, win over the environment's.
    """

    def __init__(self, **values: Any) -> None:
        fields = self.setting_fields()
        field_of = self.field_of_variable()
        environment: dict[str, Any] = {
            variable: value
            for variable, value in read_environment(fields).items()
            if variable not in values and field_of[variable] not in values
        }
        super().__init__(**environment, **values)

    def _slice(self, model: type[SliceT]) -> SliceT:
        """Return this feature's settings, already read and checked, as their own frozen model."""
        return model.copied_from(self)

    @property
    def database(self) -> DatabaseSettings:
        """Return the database settings."""
        return self._slice(DatabaseSettings)

    @property
    def slack(self) -> SlackSettings:
        """Return the Slack app's settings."""
        return self._slice(SlackSettings)

    @property
    def ledger(self) -> LedgerSettings:
        """Return the currency, time zone and data age the ledger is read by."""
        return self._slice(LedgerSettings)

    @property
    def attribution(self) -> AttributionSettings:
        """Return the attribution tag keys."""
        return self._slice(AttributionSettings)

    @property
    def ingest(self) -> IngestSettings:
        """Return how billing sources are read."""
        return self._slice(IngestSettings)

    @property
    def poll(self) -> PollSettings:
        """Return the scheduled poll's settings."""
        return self._slice(PollSettings)

    @property
    def alerts(self) -> AlertSettings:
        """Return the budget, anomaly and unallocated-spend alert settings."""
        return self._slice(AlertSettings)

    @property
    def economics(self) -> EconomicsSettings:
        """Return the unit-economics and release-gate settings."""
        return self._slice(EconomicsSettings)

    @property
    def review(self) -> ReviewSettings:
        """Return the monthly review's settings."""
        return self._slice(ReviewSettings)

    @property
    def delivery(self) -> DeliverySettings:
        """Return the outbox's and the scheduler's settings."""
        return self._slice(DeliverySettings)

    @property
    def scan(self) -> ScanSettings:
        """Return the resource scan's settings."""
        return self._slice(ScanSettings)

    @property
    def waste(self) -> WasteSettings:
        """Return the waste findings' settings."""
        return self._slice(WasteSettings)

    @property
    def server(self) -> ServerSettings:
        """Return the server's and the logs' settings."""
        return self._slice(ServerSettings)
