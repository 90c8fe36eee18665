"""Blocks for the monthly review thread: the parent summary, each model's message, the reminder."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from bot.counts import counted
from bot.money import format_money, percent_of
from bot.review.messages import DECISIONS, DecisionState
from bot.slack.blocks.economics import (
    VERDICT_ICONS,
    dec,
    economics_lines,
    format_change,
    format_totals,
    model_name,
    month_title,
    period_totals,
    snap_currency,
    verdict_line,
)
from bot.slack.guard import (
    MAX_FALLBACK_TEXT,
    MAX_FIELD_TEXT,
    MAX_HEADER,
    MAX_SECTION_TEXT,
    clip,
)
from bot.slack.mrkdwn import clip as clip_mrkdwn
from bot.slack.mrkdwn import escape, fit_lines, user, users

DECISION_ICONS = {
    "keep": ":white_check_mark:",
    "kill": ":skull:",
    "rightsize": ":scissors:",
    "discuss": ":speech_balloon:",
}


DECIDE_ACTION_PREFIX = "review_decide_"


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
    totals = period_totals([s for s, _ in items], "current", currency) or {currency: Decimal(0)}
    title = f"Monthly cost review · {team} · {month_title(month)}"  # plain text: the header
    title_md = f"Monthly cost review · {escape(clip(team, 100))} · {month_title(month)}"
    head = _review_head(month, items, totals, currency)
    lines = [_review_line(snap, state, currency) for snap, state in items]
    tail = "\n".join(_review_notes([s for s, _ in items]))
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
        text = f"{title_md}: {counted(len(items), 'model')}, {format_totals(totals)}"
    return clip_mrkdwn(text, MAX_FALLBACK_TEXT), blocks


def _review_head(
    month: str,
    items: Sequence[tuple[dict[str, Any], DecisionState]],
    totals: dict[str, Decimal],
    currency: str,
) -> str:
    """Return the month's cost against the month before, one amount per currency (never added)."""
    befores = period_totals([s for s, _ in items], "previous", currency) or {currency: Decimal(0)}
    changes = {
        code: (format_change(percent_of(total - befores[code], befores[code])), befores[code])
        for code, total in totals.items()
    }
    if len(totals) == 1:
        ((code, total),) = totals.items()
        change, before = changes[code]
        return (
            f"*{counted(len(items), 'model')}* cost *{format_money(total, code)}* in "
            f"{month_title(month)} "
            f"({change} vs {format_money(before, code)} the month before)."
        )
    costs = " + ".join(
        f"*{format_money(total, code)}* ({changes[code][0]} vs "
        f"{format_money(changes[code][1], code)})"
        for code, total in totals.items()
    )
    return (
        f"*{counted(len(items), 'model')}* cost {costs} in {month_title(month)}, each against the "
        "month before (amounts in different currencies are not added)."
    )


def _review_line(snap: dict[str, Any], state: DecisionState, currency: str) -> str:
    """Return a model's line in the parent message: verdict, cost, headline, decision."""
    outcome = f" → *{DECISIONS[state.decision]}*" if state.decision else ""
    icon = VERDICT_ICONS.get(snap["verdict"]["kind"], "")
    cost = format_money(dec(snap["current"]["cost"]) or Decimal(0), snap_currency(snap, currency))
    headline = escape(clip(str(snap["verdict"]["headline"]), 200))
    return f"{icon} {model_name(snap['model'])}: {cost}, {headline}{outcome}"


def _review_notes(snaps: Sequence[dict[str, Any]]) -> list[str]:
    """Return the notes under the lines: flagged models, models not signed off every week."""
    notes = []
    flagged = [s for s in snaps if s["verdict"]["flagged"]]
    if flagged:
        names = fit_lines([model_name(s["model"]) for s in flagged], 600, sep=", ")
        notes.append(f"\n:rotating_light: Flagged: {names}")
    unsigned = [
        model_name(s["model"])
        for s in snaps
        if (s.get("signoffs") or {}).get("weeks")
        and s["signoffs"].get("signed", 0) < s["signoffs"]["weeks"]
    ]
    if unsigned:
        notes.append(f":memo: Not signed off every week: {fit_lines(unsigned, 600, sep=', ')}")
    return notes


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
            killed.append(model_name(snap["model"]))
    saving = (
        f" ({fit_lines(killed, 2000, sep=', ')}: saves about "
        f"*{format_totals(period_totals(killed_snaps, 'current', currency))}* a month once stopped)"
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
        f"• *{model_name(model)}* — {users(owners, ' ') or 'no owner: an admin decides'}"
        for model, owners in undecided
    ]
    head = (
        f":bell: {counted(len(undecided), 'model')} in the {month_title(month)} review "
        f"{'is' if len(undecided) == 1 else 'are'} still "
        f"undecided after {days} days:"
    )
    text = head + " " + fit_lines([model_name(m) for m, _ in undecided], 3000, sep=", ")
    body = head + "\n" + fit_lines(lines, MAX_SECTION_TEXT - len(head) - 1)
    blocks = [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": clip_mrkdwn(body, MAX_SECTION_TEXT)},
        },
    ]
    return clip_mrkdwn(text, MAX_FALLBACK_TEXT), blocks
