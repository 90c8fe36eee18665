"""Waste findings as Block Kit, plain text (command line) and JSON (scripts).

Ledger findings (bot/waste/checks.py) and resource findings (the account scans' open rows of
resource_findings) are listed together, largest monthly cost first; closed resource findings add
what they saved so far. Ledger wording marks names with backtick pairs (code spans in Slack);
terminal and JSON output drop them. Resource ids, tags and evidence come from outside: escaped.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from bot.counts import counted
from bot.money import (
    column_places,
    format_money,
    format_money_places,
    shown_breakdown,
    shown_parts,
)
from bot.periods import day_words
from bot.slack.blocks.common import stale_data_block
from bot.slack.blocks.waste_resource import owner_words, stop_result_words
from bot.slack.guard import MAX_CONTEXT_TEXT, MAX_HEADER, MAX_SECTION_TEXT, clip
from bot.slack.mrkdwn import clip as clip_mrkdwn
from bot.slack.mrkdwn import code, escape, fit_lines, plain, quoted, user
from bot.waste.catalog import kind_label, ledger_label
from bot.waste.checks import WasteFinding
from bot.waste.findings import Entry, ResourceEntry, WasteOverview

MAX_CLOSED_LINES = 5


def label_of(entry: Entry) -> str:
    """Return the finding's kind in words."""
    if isinstance(entry, ResourceEntry):
        return kind_label(entry.kind)
    return ledger_label(entry.kind)


def unmarked(text: str) -> str:
    """Return ledger wording as terminal and JSON text (no backtick name marks or markup)."""
    return plain(text)


def total_of(entries: Sequence[Entry]) -> Decimal:
    return sum((f.monthly_cost for f in entries), Decimal(0))


def shown_amounts(entries: Sequence[Entry]) -> tuple[int, list[Decimal], Decimal]:
    """Return the places shown, each entry's monthly cost rounded to them so that they add up
    to the shown total (largest remainder, as `format_money` shows the total), and the total."""
    total = total_of(entries)
    places, shown = shown_breakdown([e.monthly_cost for e in entries], total)
    return places, shown, total


def _saved_words(saved_total: Decimal, count: int, currency: str) -> str:
    return f"Closed findings saved {format_money(saved_total, currency)} so far ({count} closed)"


def _iso_day(day: dt.date) -> str:
    return day.isoformat()


def _slack_day(day: dt.date) -> str:
    return day_words(day, year=True)


def _closed_words(
    entry: ResourceEntry, currency: str, day: Callable[[dt.date], str] = _iso_day
) -> str:
    """Say when a finding closed and what it saved; `day` says a day as the surface does
    (ISO on the terminal, `Nov 30, 2026` in Slack)."""
    when = day(entry.closed_at.date()) if entry.closed_at else "?"
    saved = format_money(entry.saved_so_far or Decimal(0), currency)
    return (
        f"{label_of(entry)} {entry.resource_id} closed on {when} (no longer found): "
        f"saved {saved} so far"
    )


def _silenced_words(entry: ResourceEntry, day: Callable[[dt.date], str] = _iso_day) -> str:
    if entry.decision == "keep":
        until = day(entry.keep_until.date()) if entry.keep_until else "?"
        return f"kept until {until}"
    return "marked not waste"


def _stop_words(entry: ResourceEntry) -> str:
    """Say that Stop it was approved and what became of it ('' when it was not)."""
    if entry.decision != "stop":
        return ""
    return f"Stop it approved: {stop_result_words(entry.action_result)}"


def _resource_section(entry: ResourceEntry, currency: str, cost: str) -> str:
    where = f"{entry.account} / {entry.region} · {owner_words(_owner(entry))}"
    if stop := _stop_words(entry):
        where += f" · {stop}"
    return (
        f"*{escape(label_of(entry))} {code(clip(entry.resource_id, 300))}* — "
        f"{cost}/month · resource scan\n"
        f"{escape(clip(entry.evidence, 1200))}\n"
        f"_Fix:_ {escape(clip(entry.fix, 600))} (saves "
        f"{format_money(entry.monthly_saving, currency)}/month) · _Price:_ "
        f"{escape(clip(entry.price_source, 200))}\n{escape(clip(where, 400))}"
    )


def _owner(entry: ResourceEntry) -> dict[str, Any]:
    return {"model": entry.model, "team": entry.team}


def _ledger_section(finding: WasteFinding, cost: str) -> str:
    label = escape(ledger_label(finding.kind))
    return (
        f"*{label}: {clip_mrkdwn(quoted(finding.subject), 400)}* — "
        f"{cost}/month\n"
        f"{clip_mrkdwn(quoted(finding.evidence), 1500)}\n"
        f"_Fix:_ {clip_mrkdwn(quoted(finding.fix), 900)}"
    )


def _context(text: str) -> dict[str, Any]:
    return {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": clip_mrkdwn(text, MAX_CONTEXT_TEXT)}],
    }


def build_waste_blocks(
    findings: Sequence[Entry],
    currency: str = "USD",
    limit: int = 20,
    *,
    silenced: Sequence[ResourceEntry] = (),
    closed: Sequence[ResourceEntry] = (),
    saved_total: Decimal | None = None,
    closed_count: int = 0,
    stale: str | None = None,
    shown: tuple[int, Sequence[Decimal]] | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """Waste findings (ledger and resource), largest first, each with its evidence and fix.

    `silenced` are resource findings marked Keep or Not waste (counted apart), `closed` the
    recently closed ones; `saved_total` what all `closed_count` closed findings saved so far;
    `stale` the line saying the ledger is stale (then finding nothing is no all-clear);
    `shown` the places and the ranked findings' amounts as a caller that adds them to more shows
    them. The findings past `limit` are summed on one line, so the lines add up to the total.
    """
    ranked = sorted(findings, key=lambda f: f.monthly_cost, reverse=True)
    places, numbers, total_cost = shown_amounts(ranked)
    if shown is not None:
        places, numbers = shown[0], list(shown[1])
    money = lambda v: format_money_places(v, currency, places)  # noqa: E731
    amounts, total = [money(amount) for amount in numbers], money(total_cost)
    if ranked:
        text = f"Waste: {counted(len(ranked), 'finding')}, about {total}/month"
    elif stale is not None:
        text = "Waste: no verdict, the billing data is stale."
    else:
        text = "Waste: nothing found this week."
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(text, MAX_HEADER)}},
    ]
    if stale is not None:
        blocks.append(stale_data_block(stale))
    for finding, amount in zip(ranked[:limit], amounts, strict=False):
        if isinstance(finding, ResourceEntry):
            body = _resource_section(finding, currency, amount)
        else:
            body = _ledger_section(finding, amount)
        body = clip_mrkdwn(body, MAX_SECTION_TEXT)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": body}})
    if len(ranked) > limit:
        rest = money(sum(numbers[limit : len(ranked)], Decimal(0)))
        blocks.append(
            _context(
                f"…and {len(ranked) - limit} smaller findings, about {rest}/month. "
                "`mlcost report waste` lists them all."
            )
        )
    notes = []
    if silenced:
        lines = [
            f"{escape(label_of(e))} {code(clip(e.resource_id, 200))} "
            f"{format_money(e.monthly_cost, currency)}/month, {_silenced_words(e, _slack_day)}"
            for e in silenced
        ]
        notes.append("Not counted (Keep or Not waste): " + fit_lines(lines, 1200, sep="; "))
    if closed:
        lines = [escape(_closed_words(e, currency, _slack_day)) for e in closed[:MAX_CLOSED_LINES]]
        more = len(closed) - MAX_CLOSED_LINES
        notes.append(fit_lines(lines, 1200) + (f"\n…and {more} more closed" if more > 0 else ""))
    if saved_total is not None and closed_count:
        notes.append(f"*{_saved_words(saved_total, closed_count, currency)}*")
    if notes:
        blocks.append(_context("\n".join(notes)))
    return text, blocks


def overview_blocks(overview: WasteOverview) -> tuple[str, list[dict[str, Any]]]:
    """The waste overview as `/mlcost waste` shows it (see build_waste_blocks)."""
    return build_waste_blocks(
        overview.ranked,
        overview.currency,
        silenced=overview.silenced,
        closed=overview.recently_closed,
        saved_total=overview.saved_total,
        closed_count=len(overview.closed),
        stale=overview.stale_data,
    )


def _entry_json(entry: Entry, currency: str) -> dict[str, Any]:
    if isinstance(entry, ResourceEntry):
        return {
            "source": "resource_scan",
            "kind": entry.kind,
            "label": label_of(entry),
            "subject": entry.resource_id,
            "model": entry.model,
            "team": entry.team,
            "resource_id": entry.resource_id,
            "account": entry.account,
            "region": entry.region,
            "monthly_cost": str(entry.monthly_cost),
            "monthly_saving": str(entry.monthly_saving),
            "currency": entry.currency,
            "evidence": entry.evidence,
            "fix": entry.fix,
            "price_source": entry.price_source,
            "finding_id": entry.finding_id,
            "decision": entry.decision,
            "keep_until": entry.keep_until.isoformat() if entry.keep_until else None,
            "closed_at": entry.closed_at.isoformat() if entry.closed_at else None,
            "saved_so_far": str(entry.saved_so_far) if entry.saved_so_far is not None else None,
            "posted": entry.posted,
            "below_posting_floor": entry.below_floor,
        }
    return {
        "source": "ledger",
        "kind": entry.kind,
        "label": label_of(entry),
        "subject": unmarked(entry.subject),
        "model": entry.model,
        "resource_id": entry.resource_id,
        "monthly_cost": str(entry.monthly_cost),
        "currency": currency,
        "evidence": unmarked(entry.evidence),
        "fix": unmarked(entry.fix),
    }


def render_waste_json(overview: WasteOverview, as_of: dt.date) -> str:
    """JSON for scripts: the ranked findings (ledger and resource), money as exact strings with
    the currency; silenced and recently closed resource findings; what closed ones saved."""
    ranked = overview.ranked
    data = {} if overview.freshness is None else {"data": overview.freshness.as_json()}
    return json.dumps(
        {
            "as_of": as_of.isoformat(),
            **data,
            "currency": overview.currency,
            "monthly_total": str(total_of(ranked)),
            "findings": [_entry_json(f, overview.currency) for f in ranked],
            "silenced": [_entry_json(e, overview.currency) for e in overview.silenced],
            "recently_closed": [
                _entry_json(e, overview.currency) for e in overview.recently_closed
            ],
            "closed_count": len(overview.closed),
            "saved_so_far_total": str(overview.saved_total),
            "listed_under_their_resources": [
                _entry_json(f, overview.currency) for f in overview.merged
            ],
        },
        indent=2,
    )


def render_waste_text(overview: WasteOverview) -> str:
    """Plain text for the command line (no Slack markup); the list's amounts share one
    precision."""
    currency = overview.currency
    ranked = overview.ranked
    stale = overview.stale_data
    lines = [] if stale is None else [stale]
    if not ranked:
        # on a stale ledger, finding nothing is no all-clear
        lines.append("No waste found." if stale is None else "No verdict on waste until then.")
    places = column_places([*(f.monthly_cost for f in ranked), total_of(ranked)])
    # the listed amounts as shown add up to the total as shown
    parts, total = shown_parts([f.monthly_cost for f in ranked], places)
    amounts = [format_money_places(part, currency, places) for part in parts]
    width = max(10, *(len(amount) for amount in amounts)) if amounts else 10
    indent = " " * (width + len("/mo  "))
    for f, amount in zip(ranked, amounts, strict=True):
        money = f"{amount:>{width}}/mo  "
        if isinstance(f, ResourceEntry):
            lines.append(
                f"{money}{label_of(f)} {f.resource_id} (resource scan: {f.account} {f.region}, "
                f"{owner_words(_owner(f))})"
            )
            lines.append(f"{indent}{f.evidence}")
            lines.append(
                f"{indent}fix: {f.fix} (saves {format_money(f.monthly_saving, currency)}/month); "
                f"price: {f.price_source}"
            )
            if stop := _stop_words(f):
                lines.append(f"{indent}{stop}")
            if f.below_floor and overview.posting_floor is not None:
                floor = format_money_places(overview.posting_floor, currency, 2)
                lines.append(
                    f"{indent}not posted to Slack: under the {floor}/month posting floor "
                    "(MLCOST_SCAN_MIN_MONTHLY)"
                )
            continue
        lines.append(f"{money}{label_of(f)}: {unmarked(f.subject)}")
        lines.append(f"{indent}{unmarked(f.evidence)}")
        lines.append(f"{indent}fix: {unmarked(f.fix)}")
    for e in overview.silenced:
        lines.append(
            f"not counted: {label_of(e)} {e.resource_id} "
            f"{format_money(e.monthly_cost, currency)}/month, {_silenced_words(e)}"
        )
    for e in overview.recently_closed:
        lines.append(_closed_words(e, currency))
    if overview.closed:
        lines.append(_saved_words(overview.saved_total, len(overview.closed), currency))
    if ranked:
        lines.append(f"total: about {format_money_places(total, currency, places)}/month")
    return "\n".join(lines) + "\n"


def build_waste_digest(
    findings: list[WasteFinding],
    week_label: str,
    owners: list[str],
    currency: str = "USD",
    resources: Sequence[ResourceEntry] = (),
    saved_total: Decimal | None = None,
    closed_count: int = 0,
    stale: str | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """The weekly waste digest for one channel: its findings, and who owns them.

    Resource findings were each posted to this channel already (with their buttons): the digest
    lists them one line each, by kind, id and finding number, with no link. `stale` says the
    ledger did not cover the week (its findings are then incomplete).
    """
    ranked = sorted(findings, key=lambda f: f.monthly_cost, reverse=True)
    by_cost = sorted(resources, key=lambda e: e.monthly_cost, reverse=True)
    # the findings and resource lines as shown add up to the headline's total as shown
    places, numbers, total_cost = shown_amounts([*ranked, *by_cost])
    amounts = [format_money_places(amount, currency, places) for amount in numbers]
    total = format_money_places(total_cost, currency, places)
    count = len(findings) + len(resources)
    headline = f"Waste in {week_label}: {counted(count, 'finding')}, about {total}/month"
    _, blocks = build_waste_blocks(
        ranked, currency, stale=stale, shown=(places, numbers[: len(ranked)])
    )
    blocks[0] = {
        "type": "header",
        "text": {"type": "plain_text", "text": clip(headline, MAX_HEADER)},
    }
    if resources:
        lines = [
            f"• {escape(label_of(e))} {code(clip(e.resource_id, 200))} — "
            f"{amount}/month · {escape(clip(e.region, 40))} · "
            f"finding #{e.finding_id}"
            for e, amount in zip(by_cost, amounts[len(ranked) :], strict=True)
        ]
        body = "*Open resource findings (each posted here with its buttons):*\n" + fit_lines(
            lines, MAX_SECTION_TEXT - 100
        )
        blocks.insert(1, {"type": "section", "text": {"type": "mrkdwn", "text": body}})
    mentions = fit_lines([user(u) for u in owners], MAX_CONTEXT_TEXT - 200, sep=" ")
    note = f"{mentions} · " if mentions else ""
    saved = ""
    if saved_total is not None and closed_count:
        saved = f"{_saved_words(saved_total, closed_count, currency)} · "
    blocks.append(
        _context(
            f"{note}{saved}Run-rates are the week's cost scaled to 30 days · "
            "`/mlcost waste` for the live list"
        )
    )
    return f":wastebasket: {headline}", blocks
