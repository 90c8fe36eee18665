"""The release gate: may this model ship? Checks CI/CD can run before a deploy."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.schema import AlertSilence, Budget, DailySpend
from bot.economics.unit_costs import economics_for
from bot.economics.verdicts import unit_cost_gate_failure
from bot.money import column_places, format_money_places
from bot.periods import Period, month_of
from bot.registry.catalog import find_model, model_owner_ids
from bot.review.summary import latest_decision

WINDOW_DAYS = 30


@dataclass(frozen=True)
class GateCheck:
    name: str
    passed: bool
    detail: str


@dataclass
class GateResult:
    model: str
    as_of: dt.date
    checks: list[GateCheck] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Return whether every check passed."""
        return all(c.passed for c in self.checks)

    @property
    def reasons(self) -> list[str]:
        """Return why the gate failed, one line per failed check."""
        return [c.detail for c in self.checks if not c.passed]

    def as_json(self) -> dict[str, Any]:
        """Return the machine-readable result CI can parse."""
        return {
            "model": self.model,
            "as_of": self.as_of.isoformat(),
            "pass": self.passed,
            "reasons": self.reasons,
            "checks": [{"name": c.name, "pass": c.passed, "detail": c.detail} for c in self.checks],
        }

    def as_text(self) -> str:
        """Return the human-readable result: a verdict line, then one line per check."""
        head = f"gate {'PASS' if self.passed else 'FAIL'}: {self.model} (as of {self.as_of})"
        lines = [f"  {'ok  ' if c.passed else 'FAIL'} {c.name}: {c.detail}" for c in self.checks]
        return "\n".join([head, *lines])


def evaluate_gate(
    *, session: Session, model_name: str, as_of: dt.date, settings: Settings
) -> GateResult:
    """Run every check for the model with data up to and including as_of."""
    model = find_model(session, model_name)
    result = GateResult(model=model.name, as_of=as_of)
    owners = sorted(model_owner_ids(model))
    result.checks.append(
        GateCheck("owner", True, "owned by " + ", ".join(owners))
        if owners
        else GateCheck("owner", False, f"{model.name} has no owner (set one in the registry)")
    )
    budgets = session.scalars(
        select(Budget).where(Budget.model_name == model.name).order_by(Budget.scope)
    ).all()
    if not budgets:
        result.checks.append(GateCheck("budget", False, f"{model.name} has no budget"))
    else:
        result.checks.append(
            GateCheck("budget", True, ", ".join(b.scope for b in budgets) + " budgeted")
        )
        result.checks.append(_over_budget_check(session, budgets, as_of))
    result.checks.append(_decision_check(session, model.name))
    result.checks.append(_unit_cost_check(session, model.name, as_of, settings))
    return result


def _over_budget_check(session: Session, budgets: Sequence[Budget], as_of: dt.date) -> GateCheck:
    month = month_of(as_of)
    over = []
    for budget in budgets:
        spend_filter = [
            DailySpend.day >= month.start,
            DailySpend.day <= as_of,
            DailySpend.model == budget.model_name,
            DailySpend.currency == budget.currency,  # a budget counts spend in its currency
        ]
        if budget.stage:
            spend_filter.append(DailySpend.stage == budget.stage)
        spent = Decimal(
            session.scalar(select(func.sum(DailySpend.billed_cost)).where(*spend_filter)) or 0
        )
        if spent <= budget.monthly_amount:
            continue
        acknowledged = session.scalars(
            select(AlertSilence).where(
                AlertSilence.budget_scope == budget.scope,
                AlertSilence.period == month.label,
                AlertSilence.kind == "ack",
            )
        ).first()
        if acknowledged is None:
            places = column_places([spent, budget.monthly_amount])  # "$120.00 of $80.00"
            limit = format_money_places(budget.monthly_amount, budget.currency, places)
            shown = format_money_places(spent, budget.currency, places)
            over.append(
                f"{budget.scope} is over budget in {month.label}: "
                f"{shown} of {limit} and nobody acknowledged it"
            )
    if over:
        return GateCheck("over budget", False, "; ".join(over))
    return GateCheck("over budget", True, f"within budget (or acknowledged) in {month.label}")


def _decision_check(session: Session, model: str) -> GateCheck:
    item = latest_decision(session=session, model=model)
    if item is not None and item.decision == "kill":
        when = item.decided_at.date().isoformat() if item.decided_at else "?"
        reason = f" ({item.reason})" if item.reason else ""
        return GateCheck(
            "review",
            False,
            f"decided Kill in the {item.review.month} review by {item.decided_by} on {when}"
            f"{reason}",
        )
    if item is None:
        return GateCheck("review", True, "no review decision yet")
    return GateCheck("review", True, f"last decision: {item.decision} ({item.review.month})")


def _unit_cost_check(session: Session, model: str, as_of: dt.date, settings: Settings) -> GateCheck:
    end = as_of + dt.timedelta(days=1)
    current = Period(end - dt.timedelta(days=WINDOW_DAYS), end, f"{WINDOW_DAYS}d")
    previous = Period(current.start - dt.timedelta(days=WINDOW_DAYS), current.start, "before")
    economics = economics_for(
        session=session,
        period=current,
        previous=previous,
        models=[model],
        full_period=False,
        default_currency=settings.currency,
    ).get(model)
    if economics is None:
        return GateCheck("unit cost", True, "no cost or value in the last 60 days")
    failure = unit_cost_gate_failure(
        economics.current.usage(),
        economics.previous.usage(),
        max_rise_pct=settings.gate_max_unit_cost_rise_pct,
        value_flat_pct=settings.verdict_value_flat_pct,
    )
    if failure:
        return GateCheck(
            "unit cost", False, f"last {WINDOW_DAYS} days vs the {WINDOW_DAYS} before: {failure}"
        )
    change = economics.unit_cost_change_pct
    shown = "n/a" if change is None else f"{change.quantize(Decimal(1))} %"
    return GateCheck(
        "unit cost",
        True,
        f"unit cost change {shown} over the last {WINDOW_DAYS} days "
        f"(limit {settings.gate_max_unit_cost_rise_pct} % unless value rises)",
    )
