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
from bot.periods import day_words
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
_recycle = threading.Lock()  # guards the pool's replacement and the count below
_rendered = 0  # charts handed to the current pool
_workers = 0  # processes per pool
_charts_per_pool = 0  # after this many the pool is replaced by a fresh one; 0: never
_retiring: list[threading.Thread] = []  # pools finishing their last charts after a replacement


def start_render_processes(processes: int = 1, *, max_charts_per_worker: int = 0) -> None:
    """Render charts in worker processes from now on, off the server's GIL (idempotent).

    Rendering is pure CPU in Python; in the server's own process it would compete for the GIL
    with the threads answering other users' acks. The workers are spawned (not forked from a
    threaded server) now rather than on the first chart, and warm matplotlib as they start.
    They ignore SIGINT and SIGTERM (the server stops them, see stop_render_processes) and exit
    on their own if the server dies without stopping them.

    With `max_charts_per_worker`, once the pool has rendered that many charts per worker a
    fresh pool takes the next chart and the old one exits after its last: whatever a worker
    grew into is given back. (Not `ProcessPoolExecutor(max_tasks_per_child=...)`: on Python
    3.11 to 3.13 it deadlocks once charts queue up while a worker is replaced, CPython
    gh-115634.) For a moment both pools' workers are alive.
    """
    global _pool, _rendered, _charts_per_pool, _workers
    if _pool is not None:
        return
    _pool = _new_pool(processes)
    _rendered, _workers = 0, processes
    _charts_per_pool = processes * max_charts_per_worker


def _new_pool(processes: int) -> ProcessPoolExecutor:
    """Spawn a pool of `processes` chart workers, each warming up as it starts."""
    import os
    import signal

    # Workers are born ignoring SIGINT and SIGTERM (an ignored signal stays ignored through
    # exec; a signal mask does not: spawn resets it), so a Ctrl-C while one imports cannot kill
    # it with a traceback. Meanwhile this thread blocks them, and the handlers are back before
    # they are unblocked: a signal in between waits rather than being lost (serve starts the
    # workers before any other thread exists, which could otherwise receive and drop it). A
    # replacement pool is started from a chart thread, which may not set handlers: its workers
    # ignore the signals from their first line instead.
    stopping = {signal.SIGINT, signal.SIGTERM}
    in_main_thread = threading.current_thread() is threading.main_thread()  # signal.signal's rule
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, stopping)
    handlers = {s: signal.signal(s, signal.SIG_IGN) for s in stopping if in_main_thread}
    try:
        pool = ProcessPoolExecutor(
            max_workers=processes,
            initializer=_start_worker,
            initargs=(os.getpid(),),
            mp_context=multiprocessing.get_context("spawn"),
        )
        for _ in range(processes):  # the pool spawns a worker per task it cannot hand out
            pool.submit(os.getpid)
        return pool
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _pool_for_next_chart() -> ProcessPoolExecutor | None:
    """Return the pool to render the next chart: a fresh one when the current one is spent."""
    global _pool, _rendered
    with _recycle:
        pool = _pool
        if pool is None:
            return None
        if _charts_per_pool and _rendered >= _charts_per_pool:
            _pool, _rendered = _new_pool(_workers), 0
            retiring = threading.Thread(
                target=_retire, args=(pool,), name="retire-chart-workers", daemon=True
            )
            _retiring.append(retiring)
            retiring.start()
            pool = _pool
        _rendered += 1
        return pool


def _retire(pool: ProcessPoolExecutor) -> None:
    """Let a replaced pool finish the charts it holds, then stop its workers."""
    import gc

    pool.shutdown(wait=True)
    del pool
    gc.collect()  # the pool's queues hold its semaphores, some of them in reference cycles


def stop_render_processes() -> None:
    """Go back to rendering in this process; stop the workers.

    The workers finish the chart in hand and exit; their queues' semaphores are released here,
    so multiprocessing's resource tracker (which the pool started) has nothing left to warn
    about: it exits by itself when this process does, as its pipe closes.
    """
    import gc

    global _pool
    with _recycle:
        pool, _pool = _pool, None
        retiring = list(_retiring)
        _retiring.clear()
    for thread in retiring:
        thread.join()
    if pool is None:
        return
    pool.shutdown(wait=True, cancel_futures=True)
    del pool
    gc.collect()  # the pool's queues hold its semaphores, some of them in reference cycles


def _start_worker(server_pid: int) -> None:
    """Ignore Ctrl-C and SIGTERM (the server stops its workers); exit when the server is gone."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(
        target=_exit_when_orphaned, args=(server_pid,), name="watch-server", daemon=True
    ).start()
    warm_up()


def _exit_when_orphaned(server_pid: int, every: float = 1.0) -> None:
    """Exit this worker once its server process has died (a SIGKILL leaves no one to stop it)."""
    import os
    import time

    while os.getppid() == server_pid:
        time.sleep(every)
    os._exit(0)


def render_spend_chart(chart: SpendChart) -> bytes:
    """Render the chart to a PNG of WIDTH_PX x HEIGHT_PX (in a worker process if started)."""
    pool = _pool_for_next_chart()
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

    The panels share no axis: daily amounts over the whole window, and the month's running
    total (with the budget it is held against, and its amount to date in its legend) over the
    month alone, each on its own labelled scale and dates, so no line can be read against the
    other's axis and neither panel has an empty stretch.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from bot.slack.charts.ticks import date_axis, money_axis

    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    FigureCanvasAgg(fig)
    # The burn panel spans the month alone (its running total starts on the 1st): sharing the
    # daily panel's window would leave the days before the month an empty stretch under it.
    daily, burn = fig.subplots(2, 1, height_ratios=[3, 2])
    handles = _draw_daily(daily, chart)
    money_axis(daily.yaxis, chart.currency, "Daily spend")
    date_axis(daily.xaxis)
    _draw_burn(burn, chart)
    money_axis(burn.yaxis, chart.currency, f"{chart.month_start:%b} to date")
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
    fig.subplots_adjust(left=0.075, right=0.985, top=0.875, bottom=0.07, hspace=0.3)
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
    last_day = chart.month_end - dt.timedelta(days=1)
    burn.xaxis_date()
    burn.set_xlim(date2num(chart.month_start) - 0.6, date2num(last_day) + 0.6)
    if actual_days:
        # the month-to-date amount is in its legend label: written on the line it would
        # collide with the budget's whenever the month is near it
        to_date = format_money(sum(chart.month_actual.values(), Decimal(0)), chart.currency)
        burn.plot(
            actual_days,
            actual_cum,
            color="#111111",
            linewidth=2,
            label=f"month to date {to_date} (through {day_words(max(chart.month_actual))})",
        )
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
