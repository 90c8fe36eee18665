"""The demo's terminal text reads right (issue 23, item 11): deliberate changes, named here."""

from __future__ import annotations

import re

from tests.cli.conftest import DemoRun


def test_no_line_of_the_demo_ends_in_a_space(demo_run: DemoRun) -> None:
    trailing = [line for line in demo_run.out.splitlines() if line != line.rstrip()]
    assert not trailing, trailing[:3]


def test_the_demo_counts_in_real_plurals(demo_run: DemoRun) -> None:
    out = demo_run.out
    assert "4 teams, 13 models, 9 budgets (" in out
    assert "3 findings: $3,697.27 a month" in out
    assert "recorded 3 new findings; 3 posts queued" in out
    assert "2 findings still open, 1 closed" in out
    # the CLI's own lines; Slack message texts quoted by the demo are worded elsewhere
    for cli_wording in ("finding(s): $", "new finding(s)", "post(s) queued"):
        assert cli_wording not in out


def test_unit_costs_never_show_as_four_zeros(demo_run: DemoRun) -> None:
    section = demo_run.out.split("== 9.", 1)[1].split("\n== ", 1)[0]
    assert "$0.0000" not in section


def test_each_gate_report_shows_money_with_one_precision(demo_run: DemoRun) -> None:
    section = demo_run.out.split("== 10.", 1)[1].split("\n== ", 1)[0]
    amounts = re.findall(r"\$[0-9][0-9,]*(?:\.[0-9]+)?", section)
    assert amounts and all(re.fullmatch(r"\$[0-9]{1,3}(,[0-9]{3})*\.[0-9]{2}", a) for a in amounts)


MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"


def test_the_demo_says_days_one_way(demo_run: DemoRun) -> None:
    out = demo_run.out
    # days as people read them: `Nov 18`, `Nov 18–20`, `Oct 26–Nov 1`, `Nov 20, 2026`
    assert not re.findall(rf"\b[0-9]{{1,2}} (?:{MONTHS})\b", out)  # not `18 Nov`
    assert not re.findall(rf"\b(?:{MONTHS}) 0[0-9]\b", out)  # not `Nov 01`
    assert not re.findall(rf"\b({MONTHS}) [0-9]+–\1\b", out)  # not `Nov 2–Nov 8`
    assert "(Nov 18–20)" in out and "the week of Nov 2–8" in out
    assert "the week of Oct 26–Nov 1" in out and "(data through Nov 20, 2026)" in out


def test_no_line_of_the_demo_counts_with_a_plural_marker(demo_run: DemoRun) -> None:
    # `1 finding(s)`, `1 resource(s)`, `1 variant(s)`: a count says its noun once, right
    assert not re.findall(r"\b[0-9][0-9,]* [a-zA-Z -]+\(s\)", demo_run.out)
    assert "1 resource tagged model=legacy-ranker" in demo_run.out
    assert "1 on-demand instance trained last week" in demo_run.out


def test_a_registry_diff_shows_budget_amounts_as_money(demo_run: DemoRun) -> None:
    assert "update budget model:recsys: monthly $22,000 -> $26,000" in demo_run.out


def test_the_polled_export_says_its_month_to_the_cent_like_the_ingestion(
    demo_run: DemoRun,
) -> None:
    assert "2026-11 billed $107,288.82 before, $107,288.82 after (replaced, not doubled)" in (
        demo_run.out
    )
