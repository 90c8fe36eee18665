"""Blocks for a model's unit economics: cost, value, unit cost and verdict, from a snapshot."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from bot.economics.words import format_change, format_unit_cost, format_units
from bot.money import format_money, format_percent
from bot.slack.guard import (
    MAX_CONTEXT_TEXT,
    MAX_FALLBACK_TEXT,
    MAX_FIELD_TEXT,
    MAX_HEADER,
    clip,
)
from bot.slack.mrkdwn import bold, escape
from bot.slack.mrkdwn import clip as clip_mrkdwn

VERDICT_ICONS = {
    "cost_incident": ":rotating_light:",
    "no_value": ":warning:",
    "unit_cost_rising": ":chart_with_upwards_trend:",
    "efficient_growth": ":seedling:",
    "healthy": ":large_green_circle:",
    "new": ":new:",
    "awaiting_value": ":hourglass:",
    "idle": ":zzz:",
}


def dec(value: Any) -> Decimal | None:
    """Return a snapshot's stored number as a Decimal (None stays None)."""
    return None if value is None else Decimal(str(value))


def month_title(label: str) -> str:
    """Render 2026-11 as November 2026."""
    return dt.date.fromisoformat(label + "-01").strftime("%B %Y")


def _stage_line(by_stage: dict[str, Any], currency: str) -> str:
    parts = sorted(((k, dec(v) or Decimal(0)) for k, v in by_stage.items()), key=lambda kv: -kv[1])
    return (
        ", ".join(f"{escape(clip(k, 40))} {format_money(v, currency)}" for k, v in parts if v)
        or "none"
    )


def snap_currency(snap: dict[str, Any], currency: str) -> str:
    """Return a snapshot's billing currency; one stored before it was kept takes `currency`."""
    return str(snap.get("currency") or currency)


def period_totals(
    snaps: Sequence[dict[str, Any]], period: str, currency: str
) -> dict[str, Decimal]:
    """Sum the snapshots' cost of a period per currency (different currencies never add)."""
    totals: dict[str, Decimal] = {}
    for snap in snaps:
        code = snap_currency(snap, currency)
        totals[code] = totals.get(code, Decimal(0)) + (dec(snap[period]["cost"]) or Decimal(0))
    return dict(sorted(totals.items()))


def format_totals(totals: dict[str, Decimal]) -> str:
    """Render per-currency totals as `$1,200 + €300` (never one sum)."""
    return " + ".join(format_money(v, c) for c, v in totals.items()) or format_money(Decimal(0))


def model_name(model: object) -> str:
    """A model's name from a snapshot, escaped and clipped for a list."""
    return escape(clip(str(model), 100))


def economics_lines(snap: dict[str, Any], currency: str) -> dict[str, str]:
    """Return the labelled lines every unit-economics view shows, from a JSON snapshot."""
    currency = snap_currency(snap, currency)
    cur, prev = snap["current"], snap["previous"]
    metric = escape(clip(snap.get("metric") or "units", 60))
    cost = dec(cur["cost"]) or Decimal(0)
    lines = {
        "Cost": f"*{format_money(cost, currency)}* ({format_change(dec(snap['cost_change_pct']))}"
        f" vs {format_money(dec(prev['cost']) or Decimal(0), currency)})\n"
        f"{_stage_line(cur['cost_by_stage'], currency)}",
    }
    if snap.get("metric"):
        revenue = dec(cur.get("revenue"))
        lines["Value"] = (
            f"*{format_units(dec(cur['units']))}* {metric} "
            f"({format_change(dec(snap['value_change_pct']))})"
            + (f"\nrevenue {format_money(revenue, currency)}" if revenue is not None else "")
        )
        lines[f"Cost per 1k {metric}"] = (
            f"*{format_unit_cost(dec(cur['unit_cost_per_1k']), currency)}* "
            f"(was {format_unit_cost(dec(prev['unit_cost_per_1k']), currency)}, "
            f"{format_change(dec(snap['unit_cost_change_pct']))})\n"
            f"serving {format_unit_cost(dec(cur['serving_unit_cost_per_1k']), currency)} "
            f"(was {format_unit_cost(dec(prev['serving_unit_cost_per_1k']), currency)})"
        )
    else:
        lines["Value"] = "*none recorded*"
    budget = dec(snap.get("budget"))
    if budget is not None:
        lines["Budget"] = (
            f"{format_percent(dec(snap['budget_used_pct']))} of {format_money(budget, currency)}"
        )
    else:
        lines["Budget"] = "no budget"
    return lines


def verdict_line(snap: dict[str, Any]) -> str:
    """Render the verdict with its icon and reason."""
    verdict = snap["verdict"]
    icon = VERDICT_ICONS.get(verdict["kind"], "")
    headline = escape(clip(str(verdict["headline"]), 300))
    return clip_mrkdwn(f"{icon} *{headline}* — {escape(verdict['detail'])}", MAX_CONTEXT_TEXT)


def build_economics_blocks(
    snaps: Sequence[dict[str, Any]], title: str, currency: str
) -> tuple[str, list[dict[str, Any]]]:
    """Unit economics of one or more models (the `/mlcost value <model>` reply)."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(title, MAX_HEADER)}}
    ]
    for snap in snaps[:15]:
        lines = economics_lines(snap, currency)
        blocks.append(
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": bold(clip(snap["model"], 100))},
                "fields": [
                    {"type": "mrkdwn", "text": clip_mrkdwn(f"*{k}*\n{v}", MAX_FIELD_TEXT)}
                    for k, v in lines.items()
                ],
            }
        )
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": verdict_line(snap)}]}
        )
    return clip_mrkdwn(escape(title), MAX_FALLBACK_TEXT), blocks
