"""The bundled price table and the operator's override."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from bot.config import Settings
from bot.errors import UsageError
from bot.waste.pricing import (
    gpus_needed,
    load_price_table,
    monthly_from_gb,
    monthly_from_hourly,
)

HEADER = "kind,name,gpus,gpu_model,price,unit,source,as_of\n"


def test_the_bundled_table_covers_the_gpu_families_and_storage() -> None:
    table = load_price_table()
    for family in (
        "p3",
        "p4d",
        "p4de",
        "p5",
        "p5e",
        "g4dn",
        "g5",
        "g6",
        "g6e",
        "trn1",
        "inf2",
        "dl1",
    ):
        assert any(k == "ec2" and n.startswith(family + ".") for k, n in table.rows), family
    for kind, name in [("sagemaker", "ml.g4dn.xlarge"), ("sagemaker", "ml.p4d.24xlarge")]:
        assert table.get(kind, name) is not None
    for volume in ("gp2", "gp3", "io1", "io2", "st1", "sc1"):
        assert table.get("ebs", volume) is not None
    assert table.get("ebs-snapshot", "standard") is not None
    assert table.get("s3", "STANDARD") is not None
    p4d = table.get("ec2", "P4D.24XLARGE")
    assert p4d is not None and (p4d.gpus, p4d.gpu_model) == (8, "A100")
    assert isinstance(p4d.price, Decimal)
    assert p4d.label == "price table (AWS EC2 On-Demand pricing us-east-1 Linux, 2025-06)"
    assert all(r.source and r.as_of for r in table.rows.values())


def test_the_readme_names_each_source_of_the_table() -> None:
    readme = (Path(__file__).resolve().parents[2] / "bot/waste/data/README.md").read_text()
    for row in load_price_table().rows.values():
        assert row.source in readme


def test_monthly_money_is_decimal_to_the_cent() -> None:
    assert monthly_from_hourly(Decimal("1.006")) == Decimal("734.38")
    assert monthly_from_hourly(Decimal("0.526"), 2) == Decimal("767.96")
    assert monthly_from_gb(Decimal("0.08"), 100 * 1024**3) == Decimal("8.00")
    assert monthly_from_gb(Decimal("0.023"), 0) == Decimal("0.00")


def test_a_smaller_gpu_carries_the_load_at_sixty_percent() -> None:
    table = load_price_table()
    assert gpus_needed(8, Decimal(20)) == 3 and gpus_needed(1, Decimal(1)) == 1
    assert table.smaller_gpu("ec2", "g5.12xlarge", 1).name == "g5.xlarge"  # type: ignore[union-attr]
    # p4d has no smaller size: the next smaller GPU with enough of them, cheaper
    smaller = table.smaller_gpu("ec2", "p4d.24xlarge", 3)
    assert smaller is not None and smaller.family == "g6e" and smaller.gpus >= 3
    assert table.smaller_gpu("ec2", "g4dn.xlarge", 1) is None  # nothing cheaper
    assert table.smaller_gpu("ec2", "nope.large", 1) is None


def test_the_operator_table_replaces_the_bundled_one(tmp_path: Path) -> None:
    own = tmp_path / "prices.csv"
    own.write_text(HEADER + "ec2,g5.xlarge,1,A10G,0.70,hour,our EDP rates,2026-11\n")
    table = load_price_table(own)
    row = table.get("ec2", "g5.xlarge")
    assert row is not None and row.price == Decimal("0.70")
    assert row.label == "price table (our EDP rates, 2026-11)"
    assert table.get("ec2", "p4d.24xlarge") is None


def test_the_setting_points_at_the_operator_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLCOST_PRICE_TABLE_FILE", str(tmp_path / "p.csv"))
    monkeypatch.setenv("MLCOST_SCAN_REGIONS", '["us-east-1","eu-west-1"]')
    settings = Settings()
    assert settings.price_table_file == tmp_path / "p.csv"
    assert settings.scan_regions == ["us-east-1", "eu-west-1"]
    assert settings.scan_idle_days == 7


@pytest.mark.parametrize(
    "body, message",
    [
        ("kind,name\n", "missing column(s) gpus"),
        (HEADER + "gpu,x,1,A,1,hour,s,d\n", "line 2: kind 'gpu' is not one of"),
        (HEADER + "ec2,x,1,A,1,GB-month,s,d\n", "line 2: a ec2 price is per hour"),
        (HEADER + "ec2,x,1,A,cheap,hour,s,d\n", "line 2: price or gpus is not a number"),
        (HEADER + "ec2,x,1,A,-1,hour,s,d\n", "line 2: price and gpus must be zero or more"),
        (HEADER + "ebs,,0,,1,GB-month,s,d\n", "line 2: no name"),
    ],
)
def test_a_bad_operator_table_is_refused_with_the_line(
    tmp_path: Path, body: str, message: str
) -> None:
    own = tmp_path / "prices.csv"
    own.write_text(body)
    with pytest.raises(UsageError, match=re.escape(message)):
        load_price_table(own)


def test_a_missing_operator_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"MLCOST_PRICE_TABLE_FILE .*cannot read it"):
        load_price_table(tmp_path / "absent.csv")
