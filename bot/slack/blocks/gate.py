"""The release gate's answer to `/mlcost gate <model>` (pure)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.slack.guard import MAX_FALLBACK_TEXT, MAX_SECTION_TEXT
from bot.slack.mrkdwn import bold, clip, code, escape, fit_lines

if TYPE_CHECKING:
    from bot.economics.gate import GateResult


def build_gate_blocks(result: GateResult) -> tuple[str, list[dict[str, Any]]]:
    """Render the gate's verdict, one line per check, and the CI command that runs it."""
    head = (
        f":white_check_mark: {bold(result.model)} passes the release gate"
        if result.passed
        else f":no_entry: {bold(result.model)} fails the release gate"
    )
    lines = [
        f"{':white_check_mark:' if c.passed else ':x:'} {bold(c.name)}: {escape(c.detail)}"
        for c in result.checks
    ]
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": head}},
        {"type": "section", "text": {"type": "mrkdwn", "text": fit_lines(lines, MAX_SECTION_TEXT)}},
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": f"Data up to {result.as_of} · In CI: "
                    + code(f"mlcost gate {result.model}"),
                }
            ],
        },
    ]
    text = clip(head + "\n" + "\n".join(lines), MAX_FALLBACK_TEXT)
    return text, blocks
