"""Blocks for ledger reports."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Any

from bot.money import (
    format_money,
    format_money_places,
    format_percent,
    percent_of,
    shown_breakdown,
    shown_within,
)
from bot.slack.blocks.common import basis_words, context, header, section
from bot.slack.guard import clip
from bot.slack.mrkdwn import code, escape
from bot.spend.unallocated import UnallocatedReport

MAX_GROUPS = 12
MAX_SERVICES = 4


def build_unallocated_blocks(
    unallocated: UnallocatedReport, currency: str
) -> tuple[str, list[dict[str, Any]]]:
    """Unallocated spend grouped by the model tag value that would fix it, then by service."""
    money = lambda v: format_money(v, currency)  # noqa: E731
    report = unallocated.lines
    total = money(report.total)
    share = format_percent(percent_of(report.total, unallocated.all_spend))
    text = (
        f"Unallocated spend {report.period.label}: {total} of {money(unallocated.all_spend)} "
        f"({share}); {basis_words(report.basis)}"
    )
    groups: dict[str | None, list[tuple[str, Decimal]]] = defaultdict(list)
    for line in report.lines:
        groups[line.group.get("tag")].append((str(line.group.get("service")), line.cost))
    ranked = sorted(groups.items(), key=lambda kv: -sum(c for _, c in kv[1]))
    blocks: list[dict[str, Any]] = [
        header(f"Unallocated spend · {report.period.label}: {total} ({share})"),
    ]
    # the tag values as shown add up to the total as shown, and each one's services to it
    places, group_amounts = shown_breakdown(
        [sum((c for _, c in services), Decimal(0)) for _, services in ranked], report.total
    )
    for (tag, services), group_amount in zip(ranked[:MAX_GROUPS], group_amounts, strict=False):
        amount = format_money_places(group_amount, currency, places)
        service_amounts = shown_within([c for _, c in services], group_amount, places)
        if tag:
            fix = (
                f"*Model tag {code(clip(tag, 80))}* — {amount}\nNo registered model has this "
                f"name: register {code(clip(tag, 80))} in the registry, or retag these "
                "resources with an existing model's name."
            )
        else:
            fix = (
                f"*No model tag* — {amount}\nTag these resources with "
                "`ml:model=&lt;model&gt;` or add a `match:` rule to a model in the "
                "registry."
            )
        detail = "\n".join(
            f"  • {escape(clip(service, 80))}: {format_money_places(cost, currency, places)}"
            for (service, _), cost in zip(services[:MAX_SERVICES], service_amounts, strict=False)
        )
        more = ""
        if len(services) > MAX_SERVICES:  # summed, so the group's lines add up to its amount
            rest = format_money_places(
                sum(service_amounts[MAX_SERVICES:], Decimal(0)), currency, places
            )
            more = f"\n  • …and {len(services) - MAX_SERVICES} more services: {rest}"
        blocks.append(section(f"{fix}\n{detail}{more}"))
    if not ranked:
        blocks.append(section("Nothing unallocated: every dollar has a model. :tada:"))
    elif len(ranked) > MAX_GROUPS:  # summed, so the groups add up to the total
        rest = format_money_places(sum(group_amounts[MAX_GROUPS:], Decimal(0)), currency, places)
        blocks.append(section(f"…and {len(ranked) - MAX_GROUPS} more tag values: {rest}"))
    blocks.append(
        context(
            f"{basis_words(report.basis)} · by the model tag value found on the "
            "spend, then by service"
        )
    )
    return text, blocks
