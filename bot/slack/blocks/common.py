"""Small Block Kit pieces shared by the builders (pure, within Slack's limits by construction)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING, Any

from bot.money import CostBasis, format_money
from bot.periods import days_words
from bot.slack import mrkdwn
from bot.slack.guard import (
    MAX_CONTEXT_TEXT,
    MAX_FIELD_TEXT,
    MAX_FIELDS,
    MAX_HEADER,
    MAX_SECTION_TEXT,
    clip,
)

if TYPE_CHECKING:
    from bot.spend.daily import ReportingWindow  # a type only: daily loads the ORM

BASIS_WORDS = {
    CostBasis.BILLED: "billed cost (as invoiced)",
    CostBasis.EFFECTIVE: "effective cost (amortised: Savings Plans and RIs spread)",
}


def header(text: str) -> dict[str, Any]:
    """Return a header block: plain text (shown as is, so not escaped), 150 characters at most."""
    return {"type": "header", "text": {"type": "plain_text", "text": clip(text, MAX_HEADER)}}


def section(markdown: str) -> dict[str, Any]:
    """Return a section of mrkdwn text, clipped to Slack's 3000 characters."""
    text = mrkdwn.clip(markdown, MAX_SECTION_TEXT)
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def fields(pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Return a section of up to ten `*label*\\nvalue` fields (labels are ours, values mrkdwn)."""
    return {
        "type": "section",
        "fields": [
            {"type": "mrkdwn", "text": mrkdwn.clip(f"*{label}*\n{value}", MAX_FIELD_TEXT)}
            for label, value in pairs[:MAX_FIELDS]
        ],
    }


def context(markdown: str) -> dict[str, Any]:
    """Return a context block with one mrkdwn element."""
    text = mrkdwn.clip(markdown, MAX_CONTEXT_TEXT)
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def divider() -> dict[str, Any]:
    """Return a divider."""
    return {"type": "divider"}


def mention_users(user_ids: Sequence[str]) -> str:
    """Return `<@U1>, <@U2>` for Slack to render as names (an invalid ID is shown escaped),
    as many as fit in a field, then how many more."""
    return mrkdwn.fit_lines([mrkdwn.user(u) for u in user_ids], MAX_FIELD_TEXT - 200, sep=", ")


def mention_channel(channel_id: str) -> str:
    """Return `<#C1>` for Slack to render as a channel link (an invalid ID is shown escaped)."""
    return mrkdwn.channel(channel_id)


def basis_words(basis: CostBasis) -> str:
    """Say which cost basis a number is in."""
    return BASIS_WORDS.get(basis, f"{mrkdwn.escape(basis)} cost")


def month_words(span: ReportingWindow) -> str:
    """Return `Nov 1–19` for the counted days of the report's month."""
    if span.as_of < span.month.start:
        return f"no data yet for {span.month.start:%b}"
    return days_words(span.month.start, span.as_of)


def forecast_phrase(amount: Decimal | None, currency: str) -> str:
    """Return `forecast $1,234`, or `no forecast (not enough history)` when there is none."""
    if amount is None:
        return "no forecast (not enough history)"
    return f"forecast {format_money(amount, currency)}"


def forecast_field(amount: Decimal | None, describe: str, currency: str, used: str = "") -> str:
    """Return a forecast field's text: the amount (and `used`, e.g. `· 80 % of budget`) over
    the method in italics; the method alone (it says why) when there is no amount."""
    if amount is None:
        return f"_{describe}_"
    return f"{format_money(amount, currency)}{used}\n_{describe}_"


def signed_percent(value: Decimal | None) -> str:
    """Return `+12 %` or `−3 %` (a real minus sign), or n/a."""
    if value is None:
        return "n/a"
    whole = value.quantize(Decimal(1), rounding=ROUND_HALF_EVEN)
    if whole > 0:
        return f"+{whole} %"
    if whole < 0:
        return f"−{-whole} %"
    return "±0 %"


def chart_failure_note(error: str) -> dict[str, Any]:
    """Return a context note saying why a chart was not posted (Slack's error code)."""
    return context(
        f":warning: I could not post the chart here ({mrkdwn.code(error)}); "
        "invite me with `/invite @mlcost` and try again."
    )


def stale_data_block(line: str) -> dict[str, Any]:
    """Return the section saying the data is stale (bot.spend.freshness.freshness_line)."""
    return section(f":warning: *Stale data, no all-clear:* {mrkdwn.escape(line)}")


def stale_data_text(line: str) -> str:
    """Return the freshness line as a sentence of the notification text (escaped)."""
    return mrkdwn.escape(line[:1].upper() + line[1:])
