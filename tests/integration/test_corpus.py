"""Every file of the billing corpus through `mlcost ingest`, as its MANIFEST.yaml says.

A file that is read reconciles to the cent, per currency, with an independent sum of the file
(csv/pyarrow/json and Decimal, not mlcost's readers), and re-ingesting it changes nothing. A file
that is refused exits 2 with the expected words and writes nothing. The formats table in
docs/ingestion.md is rendered from the same manifest.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.cli import main
from bot.db.engine import make_engine, make_session_factory
from bot.db.schema import DailySpend, IngestionRun, SpendRollup
from tests.support.corpus import (
    CorpusFile,
    Expectation,
    independent_billed_totals,
    load_manifest,
    render_table,
    table_in_docs,
)
from tests.support.ledger import assert_rollup_matches_ledger

CENT = Decimal("0.01")
# words that name a format or a way forward: a file "not recognised" gets none of them
WAY_FORWARD = ("looks like", "mlcost ingest")


def _cases() -> list[object]:
    cases: list[object] = []
    for entry in load_manifest():
        cases.append(pytest.param(entry, entry.expect, id=f"{entry.test_id}:today"))
        if entry.after is not None:
            cases.append(
                pytest.param(
                    entry,
                    entry.after,
                    id=f"{entry.test_id}:after-issue-21",
                    marks=pytest.mark.xfail(
                        strict=False,
                        reason="what issue 21 is to make of this file (MANIFEST.yaml `after:`)",
                    ),
                )
            )
    return cases


def _ledger(session: Session) -> dict[str, tuple[Decimal, Decimal, int]]:
    """Return billed, effective and row count per currency in the ledger."""
    rows = session.execute(
        select(
            DailySpend.currency,
            func.sum(DailySpend.billed_cost),
            func.sum(DailySpend.effective_cost),
            func.count(),
        ).group_by(DailySpend.currency)
    )
    return {currency: (billed, effective, count) for currency, billed, effective, count in rows}


@pytest.mark.parametrize(("entry", "expected"), _cases())
def test_corpus_file(
    entry: CorpusFile,
    expected: Expectation,
    migrated_database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = ["--database-url", migrated_database_url]
    code = main([*db, "-q", *entry.argv()])
    out, err = capsys.readouterr()
    engine = make_engine(migrated_database_url)
    try:
        with make_session_factory(engine)() as session:
            if expected.status != "read":
                message = err.strip()
                assert code == 2, (code, out, err)
                assert message.startswith(f"error: {entry.path}"), message
                assert expected.fragment in message, message
                if expected.status == "not recognised":
                    assert not any(words in message for words in WAY_FORWARD), message
                assert session.scalar(select(func.count()).select_from(DailySpend)) == 0
                assert session.scalar(select(func.count()).select_from(IngestionRun)) == 0
                return

            assert code == 0, (code, out, err)
            assert "reconciliation OK" in out, out
            ledger = _ledger(session)
            expected_totals = independent_billed_totals(entry)
            assert expected_totals, "the manifest gives no way to add the file up"
            assert {c: ledger[c][0].quantize(CENT) for c in ledger} == {
                c: total.quantize(CENT) for c, total in expected_totals.items()
            }
            rolled = assert_rollup_matches_ledger(session)

            assert main([*db, "-q", *entry.argv()]) == 0
            session.expire_all()
            assert _ledger(session) == ledger
            assert assert_rollup_matches_ledger(session) == rolled
            assert session.scalar(select(func.count()).select_from(SpendRollup)) == rolled
    finally:
        engine.dispose()


def test_the_formats_table_in_the_docs_is_the_manifest() -> None:
    expected = render_table(load_manifest())
    assert table_in_docs() == expected, (
        "docs/ingestion.md's formats table differs from tests/data/corpus/MANIFEST.yaml; "
        "run `python -m tests.support.corpus` to rewrite it"
    )
