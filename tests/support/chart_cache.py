"""Render each distinct chart once per test session: the same input gives the same PNG."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

# The functions that draw (below the lock and rc_context their callers hold), by module.
RENDERERS = {
    "bot.slack.charts.spend_chart": "_render",
    "bot.slack.charts.review": "_render_review_chart",
}


def remembering(render: Callable[..., bytes]) -> Callable[..., bytes]:
    """Wrap a renderer so that a repeated input returns the PNG it drew the first time."""
    drawn: dict[str, bytes] = {}
    lock = threading.Lock()

    def render_once(*args: Any, **kwargs: Any) -> bytes:
        key = repr((args, sorted(kwargs.items())))
        with lock:
            if key in drawn:
                return drawn[key]
        png = render(*args, **kwargs)
        with lock:
            drawn[key] = png
        return png

    return render_once


@contextmanager
def charts_rendered_once() -> Iterator[None]:
    """Within the block, every chart renderer draws a given input only once."""
    import importlib

    with pytest.MonkeyPatch.context() as patch:
        for module_name, name in RENDERERS.items():
            module = importlib.import_module(module_name)
            patch.setattr(module, name, remembering(getattr(module, name)))
        yield
