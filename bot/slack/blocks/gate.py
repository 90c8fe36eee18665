"""The release gate's answer to `/mlcost gate <model>` (pure)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.slack.guard import MAX_FALLBACK_TEXT, MAX_SECTION_TEXT
from bot.slack.mrkdwn import bold, clip, code, escape, fit_lines

if TYPE_CHECKING:
    from bot.economics.gate import GateResult


def build_gate_blocks(result: GateResult) -> tuple[str, list[dict[str, Any]]]:
    """Render the gate's verdict, one line per check, and the CI command that runs it.

    On stale data there is no verdict: the answer says the gate could not evaluate and why.
    """
    ci = code(f"mlcost gate {result.model}")
    stale = result.stale_data
    if stale is not None:
        head = f":warning: {bold(result.model)}: the release gate could not evaluate"
        body = clip(escape(stale), MAX_SECTION_TEXT)
        blocks: list[dict[str, Any]] = [
            {"type": "section", "text": {"type": "mrkdwn", "text": head}},
            {"type": "section", "text": {"type": "mrkdwn", "text": body}},
            _context(f"No verdict as of {result.as_of} · In CI: {ci} exits 3"),
        ]
        return clip(f"{head}\n{escape(stale)}", MAX_FALLBACK_TEXT), blocks
    head = (
        f":white_check_mark: {bold(result.model)} passes the release gate"
        if result.passed
        else f":no_entry: {bold(result.model)} fails the release gate"
    )
    lines = [
        f"{':white_check_mark:' if c.passed else ':x:'} {bold(c.name)}: {escape(c.detail)}"
        for c in result.checks
    ]
    last_day = result.freshness.last_day if result.freshness is not None else None
    blocks = [
        {"type": "section", "text": {"type": "mrkdwn", "text": head}},
        {"type": "section", "text": {"type": "mrkdwn", "text": fit_lines(lines, MAX_SECTION_TEXT)}},
        _context(f"Data up to {last_day or result.as_of} · In CI: {ci}"),
    ]
    text = clip(head + "\n" + "\n".join(lines), MAX_FALLBACK_TEXT)
    return text, blocks


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}
