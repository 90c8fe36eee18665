"""The economics message: the release gate's result, posted by `mlcost gate MODEL --post`."""

from __future__ import annotations

from dataclasses import dataclass

from bot.economics.gate import GateResult


@dataclass(frozen=True)
class GateResultMessage:
    """The release gate's result for one model (`mlcost gate MODEL --post`), for its channel."""

    result: GateResult
