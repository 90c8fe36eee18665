"""Charts a finance reader cannot misread, checked on the matplotlib Figure (not pixels).

Each line is drawn against the axis it belongs to, every money axis names its currency and
writes all its ticks in one format, and a date axis has no offset text.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

import pytest

from bot.slack.charts.review import review_figure
from bot.slack.charts.spend_chart import HEIGHT_PX, WIDTH_PX, SpendChart, render_spend_chart
from bot.slack.charts.spend_chart import spend_figure as _spend_figure
from bot.slack.charts.ticks import MoneyFormatter
from bot.slack.charts.waste import (
    WASTE_HEIGHT_PX,
    WASTE_WIDTH_PX,
    WasteBar,
    render_waste_chart,
    waste_figure,
)
from tests.support.demo_org import png_size

NOV = dt.date(2026, 11, 1)
DEC = dt.date(2026, 12, 1)
AS_OF = dt.date(2026, 11, 20)


def days(start: dt.date, end: dt.date) -> list[dt.date]:
    return [start + dt.timedelta(days=i) for i in range((end - start).days)]


def recsys_like(scale: Decimal = Decimal(1), currency: str = "USD") -> SpendChart:
    """An Oct–Nov window like `/mlcost model recsys` on Nov 20: ~$700 a day, a $2k spike."""
    first = dt.date(2026, 10, 22)
    daily = {d: Decimal(700) * scale for d in days(first, AS_OF + dt.timedelta(days=1))}
    for spike in (dt.date(2026, 11, 18), dt.date(2026, 11, 19)):
        daily[spike] = Decimal(2100) * scale
    return SpendChart(
        title="recsys — daily spend by stage",
        subtitle="22 Oct to 30 Nov 2026",
        currency=currency,
        stacks={"training": daily},
        month_start=NOV,
        month_end=DEC,
        first_day=first,
        month_actual={d: v for d, v in daily.items() if d >= NOV},
        projected={d: Decimal(1100) * scale for d in days(AS_OF + dt.timedelta(days=1), DEC)},
        budget=Decimal(22000) * scale,
        forecast_label="forecast",
    )


def spend_figure(chart: SpendChart) -> Any:
    figure = _spend_figure(chart)
    figure.canvas.draw()  # ticks, their labels and offset texts exist once drawn
    return figure


def money_axes(figure: Any) -> list[Any]:
    return [axes for axes in figure.axes if "(" in axes.get_ylabel()]


def tick_texts(axis: Any) -> list[str]:
    return [t.get_text() for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]


def shape(label: str) -> tuple[str, str, int]:
    """Return a money label's format: what comes before the digits, after them, and decimals."""
    match = re.fullmatch(r"(-?\D*)([0-9][0-9,]*)(?:\.([0-9]+))?(\D*)", label)
    assert match, f"not a money label: {label!r}"
    prefix, _whole, decimals, suffix = match.groups()
    return prefix.lstrip("-"), suffix, len(decimals or "")


def assert_one_format(labels: list[str]) -> None:
    assert len(labels) >= 3, labels
    assert len({shape(label) for label in labels}) == 1, labels


def test_the_budget_is_drawn_on_the_cumulative_axis_and_labelled_with_its_amount() -> None:
    figure = spend_figure(recsys_like())
    [daily, cumulative] = money_axes(figure)
    assert daily.get_ylabel().startswith("Daily spend")
    assert cumulative.get_ylabel() == "Nov to date (USD)"
    budget_lines = {
        axes.get_ylabel(): [
            line for line in axes.get_lines() if line.get_label().startswith("budget")
        ]
        for axes in (daily, cumulative)
    }
    assert budget_lines[daily.get_ylabel()] == []
    [budget] = budget_lines[cumulative.get_ylabel()]
    assert budget.get_label() == "budget $22,000"
    assert list(budget.get_ydata()) == [22000.0, 22000.0]
    low, high = cumulative.get_ylim()
    assert low == 0 and high > 22000  # on the scale, not off the top
    # its amount is written on the chart next to the line, in the same axes
    assert "budget $22,000" in [t.get_text() for t in cumulative.texts]


def test_no_two_money_axes_share_the_same_plot_area() -> None:
    """A twin axis makes a line readable against the wrong scale (the budget 'at $2k')."""
    figure = spend_figure(recsys_like())
    boxes = [axes.get_position() for axes in money_axes(figure)]
    assert len(boxes) == 2
    upper, lower = sorted(boxes, key=lambda box: -box.y0)
    assert lower.y1 <= upper.y0  # one above the other, not overlaid


@pytest.mark.parametrize(("currency", "symbol"), [("USD", "$"), ("EUR", "€"), ("CHF", "")])
def test_every_money_axis_names_its_currency_in_label_and_ticks(currency: str, symbol: str) -> None:
    figure = spend_figure(recsys_like(currency=currency))
    for axes in money_axes(figure):
        assert axes.get_ylabel().endswith(f"({currency})")
        labels = tick_texts(axes.yaxis)
        assert all(label.startswith(symbol) for label in labels)
        assert all(label[len(symbol) :][:1].isdigit() for label in labels), labels


@pytest.mark.parametrize("scale", [Decimal("0.001"), Decimal(1), Decimal(3), Decimal(400)])
def test_each_money_axis_writes_all_its_ticks_in_one_format(scale: Decimal) -> None:
    """Not "$500" next to "$1.0k" and "$10k": one scale, one number of decimals per axis."""
    figure = spend_figure(recsys_like(scale))
    for axes in money_axes(figure):
        assert_one_format(tick_texts(axes.yaxis))


def test_the_date_axis_has_no_offset_text_and_no_tick_past_the_window() -> None:
    """Under an Oct–Nov window, no "2026-Dec" offset label, no "Dec 1" tick."""
    figure = spend_figure(recsys_like())
    for axes in figure.axes:
        assert axes.xaxis.get_offset_text().get_text() == ""
        assert axes.yaxis.get_offset_text().get_text() == ""
    labels = tick_texts(figure.axes[-1].xaxis)
    assert labels and all(re.fullmatch(r"(Oct|Nov) [0-9]{1,2}", label) for label in labels), labels


def test_the_spend_chart_is_a_png_of_the_documented_size() -> None:
    assert png_size(render_spend_chart(recsys_like())) == (WIDTH_PX, HEIGHT_PX)


@pytest.mark.parametrize(
    ("locs", "labels"),
    [
        ([0, 500, 1000, 1500], ["$0", "$500", "$1,000", "$1,500"]),
        ([0, 10_000, 20_000, 30_000], ["$0", "$10,000", "$20,000", "$30,000"]),
        ([0, 0.25, 0.5], ["$0.00", "$0.25", "$0.50"]),
        ([0, 500_000, 1_000_000, 1_500_000], ["$0.0M", "$0.5M", "$1.0M", "$1.5M"]),
        ([-1000, 0, 1000], ["-$1,000", "$0", "$1,000"]),
    ],
)
def test_the_money_formatter_picks_one_scale_and_precision_for_all_ticks(
    locs: list[float], labels: list[str]
) -> None:
    formatter = MoneyFormatter("USD")
    assert formatter.format_ticks(locs) == labels
    assert formatter.get_offset() == ""


def snapshot(model: str, currency: str, training: str, serving: str, previous: str) -> dict:
    return {
        "model": model,
        "currency": currency,
        "current": {"cost_by_stage": {"training": training, "serving": serving}},
        "previous": {"cost": previous},
    }


def test_the_review_chart_names_the_currency_and_writes_one_format_per_axis() -> None:
    figure = review_figure(
        "2026-11",
        "ranking",
        [
            snapshot("recsys", "USD", "16102.10", "3890.42", "19620"),
            snapshot("search-ranker", "USD", "1193", "1221", "4200"),
            snapshot("eu-model", "EUR", "812.5", "90", "700"),
        ],
    )
    figure.canvas.draw()
    labels = sorted(axes.get_xlabel() for axes in figure.axes)
    assert labels == ["Cost this month (EUR)", "Cost this month (USD)"]
    for axes in figure.axes:
        ticks = tick_texts(axes.xaxis)
        assert_one_format(ticks)
        assert ticks[0].startswith("€" if "EUR" in axes.get_xlabel() else "$")
        assert axes.xaxis.get_offset_text().get_text() == ""


def top_down(axes: Any) -> list[str]:
    """Return the y tick labels from the top of the chart down."""
    ticks = zip(axes.get_yticks(), axes.get_yticklabels(), strict=True)
    return [label.get_text() for _y, label in sorted(ticks, key=lambda tick: -tick[0])]


def waste_bars() -> list[WasteBar]:
    return [
        WasteBar("Spot candidate", "recsys training on p4d.24xlarge", Decimal("4708.20")),
        WasteBar("Orphaned", "legacy-ranker", Decimal("3628")),
        WasteBar("Idle endpoint", "churn-predictor", Decimal("349")),
    ]


def test_the_waste_chart_ranks_findings_by_monthly_cost_with_amounts_and_currency() -> None:
    figure = waste_figure(waste_bars(), currency="USD", as_of=dt.date(2026, 11, 30))
    figure.canvas.draw()
    [axes] = figure.axes
    assert top_down(axes) == [
        "recsys training on p4d.24xlarge",
        "legacy-ranker",
        "churn-predictor",
    ]
    # each bar's kind is its colour, named once in the legend
    [legend] = figure.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "Spot candidate",
        "Orphaned",
        "Idle endpoint",
    ]
    assert [t.get_text() for t in axes.texts] == ["$4,708/month", "$3,628/month", "$349/month"]
    assert axes.get_xlabel().endswith("(USD)")
    assert_one_format(tick_texts(axes.xaxis))
    assert "about $8,685/month in 3 findings" in figure.texts[0].get_text()
    one = waste_figure(waste_bars()[:1], currency="USD", as_of=dt.date(2026, 11, 30))
    assert one.texts[0].get_text().endswith("in 1 finding")


def test_the_waste_chart_sums_findings_past_ten_and_draws_none_as_a_note() -> None:
    many = [WasteBar("Idle endpoint", f"m{i:02}", Decimal(100 + i)) for i in range(13)]
    figure = waste_figure(many, currency="USD", as_of=dt.date(2026, 11, 30))
    figure.canvas.draw()
    ticks = top_down(figure.axes[0])
    assert len(ticks) == 11 and ticks[0] == "m12" and ticks[-1] == "3 more findings"
    assert figure.axes[0].texts[-1].get_text() == "$303/month"  # 100 + 101 + 102
    empty = render_waste_chart([], currency="USD", as_of=dt.date(2026, 11, 30))
    assert png_size(empty) == (WASTE_WIDTH_PX, WASTE_HEIGHT_PX)
    figure = waste_figure([], currency="USD", as_of=dt.date(2026, 11, 30))
    assert "No waste found" in [t.get_text() for t in figure.axes[0].texts]


def test_the_cumulative_panel_spans_the_month_and_names_what_is_spent_to_date() -> None:
    """No empty quarter under the days before the month: the running total starts on the 1st."""
    from matplotlib.dates import date2num

    figure = spend_figure(recsys_like())
    [daily, cumulative] = money_axes(figure)
    low, high = cumulative.get_xlim()
    assert date2num(NOV) - 1 <= low < date2num(NOV)
    assert high <= date2num(dt.date(2026, 11, 30)) + 1
    assert daily.get_xlim()[0] < date2num(NOV) - 9  # the daily panel keeps its history (Oct 22)
    # 18 days at $700 and two of $2,100 through Nov 20
    labels = cumulative.get_legend_handles_labels()[1]
    assert "month to date $16,800 (through Nov 20)" in labels
    assert all(re.fullmatch(r"Nov [0-9]{1,2}", t) for t in tick_texts(cumulative.xaxis))


def test_the_review_chart_is_titled_and_styled_like_the_other_charts() -> None:
    figure = review_figure("2026-11", "ranking", [snapshot("recsys", "USD", "1", "2", "3")])
    figure.canvas.draw()
    title = figure.get_suptitle()
    assert title == "team ranking — cost by model and stage"
    assert figure._suptitle.get_fontweight() == "bold" and figure._suptitle.get_ha() == "left"
    [axes] = figure.axes
    assert axes.get_title(loc="left").startswith("Nov 2026 · ")
    assert axes.get_xlabel() == "Cost this month (USD)"
    assert not axes.spines["top"].get_visible() and not axes.spines["right"].get_visible()


def test_the_waste_chart_is_readable_at_slack_preview_size() -> None:
    """Slack shows the PNG at most 360 px high: every text stays at least 10 px there."""
    from bot.slack.charts.waste import PREVIEW_HEIGHT_PX, WASTE_DPI

    many = [WasteBar(f"kind {i % 3}", f"resource-{i:02}", Decimal(100 + i)) for i in range(13)]
    figure = waste_figure(many, currency="USD", as_of=dt.date(2026, 11, 30))
    figure.canvas.draw()
    [axes] = figure.axes
    texts = [
        *axes.get_xticklabels(),
        *axes.get_yticklabels(),
        *axes.texts,
        axes.xaxis.label,
        *figure.legends[0].get_texts(),
    ]
    scale = PREVIEW_HEIGHT_PX / WASTE_HEIGHT_PX
    sizes = {round(t.get_fontsize() * WASTE_DPI / 72 * scale, 1) for t in texts if t.get_text()}
    assert min(sizes) >= 10, sizes
    assert all("\n" not in t.get_text() for t in axes.get_yticklabels())  # one line a bar
