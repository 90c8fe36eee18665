"""The chaos tests: real serve processes against a faulty Slack (run by the normal `pytest`).

Under `pytest -n auto --dist loadgroup` they share the xdist group "serve": one worker runs them
one after another, so two of them never fight for the CPUs with their own serve processes.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "chaos: real `mlcost serve` processes against a faulty Slack (slow, ~1 min)"
    )
