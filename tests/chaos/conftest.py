"""The chaos tests: real serve processes against a faulty Slack (run by the normal `pytest`)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "chaos: real `mlcost serve` processes against a faulty Slack (slow, ~1 min)"
    )
