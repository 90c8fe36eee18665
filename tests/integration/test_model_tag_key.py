"""Cost Explorer groups by one model tag key: the registry's, whichever path polls it."""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path
from typing import Any

import pytest

from bot.bootstrap import build_services
from bot.cli import main
from bot.config import Settings
from bot.db.engine import session_scope
from bot.poll.jobs import poll_sources
from tests.support.database import migrated
from tests.support.sample_registry import load_registry

# The settings default to ["ml:model", "model"]; the registry names another key first.
REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: recsys, team: ranking, owners: [U0AAA111]}
admins: [U0ADMIN01]
attribution:
  model_tag_keys: ["team:model-name", "ml:model"]
"""
REGISTRY_KEY = "team:model-name"


class RecordingCostExplorer:
    """A Cost Explorer client that answers every request with no data and keeps the requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def get_cost_and_usage(self, **params: Any) -> dict[str, Any]:
        self.requests.append(params)
        return {"ResultsByTime": [], "GroupDefinitions": []}

    def tag_keys(self) -> list[str]:
        return [g["Key"] for r in self.requests for g in r["GroupBy"] if g["Type"] == "TAG"]


def test_the_scheduled_poll_and_the_cli_group_cost_explorer_by_the_registrys_tag_key(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(database_url=database_url, MLCOST_POLL_SOURCES="cost-explorer")
    assert settings.model_tag_keys[0] != REGISTRY_KEY
    scheduled, cli = RecordingCostExplorer(), RecordingCostExplorer()
    with migrated(database_url) as (_engine, factory):
        with session_scope(factory) as session:
            load_registry(session, REGISTRY)
        services = build_services(settings, factory, aws=lambda *_args, **_kw: scheduled)
        (source,) = poll_sources(
            session_factory=factory,
            settings=settings.poll,
            attribution=settings.attribution,
            aws=services.aws,
            today=dt.date(2026, 12, 2),
        )
        source.read(set())

    monkeypatch.setattr(
        "bot.cli.context.build_services",
        functools.partial(build_services, aws=lambda *_args, **_kw: cli),
    )
    db = ["--database-url", database_url]
    args = ["ingest", "cost-explorer", "--start", "2026-11-25", "--end", "2026-12-02"]
    assert main([*db, *args]) == 0

    assert cli.tag_keys() == [REGISTRY_KEY]
    assert scheduled.tag_keys() == [REGISTRY_KEY]
