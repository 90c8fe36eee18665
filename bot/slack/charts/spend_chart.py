"""Daily spend stacked by a dimension, with the month's cumulative burn, budget and forecast."""

from __future__ import annotations

import datetime as dt
import io
import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from bot.money import format_money
from bot.slack.charts.colours import STAGE_COLOURS

WIDTH_IN, HEIGHT_IN, DPI = 12, 5, 100
WIDTH_PX, HEIGHT_PX = WIDTH_IN * DPI, HEIGHT_IN * DPI
RENDER_TIMEOUT_S = 60
SERIES_COLOURS = [
    "#1d3557",
    "#457b9d",
    "#2a9d8f",
    "#e9c46a",
    "#f4a261",
    "#e76f51",
    "#a8dadc",
    "#8d99ae",
]
# matplotlib's font cache and text layout are not documented as thread-safe; charts are rendered
# in worker threads, so one at a time (they are CPU-bound under the GIL anyway).
_RENDER_LOCK = threading.Lock()


@dataclass(frozen=True)
class SpendChart:
    """What to draw: plain values, no database rows."""

    title: str
    subtitle: str
    currency: str
    stacks: dict[str, dict[dt.date, Decimal]]  # series label -> day -> cost, drawn in this order
    month_start: dt.date
    month_end: dt.date  # exclusive
    first_day: dt.date  # the first day on the x axis
    month_actual: dict[dt.date, Decimal] = field(default_factory=dict)  # month days up to as_of
    projected: dict[dt.date, Decimal] = field(default_factory=dict)  # forecast per remaining day
    budget: Decimal | None = None
    forecast_label: str = ""


_pool: ProcessPoolExecutor | None = None


def start_render_processes(processes: int = 1) -> None:
    """Render charts in worker processes from now on, off the server's GIL (idempotent).

    Rendering is pure CPU in Python; in the server's own process it would compete for the GIL
    with the threads answering other users' acks. The workers are spawned (not forked from a
    threaded server) and warm matplotlib as they start.
    """
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(
            max_workers=processes,
            initializer=warm_up,
            mp_context=multiprocessing.get_context("spawn"),
        )


def stop_render_processes() -> None:
    """Go back to rendering in this process and stop the workers."""
    global _pool
    pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


def render_spend_chart(chart: SpendChart) -> bytes:
    """Render the chart to a PNG of WIDTH_PX x HEIGHT_PX (in a worker process if started)."""
    pool = _pool
    if pool is not None:
        return pool.submit(render_in_this_process, chart).result(timeout=RENDER_TIMEOUT_S)
    return render_in_this_process(chart)


def render_in_this_process(chart: SpendChart) -> bytes:
    """Render the chart here, one at a time."""
    from matplotlib import rc_context

    # names from billing files reach titles and legends: `$...$` must not be parsed as math
    with _RENDER_LOCK, rc_context({"text.parse_math": False}):
        return _render(chart)


def _render(chart: SpendChart) -> bytes:
    out = io.BytesIO()
    spend_figure(chart).savefig(out, format="png", dpi=DPI)
    return out.getvalue()


def spend_figure(chart: SpendChart) -> Any:
    """Draw the chart as a matplotlib Figure: daily spend above, the month's burn below.

    The two panels share the date axis but not a money axis: daily amounts and the month's
    running total (with the budget it is held against) each get their own labelled scale, so
    no line can be read against the other's axis.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from bot.slack.charts.ticks import date_axis, money_axis

    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    FigureCanvasAgg(fig)
    daily, burn = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    handles = _draw_daily(daily, chart)
    money_axis(daily.yaxis, chart.currency, "Daily spend")
    _draw_burn(burn, chart)
    money_axis(burn.yaxis, chart.currency, "Cumulative")
    date_axis(burn.xaxis)
    for axes in (daily, burn):
        axes.spines[["top", "right"]].set_visible(False)
        axes.grid(axis="y", alpha=0.25)
        axes.yaxis.label.set_fontsize(9)
        axes.tick_params(labelsize=8)

    fig.suptitle(chart.title, x=0.01, ha="left", fontsize=13, fontweight="bold")
    daily.set_title(chart.subtitle, loc="left", fontsize=9, color="#555555")
    if handles:
        daily.legend(
            handles=handles,
            loc="upper left",
            fontsize=8,
            ncols=min(6, len(handles)),
            frameon=False,
        )
    if burn.get_legend_handles_labels()[0]:
        burn.legend(loc="upper left", fontsize=8, ncols=4, frameon=False)
    fig.subplots_adjust(left=0.075, right=0.985, top=0.875, bottom=0.07, hspace=0.12)
    fig.align_ylabels([daily, burn])
    return fig


def _draw_daily(ax: Any, chart: SpendChart) -> list[Any]:
    """Draw the stacked daily bars and the forecast's hatched ones; return their legend handles."""
    from matplotlib.collections import PolyCollection
    from matplotlib.dates import date2num
    from matplotlib.patches import Patch

    last_day = chart.month_end - dt.timedelta(days=1)
    days = [
        chart.first_day + dt.timedelta(days=i) for i in range((last_day - chart.first_day).days + 1)
    ]
    # One PolyCollection per series instead of one Rectangle per bar: about 5x faster to draw.
    xs = [date2num(day) for day in days]
    handles: list[Any] = []
    bottom = [0.0] * len(days)
    top = 0.0
    for i, (label, series) in enumerate(chart.stacks.items()):
        values = [float(series.get(day, 0)) for day in days]
        if not any(values):
            continue
        colour = STAGE_COLOURS.get(label, SERIES_COLOURS[i % len(SERIES_COLOURS)])
        ax.add_collection(
            PolyCollection(_bars(xs, bottom, values), facecolors=colour, linewidths=0)
        )
        handles.append(Patch(facecolor=colour, label=label))
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        top = max(top, *bottom)
    if chart.projected:
        proj = sorted(chart.projected)
        values = [float(chart.projected[d]) for d in proj]
        ax.add_collection(
            PolyCollection(
                _bars([date2num(d) for d in proj], [0.0] * len(proj), values),
                facecolors="none",
                edgecolors="#8d99ae",
                hatch="///",
                linewidths=0.6,
            )
        )
        handles.append(
            Patch(facecolor="none", edgecolor="#8d99ae", hatch="///", label="forecast (daily)")
        )
        top = max(top, *values)
    ax.xaxis_date()
    ax.set_ylim(0, top * 1.3 if top > 0 else 1)  # room for the legend above the bars
    # the axis ends with the month's last bar: no tick of the next month under it
    ax.set_xlim(date2num(chart.first_day) - 0.6, date2num(last_day) + 0.6)
    return handles


def _draw_burn(burn: Any, chart: SpendChart) -> None:
    """Draw the month's cumulative spend, its forecast, the budget and the even burn to it."""
    from matplotlib.dates import date2num

    running = 0.0
    actual_days: list[float] = []
    actual_cum: list[float] = []
    for day in sorted(chart.month_actual):
        running += float(chart.month_actual[day])
        actual_days.append(date2num(day))
        actual_cum.append(running)
    top = running
    if actual_days:
        burn.plot(actual_days, actual_cum, color="#111111", linewidth=2, label="month to date")
    if chart.projected:
        proj_days = sorted(chart.projected)
        start_day = actual_days[-1] if actual_days else date2num(proj_days[0]) - 1
        xs, ys, total = [start_day], [running], running
        for day in proj_days:
            total += float(chart.projected[day])
            xs.append(date2num(day))
            ys.append(total)
        burn.plot(
            xs,
            ys,
            color="#111111",
            linewidth=1.6,
            linestyle="--",
            label=chart.forecast_label or "forecast",
        )
        top = max(top, total)
    if chart.budget is not None and chart.budget > 0:
        budget = float(chart.budget)
        label = f"budget {format_money(chart.budget, chart.currency)}"
        burn.axhline(budget, color="#c1121f", linestyle=":", linewidth=1.5, label=label)
        last_day = chart.month_end - dt.timedelta(days=1)
        burn.plot(
            [date2num(chart.month_start) - 0.5, date2num(last_day)],
            [0, budget],
            color="#c1121f",
            alpha=0.35,
            linewidth=1,
            label="even burn to budget",
        )
        # the budget's amount written on its line where the month starts, clear of the burn
        burn.annotate(
            label,
            (date2num(chart.month_start) - 0.5, budget),
            xytext=(0, 3),
            textcoords="offset points",
            ha="left",
            va="bottom",
            fontsize=8,
            color="#c1121f",
        )
        top = max(top, budget)
    burn.set_ylim(0, top * 1.35 if top > 0 else 1)  # room for the legend above the lines


def _bars(xs: list[float], bottom: list[float], heights: list[float]) -> list[Any]:
    half = 0.85 / 2
    return [
        [(x - half, b), (x - half, b + h), (x + half, b + h), (x + half, b)]
        for x, b, h in zip(xs, bottom, heights, strict=True)
        if h
    ]


def warm_up() -> None:
    """Import matplotlib and draw once, so the first user's chart does not pay for it."""
    day = dt.date(2026, 1, 1)
    render_in_this_process(
        SpendChart(
            title="warm-up",
            subtitle="",
            currency="USD",
            stacks={"training": {day: Decimal(1)}},
            month_start=day,
            month_end=day + dt.timedelta(days=31),
            first_day=day,
            month_actual={day: Decimal(1)},
            projected={day + dt.timedelta(days=1): Decimal(1)},
            budget=Decimal(10),
        )
    )
