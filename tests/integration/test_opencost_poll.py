"""The scheduled poll reads OpenCost (MLCOST_POLL_SOURCES=opencost:http://...)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from bot.config import Settings
from bot.db.engine import session_scope
from bot.db.schema import DailySpend
from bot.notify.sources import configured_sources
from bot.poll.cycle import fetch_sources
from bot.poll.plan import CycleReport
from tests.integration.test_ingest_opencost import K8S_REGISTRY, cluster_days
from tests.support.database import migrated
from tests.support.opencost import Answer, opencost_server
from tests.support.sample_registry import load_registry

TODAY = dt.date(2026, 11, 6)


def ledger_sum(factory: sessionmaker[Session]) -> tuple[int, object]:
    with session_scope(factory) as session:
        count, total = session.execute(select(func.count(), func.sum(DailySpend.billed_cost))).one()
        return count, total


def test_a_poll_reads_its_lookback_window_from_opencost_and_fails_cleanly(
    database_url: str,
) -> None:
    answer = Answer(body=cluster_days())
    with migrated(database_url) as (_engine, factory), opencost_server(answer) as url:
        with session_scope(factory) as session:
            load_registry(session, K8S_REGISTRY)
        settings = Settings(
            database_url=database_url, poll_sources=f"opencost:{url}", poll_lookback_days=3
        )
        [source] = configured_sources(settings, TODAY, model_tag_key="ml:model")
        assert source.name == f"opencost:{url}" and source.kind == "opencost"

        report = CycleReport(as_of=TODAY)
        fetch_sources(factory, [source], report)
        assert report.fetch_errors == []
        [fetched] = report.fetched
        assert fetched.reconciled and fetched.totals[0].idle > 0
        [(path, params)] = answer.requests
        assert path == "/allocation"
        assert params["window"] == "2026-11-03T00:00:00Z,2026-11-06T00:00:00Z"
        assert params["includeIdle"] == "true" and params["shareIdle"] == "false"
        before = ledger_sum(factory)
        assert before[0] > 0

        for status, body, message in (
            (500, "prometheus query failed", "answered HTTP 500: prometheus query failed"),
            (200, "{truncated", "not JSON"),
        ):
            answer.status, answer.body = status, body
            failed = CycleReport(as_of=TODAY)
            fetch_sources(factory, [source], failed)
            [error] = failed.fetch_errors
            assert message in error and error.startswith("opencost: http://127.0.0.1")
            assert ledger_sum(factory) == before

    refused = CycleReport(as_of=TODAY)
    with migrated(database_url) as (_engine, factory):
        fetch_sources(factory, [source], refused)  # the server is gone
        [error] = refused.fetch_errors
        assert "cannot reach" in error
        assert ledger_sum(factory) == before
