"""OpenCost allocations and cloud costs: real examples reconcile; idle, GPU-hours, namespaces."""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.schema import DailySpend, IngestionRun
from bot.errors import IngestError
from bot.ingest.ledger import ingest
from bot.ingest.sources.opencost import COST_COMPONENTS, OpenCostSource
from bot.notify.sources import configured_sources
from bot.periods import month_period
from bot.spend.reports import spend_report
from bot.spend.unallocated import unallocated_report
from tests.conftest import DATA
from tests.support.ledger import assert_rollup_matches_ledger, ledger_totals
from tests.support.opencost import (
    Answer,
    allocation,
    allocation_answer,
    opencost_server,
)
from tests.support.sample_registry import load_registry

ALLOCATIONS = DATA / "allocation-example-output.json"
CLOUD_COSTS = DATA / "cloudCost-example-output.json"
CENT = Decimal("0.01")

K8S_REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
  - {name: platform, channel: C0PLATFORM, owners: [U0PPP111]}
models:
  - {name: recsys, team: ranking, owners: [U0AAA111], match: {tags: {"ml:model": recsys}}}
  - {name: metrics, team: platform, owners: [U0PPP111], match: {namespace: prometheus}}
  - {name: search-ranker, team: ranking, owners: [U0AAA111],
     match: {namespace: [search-train, search-serve]}}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
attribution:
  model_tag_keys: ["ml:model", model]
  stage_tag_keys: ["ml:stage", stage]
  team_tag_keys: [team]
"""


def raw_allocations(path: Path) -> pd.DataFrame:
    """Every allocation of the raw file, one row each, amounts read as exact text by json."""
    answer = json.loads(path.read_text(), parse_float=str)
    rows = [a for allocation_set in answer["data"] for a in allocation_set.values()]
    return pd.json_normalize(rows)


def exact_sum(values: pd.Series) -> Decimal:
    return sum((Decimal(str(v)) for v in values.dropna()), Decimal(0))


def ledger(session: Session) -> list[DailySpend]:
    return list(session.scalars(select(DailySpend).order_by(DailySpend.resource_id)))


def test_allocation_example_reconciles_to_the_cent_and_namespaces_attribute(
    session: Session,
) -> None:
    load_registry(session, K8S_REGISTRY)
    frame = raw_allocations(ALLOCATIONS)
    expected = exact_sum(frame["totalCost"])
    # totalCost is what is booked; its components and adjustments add up to it within
    # OpenCost's 5-place rounding (here: opencost's 0.06359 + 0.04577 = 0.10936 vs 0.10937)
    parts = frame[[c for c in COST_COMPONENTS if c in frame]].map(lambda v: Decimal(str(v)))
    gaps = parts.sum(axis=1) - frame["totalCost"].map(lambda v: Decimal(str(v)))
    assert max(abs(g) for g in gaps) <= Decimal("0.0001")
    assert any(g != 0 for g in gaps)  # so booking totalCost, not the parts, is a choice

    report = ingest(OpenCostSource(str(ALLOCATIONS)), session=session)

    assert report.reconciled and report.rows_read == len(frame) == 3
    assert report.billed_total == expected  # exact: 5-place amounts fit the ledger's 10
    prometheus = exact_sum(frame.loc[frame["properties.namespace"] == "prometheus", "totalCost"])
    assert report.attributed_total == prometheus
    assert report.unallocated_total == expected - prometheus
    assert (
        report.reconciliation_line()
    ) == "reconciliation OK: billed $1.78 = attributed $0.14 + unallocated $1.64"
    assert "booked on the day its window starts" in " ".join(report.notes)
    billed, effective, rows = ledger_totals(session)
    assert (billed, effective, rows) == (expected, expected, 3)
    metrics = next(r for r in ledger(session) if r.model == "metrics")
    assert (metrics.team, metrics.sub_account, metrics.attribution) == (
        "platform",
        "prometheus",
        "rule",
    )
    assert {r.day for r in ledger(session)} == {dt.date(2023, 7, 12)}
    assert {r.provider for r in ledger(session)} == {"Kubernetes"}
    assert {r.billing_account for r in ledger(session)} == {"default-cluster"}
    assert sum(r.gpu_hours for r in ledger(session)) == 0  # the example has no GPU
    assert_rollup_matches_ledger(session)

    source = OpenCostSource(str(ALLOCATIONS))
    for _ in range(2):  # the same source read twice, as a poll does: replaced, not doubled
        again = ingest(source, session=session)
        assert again.replaced_rows == 3 and ledger_totals(session) == (billed, effective, rows)
        assert again.notes == report.notes


def test_cloud_cost_example_reconciles_per_provider(session: Session) -> None:
    load_registry(session, K8S_REGISTRY)
    answer = json.loads(CLOUD_COSTS.read_text(), parse_float=str)
    items = pd.json_normalize(
        [item for s in answer["data"]["sets"] for item in s["cloudCosts"].values()]
    )
    report = ingest(OpenCostSource(str(CLOUD_COSTS)), session=session)
    assert report.reconciled and report.rows_read == len(items) == 19
    # billed is the invoiced cost, effective the amortised net cost; 10 places kept
    assert report.billed_total.quantize(CENT) == exact_sum(items["invoicedCost.cost"]).quantize(
        CENT
    )
    assert report.effective_total.quantize(CENT) == exact_sum(
        items["amortizedNetCost.cost"]
    ).quantize(CENT)
    by_provider = dict(
        session.execute(
            select(DailySpend.provider, func.sum(DailySpend.billed_cost)).group_by(
                DailySpend.provider
            )
        ).all()
    )
    for provider, group in items.groupby("properties.provider"):
        assert Decimal(by_provider[provider]).quantize(CENT) == exact_sum(
            group["invoicedCost.cost"]
        ).quantize(CENT)
    assert {(s.provider, s.start, s.end) for s in report.scopes} == {
        (p, dt.date(2023, 10, 27), dt.date(2023, 11, 3)) for p in ("AWS", "Azure", "GCP")
    }


def cluster_days() -> str:
    """Two days of an EKS cluster: labelled GPU training, namespaces, idle and an unmounted PV."""
    sets = []
    for day in (dt.date(2026, 11, 3), dt.date(2026, 11, 4)):
        sets.append(
            [
                allocation(
                    "recsys-train/trainer-0",
                    day,
                    namespace="recsys-train",
                    cpu="12.34567",
                    ram="3.21",
                    gpu="196.60000",
                    gpu_hours="48",
                    labels={"ml_model": "recsys", "stage": "training", "ml_run": "run-42"},
                ),
                allocation(
                    "search-train/job-1",
                    day,
                    namespace="search-train",
                    cpu="1.5",
                    gpu="24.575",
                    gpu_count="2",
                    minutes="180",  # no gpuHours: 2 GPUs x 3 h
                ),
                allocation(
                    "kube-system/coredns",
                    day,
                    namespace="kube-system",
                    cpu="0.42",
                    ram="0.11",
                    namespace_labels={"team": "platform"},
                ),
                allocation("__idle__", day, cpu="40.10101", ram="9.9", gpu="98.3"),
                allocation("__unmounted__/__unmounted__", day, namespace="__unmounted__", pv="2.5"),
            ]
        )
    return allocation_answer(*sets)


def test_idle_gpu_hours_labels_and_unmounted_volumes(session: Session, tmp_path: Path) -> None:
    load_registry(session, K8S_REGISTRY)
    path = tmp_path / "allocation.json"
    path.write_text(cluster_days())
    frame = raw_allocations(path)
    idle_raw = exact_sum(frame.loc[frame["name"] == "__idle__", "totalCost"])

    report = ingest(OpenCostSource(str(path)), session=session)

    assert report.reconciled
    assert report.billed_total == exact_sum(frame["totalCost"])
    [usd] = report.totals
    assert usd.idle == idle_raw
    assert usd.attributed + usd.unallocated + usd.idle == usd.billed
    assert f"+ idle ${idle_raw:,.2f}" in report.reconciliation_line()
    rows = ledger(session)
    idle = [r for r in rows if r.attribution == "idle"]
    assert len(idle) == 2  # one a day, never spread over the workloads
    for row in idle:
        assert (row.model, row.team, row.stage) == (None, None, "other")
        assert row.resource_id == "eks-ml/__idle__"
        assert row.usage_type == "Kubernetes:Idle"
    # GPU-hours: gpuHours where given, else gpuCount x minutes
    gpu = {r.model: Decimal(0) for r in rows}
    for r in rows:
        gpu[r.model] += r.gpu_hours
    assert gpu["recsys"] == 2 * 48 and gpu["search-ranker"] == 2 * 2 * 3
    recsys = [r for r in rows if r.model == "recsys"]
    assert {(r.team, r.stage, r.attribution) for r in recsys} == {("ranking", "training", "tag")}
    search = [r for r in rows if r.model == "search-ranker"]
    assert {(r.stage, r.attribution, r.sub_account) for r in search} == {
        ("training", "rule", "search-train")  # a GPU allocation with no stage label: training
    }
    coredns = [r for r in rows if r.sub_account == "kube-system"]
    assert {(r.model, r.team, r.attribution) for r in coredns} == {
        (None, "platform", "unallocated")
    }
    unmounted = [r for r in rows if r.usage_type == "Kubernetes:UnmountedPV"]
    assert {(r.model, r.stage, r.attribution, r.sub_account) for r in unmounted} == {
        (None, "storage", "unallocated", None)
    }
    assert_rollup_matches_ledger(session)

    spend = spend_report(session=session, period=month_period("2026-11"), by=["model"])
    assert spend.idle == idle_raw
    assert spend.attributed + spend.unallocated + spend.idle == spend.billed
    [idle_line] = [line for line in spend.lines if line.idle]
    assert idle_line.cost == idle_raw and idle_line.group == {"model": None}
    [unallocated_line] = [
        line for line in spend.lines if line.group["model"] is None and not line.idle
    ]
    assert unallocated_line.cost == spend.unallocated
    # what tags would fix: the unallocated spend, not the idle capacity
    unowned = unallocated_report(session=session, period=month_period("2026-11"))
    assert unowned.lines.total == spend.unallocated
    assert unowned.all_spend == spend.billed


def test_the_run_label_is_kept_as_a_tag_for_attribution_to_read(tmp_path: Path) -> None:
    path = tmp_path / "allocation.json"
    path.write_text(cluster_days())
    data = OpenCostSource(str(path)).read({"ml_model", "ml_run", "kubernetes_namespace"})
    tags = [json.loads(t) for t in data.charges["tags_json"].to_pylist() if t]
    assert {"ml_model": "recsys", "ml_run": "run-42", "kubernetes_namespace": "recsys-train"} in (
        tags
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "not JSON"),
        ('{"code": 200, "data": 5}', "not an OpenCost /allocation answer"),
        ('{"code": 500, "message": "boom", "data": null}', "OpenCost answered code 500: boom"),
        ('{"status": "ok"}', "not an OpenCost answer (no 'data')"),
        (
            '{"code": 200, "data": [{"a": {"name": "a", "totalCost": "x",'
            ' "window": {"start": "2026-11-01T00:00:00Z", "end": "2026-11-02T00:00:00Z"}}}]}',
            "allocation 'a' totalCost is not a number",
        ),
        (
            '{"code": 200, "data": [{"a": {"name": "a", "totalCost": 1}}]}',
            "allocation 'a' has no valid window start and end",
        ),
    ],
)
def test_a_bad_file_is_refused_with_its_reason_and_changes_nothing(
    session: Session, tmp_path: Path, body: str, message: str
) -> None:
    load_registry(session, K8S_REGISTRY)
    ingest(OpenCostSource(str(ALLOCATIONS)), session=session)
    before = ledger_totals(session)
    path = tmp_path / "bad.json"
    path.write_text(body)
    with pytest.raises(IngestError, match="^" + str(path).replace("\\", "\\\\")) as error:
        ingest(OpenCostSource(str(path)), session=session)
    assert message in str(error.value)
    assert ledger_totals(session) == before


def test_a_url_is_asked_for_daily_sets_with_idle_apart(session: Session) -> None:
    load_registry(session, K8S_REGISTRY)
    answer = Answer(body=cluster_days())
    with opencost_server(answer) as url:
        report = ingest(
            OpenCostSource(url, window="2026-11-03T00:00:00Z,2026-11-05T00:00:00Z"),
            session=session,
        )
    assert report.reconciled and report.api_requests == 1
    [(path, params)] = answer.requests
    assert path == "/allocation"
    assert params == {
        "window": "2026-11-03T00:00:00Z,2026-11-05T00:00:00Z",
        "step": "1d",
        "accumulate": "false",
        "includeIdle": "true",
        "shareIdle": "false",
        "idleByNode": "true",
    }
    assert {(s.provider, s.billing_account, s.start, s.end) for s in report.scopes} == {
        ("Kubernetes", "eks-ml", dt.date(2026, 11, 3), dt.date(2026, 11, 5))
    }


def test_a_url_keeps_its_own_endpoint_and_parameters() -> None:
    source = OpenCostSource(
        "http://oc:9003/allocation/compute?aggregate=namespace&window=1d", window="7d"
    )
    assert source.url is not None
    assert source.url.startswith("http://oc:9003/allocation/compute?")
    assert "aggregate=namespace" in source.url and "window=7d" in source.url
    with pytest.raises(IngestError, match="shareIdle=true spreads idle"):
        OpenCostSource("http://oc:9003/allocation?shareIdle=true", window="7d")
    with pytest.raises(IngestError, match="needs a window"):
        OpenCostSource("http://oc:9003")
    with pytest.raises(IngestError, match="apply to a URL"):
        OpenCostSource(str(ALLOCATIONS), window="7d")


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (500, "upstream prometheus is down", "answered HTTP 500: upstream prometheus is down"),
        (200, "<html>not json</html>", "not JSON"),
        (200, '{"code": 200, "data": {"x": 1}}', "not an OpenCost /allocation answer"),
    ],
)
def test_http_failures_are_clear_and_change_nothing(
    session: Session, status: int, body: str, message: str
) -> None:
    load_registry(session, K8S_REGISTRY)
    ingest(OpenCostSource(str(ALLOCATIONS)), session=session)
    before = ledger_totals(session)
    with (
        opencost_server(Answer(status=status, body=body)) as url,
        pytest.raises(IngestError, match=message),
    ):
        ingest(OpenCostSource(url, window="1d"), session=session)
    assert ledger_totals(session) == before


def test_connection_refused_is_clear(session: Session) -> None:
    with opencost_server(Answer()) as url:
        pass  # the server is gone: its port refuses connections
    with pytest.raises(IngestError, match=r"opencost: cannot reach http://127\.0\.0\.1:\d+/alloc"):
        ingest(OpenCostSource(url, window="1d"), session=session)


def test_total_cost_is_booked_and_a_gap_with_its_components_is_named(
    session: Session, tmp_path: Path
) -> None:
    day = dt.date(2026, 11, 3)
    path = tmp_path / "allocation.json"
    path.write_text(
        allocation_answer(
            [
                allocation("a", day, namespace="a", cpu="1", ram="1", total="2.50000"),
                allocation("b", day, namespace="b", cpu="0.00004", ram="0.00004", total="0.0001"),
            ]
        )
    )
    report = ingest(OpenCostSource(str(path)), session=session)
    assert report.billed_total == Decimal("2.5001")  # each totalCost, not 2.00008
    [note] = report.notes
    assert note == (
        "1 allocation whose cost components and adjustments differ from totalCost by more "
        "than 0.0001 (largest: a, -0.50000); totalCost is what is booked"
    )


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_shown(
    session: Session,
) -> None:
    load_registry(session, K8S_REGISTRY)
    answer = Answer(body=cluster_days())
    with opencost_server(answer) as url:
        secured = url.replace("http://", "http://reader:s3cr3t-pa55word@")
        source = OpenCostSource(secured, window="2026-11-03T00:00:00Z,2026-11-05T00:00:00Z")
        report = ingest(source, session=session)
    assert report.reconciled
    assert answer.authorizations == [
        "Basic " + base64.b64encode(b"reader:s3cr3t-pa55word").decode()
    ]
    run = session.scalars(select(IngestionRun)).all()[-1]
    assert "s3cr3t" not in run.location and "s3cr3t" not in source.where
    with opencost_server(Answer(status=500, body="down")) as url:
        secured = url.replace("http://", "http://reader:s3cr3t-pa55word@")
        with pytest.raises(IngestError) as error:
            ingest(OpenCostSource(secured, window="1d"), session=session)
    assert "s3cr3t" not in str(error.value) and "reader:***@127.0.0.1" in str(error.value)
    [polled] = configured_sources(
        Settings(MLCOST_POLL_SOURCES=f"opencost:{secured}"),
        dt.date(2026, 11, 5),
        model_tag_key="ml:model",
    )
    assert "s3cr3t" not in polled.name
    assert polled.name.startswith("opencost:http://reader:***@127.0.0.1:")


def test_a_pods_run_label_becomes_the_ledger_run(session: Session, tmp_path: Path) -> None:
    load_registry(session, K8S_REGISTRY)
    path = tmp_path / "allocation.json"
    path.write_text(cluster_days())
    ingest(OpenCostSource(str(path)), session=session)
    runs = session.execute(
        select(DailySpend.run, func.sum(DailySpend.billed_cost), func.sum(DailySpend.gpu_hours))
        .where(DailySpend.run.is_not(None))
        .group_by(DailySpend.run)
    ).all()
    # two days of recsys-train/trainer-0: 12.34567 + 3.21 + 196.6 a day, 48 GPU-hours a day
    assert runs == [("run-42", Decimal("424.31134"), Decimal("96"))]
