"""The review chart: each model's cost by stage this month, with last month's total marked."""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bot.db.tables import STAGES
from bot.slack.charts.colours import STAGE_COLOURS
from bot.slack.charts.ticks import money_axis


def render_review_chart(
    month: str, team: str, snapshots: Sequence[dict[str, Any]], currency: str = "USD"
) -> bytes:
    """Render the review chart with names shown literally (`$...$` is not math)."""
    from matplotlib import rc_context

    with rc_context({"text.parse_math": False}):
        return _render_review_chart(month, team, snapshots, currency)


def _render_review_chart(
    month: str, team: str, snapshots: Sequence[dict[str, Any]], currency: str = "USD"
) -> bytes:
    """Render horizontal stacked bars of cost by stage per model as PNG bytes."""
    figure = review_figure(month, team, snapshots, currency)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def review_figure(
    month: str, team: str, snapshots: Sequence[dict[str, Any]], currency: str = "USD"
) -> Figure:
    """Draw the review chart: stacked bars of cost by stage per model.

    Models billed in different currencies get a panel each, with its own axis: amounts in
    different currencies are never drawn on one scale. A snapshot without a currency (stored
    before it was kept) takes `currency`.
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for snap in snapshots:
        groups.setdefault(str(snap.get("currency") or currency), []).append(snap)
    panels = sorted(groups.items()) or [(currency, [])]
    heights = [max(1.1, 0.55 * len(snaps) + 0.9) for _, snaps in panels]
    height = max(2.5, sum(heights) + 0.8)
    figure = Figure(figsize=(9, height), dpi=100)
    FigureCanvasAgg(figure)
    for index, (code, snaps) in enumerate(panels):
        axes = figure.add_subplot(len(panels), 1, index + 1)
        _draw_panel(axes, snaps, code)
        if index == 0:
            # the title and grey subtitle of the spend and waste charts, in their places
            axes.set_title(
                f"{period_words(month)} · bars: this month by stage · ticks: last month's total",
                loc="left",
                fontsize=9,
                color="#555555",
            )
    figure.suptitle(
        f"team {team} — cost by model and stage", x=0.01, ha="left", fontsize=13, fontweight="bold"
    )
    figure.tight_layout()
    return figure


def period_words(month: str) -> str:
    """Return `Nov 2026` for `2026-11` (the month as the other charts write it)."""
    try:
        return dt.datetime.strptime(month, "%Y-%m").strftime("%b %Y")
    except ValueError:
        return month


def _draw_panel(axes: Any, snapshots: Sequence[dict[str, Any]], currency: str) -> None:
    """Draw one currency's models: stacked bars by stage, last month's total marked."""
    rows = {
        snap["model"]: {
            stage: float(Decimal(str(value)))  # floats only for drawing
            for stage, value in snap["current"]["cost_by_stage"].items()
        }
        for snap in snapshots
    }
    frame = pd.DataFrame.from_dict(rows, orient="index").fillna(0.0)
    stages = [s for s in STAGES if s in frame.columns] + [
        s for s in frame.columns if s not in STAGES
    ]
    frame = frame.reindex(columns=stages, fill_value=0.0)
    frame = frame.loc[frame.sum(axis=1).sort_values().index]
    previous = [float(Decimal(str(s["previous"]["cost"]))) for s in snapshots]
    previous_by_model = dict(zip([s["model"] for s in snapshots], previous, strict=True))
    left = [0.0] * len(frame)
    for stage in stages:
        values = frame[stage].tolist()
        axes.barh(
            frame.index, values, left=left, label=stage, color=STAGE_COLOURS.get(stage, "#6c757d")
        )
        left = [a + b for a, b in zip(left, values, strict=True)]
    axes.scatter(
        [previous_by_model[m] for m in frame.index],
        frame.index,
        marker="|",
        s=300,
        color="black",
        label="last month",
        zorder=3,
    )
    money_axis(axes.xaxis, currency, "Cost this month")
    axes.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    axes.grid(axis="x", alpha=0.25)
    axes.spines[["top", "right"]].set_visible(False)
    axes.tick_params(labelsize=8)
    axes.xaxis.label.set_fontsize(9)
