"""What `/mlcost model` and `/mlcost team` share: the report's arguments and the chart reply."""

from __future__ import annotations

import datetime as dt
from typing import Any, TypedDict

from sqlalchemy.orm import Session

from bot.money import CostBasis
from bot.slack.charts.spend_chart import SpendChart, render_spend_chart
from bot.slack.command_args import cost_basis
from bot.slack.command_router import ChartFile, Invocation, Reply


class ReportArgs(TypedDict):
    """The keyword arguments of `model_report` and `team_report`."""

    session: Session
    name: str
    today: dt.date
    window: str | None
    basis: CostBasis
    currency: str
    max_data_age_days: int


def report_args(inv: Invocation, words: list[str], options: dict[str, str]) -> ReportArgs:
    """Return the report's arguments from `<name> [window]` and `--cost`."""
    return ReportArgs(
        session=inv.session,
        name=words[0],
        today=inv.now.date(),
        window=words[1] if len(words) > 1 else None,
        basis=cost_basis(options),
        currency=inv.settings.currency,
        max_data_age_days=inv.settings.gate_max_data_age_days,
    )


def chart_reply(
    text: str, blocks: list[dict[str, Any]], spec: SpendChart, *, filename: str, title: str
) -> Reply:
    """Answer in the channel with the blocks and the spend chart beside them."""
    chart = ChartFile(
        filename,
        title,
        render=lambda: render_spend_chart(spec),  # after the transaction: rendering is slow
    )
    return Reply(text=text, blocks=blocks, in_channel=True, charts=[chart])
