"""FOCUS and CUR ingestion on the real third-party files, reconciled against pandas."""

from __future__ import annotations

import gzip
import logging
import os
import shutil
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend, IngestionRun
from bot.errors import IngestError
from bot.ingest.ledger import ingest
from bot.ingest.sources.cur import CurSource
from bot.ingest.sources.focus import FocusSource
from tests.conftest import DATA
from tests.support.ledger import assert_rollup_matches_ledger, ledger_totals
from tests.support.sample_registry import load_registry

FOCUS = DATA / "focus_sample.csv"
CUR_MONTHS = sorted(DATA.glob("*2018-WorkshopCUR-00001.snappy.parquet"))
CENT = Decimal("0.01")


def pandas_total(frame: pd.DataFrame, column: str) -> Decimal:
    """An independent sum: pandas reading the text as Decimal."""
    return sum((Decimal(str(v)) for v in frame[column].dropna()), Decimal(0))


def test_focus_sample_reconciles_to_the_cent_and_reingest_changes_nothing(
    session: Session,
) -> None:
    load_registry(session)
    frame = pd.read_csv(FOCUS, na_values=["NULL"], dtype={"BilledCost": str, "EffectiveCost": str})
    expected_billed = pandas_total(frame, "BilledCost")
    expected_effective = pandas_total(frame, "EffectiveCost")

    report = ingest(FocusSource([str(FOCUS)]), session=session)
    assert report.rows_read == len(frame) == 1000
    assert report.reconciled
    assert report.billed_total.quantize(CENT) == expected_billed.quantize(CENT)
    assert report.attributed_total > 0 and report.unallocated_total > 0
    billed, effective, rows = ledger_totals(session)
    assert billed == report.billed_total
    # The ledger keeps 10 decimal places; the file has 11, so only sub-nano-dollar rounding differs.
    assert abs(billed - expected_billed) < Decimal("1e-8")
    assert effective.quantize(CENT) == expected_effective.quantize(CENT)

    rolled = assert_rollup_matches_ledger(session)
    assert 0 < rolled < rows

    again = ingest(FocusSource([str(FOCUS)]), session=session)
    assert again.replaced_rows == rows
    assert ledger_totals(session) == (billed, effective, rows)
    assert assert_rollup_matches_ledger(session) == rolled


def test_focus_quirks_tags_with_spaces_and_gpu_hours(session: Session) -> None:
    load_registry(session)
    ingest(FocusSource([str(FOCUS)]), session=session)
    # The BrightPathMatrix application tag is claimed by a registry match rule.
    claimed = session.scalar(
        select(func.sum(DailySpend.billed_cost)).where(DailySpend.model == "brightpath")
    )
    assert claimed and claimed > 0
    gpu = session.scalar(
        select(func.sum(DailySpend.gpu_hours)).where(DailySpend.instance_type.like("g5.%"))
    )
    assert gpu and gpu > 0
    providers = set(session.scalars(select(DailySpend.provider).distinct()))
    assert providers == {"AWS", "Microsoft", "Oracle"}


def test_three_real_cur_months_reconcile_and_reingest_is_idempotent(session: Session) -> None:
    load_registry(session)
    frames = [pd.read_parquet(p, columns=["line_item_unblended_cost"]) for p in CUR_MONTHS]
    expected = sum(
        Decimal(repr(float(v))) for f in frames for v in f["line_item_unblended_cost"].dropna()
    )
    report = ingest(CurSource([str(p) for p in CUR_MONTHS]), session=session)
    assert report.rows_read == 334_911
    assert report.reconciled
    assert report.billed_total.quantize(CENT) == expected.quantize(CENT)
    assert len(report.scopes) == 3
    billed, effective, rows = ledger_totals(session)
    assert billed == report.billed_total
    # The workshop's `workload` tag is a model tag key in the test registry; none is registered.
    tagged = session.scalar(select(func.count()).where(DailySpend.model_tag_value.is_not(None)))
    assert tagged and tagged > 0

    rolled = assert_rollup_matches_ledger(session)
    ingest(CurSource([str(CUR_MONTHS[0])]), session=session)
    assert ledger_totals(session) == (billed, effective, rows)
    assert assert_rollup_matches_ledger(session) == rolled


def test_slash_header_cur_csv(session: Session) -> None:
    path = DATA / "sample-anonymous-aws-export-dataset.csv"
    frame = pd.read_csv(path, dtype={"lineItem/UnblendedCost": str})
    report = ingest(CurSource([str(path)]), session=session)
    assert report.rows_read == len(frame)
    assert report.billed_total == pandas_total(frame, "lineItem/UnblendedCost")
    taxes = session.scalar(select(func.count()).where(DailySpend.charge_category == "Tax"))
    assert taxes and taxes > 0


def test_two_exports_for_the_same_month_add_up(session: Session, tmp_path: Path) -> None:
    other = tmp_path / "other-account.csv"
    header, *lines = FOCUS.read_text().splitlines()
    aws_only = [line for line in lines if '"1234567890123"' in line]
    other.write_text("\n".join([header, *aws_only]).replace("1234567890123", "9999999999999"))
    first = ingest(FocusSource([str(FOCUS)]), session=session)
    second = ingest(FocusSource([str(other)]), session=session)
    assert second.replaced_rows == 0
    assert ledger_totals(session)[0] == first.billed_total + second.billed_total
    assert_rollup_matches_ledger(session)  # the second account's days were summed again


def test_gzip_bom_and_azure_tags_without_braces(session: Session, tmp_path: Path) -> None:
    text = FOCUS.read_text()
    header, first, *_ = text.splitlines()
    azure_row = first.replace("NULL\n", "").rsplit(",", 1)[0] + ',"""ml:model"": ""recsys"""'
    body = "\ufeff" + header + "\n" + azure_row + "\n"
    path = tmp_path / "bom.csv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(body)
    load_registry(session)
    report = ingest(FocusSource([str(path)]), session=session)
    assert report.rows_read == 1
    assert report.attributed_total == report.billed_total > 0


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t[: len(t) // 2] + '"unterminated', "focus_bad.csv"),
        (lambda t: t.replace("BilledCost", "Cost", 1), "missing FOCUS 1.0 column(s): BilledCost"),
        (lambda t: t.replace("2024-09-18 22:00:00", "2024-13-45 99:00:00", 1), "bad date"),
        (lambda t: t.replace("0.00000080000", "twelve", 1), "not a number"),
    ],
)
def test_bad_files_fail_with_one_clear_line_and_change_nothing(
    session: Session, tmp_path: Path, mutate: object, message: str
) -> None:
    ingest(FocusSource([str(FOCUS)]), session=session)
    before = ledger_totals(session)
    runs = session.scalar(select(func.count()).select_from(IngestionRun))
    bad = tmp_path / "focus_bad.csv"
    bad.write_text(mutate(FOCUS.read_text()))  # type: ignore[operator]
    with pytest.raises(IngestError) as info, session.begin_nested():
        ingest(FocusSource([str(bad)]), session=session)
    assert message in str(info.value)
    assert str(bad) in str(info.value)
    assert "\n" not in str(info.value)
    assert ledger_totals(session) == before
    assert session.scalar(select(func.count()).select_from(IngestionRun)) == runs


def test_truncated_parquet_is_refused(tmp_path: Path) -> None:
    broken = tmp_path / "Oct-truncated.parquet"
    data = CUR_MONTHS[0].read_bytes()
    broken.write_bytes(data[: len(data) // 3])
    with pytest.raises(IngestError, match=r"Oct-truncated\.parquet: unreadable or truncated"):
        CurSource([str(broken)]).read(set())


def test_missing_file_and_wrong_kind(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="no such file"):
        FocusSource([str(tmp_path / "nope.csv")]).read(set())
    copy = tmp_path / "cur.parquet"
    shutil.copy(CUR_MONTHS[0], copy)
    with pytest.raises(IngestError, match="missing FOCUS column"):
        FocusSource([str(copy)]).read(set())


AZURE_HINT = "this looks like an Azure cost export (EA or MCA), which mlcost does not read"


@pytest.mark.parametrize(
    ("source", "name", "hint"),
    [
        (
            CurSource,
            "focus_sample.csv",
            "this looks like a FOCUS export: use 'mlcost ingest focus'",
        ),
        (
            FocusSource,
            "Nov2018-WorkshopCUR-00001.snappy.parquet",
            "this looks like an AWS Cost and Usage Report: use 'mlcost ingest cur'",
        ),
        (
            FocusSource,
            "sample-anonymous-aws-export-dataset.csv",
            "this looks like an AWS Cost and Usage Report: use 'mlcost ingest cur'",
        ),
        (FocusSource, "EA_ActualCost_Small.csv", AZURE_HINT),
        (FocusSource, "sample-anonymous-ea-export-dataset.csv", AZURE_HINT),
        (CurSource, "sample-anonymous-ea-export-dataset.csv", AZURE_HINT),
    ],
)
def test_a_file_of_another_format_names_the_command_that_reads_it(
    session: Session, source: type[CurSource] | type[FocusSource], name: str, hint: str
) -> None:
    with pytest.raises(IngestError) as refused:
        ingest(session=session, source=source([str(DATA / name)]))
    message = str(refused.value)
    assert message.startswith(f"{DATA / name}: missing ") and hint in message
    assert "`" not in message  # terminal output carries no Slack markup
    assert session.scalar(select(func.count()).select_from(DailySpend)) == 0


@pytest.mark.parametrize(
    ("source", "sample"),
    [(FocusSource, "focus_sample.csv"), (CurSource, "sample-anonymous-aws-export-dataset.csv")],
)
def test_a_file_with_a_header_and_no_rows_is_named_in_a_note(
    session: Session,
    tmp_path: Path,
    source: type[CurSource] | type[FocusSource],
    sample: str,
) -> None:
    header = (DATA / sample).read_text(encoding="utf-8-sig").splitlines()[0]
    empty = tmp_path / "empty-export.csv"
    empty.write_text(header + "\n")
    report = ingest(session=session, source=source([str(DATA / sample), str(empty)]))
    assert report.rows_read > 0
    assert f"{empty} has a header but no rows; nothing was read from it" in report.notes
    alone = ingest(session=session, source=source([str(empty)]))
    assert alone.rows_read == 0 and alone.rows_written == 0
    assert alone.notes == [f"{empty} has a header but no rows; nothing was read from it"]


def test_only_the_newest_version_of_a_cur_month_is_read(
    session: Session, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Legacy CUR's "create new report version": one folder per assembly id, each a whole month."""
    source = DATA / "sample-anonymous-aws-export-dataset.csv"
    month = tmp_path / "cur" / "report" / "20231101-20231201"
    older, newer = month / "1f0e-assembly-old", month / "9a2b-assembly-new"
    for folder in (older, newer):
        folder.mkdir(parents=True)
        shutil.copy(source, folder / "report-1.csv")
    (month / "report-Manifest.json").write_text("{}")
    os.utime(older / "report-1.csv", (1_700_000_000, 1_700_000_000))
    os.utime(newer / "report-1.csv", (1_700_090_000, 1_700_090_000))
    expected = pandas_total(
        pd.read_csv(source, dtype={"lineItem/UnblendedCost": str}), "lineItem/UnblendedCost"
    )
    with caplog.at_level(logging.WARNING, logger="bot.ingest.sources.files"):
        report = ingest(CurSource([str(tmp_path / "cur")]), session=session)
    assert report.billed_total == expected  # one copy of the month, not two
    assert "holds 2 versions of its billing period; reading the newest only" in caplog.text
    assert report.rows_read == len(pd.read_csv(source))


def test_an_s3_location_is_read_only_with_the_client_the_source_was_given() -> None:
    # whoever builds a source makes its AWS clients (the CLI, the poll); none is made here
    for location in ("s3://billing/focus/", "s3://billing/focus/part-1.csv"):
        with pytest.raises(IngestError, match=f"{location}: no S3 client was given"):
            FocusSource([location]).read(set())
