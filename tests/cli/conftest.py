"""One `mlcost demo` run per test session, shared by the tests that only read what it left."""

from __future__ import annotations

import contextlib
import io
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.cli import main
from tests.conftest import without_real_credentials


@dataclass(frozen=True)
class DemoRun:
    """What `mlcost demo --dir FOLDER` printed, and the folder it wrote (never changed after)."""

    folder: Path
    out: str


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """Run the demo once (a few seconds); tests that change its database use `demo_copy`."""
    folder = tmp_path_factory.mktemp("demo-shared") / "demo"
    buffer = io.StringIO()  # capsys is per test; this fixture is per session
    with pytest.MonkeyPatch.context() as monkeypatch, contextlib.redirect_stdout(buffer):
        without_real_credentials(monkeypatch)  # the autouse fixture has not run yet
        assert main(["demo", "--dir", str(folder)]) == 0
    return DemoRun(folder, buffer.getvalue())


@pytest.fixture
def demo_copy(demo_run: DemoRun, tmp_path: Path) -> Iterator[Path]:
    """A copy of the shared demo's folder (its SQLite database and charts) for this test alone."""
    folder = tmp_path / "demo"
    shutil.copytree(demo_run.folder, folder)
    yield folder
