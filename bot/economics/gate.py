"""The release gate: may this model ship? Checks CI/CD can run before a deploy."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import Row, func, select

from bot.config import EconomicsSettings
from bot.db.reading import Reader
from bot.db.tables import alert_silences, budgets, daily_spend, review_items, reviews
from bot.economics.unit_costs import ModelEconomics, economics_for
from bot.economics.verdicts import unit_cost_gate_failure
from bot.money import format_money_places
from bot.periods import Period, budget_period, month_of, period_words
from bot.registry.names import model_owners, model_row
from bot.spend.freshness import LedgerFreshness, freshness_line, ledger_freshness

WINDOW_DAYS = 30


@dataclass(frozen=True)
class GatePolicy:
    """A model's own release-gate limits, as the registry import stored them (validated there
    by bot.registry.spec.GatePolicySpec, written by bot.registry.sync.gate_policy_json).

    Read here without the registry's models: the gate then loads no pydantic (about 0.08 s of a
    command that answers in under 0.5 s).
    """

    max_monthly: Decimal | None = None
    max_unit_cost_rise_pct: Decimal | None = None
    allowed_instance_families: list[str] | None = None

    @classmethod
    def from_stored(cls, stored: dict[str, Any] | None) -> GatePolicy | None:
        """Return the stored policy (JSON, amounts as exact strings), or None without one."""
        if stored is None:
            return None

        def amount(key: str) -> Decimal | None:
            value = stored.get(key)
            return None if value is None else Decimal(str(value))

        families = stored.get("allowed_instance_families")
        return cls(
            max_monthly=amount("max_monthly"),
            max_unit_cost_rise_pct=amount("max_unit_cost_rise_pct"),
            allowed_instance_families=None if families is None else [str(f) for f in families],
        )


@dataclass(frozen=True)
class GateCheck:
    name: str
    passed: bool
    detail: str


PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"


@dataclass
class GateResult:
    """The checks run for a model as of a day; none when the ledger was too stale to judge."""

    model: str
    as_of: dt.date
    checks: list[GateCheck] = field(default_factory=list)
    freshness: LedgerFreshness | None = None

    @property
    def stale_data(self) -> str | None:
        """Return why the gate could not evaluate (stale or missing data), else None."""
        return None if self.freshness is None else freshness_line(self.freshness)

    @property
    def status(self) -> str:
        """Return pass, fail, or unknown (could not evaluate: no verdict)."""
        if self.stale_data is not None:
            return UNKNOWN
        return PASS if all(c.passed for c in self.checks) else FAIL

    @property
    def passed(self) -> bool:
        """Return whether the gate was evaluated and every check passed."""
        return self.status == PASS

    @property
    def reasons(self) -> list[str]:
        """Return why the gate failed or could not evaluate, one line each."""
        stale = self.stale_data
        if stale is not None:
            return [stale]
        return [c.detail for c in self.checks if not c.passed]

    def as_json(self) -> dict[str, Any]:
        """Return the machine-readable result CI can parse (`pass` is null when unknown)."""
        answer: dict[str, Any] = {
            "model": self.model,
            "as_of": self.as_of.isoformat(),
            "status": self.status,
            "pass": None if self.status == UNKNOWN else self.passed,
            "reasons": self.reasons,
            "checks": [{"name": c.name, "pass": c.passed, "detail": c.detail} for c in self.checks],
        }
        if self.freshness is not None:
            answer["data"] = self.freshness.as_json()
        return answer

    def as_text(self) -> str:
        """Return the human-readable result: a verdict line, then one line per check."""
        head = f"gate {self.status.upper()}: {self.model} (as of {self.as_of})"
        stale = self.stale_data
        if stale is not None:
            return f"{head}: could not evaluate\n  {stale}"
        lines = [f"  {'ok  ' if c.passed else 'FAIL'} {c.name}: {c.detail}" for c in self.checks]
        return "\n".join([head, *lines])

    def as_github_annotations(self) -> list[str]:
        """Return one GitHub Actions `::error` workflow command per failed check."""
        stale = self.stale_data
        if stale is not None:
            return [
                f"::error title={ANNOTATION_TITLE}::"
                + _workflow_data(f"{self.model}: could not evaluate: {stale}")
            ]
        return [
            f"::error title={ANNOTATION_TITLE}::"
            + _workflow_data(f"{self.model}: {c.name}: {c.detail}")
            for c in self.checks
            if not c.passed
        ]

    def as_markdown(self) -> str:
        """Return a Markdown summary for $GITHUB_STEP_SUMMARY: a verdict line and a table."""
        verdict = self.status.upper()
        lines = [
            f"### mlcost gate {verdict}: {_markdown_cell(self.model)} (as of {self.as_of})",
            "",
        ]
        stale = self.stale_data
        if stale is not None:
            return "\n".join([*lines, f"Could not evaluate: {_markdown_cell(stale)}"]) + "\n"
        lines += [
            "| Check | Result | Detail |",
            "| --- | --- | --- |",
        ]
        lines += [
            f"| {_markdown_cell(c.name)} | {'pass' if c.passed else '**FAIL**'} "
            f"| {_markdown_cell(c.detail)} |"
            for c in self.checks
        ]
        return "\n".join(lines) + "\n"


ANNOTATION_TITLE = "mlcost gate"


def _workflow_data(text: str) -> str:
    """Escape a workflow command's message the way the Actions toolkit does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _markdown_cell(text: str) -> str:
    """Keep text inside one Markdown table cell, with no HTML or emphasis of its own."""
    text = " ".join(text.split())
    for char, escaped in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;")):
        text = text.replace(char, escaped)
    for char in ("\\", "|", "*", "_", "`", "[", "]"):
        text = text.replace(char, "\\" + char)
    return text


def evaluate_gate(
    *, session: Reader, model_name: str, as_of: dt.date, settings: EconomicsSettings
) -> GateResult:
    """Run every check for the model with data up to and including as_of.

    On a ledger whose newest day is more than MLCOST_GATE_MAX_DATA_AGE_DAYS before as_of no
    check runs: the result is unknown (could not evaluate), never a pass on data it cannot see.
    """
    model = model_row(session, model_name)
    freshness = ledger_freshness(
        session=session, today=as_of, max_age_days=settings.gate_max_data_age_days
    )
    result = GateResult(model=model.name, as_of=as_of, freshness=freshness)
    if freshness.stale:
        return result
    owners = sorted(model_owners(session, model))
    result.checks.append(
        GateCheck("owner", True, "owned by " + ", ".join(owners))
        if owners
        else GateCheck("owner", False, f"{model.name} has no owner (set one in the registry)")
    )
    scopes = session.execute(
        select(budgets).where(budgets.c.model_name == model.name).order_by(budgets.c.scope)
    ).all()
    if not scopes:
        result.checks.append(GateCheck("budget", False, f"{model.name} has no budget"))
    else:
        result.checks.append(
            GateCheck("budget", True, ", ".join(b.scope for b in scopes) + " budgeted")
        )
        result.checks.append(_over_budget_check(session, scopes, as_of))
    result.checks.append(_decision_check(session, model.name))
    policy = GatePolicy.from_stored(model.gate_policy)
    current, previous = _windows(as_of)
    economics = economics_for(
        session=session,
        period=current,
        previous=previous,
        models=[model.name],
        full_period=False,
        default_currency=settings.currency,
    ).get(model.name)
    result.checks.append(_value_check(session, model.name, economics, current))
    max_rise = (
        policy.max_unit_cost_rise_pct
        if policy is not None and policy.max_unit_cost_rise_pct is not None
        else None
    )
    result.checks.append(_unit_cost_check(economics, settings, max_rise))
    if policy is not None:
        result.checks.extend(
            _policy_checks(session, model.name, policy, current, settings.currency)
        )
    return result


def _windows(as_of: dt.date) -> tuple[Period, Period]:
    """Return the last WINDOW_DAYS days up to as_of, and the WINDOW_DAYS before them."""
    end = as_of + dt.timedelta(days=1)
    current = Period(end - dt.timedelta(days=WINDOW_DAYS), end, f"{WINDOW_DAYS}d")
    previous = Period(current.start - dt.timedelta(days=WINDOW_DAYS), current.start, "before")
    return current, previous


def _value_check(
    session: Reader, model: str, economics: ModelEconomics | None, current: Period
) -> GateCheck:
    """Fail a model that cost money over the whole window and recorded no value in it."""
    if economics is None or economics.current.cost <= 0:
        return GateCheck("value", True, f"no cost in the last {WINDOW_DAYS} days")
    usage = economics.current
    if usage.units > 0:
        return GateCheck(
            "value",
            True,
            f"{usage.units.normalize():,f} {economics.metric or 'units'} "
            f"in the last {WINDOW_DAYS} days",
        )
    first = session.scalar(select(func.min(daily_spend.c.day)).where(daily_spend.c.model == model))
    had_value = economics.previous.units > 0
    if not had_value and first is not None and first > current.start:
        return GateCheck(
            "value",
            True,
            f"no value recorded yet; spending since {first} (under {WINDOW_DAYS} days)",
        )
    cost = format_money_places(usage.cost, economics.currency, 2)
    since = " where it had value before" if had_value else ""
    return GateCheck(
        "value",
        False,
        f"{model} cost {cost} in the last {WINDOW_DAYS} days and recorded no value{since} "
        "(record it with mlcost ingest value)",
    )


def _over_budget_check(session: Reader, scopes: Sequence[Row[Any]], as_of: dt.date) -> GateCheck:
    month = month_of(as_of)
    over = []
    for budget in scopes:
        period = budget_period(budget.period, as_of)  # a weekly budget: this week so far
        spend_filter = [
            daily_spend.c.day >= period.start,
            daily_spend.c.day <= as_of,
            daily_spend.c.model == budget.model_name,
            daily_spend.c.currency == budget.currency,  # a budget counts spend in its currency
        ]
        if budget.stage:
            spend_filter.append(daily_spend.c.stage == budget.stage)
        spent = Decimal(
            session.scalar(select(func.sum(daily_spend.c.billed_cost)).where(*spend_filter)) or 0
        )
        if spent <= budget.monthly_amount:
            continue
        acknowledged = session.execute(
            select(alert_silences.c.id).where(
                alert_silences.c.budget_scope == budget.scope,
                alert_silences.c.period == period.label,
                alert_silences.c.kind == "ack",
            )
        ).first()
        if acknowledged is None:
            # to the cent, as every amount in the gate's report
            limit = format_money_places(budget.monthly_amount, budget.currency, 2)
            shown = format_money_places(spent, budget.currency, 2)
            over.append(
                f"{budget.scope} is over budget in {period_words(period.label)}: "
                f"{shown} of {limit} and nobody acknowledged it"
            )
    if over:
        return GateCheck("over budget", False, "; ".join(over))
    return GateCheck("over budget", True, f"within budget (or acknowledged) in {month.label}")


def latest_decision(session: Reader, model: str) -> Row[Any] | None:
    """Return the model's most recent decided review item, with its review's month."""
    return session.execute(
        select(review_items, reviews.c.month)
        .join(reviews, reviews.c.id == review_items.c.review_id)
        .where(review_items.c.model_name == model, review_items.c.decision.is_not(None))
        .order_by(reviews.c.month.desc(), review_items.c.decided_at.desc())
    ).first()


def _decision_check(session: Reader, model: str) -> GateCheck:
    item = latest_decision(session, model)
    if item is not None and item.decision == "kill":
        when = item.decided_at.date().isoformat() if item.decided_at else "?"
        reason = f" ({item.reason})" if item.reason else ""
        return GateCheck(
            "review",
            False,
            f"decided Kill in the {item.month} review by {item.decided_by} on {when}{reason}",
        )
    if item is None:
        return GateCheck("review", True, "no review decision yet")
    return GateCheck("review", True, f"last decision: {item.decision} ({item.month})")


def _unit_cost_check(
    economics: ModelEconomics | None, settings: EconomicsSettings, policy_max: Decimal | None
) -> GateCheck:
    max_rise = settings.gate_max_unit_cost_rise_pct if policy_max is None else policy_max
    whose = "" if policy_max is None else " (the model's gate policy)"
    if economics is None:
        return GateCheck("unit cost", True, "no cost or value in the last 60 days")
    if economics.current.cost > 0 and economics.current.units <= 0:
        return GateCheck("unit cost", True, "n/a: no value in the window (see the value check)")
    failure = unit_cost_gate_failure(
        economics.current.usage(),
        economics.previous.usage(),
        max_rise_pct=max_rise,
        value_flat_pct=settings.verdict_value_flat_pct,
    )
    if failure:
        return GateCheck(
            "unit cost",
            False,
            f"last {WINDOW_DAYS} days vs the {WINDOW_DAYS} before: {failure}{whose}",
        )
    change = economics.unit_cost_change_pct
    shown = "n/a" if change is None else f"{change.quantize(Decimal(1))} %"
    return GateCheck(
        "unit cost",
        True,
        f"unit cost change {shown} over the last {WINDOW_DAYS} days "
        f"(limit {max_rise} %{whose} unless value rises)",
    )


def instance_family(instance_type: str) -> str:
    """Return an instance type's family: g5 (ml.g5.xlarge), a2 (a2-highgpu-1g), nc (Azure NC)."""
    name = instance_type.strip().lower().removeprefix("ml.")
    if name.startswith("standard_"):  # Azure: Standard_NC24ads_A100_v4 -> nc
        series = name.removeprefix("standard_")
        letters = len(series) - len(series.lstrip("abcdefghijklmnopqrstuvwxyz"))
        return series[:letters] or series
    if "." in name:  # AWS: p4d.24xlarge -> p4d
        return name.split(".", 1)[0]
    return name.split("-", 1)[0]  # GCP: a2-highgpu-1g -> a2


def _policy_checks(
    session: Reader, model: str, policy: GatePolicy, current: Period, currency: str
) -> list[GateCheck]:
    """Run the registry's per-model limits: spend over the window, instance families."""
    checks = []
    if policy.max_monthly is not None:
        checks.append(_max_monthly_check(session, model, policy.max_monthly, current, currency))
    if policy.allowed_instance_families is not None:
        checks.append(_families_check(session, model, policy.allowed_instance_families, current))
    return checks


def _max_monthly_check(
    session: Reader, model: str, limit: Decimal, current: Period, currency: str
) -> GateCheck:
    rows = session.execute(
        select(daily_spend.c.currency, func.sum(daily_spend.c.billed_cost))
        .where(
            daily_spend.c.model == model,
            daily_spend.c.day >= current.start,
            daily_spend.c.day < current.end,
        )
        .group_by(daily_spend.c.currency)
    ).all()
    spent = {code: Decimal(total or 0) for code, total in rows}
    other = sorted(code for code in spent if code != currency)
    if other:
        return GateCheck(
            "max monthly",
            False,
            f"spend in the last {WINDOW_DAYS} days is billed in {', '.join(other)}; "
            f"max_monthly is in {currency} and amounts in different currencies "
            "are never compared",
        )
    total = spent.get(currency, Decimal(0))
    shown = format_money_places(total, currency, 2)
    cap = format_money_places(limit, currency, 2)
    if total > limit:
        return GateCheck(
            "max monthly",
            False,
            f"{model} cost {shown} in the last {WINDOW_DAYS} days, over its gate policy's "
            f"max_monthly of {cap}",
        )
    return GateCheck(
        "max monthly", True, f"{shown} in the last {WINDOW_DAYS} days (max_monthly {cap})"
    )


def _families_check(session: Reader, model: str, allowed: list[str], current: Period) -> GateCheck:
    rows = session.execute(
        select(
            daily_spend.c.instance_type, daily_spend.c.currency, func.sum(daily_spend.c.billed_cost)
        )
        .where(
            daily_spend.c.model == model,
            daily_spend.c.day >= current.start,
            daily_spend.c.day < current.end,
            daily_spend.c.instance_type.is_not(None),
            daily_spend.c.instance_type != "",
        )
        .group_by(daily_spend.c.instance_type, daily_spend.c.currency)
    ).all()
    outside: dict[tuple[str, str], Decimal] = {}
    types: dict[str, set[str]] = {}
    for instance_type, currency, total in rows:
        family = instance_family(str(instance_type))
        if family in allowed:
            continue
        key = (family, str(currency))
        outside[key] = outside.get(key, Decimal(0)) + Decimal(total or 0)
        types.setdefault(family, set()).add(str(instance_type))
    listed = ", ".join(allowed)
    if not outside:
        return GateCheck("instance families", True, f"only {listed} in the last {WINDOW_DAYS} days")
    parts = [
        f"{format_money_places(cost, currency, 2)} on {family} ({', '.join(sorted(types[family]))})"
        for (family, currency), cost in sorted(outside.items())
    ]
    return GateCheck(
        "instance families",
        False,
        f"spent {'; '.join(parts)} in the last {WINDOW_DAYS} days; its gate policy allows {listed}",
    )
