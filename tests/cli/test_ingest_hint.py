"""An ingestion that attributes nothing says what to do next (a first try has no registry)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from tests.conftest import DATA


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_ingest_with_no_registry_says_to_import_one(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--database-url", database_url]
    code, out, _ = run(capsys, *db, "ingest", "focus", str(DATA / "focus_sample.csv"))
    assert code == 0
    *_, reconciliation, hint = out.splitlines()
    assert reconciliation.endswith("= attributed $0.00 + unallocated $20.52")
    assert hint.startswith("hint: no models are registered, so all of it is unallocated.")
    assert "run: mlcost registry import registry.yaml, then ingest again" in hint
    assert "`" not in hint  # a terminal line: no Slack markup


def test_an_ingest_no_model_claims_says_where_to_look(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = tmp_path / "registry.yaml"
    registry.write_text(
        "teams:\n  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}\n"
        'models:\n  - {name: recsys, team: ranking, match: {tags: {"ml:model": recsys}}}\n'
    )
    db = ["--database-url", database_url]
    assert run(capsys, *db, "registry", "import", str(registry))[0] == 0
    code, out, _ = run(capsys, *db, "ingest", "focus", str(DATA / "focus_sample.csv"))
    assert code == 0
    assert out.splitlines()[-1].startswith("hint: no row matched a registered model.")
    assert "mlcost report spend --month YYYY-MM --by model,tag,service" in out
