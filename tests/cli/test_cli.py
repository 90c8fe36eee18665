"""The `mlcost` command line end to end, on a fresh database per test."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from bot.budgets.admin import set_budget
from bot.cli import main
from bot.db import tables
from bot.db.engine import make_engine, make_session_factory, session_scope
from bot.db.schema import AuditLog, DailySpend
from bot.errors import IngestError
from bot.registry.ownership import set_model_owners
from tests.cli.conftest import DemoRun
from tests.conftest import DATA
from tests.support.cli import import_registry_file
from tests.support.sample_registry import REGISTRY


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_registry_ingest_and_report(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = tmp_path / "registry.yaml"
    registry.write_text(REGISTRY)
    db = ["--database-url", database_url]
    code, out, _ = run(capsys, *db, "registry", "import", str(registry))
    assert code == 0 and "4 models" in out
    code, out, _ = run(capsys, *db, "ingest", "focus", str(DATA / "focus_sample.csv"))
    assert code == 0
    assert "read 1,000 rows" in out
    assert "reconciliation OK: billed $20.52 = attributed" in out
    assert "hint:" not in out  # some of it is attributed
    code, out, _ = run(
        capsys,
        *db,
        "report",
        "spend",
        "--month",
        "2024-09",
        "--by",
        "model,stage",
        "--format",
        "json",
    )
    data = json.loads(out)
    [usd] = data["totals"]  # the sample is billed in USD only
    assert usd.pop("currency") == "USD"
    totals = {k: Decimal(v) for k, v in usd.items()}
    assert totals["attributed"] + totals["unallocated"] == totals["billed"]
    assert {r["currency"] for r in data["rows"]} == {"USD"}
    assert data["cost_basis"] == "billed"
    assert sum(Decimal(r["cost"]) for r in data["rows"]) == totals["billed"]
    code, out, _ = run(
        capsys, *db, "report", "spend", "--month", "2024-09", "--by", "team", "--cost", "effective"
    )
    assert "cost shown: effective" in out
    code, out, _ = run(capsys, *db, "registry", "export")
    assert "brightpath" in out and code == 0


def test_bad_inputs_exit_non_zero_with_one_line(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--database-url", database_url]
    bad = tmp_path / "broken.csv"
    bad.write_text("BilledCost,ChargePeriodStart\n1,2024-01-01\n")
    code, out, err = run(capsys, *db, "ingest", "focus", str(bad))
    assert code == 2
    assert err.strip().count("\n") == 0
    assert str(bad) in err and "missing FOCUS column" in err
    registry = tmp_path / "r.yaml"
    registry.write_text(REGISTRY.replace("team: ranking, owners", "team: nope, owners"))
    code, _, err = run(capsys, *db, "registry", "import", str(registry))
    assert code == 2 and "unknown team 'nope'" in err
    code, _, err = run(capsys, *db, "report", "spend", "--month", "2024-13")
    assert code == 2 and "not a month" in err
    code, out, _ = run(capsys, *db, "report", "spend", "--month", "2024-09", "--format", "json")
    assert json.loads(out)["totals"] == []  # no spend: no currency, no total


def test_cost_explorer_command_through_moto(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from moto import mock_aws
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.moto_api._internal.models import moto_api_backend

    db = import_registry_file(database_url, tmp_path, REGISTRY)
    capsys.readouterr()
    response = json.loads((DATA / "test_query_total_costs_per_hub-input.json").read_text())
    response.pop("ResponseMetadata", None)
    with mock_aws():
        moto_api_backend.set_ce_cost_usage(result=response, account_id=DEFAULT_ACCOUNT_ID)
        code, out, err = run(
            capsys,
            *db,
            "ingest",
            "cost-explorer",
            "--start",
            "2026-06-20",
            "--end",
            "2026-06-28",
            "--account",
            "123456789012",
        )
    assert code == 0, err
    assert ", 1 API request\n" in out
    assert "reconciliation OK" in out


def test_report_waste_on_the_demo_org(demo_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{demo_copy / 'mlcost-demo.db'}"
    code, out, _ = run(capsys, "--database-url", url, "report", "waste", "--as-of", "2026-11-30")
    assert code == 0
    assert "Orphaned (tagged for an unregistered model): legacy-ranker" in out and "`" not in out
    # the demo's resource scan left findings in its database: the ledger's idle churn-predictor
    # endpoint is listed once, as the scan's finding for its endpoint
    assert "Idle endpoint: churn-predictor" not in out
    assert "SageMaker endpoint churn-predictor-prod (resource scan" in out
    assert "GPU instance i-devbox9f3a (resource scan: 345678901234 us-east-1, unowned)" in out
    assert "Closed findings saved $" in out
    # recsys trains on p4d.24xlarge on demand in us-east-1: 67 % cheaper on Spot, 10-15 % band
    assert "Spot candidate: recsys training on p4d.24xlarge in us-east-1" in out
    assert "67 % below on-demand" in out
    assert out.rstrip().splitlines()[-1].startswith("total: about $")
    code, out, _ = run(
        capsys,
        "--database-url",
        url,
        "report",
        "waste",
        "--as-of",
        "2026-11-30",
        "--format",
        "json",
    )
    data = json.loads(out)
    costs = [Decimal(f["monthly_cost"]) for f in data["findings"]]
    assert code == 0 and data["as_of"] == "2026-11-30"
    assert Decimal(data["monthly_total"]) == sum(costs) and costs == sorted(costs, reverse=True)
    spot = next(f for f in data["findings"] if f["kind"] == "spot_candidate")
    assert spot["model"] == "recsys" and spot["label"] == "Spot candidate"
    with pytest.raises(SystemExit) as exited:
        main(["--database-url", url, "report", "waste", "--as-of", "2026-13-01"])
    assert exited.value.code == 2
    assert "'2026-13-01' is not a date; use YYYY-MM-DD" in capsys.readouterr().err


def test_an_unreadable_spot_feed_is_a_clear_error_for_the_report(
    demo_copy: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    feed = tmp_path / "feed.json"
    feed.write_text("<html>Access Denied</html>")
    monkeypatch.setenv("MLCOST_SPOT_ADVISOR_FILE", str(feed))
    url = f"sqlite:///{demo_copy / 'mlcost-demo.db'}"
    code, out, err = run(capsys, "--database-url", url, "report", "waste", "--as-of", "2026-11-30")
    assert code != 0 and out == ""
    assert f"cannot read the Spot Instance Advisor feed {feed}" in err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("teams: []\nx: !!python/name:os.system\n", "registry.yaml:2: the tag !!python/name:os"),
        ("teams: &loop\n  - *loop\n", "registry.yaml:1: anchors and aliases"),
        ("teams:\n  - {name: a\n  - b: [\n", "registry.yaml:3: invalid YAML: "),
        (b"teams: []\nfinops_channel: \xff\n", "registry.yaml:2: not UTF-8 text"),
    ],
)
def test_registry_yaml_errors_are_one_line_and_exit_2(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str | bytes,
    expected: str,
) -> None:
    registry = tmp_path / "registry.yaml"
    if isinstance(text, bytes):
        registry.write_bytes(text)
    else:
        registry.write_text(text)
    db = ["--database-url", database_url]
    code, out, err = run(capsys, *db, "registry", "import", str(registry))
    assert code == 2
    assert out == ""
    assert err.startswith(f"error: {registry.parent}/{expected}")
    assert err.count("\n") == 1


def _import(
    capsys: pytest.CaptureFixture[str], url: str, path: Path, *flags: str
) -> tuple[int, str, str]:
    return run(capsys, "--database-url", url, "registry", "import", str(path), *flags)


def _export(capsys: pytest.CaptureFixture[str], url: str) -> str:
    code, out, _ = run(capsys, "--database-url", url, "registry", "export")
    assert code == 0
    return out


def _audit_count(url: str) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.scalar(select(func.count()).select_from(AuditLog)) or 0)
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "defines no teams and no models (empty or truncated?)"),
        (
            REGISTRY.split("models:")[0],
            "would remove 9 of the 13 teams, models, budgets and owners",
        ),
    ],
)
def test_an_empty_or_truncated_file_is_refused_without_yes(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    expected: str,
) -> None:
    full, cut = tmp_path / "registry.yaml", tmp_path / "cut.yaml"
    full.write_text(REGISTRY)
    cut.write_text(text)
    assert _import(capsys, database_url, full)[0] == 0
    before, audits = _export(capsys, database_url), _audit_count(database_url)
    code, out, err = _import(capsys, database_url, cut)
    assert code == 2 and out == ""
    assert err.startswith(f"error: not imported: {cut}") and expected in err
    assert "--yes" in err and err.count("\n") == 1
    assert _export(capsys, database_url) == before
    assert _audit_count(database_url) == audits
    code, out, _ = _import(capsys, database_url, cut, "--yes")
    assert code == 0 and "  remove model recsys" in out
    assert "recsys" not in _export(capsys, database_url)


def test_dry_run_prints_the_diff_and_changes_nothing(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full, changed, empty = (
        tmp_path / "registry.yaml",
        tmp_path / "changed.yaml",
        tmp_path / "e.yaml",
    )
    full.write_text(REGISTRY)
    changed.write_text(
        REGISTRY.replace("  - {name: staging, team: platform, owners: [U0PPP111]}\n", "")
        .replace("owners: [U0AAA111], match", "owners: [U0AAA999], match")
        .replace("monthly: 12000", "monthly: 13000")
    )
    empty.write_text("# nothing yet\n")
    assert _import(capsys, database_url, full)[0] == 0
    before, audits = _export(capsys, database_url), _audit_count(database_url)
    code, out, err = _import(capsys, database_url, changed, "--dry-run")
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "  update model recsys: owners U0AAA111 -> U0AAA999",
        "  update budget model:recsys: monthly $12,000 -> $13,000",
        "  remove model staging",
        f"dry run of {changed}: 2 teams, 3 models, 1 budget; would create 0, update 2, "
        "remove 1; nothing was changed",
    ]
    code, out, err = _import(capsys, database_url, empty, "--dry-run")
    assert code == 0
    assert out.splitlines()[-1] == (
        f"without --yes the import would be refused: {empty} defines no teams and no models "
        f"(empty or truncated?); {empty} would remove 13 of the 13 teams, models, budgets and "
        "owners in the registry (2 teams, 4 models, 1 budget, 6 owners)"
    )
    assert _export(capsys, database_url) == before
    assert _audit_count(database_url) == audits
    code, out, _ = _import(capsys, database_url, changed)
    assert code == 0 and "0 created, 2 updated, 1 removed" in out
    assert "staging" not in _export(capsys, database_url)


def test_reverting_budgets_and_owners_changed_in_slack_needs_a_choice(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = tmp_path / "registry.yaml"
    registry.write_text(REGISTRY)
    assert _import(capsys, database_url, registry)[0] == 0
    engine = make_engine(database_url)
    with session_scope(make_session_factory(engine)) as session:
        set_budget(session=session, user_id="U0AAA111", scope="model:recsys", amount=Decimal(15000))
        set_model_owners(
            session=session,
            user_id="U0ADMIN01",
            model_name="recsys",
            owners=["U0AAA111", "U0BBB222"],
        )
    engine.dispose()
    slack_state = _export(capsys, database_url)
    assert "monthly: 15000" in slack_state

    code, out, err = _import(capsys, database_url, registry)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == "warning: this import reverts 2 changes made in Slack since the last import:"
    assert lines[1].startswith("  budget model:recsys: monthly $12,000 -> $15,000 by U0AAA111 at ")
    assert lines[2].startswith(
        "  model recsys: owners U0AAA111 -> U0AAA111, U0BBB222 by U0ADMIN01 at "
    )
    assert lines[3].startswith("error: not imported: it would revert 2 changes made in Slack")
    assert "--keep-slack-changes" in lines[3] and "--yes" in lines[3] and len(lines) == 4
    assert _export(capsys, database_url) == slack_state

    code, out, err = _import(capsys, database_url, registry, "--keep-slack-changes")
    assert code == 0 and err == ""
    assert "  keep (changed in Slack) budget model:recsys: monthly $12,000 -> $15,000" in out
    assert _export(capsys, database_url) == slack_state

    code, out, err = _import(capsys, database_url, registry, "--yes")
    assert code == 0 and "warning: this import reverts 2 changes" in err
    assert "  update budget model:recsys: monthly $15,000 -> $12,000" in out
    reverted = _export(capsys, database_url)
    assert "monthly: 12000" in reverted and "U0BBB222" not in reverted
    assert _import(capsys, database_url, registry) == (
        0,
        f"registry {registry}: 2 teams, 4 models, 1 budget; 0 created, 0 updated, 0 removed\n",
        "",
    )


def test_demo_shows_escaping_and_the_registry_diff_without_changing_anything(
    demo_run: DemoRun, demo_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trust = demo_run.out.split("== 14. Trust")[1]
    assert "`legacy &lt;!channel&gt; &lt;https://evil.example|click here&gt;`" in trust
    shown = trust.split("reaches Slack's mrkdwn as:")[1]
    assert "<!channel>" not in shown
    assert "update budget model:recsys: monthly $22,000 -> $26,000" in trust
    assert "empty.yaml defines no teams and no models" in trust
    # the plans changed nothing: the exported registry still has recsys at 22000
    url = f"sqlite:///{demo_copy / 'mlcost-demo.db'}"
    code, exported, _ = run(capsys, "--database-url", url, "registry", "export")
    assert code == 0 and "- scope: model:recsys\n  monthly: 22000\n" in exported


def test_version_names_the_installed_package(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"mlcost {version('mlcost')}"


@pytest.mark.parametrize(
    "argv",
    [
        ["--database-url", "sqlite:///given.db", "-v", "report", "spend"],
        ["report", "spend", "--database-url", "sqlite:///given.db", "-v"],
        ["report", "-v", "spend", "--database-url", "sqlite:///given.db"],
        ["-v", "report", "spend", "--database-url", "sqlite:///given.db"],
    ],
)
def test_global_options_work_before_or_after_the_subcommand(argv: list[str]) -> None:
    from bot.cli import build_parser

    args = build_parser().parse_args(argv)
    assert args.database_url == "sqlite:///given.db"
    assert args.verbose is True


def test_global_options_default_when_not_given() -> None:
    from bot.cli import build_parser

    args = build_parser().parse_args(["registry", "export"])
    assert args.database_url is None and args.verbose is False


def test_a_database_url_after_the_subcommand_is_the_one_used(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = tmp_path / "registry.yaml"
    registry.write_text(REGISTRY)
    code, _, _ = run(capsys, "registry", "import", str(registry), "--database-url", database_url)
    assert code == 0
    code, out, _ = run(capsys, "registry", "export", "--database-url", database_url)
    assert code == 0 and "recsys" in out


def test_a_month_with_no_spend_says_what_the_ledger_covers(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--database-url", database_url]
    code, out, err = run(capsys, *db, "report", "spend", "--month", "1999-01")
    assert code == 0 and "no spend in this period" in out
    assert err.strip() == (
        "note: the ledger is empty; ingest billing data first (mlcost ingest focus|cur|...)"
    )
    code, _, _ = run(capsys, *db, "ingest", "focus", str(DATA / "focus_sample.csv"))
    assert code == 0
    engine = make_engine(database_url)
    with session_scope(make_session_factory(engine)) as session:
        first, last = session.execute(
            select(func.min(DailySpend.day), func.max(DailySpend.day))
        ).one()
    engine.dispose()
    code, out, err = run(capsys, *db, "report", "spend", "--month", "1999-01", "--format", "csv")
    assert code == 0 and out.splitlines()[0].startswith("model,")  # stdout stays CSV
    assert err.strip() == (
        f"note: no spend in 1999-01; the ledger covers {first:%Y-%m} to {last:%Y-%m} "
        f"({first} to {last})"
    )


def test_cost_explorer_answers_saved_as_json_are_ingested_from_files(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two saved pages (the AWS CLI's documented answer, and the next month's) read as one."""
    first = json.loads((DATA / "get-cost-and-usage.output.json").read_text())
    second = json.loads(json.dumps(first))
    second["ResultsByTime"][0]["TimePeriod"] = {"Start": "2017-10-01", "End": "2017-11-01"}
    for group in second["ResultsByTime"][0]["Groups"]:
        group["Metrics"]["UnblendedCost"]["Amount"] = "1.25"
    pages = [tmp_path / "page1.json", tmp_path / "page2.json"]
    for path, page in zip(pages, (first, second), strict=True):
        path.write_text(json.dumps(page))
    expected = sum(
        Decimal(g["Metrics"]["UnblendedCost"]["Amount"])  # what the bill says was charged
        for page in (first, second)
        for r in page["ResultsByTime"]
        for g in r["Groups"]
    )
    code, out, _ = run(
        capsys,
        "--database-url",
        database_url,
        "ingest",
        "cost-explorer",
        "--from-file",
        *map(str, pages),
    )
    assert code == 0, out
    assert "cost-explorer:2017-09-01..2017-11-01: read 4 rows" in out
    assert "API requests" not in out  # files, not calls to AWS
    assert "note: the saved results are not daily" in out
    assert f"reconciliation OK: billed ${expected:,.2f}" in out


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"rows": []}', "not a Cost Explorer GetCostAndUsage response (no ResultsByTime)"),
        (
            '{"ResultsByTime": [{"TimePeriod": {"Start": "x"}}]}',
            "a result without a valid TimePeriod",
        ),
        ("{not json", "not JSON"),
    ],
)
def test_a_saved_file_that_is_not_a_cost_explorer_answer_is_refused(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str,
    problem: str,
) -> None:
    bad = tmp_path / "focus.json"
    bad.write_text(content)
    db = ["--database-url", database_url]
    code, _, err = run(capsys, *db, "ingest", "cost-explorer", "--from-file", str(bad))
    assert code == 2
    assert err.strip().startswith(f"error: {bad}: {problem}")
    code, out, _ = run(capsys, *db, "report", "spend")
    assert code == 0 and "no spend in this period" in out  # nothing was written


def test_report_by_day_reads_in_date_order(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--database-url", database_url]
    code, _, _ = run(capsys, *db, "ingest", "focus", str(DATA / "focus_sample.csv"))
    assert code == 0
    engine = make_engine(database_url)
    with session_scope(make_session_factory(engine)) as session:
        month = session.scalar(select(func.max(DailySpend.day)))
    engine.dispose()
    assert month is not None
    code, out, _ = run(
        capsys,
        *db,
        "report",
        "spend",
        "--month",
        f"{month:%Y-%m}",
        "--by",
        "day,service",
        "--format",
        "csv",
    )
    assert code == 0
    first_column = [line.split(",")[0] for line in out.splitlines()[1:]]
    days = [cell for cell in first_column if re.fullmatch(r"\d{4}-\d{2}-\d{2}", cell)]
    assert len(set(days)) > 1 and days == sorted(days)


def test_the_poll_example_in_docs_alerts_is_what_poll_prints_on_the_demo_org(
    demo_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "alerts.md").read_text()
    command = "$ mlcost poll --as-of 2026-11-20 --dry-run\n"
    shown = doc[doc.index(command) + len(command) :].split("  ...\n", 1)[0].splitlines()
    url = f"sqlite:///{demo_copy / 'mlcost-demo.db'}"
    code, out, _ = run(capsys, "--database-url", url, "poll", "--as-of", "2026-11-20", "--dry-run")
    assert code == 0
    assert len(shown) >= 2 and out.splitlines()[: len(shown)] == shown


def test_an_ingest_failing_after_writing_the_ledger_leaves_nothing(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    # the command writes on a Core Connection in one transaction (CliContext.writing): the run
    # row and the ledger rows inserted before the failure are rolled back with it
    import bot.ingest.ledger

    def broken(*_args: object) -> None:
        raise IngestError("the rollup could not be summed")

    registry = tmp_path / "registry.yaml"
    registry.write_text(REGISTRY)
    db = ["--database-url", database_url]
    assert run(capsys, *db, "registry", "import", str(registry))[0] == 0
    monkeypatch.setattr(bot.ingest.ledger, "refresh_rollup", broken)
    code, out, err = run(capsys, *db, "ingest", "focus", str(DATA / "focus_sample.csv"))
    assert code != 0 and "the rollup could not be summed" in err
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            for table in (tables.daily_spend, tables.ingestion_runs, tables.spend_rollup):
                assert connection.scalar(select(func.count()).select_from(table)) == 0
    finally:
        engine.dispose()
    monkeypatch.undo()
    code, out, _ = run(capsys, *db, "ingest", "focus", str(DATA / "focus_sample.csv"))
    assert code == 0 and "replaced 0" in out  # the failed attempt left nothing to replace
