"""The tag keys that carry model, stage and team: the registry's `attribution`, else the settings.

MLCOST_MODEL_TAG_KEYS, MLCOST_STAGE_TAG_KEYS and MLCOST_TEAM_TAG_KEYS are documented as the keys
attribution reads when the registry does not name its own. Ingestion read only the registry's
(with defaults of its own), so a charge tagged under the configured key was booked unallocated.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.cli import main
from bot.config import Settings
from bot.db.engine import session_scope
from bot.db.schema import DailySpend
from bot.waste.jobs import scan_policy
from bot.waste.pricing import PriceTable
from bot.waste.scan.context import LedgerView, ScanContext
from tests.support.cli import import_registry_file, write_focus_rows
from tests.support.database import migrated

REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
  - {name: search, channel: C0SEARCH, owners: [U0BBB222]}
models:
  - {name: recsys, team: ranking, owners: [U0AAA111]}
admins: [U0ADMIN01]
"""


def charges(path: Path, tags: list[dict[str, str]]) -> Path:
    return write_focus_rows(
        path,
        (
            {
                "BilledCost": "10.00",
                "EffectiveCost": "10.00",
                "ListCost": "10.00",
                "ResourceId": f"i-{index}",
                "Id": str(800000 + index),
                "Tags": json.dumps(tag),
            }
            for index, tag in enumerate(tags)
        ),
    )


def ledger(database_url: str) -> list[tuple[str | None, str | None, str | None]]:
    with migrated(database_url) as (_engine, factory), session_scope(factory) as session:
        rows = session.execute(
            select(DailySpend.model, DailySpend.stage, DailySpend.team).order_by(
                DailySpend.model_tag_value
            )
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]


def test_ingestion_reads_the_tag_keys_the_settings_name(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLCOST_MODEL_TAG_KEYS", "project")
    monkeypatch.setenv("MLCOST_STAGE_TAG_KEYS", "phase")
    monkeypatch.setenv("MLCOST_TEAM_TAG_KEYS", "squad")
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    export = charges(
        tmp_path / "focus.csv",
        [{"project": "recsys", "phase": "training"}, {"project": "unknown", "squad": "search"}],
    )
    assert main([*db, "ingest", "focus", str(export)]) == 0
    assert ledger(database_url) == [
        ("recsys", "training", "ranking"),
        (None, "other", "search"),
    ]


def test_the_registrys_attribution_wins_over_the_settings(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLCOST_MODEL_TAG_KEYS", "project")
    monkeypatch.setenv("MLCOST_STAGE_TAG_KEYS", "phase")
    db = import_registry_file(
        database_url,
        tmp_path,
        REGISTRY + 'attribution:\n  model_tag_keys: ["ml:model"]\n',
    )
    export = charges(
        tmp_path / "focus.csv",
        [{"ml:model": "recsys", "phase": "training"}, {"project": "recsys"}],
    )
    assert main([*db, "ingest", "focus", str(export)]) == 0
    # the registry names the model key; it says nothing of stages, so the settings' key holds
    assert sorted(ledger(database_url), key=str) == sorted(
        [("recsys", "training", "ranking"), (None, "other", None)], key=str
    )


def test_the_resource_scan_reads_owners_by_the_same_keys_as_ingestion(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLCOST_TEAM_TAG_KEYS", "squad")
    import_registry_file(
        database_url, tmp_path, REGISTRY + 'attribution:\n  model_tag_keys: ["project"]\n'
    )
    settings = Settings(database_url=database_url)
    with migrated(database_url) as (_engine, factory), session_scope(factory) as session:
        policy = scan_policy(session=session, settings=settings.scan)
    assert policy.model_tag_keys == ("project",)  # the registry's, not the settings' ml:model
    assert policy.team_tag_keys == ("squad",)  # the registry names none: the settings'
    context = ScanContext(
        account="123456789012",
        now=dt.datetime(2026, 11, 30, tzinfo=dt.UTC),
        policy=policy,
        ledger=LedgerView(models={"recsys": "ranking"}),
        prices=PriceTable([]),
    )
    assert context.owner((("project", "RecSys"),)) == ("RecSys", "recsys", "ranking")
    assert context.owner((("ml:model", "recsys"), ("squad", "search"))) == (
        None,
        None,
        "search",
    )
