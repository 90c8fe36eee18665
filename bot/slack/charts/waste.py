"""The waste chart: each finding's monthly cost as a bar, coloured by kind, largest on top.

A bar is labelled with what it is about on one line; its kind is its colour, named in the legend.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bot.money import format_money_places, shown_breakdown
from bot.periods import day_words

WASTE_WIDTH_IN, WASTE_HEIGHT_IN, WASTE_DPI = 10, 5, 100
WASTE_WIDTH_PX, WASTE_HEIGHT_PX = WASTE_WIDTH_IN * WASTE_DPI, WASTE_HEIGHT_IN * WASTE_DPI
MAX_BARS = 10  # the rest are summed into one bar
KIND_COLOURS = ["#c1121f", "#e76f51", "#f4a261", "#e9c46a", "#2a9d8f", "#457b9d", "#1d3557"]
MORE_COLOUR = "#b0b0b0"
LABEL_CHARS = 40
# Slack previews an image in the message at most 360 px high, here 0.72 of the PNG: text of
# 11 points (15 px at 100 dpi) is still about 11 px there, tick labels included
PREVIEW_HEIGHT_PX = 360
MIN_FONT_PT = 11


@dataclass(frozen=True)
class WasteBar:
    """One finding to draw: its kind's label, what it is about, its monthly cost."""

    kind: str
    subject: str
    monthly_cost: Decimal


def render_waste_chart(bars: Sequence[WasteBar], *, currency: str, as_of: dt.date) -> bytes:
    """Render the waste chart to a PNG of WASTE_WIDTH_PX x WASTE_HEIGHT_PX."""
    from matplotlib import rc_context

    # subjects come from billing tags: `$...$` must not be parsed as math
    with rc_context({"text.parse_math": False}):
        out = io.BytesIO()
        waste_figure(bars, currency=currency, as_of=as_of).savefig(out, format="png", dpi=WASTE_DPI)
        return out.getvalue()


def waste_figure(bars: Sequence[WasteBar], *, currency: str, as_of: dt.date) -> Any:
    """Draw a bar of monthly cost per finding, the largest on top, labelled and coloured by kind."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from bot.slack.charts.ticks import money_axis

    fig = Figure(figsize=(WASTE_WIDTH_IN, WASTE_HEIGHT_IN), dpi=WASTE_DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ranked = sorted(bars, key=lambda b: (-b.monthly_cost, b.kind, b.subject))
    shown, rest = ranked[:MAX_BARS], ranked[MAX_BARS:]
    total = sum((b.monthly_cost for b in bars), Decimal(0))
    kinds = list(dict.fromkeys(b.kind for b in shown))
    colour = {kind: KIND_COLOURS[i % len(KIND_COLOURS)] for i, kind in enumerate(kinds)}
    # one line per bar, what it is about; its kind is its colour, named in the legend
    labels = [_clip(b.subject) for b in shown]
    costs = [b.monthly_cost for b in shown]
    colours = [colour[b.kind] for b in shown]
    if rest:
        labels.append(f"{len(rest)} more {findings_word(len(rest))}")
        costs.append(sum((b.monthly_cost for b in rest), Decimal(0)))
        colours.append(MORE_COLOUR)
    # the bars' amounts as labelled add up to the total in the title
    places, shown_costs = shown_breakdown(costs, total)
    positions = list(range(len(labels)))[::-1]  # the first (largest) at the top
    ax.barh(positions, [float(c) for c in costs], color=colours, height=0.6)
    ax.set_yticks(positions, labels, fontsize=MIN_FONT_PT)
    for y, cost, shown_cost in zip(positions, costs, shown_costs, strict=True):
        ax.annotate(
            f"{format_money_places(shown_cost, currency, places)}/month",
            (float(cost), y),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=MIN_FONT_PT,
        )
    largest = float(max(costs, default=Decimal(0)))
    ax.set_xlim(0, largest * 1.3 if largest > 0 else 1)  # room for the amounts
    ax.set_ylim(-0.7, max(len(labels), 1) - 0.3)
    money_axis(ax.xaxis, currency, "Monthly cost at the last 7 days' rate")
    ax.grid(axis="x", alpha=0.25)
    ax.spines[["top", "right"]].set_visible(False)
    ax.tick_params(axis="x", labelsize=MIN_FONT_PT)
    ax.xaxis.label.set_fontsize(MIN_FONT_PT)
    if kinds:
        from matplotlib.patches import Patch

        fig.legend(
            handles=[Patch(facecolor=colour[kind], label=_clip(kind)) for kind in kinds],
            loc="upper left",
            bbox_to_anchor=(0.005, 0.93),
            ncols=min(3, len(kinds)),
            fontsize=MIN_FONT_PT,
            frameon=False,
        )
    if not labels:
        ax.set_yticks([])
        ax.text(
            0.5,
            0.5,
            "No waste found",
            transform=ax.transAxes,
            ha="center",
            color="#555555",
            fontsize=MIN_FONT_PT,
        )
    fig.suptitle(
        f"Waste as of {day_words(as_of, year=True)}: about "
        f"{format_money_places(total, currency, places)}/month "
        f"in {len(bars)} {findings_word(len(bars))}",
        x=0.01,
        ha="left",
        fontsize=15,
        fontweight="bold",
    )
    legend_rows = -(-len(kinds) // 3)
    fig.tight_layout(rect=(0, 0, 1, 0.99 - 0.055 * legend_rows))
    return fig


def findings_word(count: int) -> str:
    """Return `finding` or `findings` for a count."""
    return "finding" if count == 1 else "findings"


def _clip(text: str) -> str:
    """Shorten a label in its middle: a resource id's start and end both tell it apart."""
    if len(text) <= LABEL_CHARS:
        return text
    head = (LABEL_CHARS - 1) // 2
    return text[:head] + "…" + text[-(LABEL_CHARS - 1 - head) :]
