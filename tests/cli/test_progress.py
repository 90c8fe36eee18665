"""Progress bars: drawn on a terminal, absent otherwise or with --quiet (issue 12, item 6)."""

from __future__ import annotations

import ast
import io
import os
import shutil
from pathlib import Path

import pytest

from bot.cli import main, progress
from bot.ingest.sources.focus import FocusSource

DATA = Path(__file__).resolve().parents[1] / "data"
FOCUS = DATA / "focus_sample.csv"  # 1,000 rows
ROOT = Path(__file__).resolve().parents[2]


class FakeTty(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def final_line(drawn: str) -> str:
    """Return the last redraw of the last line (what the terminal shows at the end)."""
    return drawn.rstrip("\n").split("\n")[-1].split("\r")[-1].rstrip()


def test_a_bar_shows_files_rows_and_rate_then_ends_its_line() -> None:
    out, clock = FakeTty(), Clock()
    with progress.task("ingest cur", stream=out, clock=clock) as bar:
        bar.set_total(4, "files")
        clock.now += 1
        bar.advance(rows=1_500)
        bar.advance(1)
        clock.now += 1
        bar.advance(1, rows=2_500)
    drawn = out.getvalue()
    assert drawn.startswith("\ringest cur")
    assert drawn.endswith("\n") and drawn.count("\n") == 1
    assert final_line(drawn) == (
        "ingest cur  [########........]  2/4 files  4,000 rows  2,000 rows/s  0:02"
    )


def test_redraws_are_throttled_but_the_final_state_is_always_drawn() -> None:
    out, clock = FakeTty(), Clock()
    with progress.task("ingest focus", total=1000, unit="files", stream=out, clock=clock) as bar:
        for _ in range(1000):
            bar.advance(1, rows=10)
            clock.now += 0.001  # a thousand updates within one second
    drawn = out.getvalue()
    assert drawn.count("\r") <= 1 + 10 + 1  # first, one per 0.1 s, final
    assert "1,000/1,000 files  10,000 rows" in final_line(drawn)


def test_a_redraw_pads_over_a_longer_previous_line() -> None:
    out, clock = FakeTty(), Clock()
    bar = progress.Bar("poll", stream=out, enabled=True, clock=clock)
    bar.advance(rows=123_456_789)
    bar.rows = 0  # the next line is shorter: spaces must cover the old one
    bar.finish()
    first, second = out.getvalue().rstrip("\n").split("\r")[1:]
    assert second.rstrip() == "poll  0:00"
    assert len(second) == len(first)


def test_a_bar_never_wraps_a_narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback: os.terminal_size((50, 20)))
    out = FakeTty()
    with progress.task("ingest cur", total=3, unit="files", stream=out) as bar:
        bar.advance(1, rows=123_456_789)
    for line in out.getvalue().replace("\n", "").split("\r"):
        assert len(line) <= 49
    assert "1/3 files" in final_line(out.getvalue())  # the counts stay; the picture goes


def test_nothing_is_drawn_when_the_stream_is_not_a_terminal() -> None:
    out = io.StringIO()
    with progress.task("ingest cur", total=2, unit="files", stream=out) as bar:
        bar.advance(2, rows=10)
    assert out.getvalue() == ""
    assert (bar.done, bar.rows) == (2, 10)  # it still counts


def test_quiet_silences_a_terminal_too() -> None:
    out = FakeTty()
    progress.set_quiet(True)
    try:
        with progress.task("ingest cur", total=2, stream=out) as bar:
            bar.advance(2, rows=10)
    finally:
        progress.set_quiet(False)
    assert out.getvalue() == ""


def test_an_error_inside_the_task_still_ends_the_line() -> None:
    out = FakeTty()
    with pytest.raises(RuntimeError), progress.task("ingest cur", stream=out) as bar:
        bar.advance(rows=5)
        raise RuntimeError("boom")
    assert out.getvalue().endswith("\n")


class Recorder:
    """A Progress that records what a source reported."""

    def __init__(self) -> None:
        self.totals: list[tuple[int | None, str | None]] = []
        self.done = 0
        self.rows = 0

    def set_total(self, total: int | None, unit: str | None = None) -> None:
        self.totals.append((total, unit))

    def advance(self, done: int = 0, rows: int = 0) -> None:
        self.done += done
        self.rows += rows


def test_a_file_source_reports_its_files_and_rows(tmp_path: Path) -> None:
    for name in ("a.csv", "b.csv"):
        shutil.copy(FOCUS, tmp_path / name)
    recorder = Recorder()
    data = FocusSource([str(tmp_path)]).read(set(), recorder)
    assert recorder.totals == [(2, "files")]
    assert recorder.done == 2
    assert recorder.rows == data.rows_read == 2_000


def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tty: bool, *argv: str
) -> tuple[int, str, str]:
    err = FakeTty() if tty else io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    code = main(list(argv))
    return code, capsys.readouterr().out, err.getvalue()


def test_ingest_draws_a_bar_on_a_terminal_and_still_reconciles(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(
        monkeypatch, capsys, True, "--database-url", database_url, "ingest", "focus", str(FOCUS)
    )
    assert code == 0
    assert "read 1,000 rows" in out and "reconciliation OK" in out
    assert "\r" not in out  # the bar is on stderr only
    shown = final_line(err)
    assert shown.startswith("ingest focus  [################]  1/1 files  1,000 rows")
    assert "rows/s" in shown


@pytest.mark.parametrize("quiet", [["--quiet"], ["-q"]])
def test_ingest_is_silent_with_quiet_and_when_not_a_terminal(
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    quiet: list[str],
) -> None:
    db = ["--database-url", database_url]
    code, out, err = run_cli(monkeypatch, capsys, True, *db, "ingest", "focus", str(FOCUS), *quiet)
    assert code == 0 and "reconciliation OK" in out
    assert err == ""
    code, out, err = run_cli(monkeypatch, capsys, False, *db, "ingest", "focus", str(FOCUS))
    assert code == 0 and "reconciliation OK" in out
    assert err == ""


def test_poll_shows_each_source_and_step(
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    export = tmp_path / "focus-export"
    export.mkdir()
    shutil.copy(FOCUS, export / "part-0.csv")
    monkeypatch.setenv("MLCOST_POLL_SOURCES", f"focus:{export}")
    monkeypatch.setenv("COLUMNS", "400")  # the label holds the long temporary path
    code, out, err = run_cli(monkeypatch, capsys, True, "--database-url", database_url, "poll")
    assert code == 0, out + err
    assert "read 1,000 rows" in out
    lines = [final_line(line) for line in err.split("\n") if line.startswith("\r")]
    assert lines[0].startswith(f"poll: read focus:{export}  [")
    assert "1/1 sources  1,000 rows" in lines[0]  # sources are read side by side: one bar
    assert lines[1].startswith(f"poll: write focus:{export}  ")
    assert lines[2].startswith("poll: check budgets, anomalies, unallocated, waste as of ")
    code, out, err = run_cli(
        monkeypatch, capsys, True, "--database-url", database_url, "poll", "--quiet"
    )
    assert code == 0 and err == ""


def test_the_demo_counts_its_steps_on_stderr_when_its_output_is_redirected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(monkeypatch, capsys, True, "demo", "--dir", str(tmp_path / "d"))
    assert code == 0
    assert "== 1. Registry" in out and "\r" not in out
    assert final_line(err).startswith("mlcost demo  [################]  15/15 steps")


def test_on_a_terminal_the_demo_s_headings_are_its_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With stdout on the terminal too, a bar would be drawn over by the sections: none is."""
    seen: list[progress.Bar] = []

    def fake_demo(services: object, folder: Path, bar: progress.Bar) -> int:
        bar.advance(1)
        seen.append(bar)
        return 0

    monkeypatch.setattr("bot.demo.run.run_demo", fake_demo)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    code, _, err = run_cli(monkeypatch, capsys, True, "demo", "--dir", str(tmp_path / "d"))
    assert code == 0 and seen and not seen[0].enabled
    assert err == ""


def test_the_domain_never_imports_the_command_line() -> None:
    for package in ("ingest", "notify"):
        for path in (ROOT / "bot" / package).rglob("*.py"):
            tree = ast.parse(path.read_text())
            names = [
                node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            ] + [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
            assert not [n for n in names if n.startswith("bot.cli")], path


def test_quiet_ends_with_the_command_that_asked_for_it(tmp_path: Path) -> None:
    # `main` is also called in-process (tests, the demo): a -q run must not silence what follows
    assert main(["--database-url", f"sqlite:///{tmp_path / 'q.db'}", "-q", "audit"]) == 0
    out, clock = FakeTty(), Clock()
    with progress.task("ingest cur", stream=out, clock=clock) as bar:
        bar.advance(1, rows=10)
    assert out.getvalue().startswith("\ringest cur")
