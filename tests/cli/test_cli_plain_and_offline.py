"""The CLI without Slack: no Slack markup on the terminal, one behaviour without a token, and a
dry run that creates nothing (issue 23, item 8)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bot.cli import main
from bot.cli.terminal import NOT_DELIVERED, terminal_text
from bot.errors import NotFoundError
from tests.cli.conftest import DemoRun

REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: recsys, team: ranking, owners: [U0AAA111]}
budgets:
  - {scope: "model:recsys", monthly: 1000}
"""


def test_a_dry_run_import_creates_no_database_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = tmp_path / "registry.yaml"
    registry.write_text(REGISTRY)
    database = tmp_path / "absent.db"
    db = ["--database-url", f"sqlite:///{database}"]
    assert main([*db, "registry", "import", str(registry), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert not database.exists()
    assert not list(tmp_path.glob("absent.db*"))  # nor its -wal or -shm files
    assert "compared with an empty registry" in out
    assert "would create 3, update 0, remove 0; nothing was changed" in out
    # the real import then creates it
    assert main([*db, "registry", "import", str(registry)]) == 0
    assert database.exists()


def test_code_spans_become_quotes_and_nothing_else_changes() -> None:
    assert terminal_text("run `mlcost db upgrade` first") == "run 'mlcost db upgrade' first"
    assert terminal_text("a stray ` tick") == "a stray ' tick"
    assert terminal_text("<nothing> *else* & more") == "<nothing> *else* & more"


def test_error_lines_carry_no_slack_markup(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # a domain error worded for Slack (`code` spans) reaching the CLI's one error boundary
    def fails(args: argparse.Namespace, ctx: object) -> int:
        raise NotFoundError("No model or team named `recsy`. Did you mean `recsys`?")

    monkeypatch.setattr("bot.cli.db_cmd.run_upgrade", fails)
    db = ["--database-url", f"sqlite:///{tmp_path / 'x.db'}"]
    assert main([*db, "db", "upgrade"]) == 2
    err = capsys.readouterr().err
    assert err == "error: No model or team named 'recsy'. Did you mean 'recsys'?\n"


def test_a_registry_error_worded_for_slack_reaches_the_terminal_without_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = tmp_path / "registry.yaml"
    registry.write_text(REGISTRY.replace("monthly: 1000", "monthly: 1000, amount: 5"))
    db = ["--database-url", f"sqlite:///{tmp_path / 'x.db'}"]
    assert main([*db, "registry", "import", str(registry)]) == 2
    err = capsys.readouterr().err
    assert "give 'monthly:' or 'amount:', not both" in err
    assert "`" not in err


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["poll", "--as-of", "2026-11-20"], 0),
        (["gate", "recsys", "--as-of", "2026-11-30", "--post"], 1),  # the gate's own verdict
        (["review", "post", "--month", "2026-11"], 0),
    ],
    ids=["poll", "gate --post", "review post"],
)
def test_posting_commands_without_a_token_queue_and_say_so_alike(
    argv: list[str],
    code: int,
    demo_copy: Path,
    demo_run: DemoRun,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = ["--database-url", f"sqlite:///{demo_copy / 'mlcost-demo.db'}"]
    assert main([*db, *argv]) == code
    out, err = capsys.readouterr()
    assert NOT_DELIVERED in out.splitlines(), out + err
    assert "error" not in err


def test_review_post_without_a_token_opens_the_reviews_for_serve_to_deliver(
    demo_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sqlalchemy import create_engine, text

    url = f"sqlite:///{demo_copy / 'mlcost-demo.db'}"
    assert main(["--database-url", url, "review", "post", "--month", "2026-10"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("review 2026-10: opened ")
    engine = create_engine(url)
    with engine.connect() as connection:
        waiting = connection.execute(
            text("SELECT count(*) FROM outbox WHERE dedupe_key LIKE 'review:2026-10:%'")
        ).scalar_one()
    engine.dispose()
    assert waiting > 0
