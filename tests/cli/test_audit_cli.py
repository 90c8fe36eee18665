"""`mlcost audit`: filters, the table, JSON, and what bad input says."""

from __future__ import annotations

import json

import pytest

from bot.cli import main
from bot.db.engine import make_engine, make_session_factory, session_scope
from tests.support.audit_seed import RESOURCE_KEY, seed_audit


@pytest.fixture
def db(migrated_database_url: str) -> list[str]:
    """A database holding the seeded audit log; the command-line arguments that reach it."""
    engine = make_engine(migrated_database_url)
    with session_scope(make_session_factory(engine)) as session:
        seed_audit(session)
    engine.dispose()
    return ["--database-url", migrated_database_url]


def audit(db: list[str], capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([*db, "audit", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_table_lists_changes_newest_first_with_before_and_after(
    db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _err = audit(db, capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "when",
        "(UTC)",
        "actor",
        "action",
        "subject",
        "before",
        "→",
        "after",
    ]
    actions = [line.split()[3] for line in lines[1:]]
    assert actions == [
        "review.decide",
        "waste_resource_keep",
        "budget.acknowledge",
        "model.owners.set",
        "budget.set",
        "budget.set",
        # the registry import: its summary first, then one record per entity, in id order
        "registry.settings.update",
        "registry.budget.create",
        "registry.model.create",
        "registry.model.create",
        "registry.model.create",
        "registry.model.create",
        "registry.team.create",
        "registry.team.create",
        "registry.import",
    ]
    by_action = {line.split()[3] + line.split()[4]: line for line in lines[1:]}
    assert lines[1].startswith("2026-11-20 09:00  U0AAA111")
    # money as money; only the keys that changed (thresholds stayed 50, 80, 100)
    assert by_action["budget.setmodel:recsys"].endswith("monthly=$12,000 → monthly=$15,000")
    assert by_action["budget.setteam:platform"].endswith(
        "— → period=monthly, monthly=$5,000.50, thresholds=[50, 80, 100]"
    )
    assert by_action["registry.team.createteam:ranking"].endswith(
        "— → owners=[U0AAA111], channel=C0RANKING"
    )
    assert "0000000000" not in out
    assert by_action["model.owners.setmodel:recsys"].endswith(
        "owners=[U0AAA111] → owners=[U0AAA111, U0NEW0001]"
    )
    assert by_action[f"waste_resource_keep{RESOURCE_KEY}"].endswith(
        "decision=none, keep_until=— → decision=keep, keep_until=2026-11-22"
    )
    assert by_action["review.decidereview:2026-10:ranking:model:recsys"].endswith(
        "— → keep (reason: <!channel> & `tick` <https://x.example|click>)"  # as stored
    )
    assert "*" not in out and "<@" not in out  # no Slack markup of ours


@pytest.mark.parametrize(
    ("args", "actions"),
    [
        (
            ["--since", "2026-11-08", "--until", "2026-11-15"],
            ["waste_resource_keep", "budget.acknowledge", "model.owners.set"],
        ),
        (["--actor", "U0PPP111"], ["budget.set"]),
        (["--actor", "@U0PPP111"], ["budget.set"]),
        (
            ["--subject", "model:recsys"],
            [
                "budget.acknowledge",
                "model.owners.set",
                "budget.set",
                "registry.budget.create",
                "registry.model.create",
            ],
        ),
        (["--subject", "team:platform"], ["budget.set", "registry.team.create"]),
        (["--subject", RESOURCE_KEY], ["waste_resource_keep"]),
        (
            ["--subject", "recsys"],
            [
                "review.decide",
                "waste_resource_keep",
                "budget.acknowledge",
                "model.owners.set",
                "budget.set",
                "registry.budget.create",
                "registry.model.create",
            ],
        ),
        # a team brings its reviews and its models' records
        (
            ["--subject", "Ranking"],
            [
                "review.decide",
                "waste_resource_keep",
                "budget.acknowledge",
                "model.owners.set",
                "budget.set",
                "registry.budget.create",
                "registry.model.create",
                "registry.team.create",
            ],
        ),
        (
            ["--subject", "platform"],
            ["budget.set", *["registry.model.create"] * 3, "registry.team.create"],
        ),
        (["--subject", "registry"], ["registry.settings.update", "registry.import"]),
        (
            ["--import", "1"],
            [
                "registry.settings.update",
                "registry.budget.create",
                "registry.model.create",
                "registry.model.create",
                "registry.model.create",
                "registry.model.create",
                "registry.team.create",
                "registry.team.create",
                "registry.import",
            ],
        ),
        (["--limit", "2"], ["review.decide", "waste_resource_keep"]),
    ],
)
def test_filters(
    db: list[str], capsys: pytest.CaptureFixture[str], args: list[str], actions: list[str]
) -> None:
    code, out, _err = audit(db, capsys, "--format", "json", *args)
    assert code == 0
    assert [r["action"] for r in json.loads(out)] == actions


def test_limit_says_how_many_more(db: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = audit(db, capsys, "--limit", "2")
    assert code == 0
    assert out.splitlines()[-1] == "…and 13 more (raise --limit or narrow the filters)"


def test_json_is_the_full_record(db: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = audit(db, capsys, "--format", "json", "--subject", "model:recsys")
    assert code == 0
    records = json.loads(out)
    [record] = [r for r in records if r["actor"] == "U0AAA111" and r["action"] == "budget.set"]
    assert record["at"] == "2026-11-03T09:00:00+00:00"
    assert record["before"] == {
        "monthly": "12000",  # an exact decimal string, not 12000.0000000000
        "period": "monthly",
        "thresholds": [50, 80, 100],
    }
    assert record["after"] == {**record["before"], "monthly": "15000"}
    assert record["currency"] == "USD"
    assert record["detail"] == {"before": record["before"], "after": record["after"]}
    # the registry import that created it: the summary's id on every record of the import
    [created] = [r for r in records if r["action"] == "registry.budget.create"]
    assert (created["actor"], created["detail"]["import"]) == ("test", 1)
    assert created["after"] == {
        "period": "monthly",
        "monthly": "12000",
        "currency": "USD",
        "forecast": True,
        "thresholds": [50, 80, 100],
        "forecast_threshold": 100,
    }


def test_no_match_says_so(db: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = audit(db, capsys, "--actor", "U0NOBODY1")
    assert (code, out) == (0, "no changes match these filters\n")
    code, out, _err = audit(db, capsys, "--format", "json", "--since", "2026-12-01")
    assert (code, json.loads(out)) == (0, [])


def test_bad_input_is_specific(db: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        audit(db, capsys, "--since", "last tuesday")
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "'last tuesday' is not a date; use YYYY-MM-DD, today or yesterday" in err
    code, _out, err = audit(db, capsys, "--since", "2026-11-10", "--until", "2026-11-01")
    assert code == 2
    assert err == "error: --until 2026-11-01 is before --since 2026-11-10\n"
    with pytest.raises(SystemExit):
        audit(db, capsys, "--limit", "0")
    assert "must be at least 1" in capsys.readouterr().err


def test_today_is_accepted(db: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = audit(db, capsys, "--until", "today", "--since", "yesterday")
    assert (code, out) == (0, "no changes match these filters\n")
