"""Waste findings as Block Kit, plain text (command line) and JSON (scripts)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

from bot.money import column_places, format_money, format_money_places
from bot.slack.guard import MAX_CONTEXT_TEXT, MAX_HEADER, MAX_SECTION_TEXT, clip
from bot.slack.mrkdwn import clip as clip_mrkdwn
from bot.slack.mrkdwn import escape, fit_lines, plain, quoted, user
from bot.waste.checks import WasteFinding

KIND_LABELS = {
    "orphaned": "Orphaned (tagged for an unregistered model)",
    "stale_checkpoints": "Stale checkpoints",
    "idle_endpoint": "Idle endpoint",
    "killed_still_spending": "Killed, still spending",
    "idle_gpu": "Idle GPU instance",
    "spot_candidate": "Spot candidate",
    "fixed_serving": "Serving does not scale with traffic",
}


def build_waste_blocks(
    findings: list[WasteFinding], currency: str = "USD", limit: int = 20
) -> tuple[str, list[dict[str, Any]]]:
    """Waste findings, largest first, each with its evidence and fix."""
    total = sum((f.monthly_cost for f in findings), Decimal(0))
    text = (
        f"Waste: {len(findings)} finding(s), about {format_money(total, currency)}/month"
        if findings
        else "Waste: nothing found this week."
    )
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(text, MAX_HEADER)}},
    ]
    for finding in findings[:limit]:
        label = escape(KIND_LABELS.get(finding.kind, finding.kind))
        body = (
            f"*{label}: {clip_mrkdwn(quoted(finding.subject), 400)}* — "
            f"{format_money(finding.monthly_cost, currency)}/month\n"
            f"{clip_mrkdwn(quoted(finding.evidence), 1500)}\n"
            f"_Fix:_ {clip_mrkdwn(quoted(finding.fix), 900)}"
        )
        body = clip_mrkdwn(body, MAX_SECTION_TEXT)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": body}})
    if len(findings) > limit:
        blocks.append(
            {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": f"…and {len(findings) - limit} smaller findings. "
                        "`mlcost report waste` lists them all.",
                    }
                ],
            }
        )
    return text, blocks


def render_waste_json(findings: list[WasteFinding], as_of: dt.date, currency: str = "USD") -> str:
    """JSON for scripts: each finding with its kind, label, monthly cost (a string), fix.

    Every amount is in `currency` (the organisation's: findings count only spend billed in it).
    """
    total = sum((f.monthly_cost for f in findings), Decimal(0))
    return json.dumps(
        {
            "as_of": as_of.isoformat(),
            "currency": currency,
            "monthly_total": str(total),
            "findings": [
                {
                    "kind": f.kind,
                    "label": KIND_LABELS.get(f.kind, f.kind),
                    "subject": plain(f.subject),
                    "model": f.model,
                    "resource_id": f.resource_id,
                    "monthly_cost": str(f.monthly_cost),
                    "currency": currency,
                    "evidence": plain(f.evidence),
                    "fix": plain(f.fix),
                }
                for f in findings
            ],
        },
        indent=2,
    )


def render_waste_text(findings: list[WasteFinding], currency: str = "USD") -> str:
    """Plain text for the command line; the amounts share one precision."""
    if not findings:
        return "No waste found.\n"
    total = sum((f.monthly_cost for f in findings), Decimal(0))
    places = column_places([*(f.monthly_cost for f in findings), total])
    amounts = [format_money_places(f.monthly_cost, currency, places) for f in findings]
    width = max(10, *(len(a) for a in amounts))
    indent = " " * (width + len("/mo  "))
    lines = []
    for f, amount in zip(findings, amounts, strict=True):
        label = KIND_LABELS.get(f.kind, f.kind)
        lines.append(f"{amount:>{width}}/mo  {label}: {plain(f.subject)}")
        lines.append(f"{indent}{plain(f.evidence)}")
        lines.append(f"{indent}fix: {plain(f.fix)}")
    lines.append(f"total: about {format_money_places(total, currency, places)}/month")
    return "\n".join(lines) + "\n"


def build_waste_digest(
    findings: list[WasteFinding], week_label: str, owners: list[str], currency: str = "USD"
) -> tuple[str, list[dict[str, Any]]]:
    """The weekly waste digest for one channel: its findings, and who owns them."""
    total = sum((f.monthly_cost for f in findings), Decimal(0))
    headline = (
        f"Waste in {week_label}: {len(findings)} finding(s), "
        f"about {format_money(total, currency)}/month"
    )
    _, blocks = build_waste_blocks(findings, currency)
    blocks[0] = {
        "type": "header",
        "text": {"type": "plain_text", "text": clip(headline, MAX_HEADER)},
    }
    mentions = fit_lines([user(u) for u in owners], MAX_CONTEXT_TEXT - 200, sep=" ")
    note = f"{mentions} · " if mentions else ""
    blocks.append(
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": clip_mrkdwn(
                        f"{note}Run-rates are the week's cost scaled to 30 days · "
                        "`/mlcost waste` for the live list",
                        MAX_CONTEXT_TEXT,
                    ),
                }
            ],
        }
    )
    return f":wastebasket: {headline}", blocks
