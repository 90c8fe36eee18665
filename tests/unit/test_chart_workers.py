"""How many chart-render processes `mlcost serve` starts."""

from __future__ import annotations

import pytest

from bot.cli.serve_cmd import chart_workers
from bot.config import Settings


def test_the_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLCOST_CHART_WORKERS", "3")
    assert chart_workers(Settings()) == 3


def test_by_default_one_fewer_than_the_cpus_serve_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLCOST_CHART_WORKERS", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 64)  # the host's, not this process's
    assert chart_workers(Settings()) == 3
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0}, raising=False)
    assert chart_workers(Settings()) == 1


@pytest.mark.parametrize("bad", ["0", "-1", "many"])
def test_a_bad_count_is_refused(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("MLCOST_CHART_WORKERS", bad)
    with pytest.raises(ValueError, match="MLCOST_CHART_WORKERS"):
        Settings()
