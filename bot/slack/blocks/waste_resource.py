"""Blocks for a resource finding's post (Stop it / Keep for 7 days / Not waste) and its replies."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from bot.money import format_money_places
from bot.periods import day_words
from bot.slack.guard import MAX_FALLBACK_TEXT, MAX_FIELD_TEXT, MAX_HEADER, MAX_SECTION_TEXT, clip
from bot.slack.mrkdwn import clip as clip_mrkdwn
from bot.slack.mrkdwn import escape, user, users
from bot.waste.catalog import kind_label, stop_words
from bot.waste.messages import ResourceDecisionState, WasteResourceSummaryLine

STOP_ACTION = "waste_resource_stop"
KEEP_ACTION = "waste_resource_keep"
NOT_WASTE_ACTION = "waste_resource_not_waste"
ACTIONS_BLOCK_PREFIX = "waste_resource_"

Blocks = list[dict[str, Any]]


def _when(at: dt.datetime | None) -> str:
    return at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC") if at else ""


def _money(raw: object, currency: str) -> str:
    return format_money_places(Decimal(str(raw)), currency, 2)


def owner_words(details: dict[str, Any]) -> str:
    """Say who owns the resource: its model and team, or that nobody does."""
    model, team = details.get("model"), details.get("team")
    if model:
        return f"model {model}" + (f" (team {team})" if team else "")
    if team:
        return f"team {team}"
    return "unowned"


def build_waste_resource_message(
    details: dict[str, Any],
    owners: list[str],
    state: ResourceDecisionState,
    currency: str,
    post_number: int = 1,
    previous_monthly_cost: Decimal | None = None,
    why_again: str | None = None,
) -> tuple[str, Blocks]:
    """A resource finding: cost, why, the fix, owners, and the buttons (or the decision)."""
    kind = kind_label(str(details.get("kind")))
    rid = str(details.get("resource_id"))
    cost = _money(details["monthly_cost"], currency)
    saving = _money(details["recommendation"]["monthly_saving"], currency)
    title = f"Waste: {kind} {rid} costs {cost} a month"
    where = f"{details.get('account')} / {details.get('region')}"
    sized = ", ".join(str(v) for v in (details.get("resource_type"), details.get("size")) if v)
    body = (
        f"*{escape(kind)} {escape(clip(rid, 300))}* — {cost}/month\n"
        f"{escape(clip(str(details.get('evidence', '')), 1500))}\n"
        f"_Fix:_ {escape(clip(str(details['recommendation']['text']), 600))} "
        f"(saves {saving}/month)"
    )
    if why_again:
        body = f":arrow_up: *Posted again:* {escape(why_again)}\n" + body
    owner_line = escape(owner_words(details))
    if owners:
        owner_line += " · " + users(sorted(owners), " ")
    fields = [
        ("Owner", owner_line),
        ("Account / region", escape(where)),
        ("Type", escape(sized) or "–"),
        ("Signal", escape(clip(str(details.get("signal", "")), 400))),
        ("Price", escape(clip(str(details.get("price_source", "")), 400))),
    ]
    stop = stop_words(str(details["recommendation"]["action"]))
    blocks: Blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(title, MAX_HEADER)}},
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": clip_mrkdwn(body, MAX_SECTION_TEXT)},
        },
        {
            "type": "section",
            "fields": [
                {"type": "mrkdwn", "text": clip_mrkdwn(f"*{k}*\n{v}", MAX_FIELD_TEXT)}
                for k, v in fields
            ],
        },
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": clip_mrkdwn(
                        f"*Stop it* {stop}, only when the operator enabled actions "
                        "(MLCOST_ACTIONS_ENABLED) and the resource carries no mlcost:protect tag. "
                        "*Keep for 7 days* and *Not waste* silence it until its monthly cost "
                        "grows by more than half. Only its owners or an admin can press them.",
                        2900,
                    ),
                }
            ],
        },
    ]
    note = decision_note(state, currency)
    if note:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": note}})
    if not (state.action_result or "").startswith("done"):
        blocks.append(resource_buttons(state.finding_id))
    status = decision_words(state, currency) or "awaiting a decision"
    text = f"{escape(title)} ({escape(status)})"
    return clip_mrkdwn(text, MAX_FALLBACK_TEXT), blocks


def resource_buttons(finding_id: int) -> dict[str, Any]:
    """The Stop it / Keep for 7 days / Not waste buttons of a resource finding."""
    elements = []
    for action_id, label, style in (
        (STOP_ACTION, "Stop it", "danger"),
        (KEEP_ACTION, "Keep for 7 days", None),
        (NOT_WASTE_ACTION, "Not waste", None),
    ):
        button: dict[str, Any] = {
            "type": "button",
            "action_id": action_id,
            "text": {"type": "plain_text", "text": label},
            "value": str(finding_id),
        }
        if style:
            button["style"] = style
        elements.append(button)
    return {
        "type": "actions",
        "block_id": f"{ACTIONS_BLOCK_PREFIX}{finding_id}",
        "elements": elements,
    }


def decision_words(state: ResourceDecisionState, currency: str) -> str:
    """Say the decision in plain words (no markup), or '' when there is none."""
    again = ""
    if state.decision_monthly_cost is not None:
        limit = state.decision_monthly_cost * Decimal("1.5")
        past = format_money_places(limit, currency, 2)
        again = f"raised again if its monthly cost grows past {past}"
    if state.decision == "keep":
        until = day_words(state.keep_until.date(), year=True) if state.keep_until else "?"
        return f"kept until {until}; {again} sooner" if again else f"kept until {until}"
    if state.decision == "not_waste":
        return f"marked not waste; {again}" if again else "marked not waste"
    if state.decision == "stop":
        return f"Stop it approved: {stop_result_words(state.action_result)}"
    return ""


def stop_result_words(result: str | None) -> str:
    """Say what became of an approved Stop it, from the result kept on the finding."""
    if not result or result == "acting":
        return "acting now"
    outcome, _, rest = result.partition(": ")
    if outcome == "disabled":
        return "recorded only (actions are disabled)"
    if outcome == "recommend-only":
        return "recorded only (a recommendation mlcost does not apply)"
    if outcome == "refused":
        return "refused (mlcost:protect tag)"
    if outcome == "failed":
        return f"failed ({rest})"
    return result


def decision_note(state: ResourceDecisionState, currency: str) -> str:
    """The line that shows the recorded decision on the post ('' when there is none)."""
    words = decision_words(state, currency)
    if not words:
        return ""
    icon = {"keep": ":zzz:", "not_waste": ":white_check_mark:", "stop": ":octagonal_sign:"}
    who = user(state.decided_by) if state.decided_by else "someone"
    line = (
        f"{icon.get(state.decision, '')} *{escape(words)}* — by {who} on {_when(state.decided_at)}"
    )
    return clip_mrkdwn(line, MAX_SECTION_TEXT)


def build_waste_resource_reply(
    resource_id: str, event: str, text: str, user_id: str | None
) -> tuple[str, Blocks]:
    """A reply in a finding's thread: the finding closed, or what Stop it did."""
    icon = ":white_check_mark:" if event == "closed" else ":octagonal_sign:"
    lead = f"Stop it by {user(user_id)}: " if user_id else ""
    body = f"{icon} {lead}{escape(text)}"
    fallback = f"{escape(clip(resource_id, 200))}: {escape(text)}"
    blocks: Blocks = [
        {"type": "section", "text": {"type": "mrkdwn", "text": clip_mrkdwn(body, MAX_SECTION_TEXT)}}
    ]
    return clip_mrkdwn(fallback, MAX_FALLBACK_TEXT), blocks


def build_waste_resource_summary(
    count: int,
    total_monthly: Decimal,
    top: list[WasteResourceSummaryLine],
    cap: int,
    currency: str,
) -> tuple[str, Blocks]:
    """Findings not posted one by one in this channel: how many, worth what, the top few."""
    total = format_money_places(total_monthly, currency, 2)
    noun = "finding" if count == 1 else "findings"
    title = f"Waste: {count} more resource {noun} worth {total} a month"
    lines = [
        f"• {escape(kind_label(line.kind))} {escape(clip(line.resource_id, 200))}"
        f" — {format_money_places(line.monthly_cost, currency, 2)}/month"
        f" ({escape(line.reason.replace('_', ' '))})"
        for line in top
    ]
    if count > len(top):
        lines.append(f"• … and {count - len(top)} more")
    body = (
        f"*{escape(title)}*, beyond the {cap} posted here one by one today (largest first).\n"
        + "\n".join(lines)
    )
    how = (
        "`/mlcost waste` lists them all, ranked by money. The largest are posted here one by one "
        f"on the next days (at most {cap} a day), each with *Stop it* / *Keep for 7 days* / "
        "*Not waste*."
    )
    blocks: Blocks = [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": clip_mrkdwn(body, MAX_SECTION_TEXT)},
        },
        {"type": "context", "elements": [{"type": "mrkdwn", "text": how}]},
    ]
    text = f"{title}: see /mlcost waste"
    return clip_mrkdwn(escape(text), MAX_FALLBACK_TEXT), blocks
