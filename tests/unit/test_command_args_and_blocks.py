"""Command-word parsing and Block Kit builders stay within Slack's limits (pure)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from bot.errors import UsageError
from bot.periods import month_period, trailing_days
from bot.slack.blocks.home import build_home_view
from bot.slack.blocks.model import build_model_report_blocks
from bot.slack.charts.spend_chart import SpendChart, render_spend_chart
from bot.slack.command_args import parse_channel, parse_user, split_options
from bot.slack.guard import checked_message, checked_view
from bot.spend.daily import ReportingWindow
from bot.spend.forecast import forecast_month
from bot.spend.home import HomeDashboard
from bot.spend.model_report import ModelReport, ResourceCost
from bot.spend.team_report import ModelLine

NOV = month_period("2026-11")
AS_OF = dt.date(2026, 11, 19)


def test_split_options() -> None:
    assert split_options(["set", "x", "--alert", "50,80"], ["--alert"]) == (
        ["set", "x"],
        {"--alert": "50,80"},
    )
    assert split_options(["--alert=1"], ["--alert"]) == ([], {"--alert": "1"})
    assert split_options(["-5"], []) == (["-5"], {})
    with pytest.raises(UsageError, match="unknown option `--x`"):
        split_options(["--x"], ["--alert"])
    with pytest.raises(UsageError, match="needs a value"):
        split_options(["--alert"], ["--alert"])


def test_mentions_as_slack_escapes_them() -> None:
    assert parse_user("<@U0AAA111|alice>") == "U0AAA111"
    assert parse_user("<@W0AAA111>") == "W0AAA111"
    assert parse_user("@alice") is None
    assert parse_channel("<#C0RECSYS|recsys>") == "C0RECSYS"
    assert parse_channel("#recsys") is None


def span() -> ReportingWindow:
    return ReportingWindow(trailing_days(30, AS_OF), NOV, AS_OF, AS_OF)


def huge_report() -> ModelReport:
    """A model with absurdly long names everywhere."""
    daily = {AS_OF - dt.timedelta(days=i): Decimal("1234.5") for i in range(40)}
    return ModelReport(
        model="m" * 100,
        team="t" * 100,
        owners=[f"U{i:08d}" for i in range(300)],
        channel="C0RECSYS",
        basis="billed",
        span=span(),
        daily_by_stage={d: {"training": v} for d, v in daily.items()},
        month_to_date=Decimal("123456789.12"),
        by_stage=[(s * 50, Decimal(1)) for s in ("training", "serving")],
        gpu_hours=Decimal("12345.678"),
        top_resources=[ResourceCost("arn:" + "x" * 3000, "S" * 500, "training", Decimal(9))] * 5,
        forecast=forecast_month(daily, NOV, AS_OF, covered=daily),
        budget=Decimal(0),
        last_month_same_days=Decimal(0),
        last_month_total=Decimal(0),
    )


def test_model_blocks_fit_slacks_limits_even_for_absurd_input() -> None:
    text, blocks = build_model_report_blocks(huge_report(), "USD")
    checked_message(text, blocks)
    assert "$123,456,789" in text
    assert "no budget" in text


def test_home_view_fits_for_many_models() -> None:
    empty = forecast_month({}, NOV, AS_OF, covered=[])  # not enough history
    lines = [
        ModelLine(f"model-{i}", Decimal(i * 100), Decimal(50), empty, Decimal(1000))
        for i in range(120)
    ]
    view = checked_view(build_home_view(HomeDashboard("U1", span(), lines, True), "USD"))
    assert len(view["blocks"]) <= 100
    assert "…and 80 more models" in str(view)


def test_chart_renders_with_no_data_at_all() -> None:
    chart = SpendChart(
        title="empty",
        subtitle="",
        currency="USD",
        stacks={},
        month_start=NOV.start,
        month_end=NOV.end,
        first_day=NOV.start,
    )
    assert render_spend_chart(chart)[:8] == b"\x89PNG\r\n\x1a\n"


def test_chart_renders_in_a_worker_process_the_same() -> None:
    from bot.slack.charts.spend_chart import start_render_processes, stop_render_processes

    day = NOV.start
    chart = SpendChart(
        title="t",
        subtitle="",
        currency="USD",
        stacks={"training": {day: Decimal(5)}},
        month_start=NOV.start,
        month_end=NOV.end,
        first_day=day,
    )
    start_render_processes(1)
    try:
        in_worker = render_spend_chart(chart)
    finally:
        stop_render_processes()
    assert in_worker[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(in_worker) > 1000


def test_control_characters_never_reach_the_database() -> None:
    from bot.slack.command_router import split_command_text

    assert split_command_text("model \x00rec\x07sys\x1b") == ["model", "rec", "sys"]


def _chart_workers() -> set[int]:
    """Return the pids of this process's children that are chart workers (spawned, not the
    resource tracker)."""
    import os
    from pathlib import Path

    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        state = stat.rsplit(")", 1)[1].split()[0]
        if ppid == os.getpid() and state != "Z" and b"resource_tracker" not in cmdline:
            found.add(int(proc.name))
    return found


def test_chart_workers_are_replaced_after_their_charts_even_with_charts_queued() -> None:
    import time
    from concurrent.futures import ThreadPoolExecutor

    from bot.slack.charts.spend_chart import start_render_processes, stop_render_processes

    day = NOV.start
    charts = [
        SpendChart(
            title=f"t{i}",
            subtitle="",
            currency="USD",
            stacks={"training": {day: Decimal(i + 1)}},
            month_start=NOV.start,
            month_end=NOV.end,
            first_day=day,
        )
        for i in range(7)
    ]
    start_render_processes(1, max_charts_per_worker=2)
    try:
        first = _chart_workers()
        assert len(first) == 1
        # four threads at once: charts queue while workers are replaced (CPython gh-115634
        # hangs exactly there with max_tasks_per_child on 3.11)
        with ThreadPoolExecutor(4) as threads:
            pngs = list(threads.map(render_spend_chart, charts, timeout=120))
        assert all(png[:8] == b"\x89PNG\r\n\x1a\n" for png in pngs)
        deadline = time.monotonic() + 30
        while len(_chart_workers()) != 1 and time.monotonic() < deadline:
            time.sleep(0.1)  # replaced pools finish their last chart, then exit
        now = _chart_workers()
        assert len(now) == 1 and now.isdisjoint(first)
    finally:
        stop_render_processes()
    assert _chart_workers() == set()
