"""Resource findings shown with the ledger's: ranked together, each resource once, and saved.

The organisation, its ledger and its findings are tests/support/waste_surfaces.py's.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from sqlalchemy.orm import Session

from bot.cli import main
from bot.config import Settings
from bot.db.engine import make_engine, make_session_factory, session_scope
from bot.db.schema import ResourceFindingRecord
from bot.poll.plan import plan_alerts
from bot.slack.blocks.home import build_home_view
from bot.slack.blocks.waste import overview_blocks, render_waste_text
from bot.spend.home import home_dashboard
from bot.waste.findings import ResourceEntry, WasteOverview, overview_for, waste_overview
from bot.waste.lifecycle import approve_stop, record_silence
from tests.support.outbox import rendered
from tests.support.waste_surfaces import (
    AS_OF,
    HOSTILE,
    NOW,
    seed_all,
    seed_findings,
    seed_ledger,
)

SETTINGS = Settings(database_url="sqlite://")


def overview(session: Session) -> WasteOverview:
    return waste_overview(session=session, settings=SETTINGS, as_of=AS_OF, now=NOW)


def listed(view: WasteOverview) -> list[tuple[str, str, Decimal]]:
    return [
        (
            "resource" if isinstance(f, ResourceEntry) else "ledger",
            f.resource_id if isinstance(f, ResourceEntry) else f"{f.kind} {f.subject}",
            f.monthly_cost,
        )
        for f in view.ranked
    ]


def test_without_resource_findings_the_ledger_findings_are_unchanged(session: Session) -> None:
    seed_ledger(session)
    view = overview(session)
    assert listed(view) == [
        ("ledger", "orphaned `legacy-ranker`", Decimal("900.00")),
        ("ledger", "idle_endpoint alpha", Decimal("420.00")),
    ]
    assert view.merged == [] and view.closed == [] and view.saved_total == 0


def test_ledger_and_resource_findings_rank_together_and_each_resource_is_listed_once(
    session: Session,
) -> None:
    seed_all(session)
    view = overview(session)
    assert listed(view) == [
        ("resource", "i-legacybox", Decimal("700.00")),
        ("resource", "alpha-prod", Decimal("420.00")),
        # the orphaned tag's $20-a-day box is the scan's i-legacybox: a third is left
        ("ledger", "orphaned `legacy-ranker`", Decimal("300.00")),
        ("resource", HOSTILE, Decimal("95.50")),
    ]
    orphaned = next(f for f in view.findings if f.kind == "orphaned")
    assert "(1 of its 2 resources is listed as a resource finding)" in orphaned.evidence
    # alpha's idle endpoint is all alpha-prod: listed once, as the resource finding
    assert [(f.kind, f.model) for f in view.merged] == [("idle_endpoint", "alpha")]
    assert view.monthly_total == Decimal("1515.50")
    # Keep for 7 days (until Dec 7) is still in force: listed apart, not counted
    assert [(e.resource_id, e.decision) for e in view.silenced] == [("vol-beta", "keep")]
    # vol-gone was last seen Nov 24 06:00 and costs $60 a month: 7 days by Dec 1 06:00
    assert [(e.resource_id, e.saved_so_far) for e in view.recently_closed] == [
        ("vol-gone", Decimal("14.00"))
    ]
    assert view.saved_total == Decimal("14.00")
    later = waste_overview(
        session=session, settings=SETTINGS, as_of=AS_OF, now=NOW + dt.timedelta(days=7)
    )
    assert [e.resource_id for e in later.ranked if isinstance(e, ResourceEntry)] == [
        "i-legacybox",
        "alpha-prod",
        HOSTILE,
        "vol-beta",  # the Keep ran out on Dec 7: counted again
    ]
    assert later.saved_total == Decimal("28.00")  # saved so far grows while it stays gone


def test_a_team_or_model_view_keeps_its_own_and_unowned_ones_only_the_whole_view(
    session: Session,
) -> None:
    seed_all(session)
    whole = overview(session)
    ranking = overview_for(session, whole, "ranking")
    assert [e.resource_id for e in ranking.resources] == ["alpha-prod"]
    assert [e.resource_id for e in ranking.silenced] == ["vol-beta"]
    assert ranking.findings == [] and ranking.closed == []
    platform = overview_for(session, whole, "platform")
    assert [e.resource_id for e in platform.resources] == [HOSTILE]  # gamma is platform's
    assert [e.resource_id for e in platform.closed] == ["vol-gone"]  # owned by the team only
    assert [e.resource_id for e in overview_for(session, whole, "alpha").ranked] == ["alpha-prod"]
    unowned = [e for e in whole.resources if e.model is None and e.team is None]
    assert [e.resource_id for e in unowned] == ["i-legacybox"]


def test_report_waste_prints_both_kinds_as_text_and_json(
    migrated_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = make_engine(migrated_database_url)
    with session_scope(make_session_factory(engine)) as session:
        seed_all(session)
    engine.dispose()
    db = ["--database-url", migrated_database_url]
    assert main([*db, "report", "waste", "--as-of", "2026-11-30"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    # one precision for the list's amounts: $95.50 is under $100, so cents throughout
    assert lines[0] == (
        "   $700.00/mo  GPU instance i-legacybox (resource scan: 123456789012 us-east-1, unowned)"
    )
    assert "fix: stop it (saves $700/month); price: price table (test, 2025-06)" in lines[2]
    assert lines[6] == "   $300.00/mo  Orphaned (tagged for an unregistered model): legacy-ranker"
    assert "Idle endpoint" not in out  # listed once, as alpha-prod
    # the day's end is the report's moment: Keep is in force, vol-gone saved 6.75 days' worth
    assert "not counted: EBS volume vol-beta $80.00/month, kept until 2026-12-07" in lines
    assert (
        "EBS volume vol-gone closed on 2026-11-30 (no longer found): saved $13.50 so far" in lines
    )
    assert "Closed findings saved $13.50 so far (1 closed)" in lines
    assert lines[-1] == "total: about $1,515.50/month"
    # outside text is printed as it is, and nothing of ours is Slack markup
    assert f"S3 prefix {HOSTILE} (resource scan" in out
    assert "*" not in out and "&lt;" not in out and ":wastebasket:" not in out

    assert main([*db, "report", "waste", "--as-of", "2026-11-30", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["currency"] == "USD" and data["monthly_total"] == "1515.50"
    assert [(f["source"], f["monthly_cost"]) for f in data["findings"]] == [
        ("resource_scan", "700.00"),
        ("resource_scan", "420.00"),
        ("ledger", "300.00"),
        ("resource_scan", "95.50"),
    ]
    assert sum(Decimal(f["monthly_cost"]) for f in data["findings"]) == Decimal("1515.50")
    orphaned = data["findings"][2]
    assert orphaned["subject"] == "legacy-ranker" and "`" not in orphaned["fix"]
    assert data["findings"][0]["price_source"] == "price table (test, 2025-06)"
    assert [e["resource_id"] for e in data["silenced"]] == ["vol-beta"]
    assert data["recently_closed"][0]["saved_so_far"] == "13.50"
    assert data["saved_so_far_total"] == "13.50" and data["closed_count"] == 1
    assert [f["kind"] for f in data["listed_under_their_resources"]] == ["idle_endpoint"]


def test_the_weekly_digest_lists_open_resource_findings_in_their_posts_channels(
    session: Session,
) -> None:
    seed_all(session)
    report = plan_alerts(
        session=session,
        settings=SETTINGS,
        as_of=AS_OF,
        now=NOW,
        checks=("waste",),
    )
    posts = {p.channel: p for p in report.planned}
    # alpha's endpoint in alpha's channel; gamma (no channel) in team platform's; unowned FinOps;
    # vol-beta is kept (Keep for 7 days), so team ranking's channel gets nothing this week
    assert set(posts) == {"C0ALPHA", "C0PLATFORM", "C0FINOPS"}
    alpha = json.dumps(rendered(posts["C0ALPHA"])[1], ensure_ascii=False)
    assert "SageMaker endpoint `alpha-prod` — $420/month · us-east-1 · finding #" in alpha
    assert "Idle endpoint" not in alpha and "<@U0AAA111>" in alpha
    assert rendered(posts["C0ALPHA"])[0] == (
        ":wastebasket: Waste in the week of Nov 23–29: 1 finding, about $420/month"
    )
    finops = json.dumps(rendered(posts["C0FINOPS"])[1], ensure_ascii=False)
    assert "GPU instance `i-legacybox` — $700/month" in finops
    assert "legacy-ranker" in finops and "$300/month" in finops
    platform = json.dumps(rendered(posts["C0PLATFORM"])[1], ensure_ascii=False)
    assert "&lt;!channel&gt;" in platform and "<!channel>" not in platform
    assert "<https://evil" not in platform
    # the digest's moment is the end of as_of (Dec 1 00:00): 6.75 days since vol-gone was seen
    assert "Closed findings saved $13.50 so far (1 closed)" in platform
    assert "vol-beta" not in json.dumps(
        [rendered(p)[1] for p in report.planned], ensure_ascii=False
    )

    # Not waste on the box: gone from the digest, and its ledger share is not counted again
    box = next(e for e in overview(session).resources if e.resource_id == "i-legacybox")
    record_silence(
        session=session,
        finding_id=box.finding_id,
        user_id="U0ADMIN01",
        decision="not_waste",
        now=NOW,
    )
    again = plan_alerts(session=session, settings=SETTINGS, as_of=AS_OF, now=NOW, checks=("waste",))
    finops = json.dumps(
        {p.channel: rendered(p)[1] for p in again.planned}["C0FINOPS"], ensure_ascii=False
    )
    assert "i-legacybox" not in finops and "$300/month" in finops


def test_app_home_lists_the_users_models_open_resource_findings(session: Session) -> None:
    seed_all(session)
    board = home_dashboard(session=session, user_id="U0AAA111", today=AS_OF, now=NOW)
    assert [(e.resource_id, e.monthly_cost) for e in board.waste] == [
        ("alpha-prod", Decimal("420.00"))
    ]
    view = json.dumps(build_home_view(board, "USD")["blocks"], ensure_ascii=False)
    assert "*Waste on your models:* 1 open resource finding, *$420*/month" in view
    assert "SageMaker endpoint `alpha-prod` (alpha) — *$420*/month" in view
    beta = home_dashboard(session=session, user_id="U0BBB111", today=AS_OF, now=NOW)
    view = json.dumps(build_home_view(beta, "USD")["blocks"], ensure_ascii=False)
    assert "0 open resource findings, *$0.00*/month" in view
    assert "EBS volume `vol-beta` (beta) — *$80.00*/month · kept or marked not waste" in view
    nobody = home_dashboard(session=session, user_id="U0NOBODY", today=AS_OF, now=NOW)
    assert nobody.waste == [] and "Waste on your models" not in json.dumps(
        build_home_view(nobody, "USD")
    )


def test_no_resource_findings_recorded_means_no_waste_lines_on_home(session: Session) -> None:
    seed_ledger(session)
    board = home_dashboard(session=session, user_id="U0AAA111", today=AS_OF, now=NOW)
    assert board.waste == []
    seed_findings(session)
    assert home_dashboard(session=session, user_id="U0AAA111", today=AS_OF, now=NOW).waste


def test_an_approved_stop_it_is_said_next_to_the_finding_until_the_scan_closes_it(
    session: Session,
) -> None:
    seed_all(session)
    box = next(e for e in overview(session).resources if e.resource_id == "i-legacybox")
    approval = approve_stop(
        session=session, finding_id=box.finding_id, user_id="U0ADMIN01", now=NOW
    )
    assert approval.acts
    row = session.get(ResourceFindingRecord, box.finding_id)
    assert row is not None
    row.action_result = "disabled: approval recorded only"  # what actions.py keeps when off
    session.flush()
    view = overview(session)
    text = render_waste_text(view).splitlines()
    assert text[3] == "               Stop it approved: recorded only (actions are disabled)"
    _, blocks = overview_blocks(view)
    assert "· Stop it approved: recorded only (actions are disabled)" in json.dumps(
        blocks, ensure_ascii=False
    )
