"""A scheduled job is declared by its domain: docs/layout.md's "Adding a scheduled job", run as
written, gives a job the scheduler registers and runs, and one entry adds it to the root's list."""

from __future__ import annotations

import datetime as dt
import inspect
import logging
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from bot import bootstrap
from bot.bootstrap import AppServices
from bot.config import Settings
from bot.db.engine import session_scope
from bot.db.schema import OutboxMessage
from bot.notify.schedule import DailyAt, JobSpec
from bot.notify.scheduler import build_scheduler, describe_first_runs, register_jobs
from tests.support.database import migrated
from tests.support.outbox import put_one

DOCS = Path(__file__).resolve().parents[2] / "docs" / "layout.md"
NOW = dt.datetime(2026, 12, 7, 8, tzinfo=dt.UTC)


def documented_blocks() -> tuple[str, str]:
    """Return the example module and the root's function from docs/layout.md."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("\n## Adding a scheduled job\n", 1)[1].split("\n## ", 1)[0]
    module, root = [block.split("```", 1)[0] for block in section.split("```python\n")[1:]]
    return module, root


def documented_module() -> dict[str, Any]:
    """Run the example module as written; return its namespace."""
    module, _ = documented_blocks()
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(module, str(DOCS), "exec"), namespace)
    return namespace


def test_the_documented_job_is_declared_registered_and_run(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    example = documented_module()
    settings = Settings(MLCOST_TIMEZONE="Europe/Berlin")
    with migrated(database_url) as (_engine, factory):
        put_one(factory, "waited", text="queued two days ago")
        put_one(factory, "fresh", text="queued now")
        with session_scope(factory) as session:
            session.execute(
                update(OutboxMessage)
                .where(OutboxMessage.dedupe_key == "waited")
                .values(created_at=NOW - dt.timedelta(days=2))
            )
            session.execute(
                update(OutboxMessage)
                .where(OutboxMessage.dedupe_key == "fresh")
                .values(created_at=NOW - dt.timedelta(hours=1))
            )
        (job,) = example["backlog_jobs"](settings, session_factory=factory, clock=lambda: NOW)
        assert isinstance(job, JobSpec)
        assert (job.id, job.schedule) == ("outbox-backlog", DailyAt(8, 0, "Europe/Berlin"))
        with caplog.at_level(logging.WARNING, logger="docs_example"):
            assert job.run() == 1
        assert "1 Slack messages have waited in the outbox for over a day" in caplog.text

    scheduler = build_scheduler(settings)
    register_jobs(scheduler, [job])
    (registered,) = scheduler.get_jobs()
    assert registered.id == "outbox-backlog"
    assert str(registered.trigger).startswith("cron[hour='8', minute='0'")
    assert describe_first_runs([job]) == ""  # it waits for its hour, not for a leader to start


def test_the_documented_root_is_the_real_one_plus_the_jobs_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, root = documented_blocks()
    lines = root.splitlines()[1:]
    (imported,) = [i for i, line in enumerate(lines) if "import backlog_jobs" in line]
    (call,) = [i for i, line in enumerate(lines) if "*backlog_jobs(" in line]
    end = call if lines[call].endswith("),") else lines.index("        ),", call)
    added = {imported, *range(call, end + 1)}  # the import and the entry in the list
    as_written = [line for i, line in enumerate(lines) if i not in added]
    assert as_written == inspect.getsource(bootstrap.scheduled_jobs).splitlines()

    example = types.ModuleType("bot.notify.backlog")
    exec(compile(documented_blocks()[0], str(DOCS), "exec"), example.__dict__)
    monkeypatch.setitem(sys.modules, "bot.notify.backlog", example)
    namespace: dict[str, Any] = {**vars(bootstrap)}
    exec(compile(root, str(DOCS), "exec"), namespace)
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'x.db'}")
    services = AppServices(settings=settings, session_factory=None, client=None)  # type: ignore[arg-type]
    ids = [job.id for job in namespace["scheduled_jobs"](services)]
    assert ids == [*(job.id for job in bootstrap.scheduled_jobs(services)), "outbox-backlog"]
