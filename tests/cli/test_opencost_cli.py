"""`mlcost ingest opencost` and `mlcost report spend` with an idle cluster line, end to end."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from bot.cli import main
from tests.integration.test_ingest_opencost import K8S_REGISTRY, cluster_days, raw_allocations


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_ingest_opencost_prints_idle_apart_and_report_spend_shows_it(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--database-url", database_url]
    registry = tmp_path / "registry.yaml"
    registry.write_text(K8S_REGISTRY)
    assert run(capsys, *db, "registry", "import", str(registry))[0] == 0
    answer = tmp_path / "allocation.json"
    answer.write_text(cluster_days())
    frame = raw_allocations(answer)
    billed = sum((Decimal(str(v)) for v in frame["totalCost"]), Decimal(0))
    idle = sum(
        (Decimal(str(v)) for v in frame.loc[frame["name"] == "__idle__", "totalCost"]), Decimal(0)
    )

    code, out, _ = run(capsys, *db, "ingest", "opencost", str(answer))
    assert code == 0
    assert f"opencost {answer}: read 10 rows" in out
    assert "Kubernetes eks-ml day 2026-11-03..2026-11-05" in out
    assert f"reconciliation OK: billed ${billed:,.2f} = attributed " in out
    assert out.rstrip().endswith(f" + idle ${idle:,.2f}")

    code, out, _ = run(capsys, *db, "report", "spend", "--month", "2026-11", "--by", "model")
    assert code == 0
    assert "(idle cluster)" in out and "(unallocated)" in out
    assert f"idle cluster: ${idle:,.2f}" in out

    code, out, _ = run(
        capsys, *db, "report", "spend", "--month", "2026-11", "--by", "model", "--format", "json"
    )
    data = json.loads(out)
    [usd] = data["totals"]
    assert Decimal(usd["idle"]) == idle
    assert Decimal(usd["attributed"]) + Decimal(usd["unallocated"]) + idle == billed
    [idle_row] = [r for r in data["rows"] if r.get("idle")]
    assert idle_row["model"] is None and Decimal(idle_row["cost"]) == idle


def test_a_bad_opencost_file_is_one_line_and_exit_2(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "allocation.json"
    bad.write_text('{"code": 200, "data": [{"x": {"name": "x", "totalCost": 1}}]}')
    code, out, err = run(capsys, "--database-url", database_url, "ingest", "opencost", str(bad))
    assert code == 2 and out == ""
    assert err.strip() == f"error: {bad}: allocation 'x' has no valid window start and end"
    code, _, err = run(
        capsys, "--database-url", database_url, "ingest", "opencost", "http://127.0.0.1:9"
    )
    assert code == 2 and "needs a window: --window 7d" in err
