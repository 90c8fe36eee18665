"""A billing source is one registration: `mlcost ingest`, its --help and the poll all pick it up.

The source here lives in this test module alone, and docs/layout.md's example is run as
written: registering either is all it takes, no other file of mlcost changes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import types
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from bot.cli import main
from bot.config import Settings
from bot.errors import MlcostError
from bot.ingest.sources import registry
from bot.ingest.sources.base import (
    GroupedCharges,
    Progress,
    SourceData,
    SpendSource,
    charges_table,
    source_data,
)
from bot.ingest.sources.registry import BillingSource, Polling, SourceContext, registered
from bot.notify.sources import configured_sources
from tests.support.cli import import_registry_file

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: recsys, team: ranking, owners: [U0AAA111]}
"""


class FlatFeeSource:
    """A fixed daily fee per model, e.g. a reserved GPU cluster billed outside the cloud."""

    kind = "flat-fee"

    def __init__(self, model: str, cost: Decimal, days: list[dt.date], currency: str) -> None:
        self.model, self.cost, self.days, self.currency = model, cost, days, currency
        self.location = f"flat-fee:{model}:{days[0]}..{days[-1]}"

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        grouped = GroupedCharges(default_currency=self.currency)
        grouped.add(
            charges_table(
                {
                    "day": day,
                    "provider": "Colo",
                    "billing_account": "colo-1",
                    "service": "Reserved GPUs",
                    "billed": self.cost,
                    "tags": {"ml:model": self.model},
                }
                for day in self.days
            )
        )
        return source_data(grouped)


def _add_flat_fee_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="the model the fee is for")
    parser.add_argument("--cost", type=Decimal, required=True, help="the fee per day")
    parser.add_argument("--days", type=int, default=3, help="how many days up to today")


def _flat_fee(model: str, cost: Decimal, count: int, context: SourceContext) -> SpendSource:
    today = context.today()
    days = [today - dt.timedelta(days=back) for back in range(count, 0, -1)]
    return FlatFeeSource(model, cost, days, context.settings.currency)


def _poll_flat_fee(location: str | None, context: SourceContext) -> SpendSource:
    model, _, cost = str(location).partition("=")  # flat-fee:recsys=12.50
    return _flat_fee(model, Decimal(cost), 2, context)


FLAT_FEE = BillingSource(
    "flat-fee",
    "a fixed daily fee per model",
    _add_flat_fee_arguments,
    lambda args, context: _flat_fee(args.model, args.cost, args.days, context),
    Polling(_poll_flat_fee, location="MODEL=COST"),
)


@pytest.fixture
def flat_fee() -> Iterator[BillingSource]:
    with registered(FLAT_FEE) as source:
        yield source


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit:  # --help
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_registered_source_is_an_ingest_command_with_its_arguments(
    flat_fee: BillingSource, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "ingest", "--help")
    assert code == 0
    assert re.search(r"^    flat-fee +a fixed daily fee per model$", out, re.M)
    assert "{focus,cur,cost-explorer,athena,opencost,flat-fee,value,cloudwatch}" in out
    code, out, _ = run(capsys, "ingest", "flat-fee", "--help")
    assert code == 0 and out.startswith("usage: mlcost ingest flat-fee")
    assert "--cost COST" in out and "the fee per day" in out
    code, _, err = run(capsys, "ingest", "flat-fee", "--model", "recsys")
    assert code == 2 and "the following arguments are required: --cost" in err


def test_a_registered_source_is_ingested_and_attributed(
    flat_fee: BillingSource, database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    capsys.readouterr()
    code, out, _ = run(capsys, *db, "ingest", "flat-fee", "--model", "recsys", "--cost", "12.50")
    assert code == 0, out
    assert "flat-fee flat-fee:recsys:" in out and "read 3 rows" in out
    assert "billed $37.50" in out and "reconciliation OK" in out
    code, out, _ = run(capsys, *db, "report", "spend", "--by", "model", "--format", "json")
    assert code == 0
    assert any(r["model"] == "recsys" for r in _json_rows(out))


def test_a_pollable_registered_source_is_polled(
    flat_fee: BillingSource,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    capsys.readouterr()
    monkeypatch.setenv("MLCOST_POLL_SOURCES", "flat-fee:recsys=7.25")
    code, out, err = run(capsys, *db, "poll", "--only", "budgets", "--quiet")
    assert code == 0, out + err
    assert "flat-fee flat-fee:recsys:" in out and "read 2 rows" in out
    assert "billed $14.50" in out


def test_the_poll_refuses_what_no_registered_source_polls(flat_fee: BillingSource) -> None:
    today = dt.date(2026, 12, 2)
    for entry in ("flat-fee", "athena:x"):
        settings = poll_settings(entry)
        with pytest.raises(MlcostError) as refused:
            configured_sources(settings, today, model_tag_key="ml:model")
        assert str(refused.value).endswith(
            "use cost-explorer, cur:s3://bucket/prefix/, flat-fee:MODEL=COST,"
            " focus:s3://bucket/prefix/ or opencost:http://opencost:9003"
        )
    [polled] = configured_sources(
        poll_settings("flat-fee:recsys=1"), today, model_tag_key="ml:model"
    )
    assert (polled.name, polled.kind) == ("flat-fee:recsys=1", "flat-fee")
    assert polled.location == "flat-fee:recsys:2026-11-30..2026-12-01"


def test_a_source_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="'focus' is already registered"):
        registry.register(BillingSource("focus", "again", FLAT_FEE.add_arguments, FLAT_FEE.build))
    assert [s.name for s in registry.billing_sources()] == [
        "focus",
        "cur",
        "cost-explorer",
        "athena",
        "opencost",
    ]


def test_the_documented_example_is_a_billing_source(
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/layout.md, "Adding a billing source": its two blocks, run as the files they name."""
    module_block, entry_block = documented_blocks()
    module_path, _, module_code = module_block.partition("\n")
    assert module_path == "# bot/ingest/sources/gpu_cloud.py"
    assert entry_block.startswith("# bot/ingest/sources/registry.py: one more entry in BUILT_IN")
    module = types.ModuleType("bot.ingest.sources.gpu_cloud")
    exec(compile(module_code, module_path[2:], "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = dict(vars(registry))  # the entry is written in registry.py's own names
    exec(compile(entry_block, "registry.py", "exec"), namespace)
    source = namespace["GPU_CLOUD"]
    assert isinstance(source, BillingSource)

    invoice = tmp_path / "invoice.csv"
    invoice.write_text("day,model,cost\n2026-11-03,recsys,40.10\n2026-11-04,recsys,41.90\n")
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    capsys.readouterr()
    with registered(source):
        code, out, _ = run(capsys, "ingest", "--help")
        assert code == 0 and "gpu-cloud" in out and "CSV of day,model,cost" in out
        code, out, _ = run(capsys, *db, "ingest", "gpu-cloud", str(invoice))
        assert code == 0, out
        assert f"gpu-cloud {invoice}: read 2 rows" in out and "billed $82.00" in out
        monkeypatch.setenv("MLCOST_POLL_SOURCES", f"gpu-cloud:{invoice}")
        code, out, err = run(capsys, *db, "poll", "--only", "budgets", "--quiet")
        assert code == 0, out + err
        assert "replaced 2" in out and "reconciliation OK" in out
    assert "gpu-cloud" not in [s.name for s in registry.billing_sources()]


def documented_blocks() -> list[str]:
    """Return the python blocks of docs/layout.md's "Adding a billing source"."""
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    section = text.split("\n## Adding a billing source\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)


def poll_settings(poll_sources: str) -> Settings:
    return Settings(MLCOST_POLL_SOURCES=poll_sources)


def _json_rows(out: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = json.loads(out)["rows"]
    return rows
