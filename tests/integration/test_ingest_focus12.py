"""FOCUS 1.2 with Google Cloud and Azure ML rows: reconciliation, GPU-hours, stages, bad files.

Every expectation is computed here from the CSV with pandas (and, for GPU-hours, from the GPU
counts the providers publish), never copied from the code's output.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend
from bot.errors import IngestError
from bot.ingest.ledger import ingest
from bot.ingest.sources.focus import FocusSource, focus_version
from tests.conftest import DATA
from tests.support.ledger import assert_rollup_matches_ledger, ledger_totals
from tests.support.sample_registry import REGISTRY, load_registry

SAMPLE = DATA / "focus12_gcp_azure_sample.csv"
FOCUS_1_0 = DATA / "focus_sample.csv"
CENT = Decimal("0.01")
REGISTRY_12 = REGISTRY.replace(
    "budgets:",
    """  - {name: llm-chat, team: platform, owners: [U0PPP111]}
  - {name: search-ranker, team: ranking, owners: [U0AAA111]}
budgets:""",
)
# GPUs per machine, from the providers' pages (Google Cloud "GPU machine types", Microsoft
# "GPU accelerated VM sizes"): written here independently of bot/ingest/gpu.py.
PUBLISHED_GPUS = {
    "a2-highgpu-1g": 1,
    "a2-ultragpu-2g": 2,
    "a3-highgpu-8g": 8,
    "a4-highgpu-8g": 8,
    "g2-standard-8": 1,
    "g2-standard-48": 4,
    "Standard_ND96asr_v4": 8,
    "Standard_ND96isr_H100_v5": 8,
    "Standard_NC24ads_A100_v4": 1,
    "Standard_NC4as_T4_v3": 1,
    "Standard_NC64as_T4_v3": 4,
}


def frame() -> pd.DataFrame:
    """The sample as text, costs as Decimal."""
    data = pd.read_csv(SAMPLE, dtype=str, keep_default_na=False)
    for column in ("BilledCost", "EffectiveCost"):
        data[column] = data[column].map(Decimal)
    return data


def machine_of(row: pd.Series) -> str:
    """Where a real export names the machine: GCP system labels, Azure SkuPriceDetails."""
    if row["x_SystemLabels"]:
        pairs = {p["key"]: p["value"] for p in json.loads(row["x_SystemLabels"])}
        return str(pairs.get("compute.googleapis.com/machine_spec", ""))
    if row["SkuPriceDetails"]:  # Azure's AdditionalInfo: {"ServiceType": "<VM size>", ...}
        return str(json.loads(row["SkuPriceDetails"])["ServiceType"])
    return ""


def family(machine: str) -> str:
    """a2, a3, a4, g2 (Google Cloud) or ND, NC (Azure)."""
    if machine.startswith("Standard_"):
        return machine.split("_")[1][:2]
    return machine.split("-")[0]


def ledger_by(session: Session, *columns: object) -> dict[tuple[object, ...], tuple[Decimal, ...]]:
    rows = session.execute(
        select(
            *columns,  # type: ignore[call-overload]
            func.sum(DailySpend.billed_cost),
            func.sum(DailySpend.effective_cost),
            func.sum(DailySpend.gpu_hours),
        ).group_by(*columns)
    )
    n = len(columns)
    return {tuple(r[:n]): tuple(Decimal(v or 0) for v in r[n:]) for r in rows}


def test_sample_is_focus_1_2_with_every_mandatory_column_and_allowed_values() -> None:
    model = json.loads((DATA / "focus-validator-model-1.2.json").read_text())["ModelRules"]
    data = frame()
    header = set(data.columns)
    for rule_id, rule in model.items():
        requirement = rule["ValidationCriteria"]["Requirement"]
        if rule_id.startswith("CostAndUsage-D-") and requirement.get("CheckFunction") == (
            "ColumnPresent"
        ):
            assert requirement["ColumnName"] in header, rule_id
    assert focus_version(list(data.columns)) == "1.2"
    assert set(data["ChargeCategory"]) == {"Usage", "Tax", "Credit", "Adjustment"}
    assert set(data["ProviderName"]) == {"Google Cloud", "Microsoft"}
    assert (data["Tags"] == "").any() and (data["Tags"] != "").any()  # tagged and untagged


def test_sample_reconciles_per_provider_and_charge_category(session: Session) -> None:
    load_registry(session, REGISTRY_12)
    data = frame()
    report = ingest(FocusSource([str(SAMPLE)]), session=session)
    assert report.rows_read == len(data)
    assert report.reconciled
    assert report.billed_total == sum(data["BilledCost"], Decimal(0))
    assert report.attributed_total + report.unallocated_total == report.billed_total

    expected = data.groupby(["ProviderName", "ChargeCategory"])[
        ["BilledCost", "EffectiveCost"]
    ].agg(lambda s: sum(s, Decimal(0)))
    got = ledger_by(session, DailySpend.provider, DailySpend.charge_category)
    assert set(got) == set(expected.index)
    for (provider, category), (billed, effective, _gpu) in got.items():
        want = expected.loc[(provider, category)]
        assert billed.quantize(CENT) == want["BilledCost"].quantize(CENT), (provider, category)
        assert effective.quantize(CENT) == want["EffectiveCost"].quantize(CENT)
    assert_rollup_matches_ledger(session)

    before = ledger_totals(session)
    again = ingest(FocusSource([str(SAMPLE)]), session=session)
    assert again.replaced_rows == before[2]
    assert ledger_totals(session) == before


def test_gpu_hours_for_each_gcp_and_azure_family(session: Session) -> None:
    load_registry(session, REGISTRY_12)
    data = frame()
    data["machine"] = data.apply(machine_of, axis=1)
    usage = data[(data["ChargeCategory"] == "Usage") & (data["machine"] != "")]
    expected: dict[str, Decimal] = {}
    for _, row in usage.iterrows():
        machine = row["machine"]
        if machine.startswith("Standard_"):  # Azure bills instance-hours
            hours = Decimal(row["ConsumedQuantity"])
        elif "Instance Core" in row["ChargeDescription"]:  # core-seconds / cores = VM seconds
            cores = {p["key"]: p["value"] for p in json.loads(row["x_SystemLabels"])}
            seconds = Decimal(row["ConsumedQuantity"]) / Decimal(
                cores["compute.googleapis.com/cores"]
            )
            hours = seconds / 3600
        else:
            continue
        key = family(machine)
        expected[key] = expected.get(key, Decimal(0)) + hours * PUBLISHED_GPUS[machine]
    assert set(expected) == {"a2", "a3", "a4", "g2", "ND", "NC"}

    ingest(FocusSource([str(SAMPLE)]), session=session)
    got: dict[str, Decimal] = {}
    for (instance,), (_b, _e, gpu) in ledger_by(session, DailySpend.instance_type).items():
        if instance:
            got[family(instance)] = got.get(family(instance), Decimal(0)) + gpu
    assert {k: v for k, v in got.items() if v} == expected
    # Vertex AI's GPU SKUs carry no machine type; their GPU hours still count, one to one.
    vertex = session.scalar(
        select(func.sum(DailySpend.gpu_hours)).where(DailySpend.service == "Vertex AI")
    )
    vertex_rows = data[
        (data["ServiceName"] == "Vertex AI") & data["ChargeDescription"].str.contains("GPU")
    ]
    assert vertex == sum((Decimal(q) for q in vertex_rows["ConsumedQuantity"]), Decimal(0))


@pytest.mark.parametrize(
    ("service", "usage_like", "resource_like", "stage"),
    [
        ("Vertex AI", "Custom Training:%", None, "training"),
        ("Vertex AI", "Online Prediction: N1%", None, "serving"),
        ("Kubernetes Engine", None, None, "serving"),
        ("Cloud Storage", None, None, "storage"),
        ("BigQuery", None, None, "data"),
        ("Compute Engine", "Nvidia B200%", None, "training"),  # untagged GPU VM
        ("Compute Engine", "Nvidia L4%", "%g2-standard-8%", "serving"),  # its stage tag wins
        ("Azure Machine Learning", None, "%/computes/%", "training"),
        ("Azure Machine Learning", None, "%/onlineendpoints/%", "serving"),
        ("Azure Kubernetes Service", None, None, "serving"),
        ("Storage Accounts", "Hot LRS Write%", None, "storage"),
        ("Azure Data Factory v2", None, None, "data"),
        ("Azure Synapse Analytics", None, None, "data"),
        ("Virtual Machines", "ND96isr H100 v5", None, "training"),
    ],
)
def test_stage_rules_for_vertex_gke_azure_ml_storage_and_data(
    session: Session, service: str, usage_like: str | None, resource_like: str | None, stage: str
) -> None:
    load_registry(session, REGISTRY_12)
    ingest(FocusSource([str(SAMPLE)]), session=session)
    query = select(DailySpend.stage).where(
        DailySpend.service == service, DailySpend.charge_category == "Usage"
    )
    if usage_like:
        query = query.where(DailySpend.usage_type.like(usage_like))
    if resource_like:
        query = query.where(DailySpend.resource_id.like(resource_like))
    assert set(session.scalars(query.distinct())) == {stage}


def test_tagged_and_untagged_rows_land_on_models_and_unallocated(session: Session) -> None:
    load_registry(session, REGISTRY_12)
    data = frame()
    ingest(FocusSource([str(SAMPLE)]), session=session)
    tagged = data["Tags"].map(lambda t: json.loads(t) if t else {})
    model = tagged.map(lambda t: t.get("ml_model") or t.get("ml:model"))
    for name in ("recsys", "llm-chat", "search-ranker"):
        want = sum(data.loc[model == name, "BilledCost"], Decimal(0))
        got = session.scalar(
            select(func.sum(DailySpend.billed_cost)).where(DailySpend.model == name)
        )
        assert got == want, name
    unallocated = sum(data.loc[model.isna(), "BilledCost"], Decimal(0))
    got = session.scalar(select(func.sum(DailySpend.billed_cost)).where(DailySpend.model.is_(None)))
    assert got == unallocated


def test_missing_mandatory_column_is_refused_and_changes_nothing(
    session: Session, tmp_path: Path
) -> None:
    load_registry(session, REGISTRY_12)
    ingest(FocusSource([str(SAMPLE)]), session=session)
    before = ledger_totals(session)
    broken = tmp_path / "no-charge-category.csv"
    frame().drop(columns=["ChargeCategory"]).to_csv(broken, index=False)
    with pytest.raises(IngestError) as refused:
        ingest(FocusSource([str(broken)]), session=session)
    message = str(refused.value)
    assert "no-charge-category.csv" in message
    assert "missing FOCUS 1.2 column(s): ChargeCategory" in message
    assert ledger_totals(session) == before


def test_unread_mandatory_column_missing_is_a_note(session: Session, tmp_path: Path) -> None:
    load_registry(session, REGISTRY_12)
    lean = tmp_path / "gcp-like.csv"
    frame().drop(columns=["BillingAccountName", "InvoiceIssuerName"]).to_csv(lean, index=False)
    report = ingest(FocusSource([str(lean)]), session=session)
    assert report.reconciled
    assert any(
        "FOCUS 1.2" in note and "BillingAccountName, InvoiceIssuerName" in note
        for note in report.notes
    )


def test_focus_1_1_and_1_0_files_still_ingest(session: Session, tmp_path: Path) -> None:
    load_registry(session, REGISTRY_12)
    data = frame()
    only_1_2 = [
        "BillingAccountType",
        "SubAccountType",
        "InvoiceId",
        "PricingCurrency",
        "PricingCurrencyContractedUnitPrice",
        "PricingCurrencyEffectiveCost",
        "PricingCurrencyListUnitPrice",
    ]
    v11 = tmp_path / "focus-1.1.csv"
    data.drop(columns=only_1_2).to_csv(v11, index=False)
    assert focus_version(list(pd.read_csv(v11, nrows=0).columns)) == "1.1"
    report = ingest(FocusSource([str(v11)]), session=session)
    assert report.reconciled and report.billed_total == sum(data["BilledCost"], Decimal(0))

    header = list(pd.read_csv(FOCUS_1_0, nrows=0).columns)
    assert focus_version(header) == "1.0"
    old = ingest(FocusSource([str(FOCUS_1_0)]), session=session)
    assert old.reconciled and old.rows_read == 1000


def test_gcp_native_shape_parquet_with_repeated_label_records(
    session: Session, tmp_path: Path
) -> None:
    """GCP's BigQuery export keeps labels and system labels as repeated {key, value} records
    (x_Labels, x_SystemLabels) and has no Tags column."""
    load_registry(session, REGISTRY_12)
    data = frame()
    gcp = data[data["ProviderName"] == "Google Cloud"].drop(columns=["Tags", "SkuMeter"])
    table = pa.Table.from_pandas(gcp.astype(str), preserve_index=False)
    pairs = pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))
    for name in ("x_Labels", "x_SystemLabels"):
        values = [json.loads(v) if v else [] for v in gcp[name]]
        table = table.set_column(table.column_names.index(name), name, pa.array(values, pairs))
    path = tmp_path / "gcp-focus.parquet"
    pq.write_table(table, path)

    ingest(FocusSource([str(path)]), session=session)
    labels = gcp["x_Labels"].map(lambda v: {p["key"]: p["value"] for p in json.loads(v or "[]")})
    want = sum(
        gcp.loc[labels.map(lambda t: t.get("ml_model") == "recsys"), "BilledCost"], Decimal(0)
    )
    got = session.scalar(
        select(func.sum(DailySpend.billed_cost)).where(DailySpend.model == "recsys")
    )
    assert got == want
    a3 = session.scalar(
        select(func.sum(DailySpend.gpu_hours)).where(DailySpend.instance_type == "a3-highgpu-8g")
    )
    assert a3 == Decimal(8 * (24 + 10 + 24))


def test_malformed_label_records_are_refused_by_column(session: Session, tmp_path: Path) -> None:
    load_registry(session, REGISTRY_12)
    data = frame()
    gcp = data[data["ProviderName"] == "Google Cloud"].drop(columns=["Tags"]).copy()
    gcp.iloc[3, gcp.columns.get_loc("x_Labels")] = '[{"key": "ml_model", "value": '
    broken = tmp_path / "gcp-bad-labels.csv"
    gcp.to_csv(broken, index=False)
    before = ledger_totals(session)
    with pytest.raises(IngestError, match=r"gcp-bad-labels\.csv: column x_Labels is not JSON"):
        ingest(FocusSource([str(broken)]), session=session)
    assert ledger_totals(session) == before
