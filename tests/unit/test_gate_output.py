"""The gate's GitHub output: hostile details stay one annotation and one table cell."""

import datetime as dt

from bot.economics.gate import GateCheck, GateResult


def hostile() -> GateResult:
    return GateResult(
        model="recsys",
        as_of=dt.date(2026, 11, 30),
        checks=[
            GateCheck("owner", True, "owned by U0AAA111"),
            GateCheck(
                "instance families",
                False,
                "spent $5.00 on x (a|b\n::error::fake 100% <script>*bold*_ `code` [l](u))",
            ),
        ],
    )


def test_each_failed_check_is_one_escaped_annotation() -> None:
    assert hostile().as_github_annotations() == [
        "::error title=mlcost gate::recsys: instance families: spent $5.00 on x (a|b%0A"
        "::error::fake 100%25 <script>*bold*_ `code` [l](u))"
    ]


def test_the_markdown_summary_keeps_each_detail_in_its_cell() -> None:
    lines = hostile().as_markdown().splitlines()
    assert lines[0] == "### mlcost gate FAIL: recsys (as of 2026-11-30)"
    assert lines[-1] == (
        "| instance families | **FAIL** | spent $5.00 on x (a\\|b ::error::fake 100% "
        "&lt;script&gt;\\*bold\\*\\_ \\`code\\` \\[l\\](u)) |"
    )
    assert len(lines) == 6  # the newline in the detail did not start a row
