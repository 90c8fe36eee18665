"""How many chart-render processes `mlcost serve` starts."""

from __future__ import annotations

from pathlib import Path

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
    monkeypatch.setattr("bot.cli.serve_cmd.cgroup_memory_limit", lambda: None)
    assert chart_workers(Settings()) == 3
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0}, raising=False)
    assert chart_workers(Settings()) == 1


@pytest.mark.parametrize("bad", ["0", "-1", "many"])
def test_a_bad_count_is_refused(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("MLCOST_CHART_WORKERS", bad)
    with pytest.raises(ValueError, match="MLCOST_CHART_WORKERS"):
        Settings()


MB = 2**20


@pytest.mark.parametrize(
    ("limit_mb", "max_charts", "expected"),
    [
        (512, "500", 1),  # 512 MB: serve and one worker, with room for its replacement
        (512, "0", 2),  # never replaced: two workers fit beside serve
        (2048, "500", 7),  # (1843 - 160) // 240
        (256, "500", 1),  # never fewer than one
        (None, "500", 7),  # no limit: the CPUs decide
    ],
)
def test_by_default_no_more_workers_than_the_memory_limit_holds(
    monkeypatch: pytest.MonkeyPatch, limit_mb: int | None, max_charts: str, expected: int
) -> None:
    monkeypatch.delenv("MLCOST_CHART_WORKERS", raising=False)
    monkeypatch.setenv("MLCOST_CHART_WORKER_MAX_CHARTS", max_charts)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.setattr(
        "bot.cli.serve_cmd.cgroup_memory_limit", lambda: None if limit_mb is None else limit_mb * MB
    )
    assert chart_workers(Settings()) == expected


def test_the_memory_limit_is_read_from_cgroup_v2_then_v1(tmp_path: Path) -> None:
    from bot.cli.serve_cmd import cgroup_memory_limit

    assert cgroup_memory_limit(tmp_path) is None  # not in a cgroup that says
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert cgroup_memory_limit(tmp_path) is None  # v1's "no limit"
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("1073741824\n")
    assert cgroup_memory_limit(tmp_path) == 2**30
    (tmp_path / "memory.max").write_text("max\n")
    assert cgroup_memory_limit(tmp_path) is None  # v2 wins, and says unlimited
    (tmp_path / "memory.max").write_text("536870912\n")
    assert cgroup_memory_limit(tmp_path) == 512 * MB


def test_a_negative_replacement_count_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLCOST_CHART_WORKER_MAX_CHARTS", "-5")
    with pytest.raises(ValueError, match="MLCOST_CHART_WORKER_MAX_CHARTS"):
        Settings()
