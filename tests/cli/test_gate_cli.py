"""`mlcost gate` in CI: GitHub annotations and step summary, --post once, the registry's policy."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from bot.cli import main
from tests.support.cli import import_registry_file, ingest_focus_days
from tests.support.fake_slack import FakeSlack

REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
  - {name: lab}
models:
  - {name: good, team: ranking, owners: [U0AAA111]}
  - {name: nobudget, team: ranking, owners: [U0AAA111], channel: C0NOBUDGET}
  - {name: homeless, team: lab, owners: [U0AAA111]}
budgets:
  - {scope: "model:good", monthly: 1000}
"""
AS_OF = ("--as-of", "2026-11-30")


def fed_registry(database_url: str, directory: Path, registry: str = REGISTRY) -> list[str]:
    """Import the registry and a ledger fed up to 2026-11-30 (spend of no registered model)."""
    db = import_registry_file(database_url, directory, registry)
    ingest_focus_days(db, directory, [dt.date(2026, 11, 30)], model="unregistered")
    return db


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def outside_github(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run in GitHub Actions too: start from a plain terminal."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "SLACK_BOT_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def test_github_format_annotates_each_failed_check_and_writes_the_step_summary(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = fed_registry(database_url, tmp_path)
    capsys.readouterr()
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, err = run(capsys, *db, "gate", "nobudget", *AS_OF, "--format", "github")
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert lines[0] == "gate FAIL: nobudget (as of 2026-11-30)"
    assert lines[-1] == "::error title=mlcost gate::nobudget: budget: nobudget has no budget"
    assert sum(line.startswith("::error") for line in lines) == 1
    assert summary.read_text() == (
        "earlier step\n"
        "### mlcost gate FAIL: nobudget (as of 2026-11-30)\n"
        "\n"
        "| Check | Result | Detail |\n"
        "| --- | --- | --- |\n"
        "| owner | pass | owned by U0AAA111 |\n"
        "| budget | **FAIL** | nobudget has no budget |\n"
        "| review | pass | no review decision yet |\n"
        "| value | pass | no cost in the last 30 days |\n"
        "| unit cost | pass | no cost or value in the last 60 days |\n"
        "\n"
    )
    code, out, _ = run(capsys, *db, "gate", "good", *AS_OF, "--format", "github")
    assert code == 0 and "::error" not in out
    assert "### mlcost gate PASS: good (as of 2026-11-30)" in summary.read_text()
    for text in (out, summary.read_text()):
        assert ":white_check_mark:" not in text and ":x:" not in text  # no Slack markup


def test_github_is_the_default_inside_github_actions_and_json_stays_json(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = fed_registry(database_url, tmp_path)
    capsys.readouterr()
    code, out, _ = run(capsys, *db, "gate", "nobudget", *AS_OF)
    assert code == 1 and "::error" not in out  # a terminal: plain text
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, _ = run(capsys, *db, "gate", "nobudget", *AS_OF)
    assert code == 1 and "::error title=mlcost gate::nobudget: budget:" in out
    code, out, _ = run(capsys, *db, "gate", "nobudget", *AS_OF, "--format", "json")
    assert code == 1 and json.loads(out)["pass"] is False
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing" / "summary.md"))
    code, out, err = run(capsys, *db, "gate", "good", *AS_OF)
    assert code == 0  # an unwritable summary does not change the verdict
    assert "cannot write $GITHUB_STEP_SUMMARY" in err
    code, _, _ = run(capsys, *db, "gate", "goood", *AS_OF)
    assert code == 3


def test_post_goes_to_the_models_channel_once_per_day_and_result(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
) -> None:
    db = fed_registry(database_url, tmp_path)
    capsys.readouterr()
    code, out, _ = run(capsys, *db, "gate", "nobudget", *AS_OF, "--post")
    assert code == 1
    assert "queued the fail result for C0NOBUDGET (gate/nobudget/2026-11-30/fail)" in out
    assert "not delivered: SLACK_BOT_TOKEN is not set" in out
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_API_URL", fake_slack.url)
    code, out, _ = run(capsys, *db, "gate", "nobudget", *AS_OF, "--post")
    assert code == 1
    assert "already queued: gate/nobudget/2026-11-30/fail" in out
    assert "delivered 1, found already posted 0, to retry 0, undeliverable 0" in out
    code, out, err = run(capsys, *db, "gate", "nobudget", *AS_OF, "--post", "--format", "json")
    assert code == 1 and json.loads(out)["pass"] is False  # the post's lines go to stderr
    assert "delivered 0" in err
    posts = fake_slack.calls_to("chat.postMessage")
    assert len(posts) == 1
    assert posts[0].params["channel"] == "C0NOBUDGET"
    assert posts[0].params["text"].startswith(":no_entry: *nobudget* fails the release gate")
    assert "Data up to 2026-11-30" in json.dumps(posts[0].params["blocks"])
    # a pass is another result: one more post, to the team's channel for a model without one
    code, out, _ = run(capsys, *db, "gate", "good", *AS_OF, "--post")
    assert code == 0 and "queued the pass result for C0RANKING" in out
    assert len(fake_slack.calls_to("chat.postMessage")) == 2
    code, out, _ = run(capsys, *db, "gate", "homeless", *AS_OF, "--post")
    assert code == 1
    assert "not posted: homeless has no channel" in out
    assert len(fake_slack.calls_to("chat.postMessage")) == 2


def test_registry_export_and_dry_run_carry_the_gate_policy(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with_policy = REGISTRY.replace(
        "  - {name: good, team: ranking, owners: [U0AAA111]}\n",
        "  - name: good\n"
        "    team: ranking\n"
        "    owners: [U0AAA111]\n"
        "    gate: {max_monthly: 1500.25, allowed_instance_families: [g5, p4d]}\n",
    )
    db = fed_registry(database_url, tmp_path, with_policy)
    capsys.readouterr()
    code, exported, _ = run(capsys, *db, "registry", "export")
    assert code == 0
    assert (
        "  gate:\n    max_monthly: 1500.25\n    allowed_instance_families:\n    - g5\n    - p4d\n"
    ) in exported
    changed = tmp_path / "changed.yaml"
    changed.write_text(with_policy.replace("[g5, p4d]", "[g5]"))
    code, out, _ = run(capsys, *db, "registry", "import", str(changed), "--dry-run")
    assert code == 0
    assert out.splitlines()[0] == (
        '  update model good: gate {"allowed_instance_families": ["g5", "p4d"], '
        '"max_monthly": "1500.25"} -> {"allowed_instance_families": ["g5"], '
        '"max_monthly": "1500.25"}'
    )
    again = tmp_path / "exported.yaml"
    again.write_text(exported)
    code, out, _ = run(capsys, *db, "registry", "import", str(again), "--dry-run")
    assert code == 0 and "update" not in out.split("dry run")[0]  # export reads back unchanged
    code, out, _ = run(capsys, *db, "registry", "import", str(changed))
    assert code == 0 and "1 updated" in out
    code, out, _ = run(capsys, *db, "gate", "good", *AS_OF, "--format", "json")
    names = [c["name"] for c in json.loads(out)["checks"]]
    assert names[-2:] == ["max monthly", "instance families"]


def test_output_writes_the_report_to_a_file_and_keeps_the_gates_exit_code(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = fed_registry(database_url, tmp_path)
    capsys.readouterr()
    report = tmp_path / "gate.json"
    code, out, _ = run(
        capsys, *db, "gate", "nobudget", *AS_OF, "--format", "json", "--output", str(report)
    )
    assert code == 1 and out == ""
    assert json.loads(report.read_text())["reasons"] == ["nobudget has no budget"]
    code, out, _ = run(capsys, *db, "gate", "good", *AS_OF, "--output", str(report))
    assert code == 0 and report.read_text().startswith("gate PASS: good (as of 2026-11-30)")
    code, _, err = run(
        capsys, *db, "gate", "good", *AS_OF, "--output", str(tmp_path / "missing" / "gate.txt")
    )
    assert code == 3 and "cannot write --output" in err
