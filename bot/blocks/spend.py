"""Blocks for ledger reports."""

from __future__ import annotations

from typing import Any

from bot.money import format_money
from bot.reports import SpendReport
from bot.slack.guard import clip


def build_unallocated_blocks(
    report: SpendReport, currency: str
) -> tuple[str, list[dict[str, Any]]]:
    """Unallocated spend grouped by the report's dimensions, largest first."""
    total = format_money(report.unallocated, currency)
    text = f"Unallocated spend {report.period.label}: {total} of {format_money(report.total)}"
    lines = []
    for line in report.lines[:15]:
        label = " · ".join(str(v) if v is not None else "no team" for v in line.group.values())
        lines.append(f"• {clip(label, 120)}: *{format_money(line.cost, currency)}*")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(text, 150)}},
        {"type": "section", "text": {"type": "mrkdwn",
                                     "text": "\n".join(lines) or "Nothing unallocated."}},
    ]  # fmt: skip
    return text, blocks
