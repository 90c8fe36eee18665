"""A bill with more groups than memory should hold is summed on disk, to the same ledger."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend
from bot.errors import IngestError
from bot.ingest.ledger import ingest
from bot.ingest.sources import files
from bot.ingest.sources.cur import CurSource
from bot.ingest.sources.spill import ChargeSpill
from tests.conftest import DATA
from tests.support.ledger import assert_rollup_matches_ledger
from tests.support.sample_registry import load_registry

CUR_MONTHS = [str(p) for p in sorted(DATA.glob("*2018-WorkshopCUR-00001.snappy.parquet"))]
COLUMNS = [c.name for c in DailySpend.__table__.columns if c.name not in ("id", "run_id")]


def ledger(session: Session) -> list[tuple[Any, ...]]:
    rows = session.execute(select(*(getattr(DailySpend, c) for c in COLUMNS))).all()
    return sorted((tuple(r) for r in rows), key=repr)


def test_spilled_groups_give_the_ledger_and_scopes_held_in_memory_give(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_registry(session)
    in_memory = ingest(CurSource(CUR_MONTHS), session=session)
    expected = ledger(session)

    written: list[int] = []
    real_write = ChargeSpill.write

    def counting(self: ChargeSpill, charges: pa.Table) -> None:
        written.append(charges.num_rows)
        real_write(self, charges)

    monkeypatch.setattr(ChargeSpill, "write", counting)
    monkeypatch.setattr(files, "SPILL_AFTER_GROUPS", 2_000)
    before = set(Path(tempfile.gettempdir()).glob("mlcost-spill-*"))
    spilled = ingest(CurSource(CUR_MONTHS), session=session)

    # the groups went to disk in parts, none of them near the whole
    assert len(written) > 3 and max(written) < in_memory.rows_written / 3
    assert set(Path(tempfile.gettempdir()).glob("mlcost-spill-*")) == before  # and were removed
    assert ledger(session) == expected
    assert (spilled.rows_read, spilled.rows_written) == (334_911, in_memory.rows_written)
    assert spilled.scopes == in_memory.scopes
    assert spilled.totals == in_memory.totals
    assert spilled.replaced_rows == in_memory.rows_written
    assert spilled.reconciled
    assert_rollup_matches_ledger(session)


def test_the_spill_folder_is_removed_when_an_ingestion_fails(
    session: Session, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(files, "SPILL_AFTER_GROUPS", 2_000)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spills: list[ChargeSpill] = []  # held here, so no garbage collection removes their folders
    real_init = ChargeSpill.__init__

    def keeping(self: ChargeSpill, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        spills.append(self)

    monkeypatch.setattr(ChargeSpill, "__init__", keeping)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(Path(CUR_MONTHS[0]).read_bytes()[:-100])
    with pytest.raises(IngestError, match=r"broken\.parquet: unreadable or truncated file"):
        ingest(CurSource([CUR_MONTHS[1], str(broken)]), session=session)
    assert len(spills) == 1
    assert list(tmp_path.glob("mlcost-spill-*")) == []
