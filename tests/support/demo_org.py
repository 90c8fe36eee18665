"""The bundled demo organisation (12 models, Sept–Nov 2026) and a PNG size reader."""

from __future__ import annotations

import datetime as dt
import struct
from pathlib import Path

from bot.ingest.ledger import ingest
from bot.ingest.sources.focus import FocusSource
from bot.registry.spec import load_registry_file
from bot.registry.sync import import_registry

DEMO_DATA = Path(__file__).resolve().parents[2] / "bot" / "demo" / "data"
NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TINY_PNG = PNG_SIGNATURE + b"\x00" * 16  # stands in for a chart where its pixels do not matter


def seed_demo(session: object) -> None:
    """Import the demo registry and its three months of FOCUS billing."""
    from sqlalchemy.orm import Session

    assert isinstance(session, Session)
    import_registry(load_registry_file(DEMO_DATA / "registry.yaml"), session=session, actor="test")
    ingest(FocusSource([str(DEMO_DATA / "billing-focus.csv.gz")]), session=session)


def png_size(data: bytes) -> tuple[int, int]:
    """Return (width, height) from a PNG's IHDR chunk, checking the signature."""
    assert data[:8] == PNG_SIGNATURE, "not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    width, height = struct.unpack(">II", data[16:24])
    return width, height
