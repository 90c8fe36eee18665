"""The command line fails with one line and an exit code, never a traceback or a secret."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import boto3
import pytest

from bot.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def unusable_urls(tmp_path: Path) -> list[str]:
    return [
        "postgresql+psycopg://postgres:hunter2@127.0.0.1:1/x",  # nothing listens there
        "nonsense",
        "mysql+nosuchdriver://u:hunter2@h/db",
        f"sqlite:///{tmp_path / 'no-such-dir' / 'x.db'}",
    ]


def test_an_unusable_database_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in unusable_urls(tmp_path):
        code, _, err = run(capsys, "--database-url", url, "report", "spend")
        assert code == 2, (url, err)
        assert err.startswith("error: ") and err.count("\n") == 1, (url, err)
        assert "database" in err and "Traceback" not in err and "hunter2" not in err, err


def test_a_missing_postgresql_database_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    base = os.environ.get("MLCOST_TEST_DATABASE_URL")
    if not base:
        pytest.skip("PostgreSQL only (MLCOST_TEST_DATABASE_URL)")
    url = base.rsplit("/", 1)[0] + "/mlcost_no_such_database"
    code, _, err = run(capsys, "--database-url", url, "report", "spend")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err


def test_the_gate_exits_3_when_it_cannot_evaluate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in unusable_urls(tmp_path):
        code, _, err = run(capsys, "--database-url", url, "gate", "alpha")
        assert code == 3, (url, err)
        assert err.startswith("error: ") and err.count("\n") == 1


def test_the_gate_help_documents_its_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for code in ("0", "1", "2", "3"):
        assert re.search(rf"\b{code}\b[ :=]", text), text
    assert "could not evaluate" in text


def boom(*args: object, **kwargs: object) -> None:
    raise ZeroDivisionError("a bug")


@pytest.mark.parametrize("verbose", [False, True])
def test_an_unexpected_error_is_one_line_with_a_reference(
    database_url: str,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    verbose: bool,
) -> None:
    monkeypatch.setattr("bot.spend.reports.spend_report", boom)  # imported when run
    monkeypatch.setattr("bot.economics.gate.evaluate_gate", boom)
    flags = ["-v"] if verbose else []
    for command, expected in ((["report", "spend"], 1), (["gate", "alpha"], 3)):
        code, _, err = run(capsys, *flags, "--database-url", database_url, *command)
        assert code == expected
        line = err.strip().splitlines()[-1]
        found = re.fullmatch(
            r"error: unexpected ZeroDivisionError; reference ([0-9a-f]{8}).*", line
        )
        assert found, err
        logged = [r for r in caplog.records if found.group(1) in r.getMessage() and r.exc_info]
        assert bool(logged) == verbose
        caplog.clear()


FAKE_KEY, FAKE_SECRET, FAKE_TOKEN = (
    "AKIAFAKE1234567890",
    "fake/secret+KEY0123456789",
    "xoxb-1-2-sekrit",
)

# The CLI under moto in its own process (real stderr, real logging set-up). mock_aws puts its own
# keys in the environment; they are taken out so the profile below (a role assumed through STS,
# whose answer carries temporary credentials) is what boto3 uses.
UNDER_MOTO = textwrap.dedent(
    """
    import os, sys
    from moto import mock_aws
    from bot.cli import main

    with mock_aws():
        keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
        saved = {k: os.environ.pop(k) for k in keys if k in os.environ}
        try:
            code = main(sys.argv[1:])
        finally:
            os.environ.update(saved)
    sys.exit(code)
    """
)


def test_verbose_output_never_shows_aws_credentials_or_tokens(tmp_path: Path) -> None:
    (tmp_path / "config").write_text(
        "[profile mlcost]\nrole_arn = arn:aws:iam::123456789012:role/mlcost-reader\n"
        "source_profile = base\nregion = us-east-1\n"
    )
    (tmp_path / "credentials").write_text(
        f"[base]\naws_access_key_id = {FAKE_KEY}\naws_secret_access_key = {FAKE_SECRET}\n"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SLACK_", "MLCOST_"))},
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
        "AWS_PROFILE": "mlcost",
        "SLACK_BOT_TOKEN": FAKE_TOKEN,
        "SLACK_SIGNING_SECRET": "signing-sekrit",
    }
    db = f"sqlite:///{tmp_path / 'x.db'}"
    args = [
        "-v",
        "--database-url",
        db,
        "ingest",
        "cost-explorer",
        "--start",
        "2026-11-01",
        "--end",
        "2026-11-03",
    ]
    done = subprocess.run(
        [sys.executable, "-c", UNDER_MOTO, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "DEBUG" in done.stderr  # -v is on: debug detail is shown
    assert "read 0 rows" in done.stdout  # the Cost Explorer call was made (as the assumed role)
    for secret in (FAKE_KEY, FAKE_SECRET, FAKE_TOKEN, "signing-sekrit"):
        assert secret not in output
    # The assumed role's temporary credentials (STS's answer) are never shown either.
    assert "SecretAccessKey" not in output and "SessionToken" not in output


def test_verbose_keeps_the_clients_of_aws_and_slack_at_info(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "-v", "--database-url", database_url, "report", "spend")
    for name in ("botocore", "boto3", "urllib3", "s3transfer", "slack_sdk"):
        assert logging.getLogger(name).getEffectiveLevel() == logging.INFO, name


def test_a_bad_setting_is_named_in_one_line(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLCOST_MAX_BODY_BYTES", "lots")
    code, _, err = run(capsys, "--database-url", database_url, "report", "spend")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: invalid setting MLCOST_MAX_BODY_BYTES")
    assert "lots" not in err  # values are never echoed: another setting could be a secret
    code, _, err = run(capsys, "--database-url", database_url, "gate", "alpha")
    assert code == 3


def test_the_gate_on_an_unknown_model_could_not_evaluate(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--database-url", database_url, "gate", "no-such-model")
    assert code == 3 and err.startswith("error: ") and err.count("\n") == 1


def run_process(
    tmp_path: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    """Run `python -m bot.cli` in tmp_path with only these MLCOST_/SLACK_ variables set."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MLCOST_", "SLACK_"))}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        cwd=tmp_path,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_region_list_is_written_as_aws_users_write_it(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    done = run_process(
        tmp_path,
        {"MLCOST_SCAN_REGIONS": "us-east-1,eu-west-1"},
        "--database-url",
        db,
        "report",
        "spend",
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", [["report", "spend"], ["serve", "--port", "0"]])
def test_an_unreadable_setting_is_one_line_for_every_command(
    tmp_path: Path, command: list[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    env = {
        "MLCOST_SCAN_REGIONS": '["us-east-1"',  # broken JSON
        "MLCOST_SCAN_S3_INVENTORY": "ml-artifacts=s3://inv/x/",  # not a JSON object
        "SLACK_BOT_TOKEN": "xoxb-9-9-sekrit",
        "SLACK_SIGNING_SECRET": "signing-sekrit",
    }
    done = run_process(tmp_path, env, "--database-url", db, *command)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: invalid setting MLCOST_SCAN_REGIONS: "), done.stderr
    assert "MLCOST_SCAN_S3_INVENTORY: " in done.stderr
    assert "sekrit" not in done.stderr and "Traceback" not in done.stderr


def test_a_bad_setting_never_echoes_a_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the .env file is read too; a value that fails is named, never shown
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text(
        "SLACK_BOT_TOKEN=xoxb-9-9-sekrit\nMLCOST_LOG_FORMAT=xoxb-9-9-sekrit\n"
        "MLCOST_TEAM_TAG_KEYS=[xoxb-9-9-sekrit\nMLCOST_CURRENCY=xoxb-9-9-sekrit\n"
        "MLCOST_TIMEZONE=xoxb-9-9-sekrit\n"
    )
    code, out, err = run(capsys, "--database-url", f"sqlite:///{tmp_path / 'x.db'}", "serve")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "MLCOST_LOG_FORMAT" in err and "MLCOST_TEAM_TAG_KEYS" in err
    assert "MLCOST_CURRENCY" in err and "MLCOST_TIMEZONE" in err
    assert "sekrit" not in err


@pytest.fixture
def no_aws_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing in boto3's chain: no keys, no profile files, no instance or container role, and
    no default session an earlier test in this process left behind (boto3.client uses it, and
    its credentials were resolved while that test's moto keys were set)."""
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    for key in list(os.environ):
        if key.startswith("AWS_") and key != "AWS_CA_BUNDLE":
            monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.mark.usefixtures("no_aws_credentials")
def test_waste_scan_without_aws_credentials_could_not_scan(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "--database-url", database_url, "waste", "scan", "--regions", "us-east-1"
    )
    assert code == 3, err
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith("error: ") and "no AWS credentials" in err, err
    assert "unexpected" not in err


@pytest.mark.usefixtures("no_aws_credentials")
@pytest.mark.parametrize(
    "command",
    [
        ["ingest", "cost-explorer", "--start", "2026-11-01", "--end", "2026-11-03"],
        [
            "ingest",
            "athena",
            "--database",
            "cur",
            "--table",
            "t",
            "--month",
            "2026-11",
            "--output=s3://r/",
        ],
        ["ingest", "cur", "s3://billing/cur/"],
    ],
)
def test_an_ingestion_without_aws_credentials_says_so(
    database_url: str, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    code, _, err = run(capsys, "--database-url", database_url, *command)
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "no AWS credentials" in err and "unexpected" not in err, err


@pytest.mark.usefixtures("no_aws_credentials")
def test_an_ingestion_without_an_aws_region_says_so(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    command = ["ingest", "athena", "--database", "cur", "--table", "t", "--month", "2026-11"]
    code, _, err = run(capsys, "--database-url", database_url, *command, "--workgroup", "w")
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "no AWS region" in err and "AWS_DEFAULT_REGION" in err, err


def test_an_unknown_time_zone_is_a_bad_setting(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was 'unexpected ZoneInfoNotFoundError', exit 1, from the first command that read it."""
    monkeypatch.setenv("MLCOST_TIMEZONE", "Mars/Olympus_Mons")
    code, out, err = run(capsys, "--database-url", database_url, "poll", "--dry-run")
    assert code == 2 and out == "", err
    assert err.startswith("error: invalid setting MLCOST_TIMEZONE: ") and "IANA" in err, err
    monkeypatch.setenv("MLCOST_TIMEZONE", "Europe/Paris")
    code, out, err = run(capsys, "--database-url", database_url, "poll", "--dry-run")
    assert code == 0, err


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path: Path) -> None:
    """`mlcost demo | head -2`: the reader closes the pipe; mlcost stops without a traceback or
    an 'unexpected BrokenPipeError' line, and exits as a process killed by SIGPIPE would (141)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MLCOST_", "SLACK_"))}
    done = subprocess.run(
        [
            "bash",
            "-c",
            f"'{sys.executable}' -m bot.cli demo | head -2; echo \"${{PIPESTATUS[0]}}\"",
        ],
        cwd=tmp_path,
        env=clean,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and lines[-1] == "141", done.stdout
    assert done.stderr == "", done.stderr
