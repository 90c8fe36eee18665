"""Unit economics from the ledger and value metrics: cost per 1k units by stage, month on month."""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select

from bot.config import EconomicsSettings
from bot.db.reading import Reader
from bot.db.tables import budgets, daily_spend, models, teams
from bot.economics.value_metrics import ValueTotal, primary_metric, value_totals
from bot.economics.verdicts import Usage, Verdict, VerdictRules, change_pct, judge
from bot.errors import CurrencyError
from bot.money import CostBasis
from bot.periods import MONTHLY, Period, previous_month
from bot.spend.reports import cost_column

log = logging.getLogger(__name__)


@dataclass
class PeriodUsage:
    """One model's cost (by stage) and value (in its primary metric) over one period."""

    period: Period
    cost: Decimal = Decimal(0)
    cost_by_stage: dict[str, Decimal] = field(default_factory=dict)
    units: Decimal = Decimal(0)
    revenue: Decimal | None = None
    value_days: int = 0

    def usage(self) -> Usage:
        """Return the plain values the verdict logic takes."""
        return Usage(self.cost, self.units, dict(self.cost_by_stage), self.revenue)


@dataclass
class ModelEconomics:
    """A model's period against the one before, with the verdict."""

    model: str
    team: str | None
    metric: str | None
    current: PeriodUsage
    previous: PeriodUsage
    verdict: Verdict
    budget: Decimal | None = None
    # the model's billing currency over both periods (the default for a model with no spend)
    currency: str = "USD"

    @property
    def unit_cost(self) -> Decimal | None:
        """Return total cost per 1k units this period."""
        return self.current.usage().unit_cost()

    @property
    def previous_unit_cost(self) -> Decimal | None:
        """Return total cost per 1k units in the previous period."""
        return self.previous.usage().unit_cost()

    def stage_unit_cost(self, stage: str, previous: bool = False) -> Decimal | None:
        """Return one stage's cost per 1k units (serving cost per 1k predictions, say)."""
        return (self.previous if previous else self.current).usage().unit_cost(stage)

    @property
    def unit_cost_change_pct(self) -> Decimal | None:
        """Return the period-over-period change of unit cost in percent."""
        return change_pct(self.previous_unit_cost, self.unit_cost)

    @property
    def cost_change_pct(self) -> Decimal | None:
        """Return the period-over-period change of cost in percent."""
        return change_pct(self.previous.cost, self.current.cost)

    @property
    def value_change_pct(self) -> Decimal | None:
        """Return the period-over-period change of value in percent."""
        return change_pct(self.previous.units, self.current.units)

    @property
    def budget_used_pct(self) -> Decimal | None:
        """Return cost as a percentage of the model's monthly budget."""
        if self.budget is None or self.budget == 0:
            return None
        return self.current.cost * 100 / self.budget

    def as_json(self) -> dict[str, Any]:
        """Return a JSON-safe form; exact numbers as strings."""

        def s(value: Decimal | None) -> str | None:
            return None if value is None else str(value)

        def period(usage: PeriodUsage) -> dict[str, Any]:
            return {
                "label": usage.period.label,
                "start": usage.period.start.isoformat(),
                "end": usage.period.end.isoformat(),
                "cost": s(usage.cost),
                "cost_by_stage": {k: s(v) for k, v in sorted(usage.cost_by_stage.items())},
                "units": s(usage.units),
                "revenue": s(usage.revenue),
                "value_days": usage.value_days,
                "unit_cost_per_1k": s(usage.usage().unit_cost()),
                "serving_unit_cost_per_1k": s(usage.usage().unit_cost("serving")),
            }

        return {
            "model": self.model,
            "team": self.team,
            "currency": self.currency,
            "metric": self.metric,
            "current": period(self.current),
            "previous": period(self.previous),
            "cost_change_pct": s(self.cost_change_pct),
            "value_change_pct": s(self.value_change_pct),
            "unit_cost_change_pct": s(self.unit_cost_change_pct),
            "budget": s(self.budget),
            "budget_used_pct": s(self.budget_used_pct),
            "verdict": {
                "kind": str(self.verdict.kind),
                "headline": self.verdict.headline,
                "detail": self.verdict.detail,
                "flagged": self.verdict.flagged,
            },
        }


def _spend_by_model_stage(
    session: Reader, period: Period, models: list[str] | None, basis: CostBasis
) -> dict[str, dict[str, Decimal]]:
    cost = cost_column(basis)
    query = (
        select(daily_spend.c.model, daily_spend.c.stage, func.sum(cost))
        .where(
            daily_spend.c.day >= period.start,
            daily_spend.c.day < period.end,
            daily_spend.c.model.is_not(None),
        )
        .group_by(daily_spend.c.model, daily_spend.c.stage)
    )
    if models is not None:
        query = query.where(daily_spend.c.model.in_(models))
    result: dict[str, dict[str, Decimal]] = defaultdict(dict)
    for model, stage, total in session.execute(query):
        result[model][stage] = Decimal(total or 0)
    return result


def economics_for(
    *,
    session: Reader,
    period: Period,
    previous: Period,
    models: Iterable[str] | None = None,
    full_period: bool = True,
    rules: VerdictRules | None = None,
    basis: CostBasis = CostBasis.BILLED,
    default_currency: str = "USD",
) -> dict[str, ModelEconomics]:
    """Return unit economics per model for a period against the previous one, by model name.

    Models with neither cost nor value in either period are left out. A model's cost must be
    billed in one currency over both periods, and only a budget in that currency is compared
    with it. Amounts in different currencies are never added: a model billed in several is
    refused (CurrencyError) when it alone is asked about, and otherwise left out with a warning,
    so one such model never stops everyone else's review or sign-off. Each result carries its
    model's currency; a model with value but no spend gets `default_currency`.
    """
    names = None if models is None else sorted(set(models))
    currencies, mixed = _model_currencies(session, previous.start, period.end, names)
    _leave_out_mixed(mixed, names)
    spend = {
        label: _spend_by_model_stage(session, p, names, basis)
        for label, p in (("cur", period), ("prev", previous))
    }
    values = {
        "cur": value_totals(session=session, period=period, models=names),
        "prev": value_totals(session=session, period=previous, models=names),
    }
    teams = _model_teams(session)
    budgets = _model_budgets(session, currencies)
    everyone: set[str] = set()
    for label in ("cur", "prev"):
        everyone |= set(spend[label]) | set(values[label])
    if names is not None:
        everyone &= set(names)
    everyone -= set(mixed)
    result: dict[str, ModelEconomics] = {}
    for model in sorted(everyone):
        metric = primary_metric([*values["cur"].get(model, {}), *values["prev"].get(model, {})])
        usages = {
            label: _period_usage(
                p, spend[label].get(model, {}), values[label].get(model, {}), metric
            )
            for label, p in (("cur", period), ("prev", previous))
        }
        verdict = judge(
            usages["cur"].usage(),
            usages["prev"].usage(),
            full_period=full_period,
            rules=rules or VerdictRules(),
        )
        result[model] = ModelEconomics(
            model=model,
            team=teams.get(model),
            metric=metric,
            current=usages["cur"],
            previous=usages["prev"],
            verdict=verdict,
            budget=budgets.get(model),
            currency=currencies.get(model, default_currency),
        )
    return result


def _leave_out_mixed(mixed: dict[str, str], names: list[str] | None) -> None:
    """Refuse when only models billed in several currencies are asked about; else warn."""
    if mixed and names is not None and set(names) <= set(mixed):
        raise CurrencyError(mixed[sorted(mixed)[0]])
    for message in mixed.values():
        log.warning("unit economics: %s; the model is left out", message)


def _model_teams(session: Reader) -> dict[str, str | None]:
    """Return each model's team name (None for a model without a team)."""
    teams = {
        name: team_id for name, team_id in session.execute(select(models.c.name, models.c.team_id))
    }
    team_names = _team_names(session)
    return {
        name: team_names.get(team_id) if team_id is not None else None
        for name, team_id in teams.items()
    }


def _model_budgets(session: Reader, currencies: dict[str, str]) -> dict[str | None, Decimal]:
    """Return each model's whole-model budget, if it is in the model's billing currency."""
    return {
        b.model_name: b.monthly_amount
        for b in session.execute(
            select(budgets).where(
                budgets.c.model_name.is_not(None),
                budgets.c.stage.is_(None),
                budgets.c.period == MONTHLY,
            )
        )
        if b.currency == currencies.get(b.model_name or "", b.currency)
    }


def _period_usage(
    period: Period, stages: dict[str, Decimal], values: dict[str, ValueTotal], metric: str | None
) -> PeriodUsage:
    """Return a model's cost by stage and its primary metric's value over one period."""
    total = values.get(metric) if metric else None
    return PeriodUsage(
        period=period,
        cost=sum(stages.values(), Decimal(0)),
        cost_by_stage=dict(stages),
        units=total.units if total else Decimal(0),
        revenue=total.revenue if total else None,
        value_days=total.days if total else 0,
    )


def _model_currencies(
    session: Reader, start: dt.date, end: dt.date, models: list[str] | None
) -> tuple[dict[str, str], dict[str, str]]:
    """Return each model's billing currency in [start, end), and why each mixed model is not."""
    query = (
        select(daily_spend.c.model, daily_spend.c.currency)
        .where(
            daily_spend.c.day >= start, daily_spend.c.day < end, daily_spend.c.model.is_not(None)
        )
        .distinct()
    )
    if models is not None:
        query = query.where(daily_spend.c.model.in_(models))
    found: dict[str, list[str]] = defaultdict(list)
    for model, code in session.execute(query):
        found[str(model)].append(code)
    mixed = {
        model: (
            f"`{model}`'s spend from {start} to {end - dt.timedelta(days=1)} is billed in "
            f"{' and '.join(sorted(codes))}; unit economics need one currency and "
            "amounts in different currencies are never added"
        )
        for model, codes in found.items()
        if len(codes) > 1
    }
    return {model: codes[0] for model, codes in found.items() if model not in mixed}, mixed


def _team_names(session: Reader) -> dict[int, str]:
    return {team_id: name for team_id, name in session.execute(select(teams.c.id, teams.c.name))}


def month_economics(
    *, session: Reader, month: Period, settings: EconomicsSettings
) -> dict[str, ModelEconomics]:
    """Return every model's economics for the month against the one before, by the settings."""
    return economics_for(
        session=session,
        period=month,
        previous=previous_month(month),
        rules=verdict_rules(settings),
        default_currency=settings.currency,
    )


def verdict_rules(settings: EconomicsSettings) -> VerdictRules:
    """Return the verdict thresholds configured in the settings."""
    return VerdictRules(
        cost_rise_pct=settings.verdict_cost_rise_pct, value_flat_pct=settings.verdict_value_flat_pct
    )
