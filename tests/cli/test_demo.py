"""`mlcost demo` run twice in one folder, as a user would: the same output, and real charts.

The demo runs twice here (about 7 s in all), once for the whole module; the tests below only
read what it printed and wrote.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

from bot.cli import main
from bot.slack.charts.spend_chart import HEIGHT_PX, WIDTH_PX
from bot.slack.charts.waste import WASTE_HEIGHT_PX, WASTE_WIDTH_PX
from tests.support.demo_org import png_size

# Durations may differ between two runs ("in 1.2 s", "350 ms", "4,459 rows/s"); nothing else.
TIMING = re.compile(r"\b[0-9][0-9,]*(?:\.[0-9]+)? ?(?:s|ms|rows/s)\b")

CHARTS = {
    "model-recsys-2026-11.png": (WIDTH_PX, HEIGHT_PX),
    "team-ranking-2026-11.png": (WIDTH_PX, HEIGHT_PX),
    # 9 in wide at 100 dpi; 0.55 in per model + 0.9 per panel + 0.8 (title): three models
    "review-ranking-2026-11.png": (900, 335),
    "waste-2026-11-30.png": (WASTE_WIDTH_PX, WASTE_HEIGHT_PX),
}


@dataclass(frozen=True)
class TwoRuns:
    folder: Path
    first: str
    second: str
    first_pngs: dict[str, bytes]


def without_timings(text: str) -> str:
    return TIMING.sub("<t>", text)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> TwoRuns:
    """Run `mlcost demo` twice in the same folder; keep both outputs and the first run's PNGs."""
    folder = tmp_path_factory.mktemp("demo-twice") / "mlcost-demo"
    outputs = []
    first_pngs: dict[str, bytes] = {}
    for _ in range(2):
        buffer = io.StringIO()  # capsys is per test; this fixture is per module
        with contextlib.redirect_stdout(buffer):
            assert main(["demo", "--dir", str(folder)]) == 0
        outputs.append(buffer.getvalue())
        if not first_pngs:
            first_pngs = {p.name: p.read_bytes() for p in (folder / "charts").glob("*.png")}
    return TwoRuns(folder, outputs[0], outputs[1], first_pngs)


def test_the_second_run_prints_exactly_what_the_first_printed(two_runs: TwoRuns) -> None:
    first, second = without_timings(two_runs.first), without_timings(two_runs.second)
    assert first.splitlines() == second.splitlines()  # a readable diff when it fails
    assert first == second
    # the waste posts need the value metrics: they are in both runs, not only in the second
    assert "Nov 15  C0RISK     Waste in the week of Nov 9–15" in first
    assert "reconciliation OK" in first
    # counted as the audit counts them: teams, models, budgets; the settings are one update
    assert "4 teams, 13 models, 9 budgets (26 created, 1 updated)" in first


def test_the_demo_writes_one_real_png_per_chart_kind_and_names_the_folder(
    two_runs: TwoRuns,
) -> None:
    charts = two_runs.folder / "charts"
    assert sorted(p.name for p in charts.iterdir()) == sorted(CHARTS)
    for name, size in CHARTS.items():
        data = (charts / name).read_bytes()
        assert png_size(data) == size, name  # the signature, an IHDR chunk, the size
        assert data.endswith(b"IEND\xaeB`\x82"), name  # and the file is complete
        assert data == two_runs.first_pngs[name], f"{name} differs between runs"
    tail = two_runs.first.rstrip().splitlines()
    assert f"charts written to {charts.resolve()}/:" in tail
    for name in CHARTS:
        assert any(line.strip().startswith(name) for line in tail[-len(CHARTS) :]), name


def test_the_demo_shows_the_model_and_team_replies(two_runs: TwoRuns) -> None:
    model = two_runs.first.split("== 6. Slack: /mlcost model recsys")[1].split("\n== ")[0]
    assert "month to date   $17,139 (data through Nov 20, 2026)" in model
    assert (
        "forecast        $28,660 (weekday run-rate over 28 days, 3 unusual days left out)" in model
    )
    assert "chart           charts/model-recsys-2026-11.png" in model
    team = two_runs.first.split("== 7. Slack: /mlcost team ranking")[1].split("\n== ")[0]
    assert "month to date   $24,247 (data through Nov 20, 2026)" in team
    assert "models          1. recsys $17,139, forecast $28,660" in team


def test_a_rerun_replaces_ingested_data_and_never_doubles_it(two_runs: TwoRuns) -> None:
    import csv
    import gzip

    from bot.demo.run import DATA

    with gzip.open(DATA / "billing-focus.csv.gz", "rt", encoding="utf-8") as handle:
        november = [r for r in csv.DictReader(handle) if r["BillingPeriodStart"] >= "2026-11"]
    billed = sum((Decimal(r["BilledCost"]) for r in november), Decimal(0))
    effective = sum((Decimal(r["EffectiveCost"]) for r in november), Decimal(0))
    for out in (two_runs.first, two_runs.second):
        total = [line for line in out.splitlines() if line.startswith("total billed")]
        assert total[0] == (
            f"total billed: ${billed:,.2f}  (billed ${billed:,.2f}, effective ${effective:,.2f})"
        )  # one precision: some lines of the table are under $100
        # the export poll re-reads November (December has no folder yet) and replaces it
        poll = next(line for line in out.splitlines() if line.startswith("re-read "))
        rows = f"{len(november):,}"
        assert f"(billing periods 2026-11, 2026-12): {rows} rows, replaced {rows} ledger rows" in (
            poll
        )
        assert f"2026-11 billed ${billed:,.2f} before, ${billed:,.2f} after" in poll


def test_the_demo_ingests_the_eks_cluster_with_its_idle_line(two_runs: TwoRuns) -> None:
    """Section 15: speech-asr's spend and GPU-hours, idle apart, against the raw answer."""
    from bot.demo.opencost import allocation_answer

    raw = json.loads(json.dumps(allocation_answer()), parse_float=Decimal)
    allocations = [a for day in raw["data"] for a in day.values()]
    total = sum((a["totalCost"] for a in allocations), Decimal(0))
    idle = sum((a["totalCost"] for a in allocations if a["name"] == "__idle__"), Decimal(0))
    asr = [a for a in allocations if a["properties"].get("namespace") == "asr-train"]
    asr_cost = sum((a["totalCost"] for a in asr), Decimal(0))
    asr_gpu_hours = sum((a["gpuHours"] for a in asr), Decimal(0))
    k8s = two_runs.first.split("== 15. Kubernetes via OpenCost")[1].split("\n== ")[0]
    assert (
        f"reconciliation OK: billed ${total:,.2f} = attributed ${asr_cost:,.2f} + "
        f"unallocated ${total - asr_cost - idle:,.2f} + idle ${idle:,.2f}"
    ) in k8s
    assert re.search(rf"speech-asr +training +\${asr_cost:,.2f} +{asr_gpu_hours:,.1f}\n", k8s), k8s
    assert re.search(rf"\(idle cluster\) +other +\${idle:,.2f} ", k8s), k8s
    assert f"idle cluster: ${idle:,.2f}" in k8s
    # the last week's idle share, from the raw answer, makes it waste
    last_week = [a for day in raw["data"][-7:] for a in day.values()]
    week_idle = sum((a["totalCost"] for a in last_week if a["name"] == "__idle__"), Decimal(0))
    week_total = sum((a["totalCost"] for a in last_week), Decimal(0))
    share = (week_idle * 100 / week_total).quantize(Decimal(1))
    assert "Idle Kubernetes capacity: cluster eks-ml-training" in k8s
    assert f"{share} % of the cluster's cost over the last 7 days" in k8s


def test_terminal_lines_of_the_demo_carry_no_slack_markup(two_runs: TwoRuns) -> None:
    """Only the trust section shows mrkdwn, on purpose."""
    before_trust = two_runs.first.split("== 14. Trust")[0]
    assert "`" not in before_trust and ":warning:" not in before_trust
    assert "&lt;" not in before_trust and "*" not in before_trust


def test_the_demo_scans_a_simulated_account_and_closes_a_finding(two_runs: TwoRuns) -> None:
    """Section 12: moto's account, found and priced, recorded, then a volume gone and saved."""
    scan = two_runs.first.split("== 12. Resource scan")[1].split("\n== ")[0]
    lines = scan.splitlines()
    assert "Resource scan of account 345678901234 in us-east-1" in lines
    assert [line.split()[4] for line in lines if " us-east-1  " in line] == [
        "i-devbox9f3a",
        "churn-predictor-prod",
        "vol-0c3a9e71d5b2f4a68",
    ]
    # the untagged box the ledger only called unallocated: idle by its GPU metric, ledger-priced
    assert "    why: g5.12xlarge running idle: busiest GPU averaged 0.4 % over 7 days" in lines
    assert (
        "    signal: GPU utilisation (CloudWatch agent nvidia_smi_utilization_gpu); price: ledger"
    ) in lines
    assert " $3,228.44     $3,228.44  us-east-1  gpu_instance" in scan
    assert "C0FINOPS: i-devbox9f3a, vol-0c3a9e71d5b2f4a68; C0RISK: churn-predictor-prod" in scan
    assert (
        "  Closed: vol-0c3a9e71d5b2f4a68 is no longer found by the scan (last seen 2026-12-01 "
        "06:00 UTC). Saved so far: $28.00 ($120.00/month over 7.0 days since it was last seen; "
        "this grows as long as it stays gone)."
    ) in lines
    # the report lists the ledger's idle churn-predictor endpoint once: as the scan's finding
    assert "listed once under their resource: Idle endpoint: churn-predictor" in scan
    report = scan.split("listed once under their resource")[1]
    assert "Idle endpoint" not in report.split("\n", 1)[1]
    assert "Closed findings saved $28.00 so far (1 closed)" in lines
    assert lines[-1].startswith("total: about $")


def test_without_moto_the_scan_step_says_so_in_one_line_and_the_demo_goes_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    from bot.demo.resource_scan import SKIPPED, show_resource_scan

    monkeypatch.setitem(sys.modules, "moto", None)  # `from moto import ...` raises ImportError
    titles: list[str] = []
    show_resource_scan(None, titles.append, dt.date(2026, 11, 30))  # type: ignore[arg-type]
    assert capsys.readouterr().out == SKIPPED + "\n"
    assert SKIPPED == "skipped: the simulated AWS account needs moto (pip install -e '.[dev]')"
    assert len(titles) == 1


def test_the_scan_step_runs_with_fake_credentials_and_restores_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    from bot.demo.resource_scan import fake_aws_env

    monkeypatch.setenv("AWS_PROFILE", "production")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAREAL")
    monkeypatch.delenv("MOTO_ACCOUNT_ID", raising=False)
    with fake_aws_env():
        assert "AWS_PROFILE" not in os.environ
        assert os.environ["AWS_ACCESS_KEY_ID"] == "testing"
        assert os.environ["MOTO_ACCOUNT_ID"] == "345678901234"
    assert os.environ["AWS_PROFILE"] == "production"
    assert os.environ["AWS_ACCESS_KEY_ID"] == "AKIAREAL"
    assert "MOTO_ACCOUNT_ID" not in os.environ


def test_the_readme_shows_what_the_demo_writes_and_posts(two_runs: TwoRuns) -> None:
    """The README's chart is the demo's model chart, and its alert is the demo's first alert."""
    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    picture = root / "docs" / "images" / "recsys-2026-11.png"
    assert picture.read_bytes() == two_runs.first_pngs["model-recsys-2026-11.png"], (
        "docs/images/recsys-2026-11.png is stale: copy mlcost-demo/charts/model-recsys-2026-11.png"
    )
    alert = readme.split("budget alert as the demo posts it", 1)[1].split("```")[1]
    shown = [line.strip() for line in alert.splitlines() if line.strip() not in ("", "…")]
    printed = {line.strip() for line in two_runs.first.splitlines()}
    assert shown and all(line in printed for line in shown), [
        line for line in shown if line not in printed
    ]


def test_the_demo_answers_an_anomaly_expected_and_its_next_days_are_quiet(
    two_runs: TwoRuns,
) -> None:
    """Section 8: recsys's Nov 18 spike names its drivers; its owner answers Expected."""
    alerts = two_runs.first.split("== 8. Budget alerts")[1].split("\n== ")[0]
    lines = alerts.splitlines()
    assert "Nov 18  C0RECSYS   Unusual spend for model:recsys on Nov 18" in alerts
    answered = [line for line in lines if "Expected, said @U0AAA111" in line]
    assert len(answered) == 1 and answered[0].startswith("Nov 19  C0RECSYS")
    assert "run recsys-v42-retry up to" in answered[0]
    # the training instance stays up on Nov 19 and 20 below the accepted level: recsys is quiet,
    # while the organisation-wide training stage (not answered) still alerts
    assert not [line for line in lines if "Unusual spend for model:recsys on Nov 19" in line]
    assert not [line for line in lines if "Unusual spend for model:recsys on Nov 20" in line]
    assert "Unusual spend for stage:training on Nov 20" in alerts
    post = alerts.split("The anomaly answered Expected, as posted in C0RECSYS:")[1]
    assert "Drivers (against their own usual day):" in post
    assert "• resource i-recsystrain01: " in post
    assert "[ Expected ] [ Not expected ]" in post


def test_the_demo_shows_cost_per_training_run(two_runs: TwoRuns) -> None:
    """Sections 6 and 6b name recsys's runs at their raw-file cost; the alerts name the run."""
    import csv
    import gzip
    import json
    from decimal import Decimal

    from bot.demo.run import DATA
    from bot.money import format_money

    with gzip.open(DATA / "billing-focus.csv.gz", "rt", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    retry = sum(
        (
            Decimal(r["BilledCost"])
            for r in rows
            if r["Tags"] != "NULL" and json.loads(r["Tags"]).get("ml:run") == "recsys-v42-retry"
        ),
        Decimal(0),
    )
    model = two_runs.first.split("== 6. Slack: /mlcost model recsys")[1].split("\n== ")[0]
    assert f"top runs        1. recsys-v42-retry {format_money(retry, 'USD')}, " in model
    runs = two_runs.first.split("== 6b. Cost per training run")[1].split("\n== ")[0]
    lines = runs.splitlines()
    assert lines[4].split()[:3] == ["recsys", "recsys-v42-retry", "training"]
    assert f"{format_money(retry, 'USD')}" in lines[4]
    assert any(line.startswith("recsys  (no run)") for line in lines)
    recsys = sum(
        (
            Decimal(r["BilledCost"])
            for r in rows
            if r["ChargePeriodStart"].startswith("2026-11") and '"ml:model": "recsys"' in r["Tags"]
        ),
        Decimal(0),
    )  # the run lines and the (no run) line add up to the model's month
    assert f"attributed: {format_money(recsys, 'USD')}  unallocated: $0" in lines
    assert "Unusual spend for model:recsys on Nov 18: $1,483 above usual. Driven by run " in (
        two_runs.first
    )


def test_the_demo_charges_back_support_and_tax_from_the_raw_billing(two_runs: TwoRuns) -> None:
    """Section 16: the support fee and the tax of November are split whole among the teams."""
    import csv
    import gzip

    from bot.demo.run import DATA

    with gzip.open(DATA / "billing-focus.csv.gz", "rt", encoding="utf-8") as handle:
        november = [r for r in csv.DictReader(handle) if r["BillingPeriodStart"] >= "2026-11"]
    support = sum(
        (Decimal(r["BilledCost"]) for r in november if "Support" in r["ServiceName"]), Decimal(0)
    )
    tax = sum(
        (Decimal(r["BilledCost"]) for r in november if r["ChargeCategory"] == "Tax"), Decimal(0)
    )
    assert support > 0 and tax > 0
    section = two_runs.first.split("== 16. Chargeback")[1].split("\n== ")[0]
    total_line = next(line for line in section.splitlines() if line.startswith("total "))
    cells = total_line.split()
    assert cells[4:6] == [f"${support:,.2f}", f"${tax:,.2f}"]  # direct, unallocated, idle first
    reconciled = next(line for line in section.splitlines() if line.startswith("reconciles"))
    assert reconciled == f"reconciles: teams {cells[6]}, ledger {cells[6]}"
    # support is split evenly among the four teams: no share differs by more than a cent
    shares = [
        Decimal(line.split()[4].strip("$").replace(",", ""))
        for line in section.splitlines()
        if line.split() and line.split()[0] in ("nlp", "ranking", "risk", "vision")
    ]
    assert len(shares) == 4 and max(shares) - min(shares) <= Decimal("0.01")


def test_the_demo_shows_the_gate_giving_no_verdict_on_stale_data(two_runs: TwoRuns) -> None:
    out = two_runs.first
    gate = out[out.index("== 10. Release gate") : out.index("== 11.")]
    assert "gate PASS: search-ranker (as of 2026-11-30)" in gate
    stale = gate[gate.index("nothing ingested since 2026-11-30 (exit 3)") :]
    assert stale.splitlines()[1] == (
        "gate UNKNOWN: search-ranker (as of 2026-12-10): could not evaluate"
    )
    assert "the ledger's newest day is 2026-11-30" in stale and "PASS" not in stale


def test_the_demo_shows_csv_cells_neutralised_and_an_ambiguous_amount_refused(
    two_runs: TwoRuns,
) -> None:
    out = two_runs.first
    trust = out[out.index("== 14. Trust") : out.index("== 15.")]
    assert """  "'=HYPERLINK(""https://evil.example"",""refund"")",-12.50""" in trust
    refused = trust[trust.index("1,5 is refused") :].splitlines()[1]
    assert refused.startswith("  1,5 is ambiguous") and "`" not in refused


def test_the_demo_names_a_native_export_and_the_way_to_focus(two_runs: TwoRuns) -> None:
    out = two_runs.first
    ingest = out[out.index("== 2. Ingest") : out.index("== 3.")]
    refusal = ingest[ingest.index("gcp_billing_export_v1.csv: refused, nothing written") :]
    assert "Google Cloud's standard usage cost export (BigQuery)" in refusal
    assert "'FOCUS usage cost'" in refusal and "mlcost ingest focus" in refusal


def test_every_spend_table_in_the_demo_adds_up_to_its_shown_totals(two_runs: TwoRuns) -> None:
    """Shown rows add up to the shown total, and attributed + unallocated to it (issue 23)."""
    money = re.compile(r"-?\$[0-9,]+(?:\.[0-9]{2})?")

    def amount(text: str) -> Decimal:
        return Decimal(text.replace("$", "").replace(",", ""))

    tables = 0
    for block in two_runs.first.split("\n== ")[1:]:
        lines = block.splitlines()
        rules = [i for i, line in enumerate(lines) if line.startswith("---") and "  " in line]
        totals = [i for i, line in enumerate(lines) if line.startswith("total billed: ")]
        if len(rules) != 1 or len(totals) != 1:
            continue
        rows = lines[rules[0] + 1 : totals[0]]
        shown = [amount(money.findall(row)[-1]) for row in rows if row.strip()]
        total = amount(money.findall(lines[totals[0]])[0])
        split = [amount(m) for m in money.findall(lines[totals[0] + 1])]
        assert sum(shown, Decimal(0)) == total, block.splitlines()[0]
        assert sum(split, Decimal(0)) == total, block.splitlines()[0]
        tables += 1
    assert tables >= 3  # sections 4, 5 and 6b


def test_the_model_reply_shows_stages_that_add_up_to_its_month(two_runs: TwoRuns) -> None:
    lines = two_runs.first.splitlines()
    start = lines.index(next(line for line in lines if "6. Slack: /mlcost model recsys" in line))
    reply = lines[start : start + 12]
    month = next(line for line in reply if line.startswith("month to date"))
    stages = next(line for line in reply if line.startswith("by stage"))
    amounts = [Decimal(m.replace(",", "")) for m in re.findall(r"\$([0-9,]+)", stages)]
    assert sum(amounts) == Decimal(re.findall(r"\$([0-9,]+)", month)[0].replace(",", ""))


def test_the_team_reply_shows_models_that_add_up_to_its_month(two_runs: TwoRuns) -> None:
    lines = two_runs.first.splitlines()
    start = lines.index(next(line for line in lines if "7. Slack: /mlcost team ranking" in line))
    reply = lines[start : start + 12]
    month = next(line for line in reply if line.startswith("month to date"))
    models = [line for line in reply if re.match(r"^(models)? +[0-9]+\. ", line)]
    # each model's month to date is the first amount on its line (its forecast the second)
    amounts = [Decimal(re.findall(r"\$([0-9,]+)", m)[0].replace(",", "")) for m in models]
    assert len(models) == 4
    assert sum(amounts) == Decimal(re.findall(r"\$([0-9,]+)", month)[0].replace(",", ""))


def test_every_waste_list_in_the_demo_adds_up_to_its_shown_total(two_runs: TwoRuns) -> None:
    lists, rows = 0, []
    for line in two_runs.first.splitlines():
        if row := re.match(r"^ +\$([0-9,]+)/mo  ", line):
            rows.append(Decimal(row[1].replace(",", "")))
        elif total := re.match(r"^total: about \$([0-9,]+)/month$", line):
            assert sum(rows) == Decimal(total[1].replace(",", "")), line
            lists, rows = lists + 1, []
    assert lists == 2  # section 11 and report waste in section 12
