"""Blocks for unit economics, the monthly review thread, the sign-off digest and the gate."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from bot.money import format_money, format_percent, percent_of
from bot.notify.messages import DECISIONS, DecisionState
from bot.slack.guard import (
    MAX_CONTEXT_TEXT,
    MAX_FALLBACK_TEXT,
    MAX_FIELD_TEXT,
    MAX_HEADER,
    MAX_SECTION_TEXT,
    clip,
)
from bot.slack.mrkdwn import bold, escape, fit_lines, user, users
from bot.slack.mrkdwn import clip as clip_mrkdwn

DECISION_ICONS = {
    "keep": ":white_check_mark:",
    "kill": ":skull:",
    "rightsize": ":scissors:",
    "discuss": ":speech_balloon:",
}
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
DECIDE_ACTION_PREFIX = "review_decide_"
SIGNOFF_ACTION = "signoff"
MAX_DIGEST_MODELS = 40


def _d(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def format_units(value: Decimal | None) -> str:
    """Render a count like 1.2M, 350k or 940."""
    if value is None:
        return "n/a"
    for size, suffix in ((Decimal(10**9), "B"), (Decimal(10**6), "M"), (Decimal(1000), "k")):
        if abs(value) >= size:
            return f"{(value / size).quantize(Decimal('0.1'))}{suffix}"
    return f"{value.quantize(Decimal(1))}"


def format_unit_cost(value: Decimal | None, currency: str = "USD") -> str:
    """Render cost per 1k units: cents above $1, four decimals below."""
    if value is None:
        return "n/a"
    if abs(value) >= 1:
        return format_money(value, currency)
    symbol = {"USD": "$", "EUR": "€", "GBP": "£"}.get(currency, "")
    body = f"{value.quantize(Decimal('0.0001'))}"
    while body.endswith("0") and len(body.split(".")[1]) > 2:
        body = body[:-1]  # 0.6000 reads as 0.60; 0.0292 keeps its digits
    return f"{symbol}{body}" + ("" if symbol else f" {currency}")


def format_change(value: Decimal | None) -> str:
    """Render a change in percent with its sign, e.g. +12 %."""
    if value is None:
        return "n/a"
    rounded = value.quantize(Decimal(1))
    return f"{'+' if rounded > 0 else ''}{rounded} %"


def month_title(label: str) -> str:
    """Render 2026-11 as November 2026."""
    return dt.date.fromisoformat(label + "-01").strftime("%B %Y")


def _stage_line(by_stage: dict[str, Any], currency: str) -> str:
    parts = sorted(((k, _d(v) or Decimal(0)) for k, v in by_stage.items()), key=lambda kv: -kv[1])
    return (
        ", ".join(f"{escape(clip(k, 40))} {format_money(v, currency)}" for k, v in parts if v)
        or "none"
    )


def snap_currency(snap: dict[str, Any], currency: str) -> str:
    """Return a snapshot's billing currency; one stored before it was kept takes `currency`."""
    return str(snap.get("currency") or currency)


def _totals(snaps: Sequence[dict[str, Any]], period: str, currency: str) -> dict[str, Decimal]:
    """Sum the snapshots' cost of a period per currency (different currencies never add)."""
    totals: dict[str, Decimal] = {}
    for snap in snaps:
        code = snap_currency(snap, currency)
        totals[code] = totals.get(code, Decimal(0)) + (_d(snap[period]["cost"]) or Decimal(0))
    return dict(sorted(totals.items()))


def format_totals(totals: dict[str, Decimal]) -> str:
    """Render per-currency totals as `$1,200 + €300` (never one sum)."""
    return " + ".join(format_money(v, c) for c, v in totals.items()) or format_money(Decimal(0))


def economics_lines(snap: dict[str, Any], currency: str) -> dict[str, str]:
    """Return the labelled lines every unit-economics view shows, from a JSON snapshot."""
    currency = snap_currency(snap, currency)
    cur, prev = snap["current"], snap["previous"]
    metric = escape(clip(snap.get("metric") or "units", 60))
    cost = _d(cur["cost"]) or Decimal(0)
    lines = {
        "Cost": f"*{format_money(cost, currency)}* ({format_change(_d(snap['cost_change_pct']))}"
        f" vs {format_money(_d(prev['cost']) or Decimal(0), currency)})\n"
        f"{_stage_line(cur['cost_by_stage'], currency)}",
    }
    if snap.get("metric"):
        revenue = _d(cur.get("revenue"))
        lines["Value"] = (
            f"*{format_units(_d(cur['units']))}* {metric} "
            f"({format_change(_d(snap['value_change_pct']))})"
            + (f"\nrevenue {format_money(revenue, currency)}" if revenue is not None else "")
        )
        lines[f"Cost per 1k {metric}"] = (
            f"*{format_unit_cost(_d(cur['unit_cost_per_1k']), currency)}* "
            f"(was {format_unit_cost(_d(prev['unit_cost_per_1k']), currency)}, "
            f"{format_change(_d(snap['unit_cost_change_pct']))})\n"
            f"serving {format_unit_cost(_d(cur['serving_unit_cost_per_1k']), currency)} "
            f"(was {format_unit_cost(_d(prev['serving_unit_cost_per_1k']), currency)})"
        )
    else:
        lines["Value"] = "*none recorded*"
    budget = _d(snap.get("budget"))
    if budget is not None:
        lines["Budget"] = (
            f"{format_percent(_d(snap['budget_used_pct']))} of {format_money(budget, currency)}"
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


def build_review_item_message(
    snap: dict[str, Any], state: DecisionState, currency: str
) -> tuple[str, list[dict[str, Any]]]:
    """One model's message in the review thread: numbers, verdict, decision or buttons."""
    model = escape(clip(snap["model"], 100))
    lines = economics_lines(snap, currency)
    signoffs = snap.get("signoffs") or {}
    if signoffs.get("weeks"):
        lines["Weekly sign-off"] = f"{signoffs.get('signed', 0)} of {signoffs['weeks']} weeks"
    owners = fit_lines([user(u) for u in snap.get("owners") or []], 1000, sep=" ") or "no owner"
    blocks: list[dict[str, Any]] = [
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": clip_mrkdwn(f"*{model}* · owners {owners}", MAX_SECTION_TEXT),
            },
            "fields": [
                {"type": "mrkdwn", "text": clip_mrkdwn(f"*{k}*\n{v}", MAX_FIELD_TEXT)}
                for k, v in lines.items()
            ],
        },
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": verdict_line(snap)}],
        },
    ]
    if state.decision:
        when = state.decided_at.strftime("%Y-%m-%d %H:%M UTC") if state.decided_at else ""
        reason = ""
        if state.reason:
            quoted = escape(clip(state.reason, 1500)).splitlines()
            reason = "".join(f"\n> {line}" for line in quoted)
        decider = user(state.decided_by) if state.decided_by else "someone"
        blocks.append(
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": clip_mrkdwn(
                        f"{DECISION_ICONS[state.decision]} *{DECISIONS[state.decision]}* "
                        f"— decided by {decider} on {when}{reason}",
                        MAX_SECTION_TEXT,
                    ),
                },
            }
        )
    blocks.append(decision_buttons(state.item_id, changing=bool(state.decision)))
    status = f"decided {DECISIONS[state.decision]}" if state.decision else "awaiting a decision"
    text = f"{model}: {escape(clip(str(snap['verdict']['headline']), 300))}, {status}"
    return clip_mrkdwn(text, MAX_FALLBACK_TEXT), blocks


def decision_buttons(item_id: int, changing: bool = False) -> dict[str, Any]:
    """The Keep / Kill / Right-size / Needs discussion buttons of a review item."""
    elements = []
    for key, label in DECISIONS.items():
        button: dict[str, Any] = {
            "type": "button",
            "action_id": DECIDE_ACTION_PREFIX + key,
            "text": {"type": "plain_text", "text": label},
            "value": str(item_id),
        }
        if key == "keep" and not changing:
            button["style"] = "primary"
        if key == "kill":
            button["style"] = "danger"
        elements.append(button)
    return {"type": "actions", "block_id": f"review_item_{item_id}", "elements": elements}


def build_review_parent_message(
    month: str, team: str, items: Sequence[tuple[dict[str, Any], DecisionState]], currency: str
) -> tuple[str, list[dict[str, Any]]]:
    """The team's parent message: totals, flagged models, unsigned models, decisions so far."""
    totals = _totals([s for s, _ in items], "current", currency) or {currency: Decimal(0)}
    befores = _totals([s for s, _ in items], "previous", currency) or {currency: Decimal(0)}
    title = f"Monthly cost review · {team} · {month_title(month)}"  # plain text: the header
    title_md = f"Monthly cost review · {escape(clip(team, 100))} · {month_title(month)}"
    flagged = [s for s, _ in items if s["verdict"]["flagged"]]
    changes = {
        code: (format_change(percent_of(total - befores[code], befores[code])), befores[code])
        for code, total in totals.items()
    }  # one amount per currency: amounts in different currencies are never added
    if len(totals) == 1:
        ((code, total),) = totals.items()
        change, before = changes[code]
        head = (
            f"*{len(items)} models* cost *{format_money(total, code)}* in {month_title(month)} "
            f"({change} vs {format_money(before, code)} the month before)."
        )
    else:
        costs = " + ".join(
            f"*{format_money(total, code)}* ({changes[code][0]} vs "
            f"{format_money(changes[code][1], code)})"
            for code, total in totals.items()
        )
        head = (
            f"*{len(items)} models* cost {costs} in {month_title(month)}, each against the "
            "month before (amounts in different currencies are not added)."
        )
    lines = []
    for snap, state in items:
        outcome = f" → *{DECISIONS[state.decision]}*" if state.decision else ""
        icon = VERDICT_ICONS.get(snap["verdict"]["kind"], "")
        cost = format_money(
            _d(snap["current"]["cost"]) or Decimal(0), snap_currency(snap, currency)
        )
        name, headline = _name(snap["model"]), escape(clip(str(snap["verdict"]["headline"]), 200))
        lines.append(f"{icon} {name}: {cost}, {headline}{outcome}")
    notes = []
    if flagged:
        names = fit_lines([_name(s["model"]) for s in flagged], 600, sep=", ")
        notes.append(f"\n:rotating_light: Flagged: {names}")
    unsigned = [
        _name(s["model"])
        for s, _ in items
        if (s.get("signoffs") or {}).get("weeks")
        and s["signoffs"].get("signed", 0) < s["signoffs"]["weeks"]
    ]
    if unsigned:
        notes.append(f":memo: Not signed off every week: {fit_lines(unsigned, 600, sep=', ')}")
    tail = "\n".join(notes)
    room = MAX_SECTION_TEXT - len(head) - len(tail) - 2
    body = "\n".join(part for part in (head, fit_lines(lines, room), tail) if part)
    decided = [(s, st) for s, st in items if st.decision]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(title, MAX_HEADER)}},
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": clip_mrkdwn(body, MAX_SECTION_TEXT)},
        },
    ]
    if len(decided) == len(items):
        summary = review_summary(items, currency)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": summary}})
        text = f"{title_md}: all decided. {summary}"
    else:
        blocks.append(
            {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": f"Decided {len(decided)} of {len(items)}. Each model is in the "
                        "thread: its owners (or an admin) choose Keep, Kill, Right-size or "
                        "Needs discussion.",
                    }
                ],
            }
        )
        text = f"{title_md}: {len(items)} models, {format_totals(totals)}"
    return clip_mrkdwn(text, MAX_FALLBACK_TEXT), blocks


def _name(model: object) -> str:
    """A model's name from a snapshot, escaped and clipped for a list."""
    return escape(clip(str(model), 100))


def review_summary(items: Sequence[tuple[dict[str, Any], DecisionState]], currency: str) -> str:
    """Kept, killed (with the monthly saving if they stop), right-sized, to discuss (mrkdwn, fits
    a section)."""
    counts = {key: 0 for key in DECISIONS}
    killed_snaps = []
    killed = []
    for snap, state in items:
        if state.decision:
            counts[state.decision] += 1
        if state.decision == "kill":
            killed_snaps.append(snap)
            killed.append(_name(snap["model"]))
    saving = (
        f" ({fit_lines(killed, 2000, sep=', ')}: saves about "
        f"*{format_totals(_totals(killed_snaps, 'current', currency))}* a month once stopped)"
        if killed
        else ""
    )
    return clip_mrkdwn(
        f":checkered_flag: *All decided* — kept {counts['keep']}, killed {counts['kill']}{saving}, "
        f"right-size {counts['rightsize']}, needs discussion {counts['discuss']}.",
        MAX_SECTION_TEXT,
    )


def build_reminder_message(
    month: str, undecided: Sequence[tuple[str, Sequence[str]]], days: int
) -> tuple[str, list[dict[str, Any]]]:
    """The one reminder in a review thread, naming undecided models and their owners."""
    lines = [
        f"• *{_name(model)}* — {users(owners, ' ') or 'no owner: an admin decides'}"
        for model, owners in undecided
    ]
    head = (
        f":bell: {len(undecided)} model(s) in the {month_title(month)} review are still "
        f"undecided after {days} days:"
    )
    text = head + " " + fit_lines([_name(m) for m, _ in undecided], 3000, sep=", ")
    body = head + "\n" + fit_lines(lines, MAX_SECTION_TEXT - len(head) - 1)
    blocks = [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": clip_mrkdwn(body, MAX_SECTION_TEXT)},
        },
    ]
    return clip_mrkdwn(text, MAX_FALLBACK_TEXT), blocks


def signoff_value(model: str, week_start: dt.date) -> str:
    """Encode a sign-off button's value."""
    return json.dumps({"model": model, "week": week_start.isoformat()})


def build_signoff_digest(
    user_id: str, week_start: dt.date, snaps: Sequence[dict[str, Any]], currency: str
) -> tuple[str, list[dict[str, Any]]]:
    """An owner's weekly digest: each model's week, with a Sign-off button per model."""
    week_end = week_start + dt.timedelta(days=6)
    title = f"Your models' week · {week_start:%d %b} – {week_end:%d %b %Y}"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(title, 150)}},
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": f"{user(user_id)}, please look over the spend of the models you "
                    "own and sign each off. Unsigned models show up in the monthly review.",
                }
            ],
        },
    ]
    for snap in snaps[:MAX_DIGEST_MODELS]:
        lines = economics_lines(snap, currency)
        body = f"*{_name(snap['model'])}* · {lines['Cost']}\n{lines['Value']}"
        metric_key = next((k for k in lines if k.startswith("Cost per 1k")), None)
        if metric_key:
            body += f" · {metric_key.lower()}: {lines[metric_key].split(chr(10))[0]}"
        blocks.append(
            {
                "type": "section",
                "block_id": f"signoff_{snap['model']}"[:255],
                "text": {"type": "mrkdwn", "text": clip_mrkdwn(body, MAX_SECTION_TEXT)},
                "accessory": {
                    "type": "button",
                    "action_id": SIGNOFF_ACTION,
                    "text": {"type": "plain_text", "text": "Sign off"},
                    "style": "primary",
                    "value": signoff_value(snap["model"], week_start),
                },
            }
        )
    if len(snaps) > MAX_DIGEST_MODELS:
        more = len(snaps) - MAX_DIGEST_MODELS
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": f"…and {more} more"}]}
        )
    text = f"{title}: {len(snaps)} model(s) to sign off"
    return text, blocks


def mark_signed_off(
    blocks: list[dict[str, Any]], model: str, user_id: str, when: dt.datetime
) -> list[dict[str, Any]]:
    """Return the digest's blocks with the model's button replaced by who signed it off."""
    result = []
    for block in blocks:
        if block.get("block_id") == f"signoff_{model}"[:255]:
            block = {k: v for k, v in block.items() if k != "accessory"}
            text = dict(block["text"])
            note = (
                f"\n:white_check_mark: signed off by {user(user_id)} on {when:%Y-%m-%d %H:%M} UTC"
            )
            text["text"] = clip_mrkdwn(text["text"], MAX_SECTION_TEXT - len(note)) + note
            block["text"] = text
        result.append(block)
    return result
