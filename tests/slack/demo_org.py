"""The bundled demo organisation (12 models, Sept–Nov 2026) served once per test module."""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.ingest.ledger import ingest
from bot.ingest.sources.focus import FocusSource
from bot.registry.spec import load_registry_file
from bot.registry.sync import import_registry
from tests.conftest import create_database_url, drop_database_url
from tests.slack.conftest import SlackHarness, seed, start_app
from tests.slack.fake_slack import FakeSlack

DEMO_DATA = Path(__file__).resolve().parents[2] / "bot" / "demo" / "data"
NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def seed_demo(session: object) -> None:
    """Import the demo registry and its three months of FOCUS billing."""
    from sqlalchemy.orm import Session

    assert isinstance(session, Session)
    import_registry(load_registry_file(DEMO_DATA / "registry.yaml"), session=session, actor="test")
    ingest(FocusSource([str(DEMO_DATA / "billing-focus.csv.gz")]), session=session)


@pytest.fixture(scope="module")
def demo_slack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlackHarness]:
    """The real app on the demo organisation; tests must not change the data."""
    url = create_database_url(tmp_path_factory.mktemp("demo"))
    fake = FakeSlack().start()
    harness, stop = start_app(url, fake, lambda: NOW)
    seed(harness, seed_demo)
    yield harness
    stop()
    fake.stop()
    drop_database_url(url)


@pytest.fixture
def demo(demo_slack: SlackHarness) -> SlackHarness:
    """The module's demo app with the fake's call record cleared."""
    demo_slack.fake.calls.clear()
    return demo_slack


def png_size(data: bytes) -> tuple[int, int]:
    """Return (width, height) from a PNG's IHDR chunk, checking the signature."""
    assert data[:8] == PNG_SIGNATURE, "not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    width, height = struct.unpack(">II", data[16:24])
    return width, height
