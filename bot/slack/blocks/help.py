"""`/mlcost help`: every subcommand with an example, and a hint for an unknown one (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.slack.blocks.common import section
from bot.slack.guard import MAX_FALLBACK_TEXT, MAX_SECTION_TEXT
from bot.slack.mrkdwn import clip, escape, fit_lines

INTRO = "*mlcost* — ML cloud spend, legible and governed. Subcommands:"


def _quoted(word: str) -> str:
    """Make a user's word safe inside a code span (no backtick, escaped, short)."""
    return escape(word.replace("`", "'")[:40])


def help_intro(unknown: str | None = None, suggestion: str | None = None) -> str:
    """Return the help's first line; for an unknown subcommand, say so and suggest one."""
    if unknown is None:
        return INTRO
    hint = f" Did you mean `{_quoted(suggestion)}`?" if suggestion else ""
    return f"I don't know `{_quoted(unknown)}`.{hint} Here is what I can do:"


def build_help_blocks(
    entries: Sequence[tuple[str, str, str]],
    unknown: str | None = None,
    suggestion: str | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """Render (usage, summary, example) entries as the help, after the intro line."""
    intro = help_intro(unknown, suggestion)
    lines = [
        f"• `/mlcost {escape(usage)}` — {escape(summary)}\n    e.g. `{escape(example)}`"
        for usage, summary, example in entries
    ]
    lines.append("• `/mlcost help` — this list")
    body = fit_lines(lines, MAX_SECTION_TEXT)
    return clip(intro + "\n" + body, MAX_FALLBACK_TEXT), [section(intro), section(body)]
