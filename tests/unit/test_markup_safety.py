"""Every Block Kit builder escapes text from outside and fits Slack's limits, whatever it is fed.

Hostile strings (mentions, links, `&`, backticks, formatting characters, unicode, very long
strings) go into every field that does not come from our own templates; many items go into every
list. Each builder in bot/blocks must have a case here: a new builder without one fails
`test_every_builder_is_covered`.
"""

from __future__ import annotations

import datetime as dt
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bot.slack.blocks
from bot.anomalies.detect import Anomaly, Baseline
from bot.anomalies.drivers import Driver as SpendDriver
from bot.audit.trail import AuditEntry
from bot.budgets.board import BudgetBoard, BudgetBoardRow
from bot.budgets.drivers import Driver, Drivers
from bot.budgets.evaluate import BudgetStatus
from bot.budgets.plan import ACTUAL, FORECAST, BudgetAlert
from bot.db.schema import Budget
from bot.economics.gate import GateCheck, GateResult
from bot.periods import month_period, trailing_days
from bot.slack.blocks import alerts as alert_blocks
from bot.slack.blocks import audit as audit_blocks
from bot.slack.blocks import budget as budget_blocks
from bot.slack.blocks import common as common_blocks
from bot.slack.blocks import economics as economics_blocks
from bot.slack.blocks import gate as gate_blocks
from bot.slack.blocks import help as help_blocks
from bot.slack.blocks import home as home_blocks
from bot.slack.blocks import model as model_blocks
from bot.slack.blocks import review as review_blocks
from bot.slack.blocks import signoff as signoff_blocks
from bot.slack.blocks import spend as spend_blocks
from bot.slack.blocks import team as team_blocks
from bot.slack.blocks import waste as waste_blocks
from bot.slack.blocks import waste_resource as waste_resource_blocks
from bot.slack.blocks.decision import build_decision_view
from bot.slack.guard import MAX_FALLBACK_TEXT, checked_message, checked_view
from bot.slack.mrkdwn import is_user_id
from bot.spend.daily import ReportingWindow
from bot.spend.forecast import BudgetForecast, Forecast
from bot.spend.home import HomeDashboard
from bot.spend.model_report import ModelReport, ResourceCost
from bot.spend.reports import SpendLine, SpendReport, SpendTotals
from bot.spend.team_report import ModelLine, TeamReport, TopModels
from bot.spend.unallocated import UnallocatedReport
from bot.waste import catalog
from bot.waste.checks import WasteFinding
from bot.waste.findings import ResourceEntry

NOV = month_period("2026-11")
AS_OF = dt.date(2026, 11, 19)
WHEN = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)
VALID_USERS = ["U0AAA111", "W0BBB222"]
VALID_CHANNEL = "C0RECSYS"
PIECES = [
    "<!channel>",
    "<!here>",
    "<!everyone>",
    "<@U123>",
    "<@U0AAA111>",
    "<#C0FINOPS>",
    "<https://x.example|click>",
    "<http://evil>",
    "&",
    "&amp;",
    "&lt;",
    "`",
    "```",
    "*",
    "_",
    "~",
    ">",
    "<",
    "|",
    "\n",
    "ünï©ødé",
    "🔥",
    "\u200b",
    ":red_circle:",
    "a",
    "recsys",
]
_piece = st.sampled_from(PIECES)
_short = st.lists(st.one_of(_piece, st.text(max_size=8)), min_size=1, max_size=6).map("".join)


def hostile(max_size: int = 100) -> st.SearchStrategy[str]:
    """A hostile string of at most max_size characters (the database column's length)."""
    long = st.builds(lambda s, n: (s * n)[:max_size], _short.filter(bool), st.integers(1, 5000))
    return st.one_of(_short, long).map(lambda s: s[:max_size])


money = st.decimals(min_value=0, max_value=Decimal("1e9"), places=2)
# a hostile string shaped like a user ID ("UUU") is a real mention by design (owner lists are
# validated IDs); only strings that are not IDs must come out as text
users = st.lists(
    st.one_of(st.sampled_from(VALID_USERS), hostile(40).filter(lambda u: not is_user_id(u))),
    max_size=5,
)
count = st.sampled_from([0, 1, 3, 60, 250])


def span() -> ReportingWindow:
    return ReportingWindow(trailing_days(30, AS_OF), NOV, AS_OF, AS_OF)


def forecast(amount: Decimal) -> Forecast:
    return Forecast(amount, "weekday run-rate", 19)


def many(draw: Any, n: int, strategy: st.SearchStrategy[Any]) -> list[Any]:
    """n items built from a few drawn ones (drawing hundreds of hostile strings is slow)."""
    seeds = draw(st.lists(strategy, min_size=1, max_size=3))
    return [seeds[i % len(seeds)] for i in range(n)]


def budget_status(draw: Any) -> BudgetStatus:
    scope = draw(hostile(250))
    return BudgetStatus(
        1,
        scope,
        draw(hostile()),
        draw(hostile()),
        draw(hostile(20)),
        draw(money),
        (50, 80, 100),
        True,
        100,
        NOV,
        AS_OF,
        draw(money),
        draw(
            st.one_of(
                st.none(),
                st.builds(BudgetForecast, money, st.just("weekday run-rate"), st.just(19)),
            )
        ),
    )


def alert_ctx(draw: Any) -> alert_blocks.AlertContext:
    driver = st.builds(Driver, hostile(1024), money)
    n = draw(count)
    return alert_blocks.AlertContext(
        channel=VALID_CHANNEL,
        owners=frozenset(draw(users)),
        drivers=Drivers(many(draw, n, driver), many(draw, n, driver), many(draw, n, driver)),
        basis=draw(st.sampled_from(["billed", "effective"])),
    )


def model_line(draw: Any) -> ModelLine:
    amount = draw(money)
    return ModelLine(
        draw(hostile()), amount, draw(money), forecast(amount), draw(st.one_of(st.none(), money))
    )


def snapshot(draw: Any) -> dict[str, Any]:
    def period() -> dict[str, Any]:
        return {
            "cost": str(draw(money)),
            "cost_by_stage": {draw(hostile(20)): str(draw(money)) for _ in range(3)},
            "units": "1200000",
            "revenue": str(draw(money)),
            "unit_cost_per_1k": "0.42",
            "serving_unit_cost_per_1k": "0.3",
        }

    return {
        "model": draw(hostile()),
        "team": draw(hostile()),
        "currency": draw(st.sampled_from(["USD", "EUR", "JPY", None])),
        "metric": draw(st.one_of(st.none(), hostile(40))),
        "owners": draw(users),
        "current": period(),
        "previous": period(),
        "cost_change_pct": "12.5",
        "value_change_pct": "-3",
        "unit_cost_change_pct": "4",
        "budget": str(draw(money)),
        "budget_used_pct": "55",
        "verdict": {
            "kind": draw(st.sampled_from([*economics_blocks.VERDICT_ICONS, "odd"])),
            "headline": draw(hostile(300)),
            "detail": draw(hostile(2000)),
            "flagged": draw(st.booleans()),
        },
        "signoffs": {"weeks": 4, "signed": draw(st.integers(0, 4))},
    }


def decision_state(draw: Any) -> review_blocks.DecisionState:
    return review_blocks.DecisionState(
        draw(st.integers(1, 10**6)),
        draw(st.one_of(st.none(), st.sampled_from(list(review_blocks.DECISIONS)))),
        draw(st.one_of(st.sampled_from(VALID_USERS), hostile(40))),
        WHEN,
        draw(hostile(2000)),
    )


def waste_finding(draw: Any) -> WasteFinding:
    return WasteFinding(
        draw(st.sampled_from([*(c.kind for c in catalog.ledger_checks()), "odd"])),
        draw(hostile(1024)),
        draw(money),
        draw(hostile(3000)),
        draw(hostile(3000)),
        draw(hostile()),
        draw(hostile(1024)),
    )


def resource_entry(draw: Any) -> ResourceEntry:
    """A resource finding as the waste lists show it: every outside field hostile."""
    closed = draw(st.booleans())
    return ResourceEntry(
        finding_id=draw(st.integers(1, 10**9)),
        kind=draw(st.sampled_from([*catalog.resource_kinds(), "odd"])),
        resource_id=draw(hostile(1024)),
        account=draw(hostile(40)),
        region=draw(hostile(40)),
        model=draw(st.one_of(st.none(), hostile())),
        team=draw(st.one_of(st.none(), hostile())),
        monthly_cost=draw(money),
        monthly_saving=draw(money),
        evidence=draw(hostile(3000)),
        fix=draw(hostile(3000)),
        price_source=draw(hostile(400)),
        currency="USD",
        status="closed" if closed else "open",
        decision=draw(st.sampled_from(["none", "keep", "not_waste", "stop"])),
        silenced=draw(st.booleans()),
        keep_until=draw(st.one_of(st.none(), st.just(WHEN))),
        closed_at=WHEN if closed else None,
        saved_so_far=draw(money) if closed else None,
        action_result=draw(st.one_of(st.none(), hostile(200))),
    )


def resource_entries(draw: Any) -> list[ResourceEntry]:
    """None, a couple, or sixty resource findings (two drawn, repeated)."""
    return [resource_entry(draw) for _ in range(2)] * draw(st.sampled_from([0, 1, 30]))


# Each case draws the builder's input and returns what it built: (text, blocks) or a view.
Built = tuple[str, list[dict[str, Any]]] | dict[str, Any]


def case_budget_alert(draw: Any) -> Built:
    alert = BudgetAlert(
        budget_status(draw),
        draw(st.sampled_from([ACTUAL, FORECAST])),
        draw(st.sampled_from([50, 80, 100, 120])),
    )
    return alert_blocks.build_budget_alert(alert, alert_ctx(draw))


def case_anomaly_alert(draw: Any) -> Built:
    resource = st.tuples(hostile(1024), money, st.booleans())
    dimension = st.sampled_from(["service", "usage_type", "resource_id", "run"])
    spend_driver = st.builds(SpendDriver, dimension, hostile(1024), money, money)
    anomaly = Anomaly(
        draw(st.sampled_from(["spend", "gpu"])),
        draw(hostile(120)),
        AS_OF,
        draw(money),
        Baseline(draw(money), draw(money), 14),
        draw(money),
        draw(hostile()),
        many(draw, draw(count), resource),
        many(draw, draw(count), spend_driver),
        draw(money),
    )
    return alert_blocks.build_anomaly_alert(anomaly, alert_ctx(draw))


def case_unallocated_alert(draw: Any) -> Built:
    line = st.tuples(hostile(200), st.one_of(st.none(), hostile(256)), money)
    lines = many(draw, draw(count), line)
    return alert_blocks.build_unallocated_alert(lines, draw(money), "the week of Nov 9–15", "USD")


def case_raise_modal(draw: Any) -> Built:
    return alert_blocks.build_raise_modal(
        draw(hostile(250)), "2026-11", draw(money), "USD", "budget:model:x:2026-11:actual:50"
    )


def board_status(draw: Any) -> BudgetBoardRow:
    amount = draw(money)
    return BudgetBoardRow(
        draw(hostile(250)),
        amount,
        [50, 80, 100],
        True,
        draw(money),
        forecast(amount),
        draw(st.one_of(st.none(), st.sampled_from(VALID_USERS), hostile(40))),
        WHEN,
    )


def case_budget_list(draw: Any) -> Built:
    board = BudgetBoard(span(), "billed", many(draw, draw(count), st.builds(lambda: None)))
    board.statuses = [board_status(draw) for _ in range(3)] * (draw(count) // 3 + 1)
    return budget_blocks.build_budget_list_blocks(board, "USD")


def case_budget_show(draw: Any) -> Built:
    status = board_status(draw)
    return budget_blocks.build_budget_show_blocks(
        status, BudgetBoard(span(), "billed", [status]), "USD"
    )


def case_budget_set(draw: Any) -> Built:
    budget = Budget(scope=draw(hostile(250)), monthly_amount=draw(money), thresholds=[50, 100])
    return budget_blocks.build_budget_set_blocks(
        budget, draw(st.one_of(st.none(), hostile(40))), draw(st.sampled_from(VALID_USERS)), "USD"
    )


def case_home_view(draw: Any) -> Built:
    lines = [model_line(draw) for _ in range(3)] * (draw(count) // 3 + 1)
    board = HomeDashboard(
        draw(st.sampled_from(VALID_USERS)),
        span(),
        lines,
        draw(st.booleans()),
        "USD",
        resource_entries(draw),
    )
    return home_blocks.build_home_view(board, "USD")


def case_model_report(draw: Any) -> Built:
    amount = draw(money)
    n = draw(count)
    resource = st.builds(ResourceCost, hostile(1024), hostile(200), hostile(20), money)
    report = ModelReport(
        model=draw(hostile()),
        team=draw(hostile()),
        owners=draw(users),
        channel=draw(st.one_of(st.none(), st.just(VALID_CHANNEL), hostile(40))),
        basis="billed",
        span=span(),
        daily_by_stage={},
        month_to_date=amount,
        by_stage=many(draw, n, st.tuples(hostile(20), money)),
        gpu_hours=draw(money),
        top_resources=many(draw, n, resource),
        forecast=forecast(amount),
        budget=draw(st.one_of(st.none(), money)),
        last_month_same_days=draw(money),
        last_month_total=draw(money),
    )
    return model_blocks.build_model_report_blocks(report, "USD")


def case_unallocated_blocks(draw: Any) -> Built:
    line = st.builds(
        lambda tag, service, cost: SpendLine({"tag": tag, "service": service}, cost, Decimal(0)),
        st.one_of(st.none(), hostile(256)),
        hostile(200),
        money,
    )
    lines = many(draw, draw(count), line)
    total = sum((x.cost for x in lines), Decimal(0))
    totals = [SpendTotals("USD", total, total, total, Decimal(0), total)]
    report = SpendReport(NOV, ["tag", "service"], "billed", lines, totals)
    return spend_blocks.build_unallocated_blocks(UnallocatedReport(report, draw(money)), "USD")


def case_team_report(draw: Any) -> Built:
    models = [model_line(draw) for _ in range(3)] * (draw(count) // 3 + 1)
    report = TeamReport(
        draw(hostile()),
        draw(users),
        draw(st.one_of(st.none(), st.just(VALID_CHANNEL), hostile(40))),
        "billed",
        span(),
        models,
        model_line(draw),
        {},
    )
    return team_blocks.build_team_report_blocks(report, "USD")


def case_top(draw: Any) -> Built:
    biggest = [model_line(draw) for _ in range(3)] * (draw(count) // 3 + 1)
    return team_blocks.build_top_blocks(
        TopModels(span(), "billed", biggest, biggest[:30], draw(money)), "USD"
    )


def case_waste_blocks(draw: Any) -> Built:
    findings = [waste_finding(draw) for _ in range(2)] * (draw(st.sampled_from([0, 1, 250])))
    closed = resource_entries(draw)
    return waste_blocks.build_waste_blocks(
        [*findings, *resource_entries(draw)],
        "USD",
        silenced=resource_entries(draw),
        closed=closed,
        saved_total=draw(money),
        closed_count=len(closed),
    )


def case_waste_digest(draw: Any) -> Built:
    findings = [waste_finding(draw) for _ in range(2)] * (draw(st.sampled_from([0, 1, 250])))
    return waste_blocks.build_waste_digest(
        findings,
        "the week of Nov 9–15",
        draw(users),
        "USD",
        resource_entries(draw),
        draw(money),
        draw(st.sampled_from([0, 1, 250])),
    )


def resource_details(draw: Any) -> dict[str, Any]:
    return {
        "kind": draw(st.sampled_from([*catalog.resource_kinds(), "odd"])),
        "resource_id": draw(hostile(1024)),
        "account": draw(hostile(40)),
        "region": draw(hostile(40)),
        "resource_type": draw(st.one_of(st.none(), hostile(200))),
        "size": draw(st.one_of(st.none(), hostile(200))),
        "model": draw(st.one_of(st.none(), hostile())),
        "team": draw(st.one_of(st.none(), hostile())),
        "evidence": draw(hostile(3000)),
        "signal": draw(hostile(1000)),
        "price_source": draw(hostile(1000)),
        "monthly_cost": str(draw(money)),
        "recommendation": {
            "action": draw(st.sampled_from([*catalog.stop_actions(), "odd"])),
            "text": draw(hostile(3000)),
            "monthly_saving": str(draw(money)),
        },
    }


def case_waste_resource(draw: Any) -> Built:
    state = waste_resource_blocks.ResourceDecisionState(
        draw(st.integers(1, 10**6)),
        draw(st.sampled_from(["none", "keep", "not_waste", "stop"])),
        draw(st.one_of(st.none(), st.sampled_from(VALID_USERS), hostile(40))),
        WHEN,
        WHEN,
        draw(st.one_of(st.none(), money)),
        draw(st.one_of(st.none(), hostile(3000), st.just("done: stopped i-1"))),
    )
    return waste_resource_blocks.build_waste_resource_message(
        resource_details(draw),
        draw(users),
        state,
        draw(st.sampled_from(["USD", "EUR", "JPY"])),
        draw(st.integers(1, 9)),
        draw(st.one_of(st.none(), money)),
        draw(st.one_of(st.none(), hostile(3000))),
    )


def case_waste_resource_reply(draw: Any) -> Built:
    return waste_resource_blocks.build_waste_resource_reply(
        draw(hostile(1024)),
        draw(st.sampled_from(["closed", "action"])),
        draw(hostile(4000)),
        draw(st.one_of(st.none(), st.sampled_from(VALID_USERS), hostile(40))),
    )


def case_waste_resource_summary(draw: Any) -> Built:
    from bot.waste.messages import WasteResourceSummaryLine

    line = st.builds(
        WasteResourceSummaryLine,
        st.sampled_from([*catalog.resource_kinds(), "odd"]),
        hostile(1024),
        money,
        hostile(40),
    )
    top = draw(st.lists(line, max_size=5))
    return waste_resource_blocks.build_waste_resource_summary(
        len(top) + draw(count), draw(money), top, draw(st.integers(1, 100)), "USD"
    )


def case_economics(draw: Any) -> Built:
    snaps = [snapshot(draw)] * draw(count)
    title = f"{draw(hostile())}: unit economics, last 30 days vs the 30 before"
    return economics_blocks.build_economics_blocks(snaps, title, "USD")


def case_review_item(draw: Any) -> Built:
    return review_blocks.build_review_item_message(snapshot(draw), decision_state(draw), "USD")


def case_review_parent(draw: Any) -> Built:
    n = draw(st.sampled_from([1, 3, 200]))
    decided = draw(st.booleans())
    items = []
    for snap, state in [(snapshot(draw), decision_state(draw)) for _ in range(2)] * n:
        if decided and state.decision is None:
            state = review_blocks.DecisionState(state.item_id, "kill", state.decided_by, WHEN, "")
        items.append((snap, state))
    return review_blocks.build_review_parent_message("2026-11", draw(hostile()), items, "USD")


def case_reminder(draw: Any) -> Built:
    undecided = many(draw, draw(count), st.tuples(hostile(), users))
    return review_blocks.build_reminder_message("2026-11", undecided, 5)


def case_signoff_digest(draw: Any) -> Built:
    snaps = [snapshot(draw)] * draw(count)
    return signoff_blocks.build_signoff_digest(
        draw(st.sampled_from(VALID_USERS)), dt.date(2026, 11, 16), snaps, "USD"
    )


def case_mark_signed_off(draw: Any) -> Built:
    snaps = [snapshot(draw) for _ in range(3)]
    text, blocks = signoff_blocks.build_signoff_digest(
        "U0AAA111", dt.date(2026, 11, 16), snaps, "USD"
    )
    return text, signoff_blocks.mark_signed_off(
        blocks, snaps[0]["model"], draw(st.sampled_from(VALID_USERS)), WHEN
    )


def case_replace_actions(draw: Any) -> Built:
    text, blocks = case_budget_alert(draw)
    note = draw(
        st.sampled_from(
            [
                alert_blocks.acknowledged_note(
                    draw(st.sampled_from(VALID_USERS)), WHEN, draw(hostile(250)), draw(hostile(20))
                ),
                alert_blocks.snoozed_note(
                    draw(st.one_of(st.sampled_from(VALID_USERS), hostile(40))), WHEN
                ),
                alert_blocks.raised_note(draw(hostile(40)), draw(hostile(250)), "$1,200", WHEN),
                alert_blocks.anomaly_answered_note(
                    draw(st.sampled_from(["expected", "not_expected"])),
                    draw(st.one_of(st.sampled_from(VALID_USERS), hostile(40))),
                    WHEN,
                    draw(hostile(250)),
                    dimension=draw(st.one_of(st.none(), st.just("resource_id"))),
                    value=draw(hostile(1024)),
                    level=draw(st.one_of(st.none(), money)),
                    month=draw(hostile(20)),
                    currency="USD",
                    owners=draw(users),
                ),
            ]
        )
    )
    return text, alert_blocks.replace_actions(blocks, note)


def case_decision_view(draw: Any) -> Built:
    return build_decision_view(
        draw(st.integers(1, 10**6)),
        draw(hostile()),
        "2026-11",
        draw(st.sampled_from(list(review_blocks.DECISIONS))),
        VALID_CHANNEL,
    )


def case_gate(draw: Any) -> Built:
    checks = many(
        draw,
        draw(count),
        st.builds(GateCheck, hostile(), st.booleans(), hostile(300)),
    )
    return gate_blocks.build_gate_blocks(GateResult(draw(hostile()), AS_OF, checks))


def case_help(draw: Any) -> Built:
    entries = many(
        draw, draw(st.sampled_from([1, 10, 12])), st.tuples(hostile(), hostile(), hostile())
    )
    unknown = draw(st.one_of(st.none(), hostile(60)))
    text, blocks = help_blocks.build_help_blocks(
        entries, unknown, draw(st.one_of(st.none(), hostile(20)))
    )
    return text, [*blocks, common_blocks.chart_failure_note(draw(hostile(60)))]


def audit_value(draw: Any) -> Any:
    """A stored before or after: nothing, text, a list, or a dict of hostile keys and values."""
    return draw(
        st.one_of(
            st.none(),
            hostile(300),
            st.lists(hostile(40), max_size=4),
            st.dictionaries(hostile(20), st.one_of(st.none(), hostile(300)), max_size=3),
        )
    )


def case_audit(draw: Any) -> Built:
    entries = [
        AuditEntry(
            n,
            WHEN,
            draw(st.one_of(st.sampled_from(VALID_USERS), hostile(40))),
            draw(hostile(60)),
            draw(hostile(250)),
            audit_value(draw),
            audit_value(draw),
            {},
        )
        for n in range(2)
    ] * draw(st.sampled_from([0, 1, 30]))
    return audit_blocks.build_audit_blocks(
        draw(st.sampled_from(["model", "team"])),
        draw(hostile()),
        entries,
        len(entries) + draw(st.sampled_from([0, 7, 100_000])),
        draw(st.one_of(st.none(), st.just(AS_OF))),
    )


CASES: dict[str, Callable[[Any], Built]] = {
    "build_audit_blocks": case_audit,
    "build_budget_alert": case_budget_alert,
    "build_anomaly_alert": case_anomaly_alert,
    "build_unallocated_alert": case_unallocated_alert,
    "build_raise_modal": case_raise_modal,
    "build_budget_list_blocks": case_budget_list,
    "build_budget_show_blocks": case_budget_show,
    "build_budget_set_blocks": case_budget_set,
    "build_home_view": case_home_view,
    "build_model_report_blocks": case_model_report,
    "build_unallocated_blocks": case_unallocated_blocks,
    "build_team_report_blocks": case_team_report,
    "build_top_blocks": case_top,
    "build_waste_blocks": case_waste_blocks,
    "build_waste_digest": case_waste_digest,
    "build_waste_resource_message": case_waste_resource,
    "build_waste_resource_reply": case_waste_resource_reply,
    "build_waste_resource_summary": case_waste_resource_summary,
    "build_economics_blocks": case_economics,
    "build_review_item_message": case_review_item,
    "build_review_parent_message": case_review_parent,
    "build_reminder_message": case_reminder,
    "build_signoff_digest": case_signoff_digest,
    "mark_signed_off": case_mark_signed_off,
    "replace_actions": case_replace_actions,
    "build_decision_view": case_decision_view,
    "build_gate_blocks": case_gate,
    "build_help_blocks": case_help,
}


def test_every_builder_is_covered() -> None:
    """A builder added to bot/blocks without a case here fails this test."""
    found = set()
    for info in pkgutil.iter_modules(bot.slack.blocks.__path__):
        module = importlib.import_module(f"bot.slack.blocks.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("build_") and fn.__module__ == module.__name__:
                found.add(name)
    assert found, "no builders found"
    assert found <= set(CASES), f"builders without a markup-safety case: {found - set(CASES)}"


ALLOWED_TOKEN = re.compile(r"<@([A-Z0-9]+)>|<#([A-Z0-9]+)>")
ENTITY = re.compile(r"&(amp|lt|gt);")


def mrkdwn_texts(node: Any) -> list[str]:
    """Every mrkdwn text object's text in a block structure."""
    found: list[str] = []
    if isinstance(node, dict):
        if node.get("type") == "mrkdwn" and isinstance(node.get("text"), str):
            found.append(node["text"])
        for value in node.values():
            found.extend(mrkdwn_texts(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(mrkdwn_texts(value))
    return found


def assert_safe_mrkdwn(text: str) -> None:
    for match in ALLOWED_TOKEN.finditer(text):
        user, channel = match.groups()
        assert user is None or user in VALID_USERS, f"mention of a user we did not name: {text!r}"
        assert channel is None or channel == VALID_CHANNEL, f"unexpected channel: {text!r}"
    rest = ALLOWED_TOKEN.sub("", text)
    assert "<" not in rest, f"raw < (mention, link or broadcast) in mrkdwn: {text!r}"
    assert ENTITY.sub("", rest).count("&") == 0, f"& that is not an escape: {text!r}"
    assert text.count("`") % 2 == 0, f"unbalanced code span: {text!r}"


@pytest.mark.parametrize("name", sorted(CASES))
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_builder_escapes_outside_text_and_fits_slack(name: str, data: st.DataObject) -> None:
    built = CASES[name](data.draw)
    if isinstance(built, dict):  # a view (Home tab or modal)
        checked_view(built)
        texts = mrkdwn_texts(built["blocks"])
    else:
        text, blocks = built
        checked_message(text, blocks)
        assert len(text) <= MAX_FALLBACK_TEXT
        texts = [text, *mrkdwn_texts(blocks)]
    for text in texts:
        assert_safe_mrkdwn(text)


def test_hostile_tag_in_the_unallocated_alert_is_escaped_not_a_broadcast() -> None:
    """The issue's reproduction: a FOCUS tag value pinged the channel from the FinOps post."""
    tag = "` <!channel> <https://x.example|click>"
    _text, blocks = alert_blocks.build_unallocated_alert(
        [("AmazonSageMaker", tag, Decimal("120"))], Decimal("120"), "the week of Nov 9", "USD"
    )
    body = "\n".join(mrkdwn_texts(blocks))
    assert "<!channel>" not in body and "<https://" not in body
    assert "&lt;!channel&gt; &lt;https://x.example|click&gt;" in body


def test_registry_owner_that_is_not_a_user_id_is_shown_not_linked() -> None:
    _text, blocks = review_blocks.build_reminder_message(
        "2026-11", [("recsys", ["U0AAA111", "!channel", "U1|x> <!here"])], 5
    )
    body = "\n".join(mrkdwn_texts(blocks))
    assert "<@U0AAA111>" in body
    assert "<@!channel>" not in body and "<!here" not in body
    assert "!channel" in body and "&lt;!here" in body


def test_plain_text_is_clipped_not_escaped() -> None:
    """Headers are plain_text: Slack shows them literally, so & and < stay as they are."""
    status = BudgetStatus(
        1,
        "model:a&b<c>" + "x" * 400,
        None,
        None,
        None,
        Decimal(100),
        (100,),
        True,
        100,
        NOV,
        AS_OF,
        Decimal(150),
        None,
    )
    _, blocks = alert_blocks.build_budget_alert(
        BudgetAlert(status, ACTUAL, 100), alert_blocks.AlertContext(channel=VALID_CHANNEL)
    )
    header = blocks[0]["text"]["text"]
    assert header.startswith("model:a&b<c>x") and "&amp;" not in header
    assert len(header) <= 150 and header.endswith("…")


def test_error_replies_and_help_escape_user_words() -> None:
    """Words typed by a user come back escaped; our own mentions and code spans still work."""
    from bot.slack.mrkdwn import escape_message
    from handlers.commands import build_router

    reply = build_router().help_reply("<!channel>")
    texts = [reply.text, *mrkdwn_texts(reply.blocks)]
    assert all("<!channel>" not in t and "<model>" not in t for t in texts)
    assert "&lt;!channel&gt;" in reply.text
    message = escape_message("Only the owners of `<!here>` (<@U0AAA111>) can decide")
    assert message == "Only the owners of `&lt;!here&gt;` (<@U0AAA111>) can decide"


def test_charts_show_names_literally() -> None:
    """A model name like `a$\\y$` broke the chart (matplotlib parsed it as math)."""
    from bot.slack.charts.spend_chart import SpendChart, render_in_this_process

    name = "m$\\y$ <!channel>"
    chart = SpendChart(
        title=name,
        subtitle=f"team $\\q$ {name}",
        currency="USD",
        stacks={name: {NOV.start: Decimal(5)}},
        month_start=NOV.start,
        month_end=NOV.end,
        first_day=NOV.start,
    )
    assert render_in_this_process(chart)[:8] == b"\x89PNG\r\n\x1a\n"
