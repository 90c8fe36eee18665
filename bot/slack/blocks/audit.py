"""The answer to `/mlcost audit <model|team>`: who changed what, before and after (pure)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from bot.audit.trail import AuditEntry, change_line
from bot.counts import counted
from bot.money import format_money
from bot.slack.blocks.common import context, header, section
from bot.slack.guard import MAX_FALLBACK_TEXT, MAX_SECTION_TEXT, clip
from bot.slack.mrkdwn import code, escape, fit_lines, user

MAX_SHOWN = 25  # entries in one reply; the CLI lists the rest
PER_SECTION = 5
MAX_CHANGE = 240  # characters of `before → after` per entry


def entry_line(entry: AuditEntry) -> str:
    """Return one change as mrkdwn: when, who, what, on which subject, before → after."""
    when = entry.at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M")
    change = escape(change_line(entry, limit=MAX_CHANGE // 2, money=format_money))
    return f"`{when}` {user(entry.actor)} {code(entry.action)} {code(entry.subject)}\n{change}"


def build_audit_blocks(
    kind: str,
    name: str,
    entries: Sequence[AuditEntry],
    total: int,
    since: dt.date | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """Render a model's or team's newest changes, newest first, and how many more there are."""
    title = f"Audit trail · {kind} {name}"
    window = f" since {since.isoformat()}" if since is not None else ""
    blocks: list[dict[str, Any]] = [
        header(title),
        context(f"Newest first, times in UTC{window}. Only owners and admins see this."),
    ]
    shown = list(entries[:MAX_SHOWN])
    if not shown:
        blocks.append(section(f"No changes recorded for {kind} {code(name)}{window}."))
    lines = [entry_line(entry) for entry in shown]
    for start in range(0, len(lines), PER_SECTION):
        blocks.append(section(fit_lines(lines[start : start + PER_SECTION], MAX_SECTION_TEXT)))
    more = max(total - len(shown), 0)
    if more:
        command = f"mlcost audit --subject {name}" + (f" --since {since}" if since else "")
        blocks.append(context(f"…and {more} more: {code(command)} lists them all."))
    text = f"Audit trail for {kind} {escape(name)}{window}: {counted(total, 'change')}"
    return clip(text, MAX_FALLBACK_TEXT), blocks
