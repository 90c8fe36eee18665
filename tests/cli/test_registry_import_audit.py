"""`mlcost registry import` audits each entity it changes, under one import id, as money."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

EMBED = """\
teams:
  - {name: search, channel: C0SEARCH, owners: [U0SSS111]}
models:
  - {name: embed, team: search, owners: [U0SSS111], match: {tags: {"ml:model": embed}}}
budgets:
  - {scope: "model:embed", monthly: 95765, thresholds: [50, 80, 100]}
  - {scope: "team:search", monthly: 200000, currency: EUR}
admins: [U0ADMIN01]
"""

CHANGED = (
    EMBED.replace("monthly: 95765", "monthly: 75135")
    .replace("owners: [U0SSS111], match", "owners: [U0SSS111, U0NEW0001], match")
    .replace('  - {scope: "team:search", monthly: 200000, currency: EUR}\n', "")
    .replace(
        "models:\n",
        "  - {name: vision, channel: C0VISION, owners: [U0VVV111]}\n"
        "models:\n"
        "  - {name: detect, team: vision, owners: [U0VVV111]}\n",
    )
)

SUMMARY = re.compile(r"; (\d+) created, (\d+) updated, (\d+) removed$", re.M)
IMPORT_ID = re.compile(r"audited as import (\d+): mlcost audit --import \1$", re.M)


def run(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["--database-url", url, *args])
    out, _err = capsys.readouterr()
    return code, out


def import_file(
    capsys: pytest.CaptureFixture[str], url: str, tmp_path: Path, text: str, *flags: str
) -> str:
    path = tmp_path / "registry.yaml"
    path.write_text(text)
    code, out = run(capsys, url, "registry", "import", str(path), *flags)
    assert code == 0, out
    return out


def audit_json(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> list[dict[str, Any]]:
    code, out = run(capsys, url, "audit", "--format", "json", "--limit", "500", *args)
    assert code == 0
    records = json.loads(out)
    assert isinstance(records, list)
    return records


def printed_counts(out: str) -> dict[str, int]:
    match = SUMMARY.search(out)
    assert match, out
    return dict(zip(("created", "updated", "removed"), map(int, match.groups()), strict=True))


def import_records(
    capsys: pytest.CaptureFixture[str], url: str, out: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The import's summary record and its entity records, found by the id it printed."""
    match = IMPORT_ID.search(out)
    assert match, out
    records = audit_json(capsys, url, "--import", match.group(1))
    [summary] = [r for r in records if r["action"] == "registry.import"]
    assert summary["id"] == int(match.group(1))
    entities = [r for r in records if r["action"] != "registry.import"]
    assert all(r["detail"]["import"] == summary["id"] for r in entities)
    return summary, entities


def audited_counts(entities: list[dict[str, Any]]) -> dict[str, int]:
    verbs = [r["action"].rsplit(".", 1)[1] for r in entities]
    return {
        "created": verbs.count("create"),
        "updated": verbs.count("update"),
        "removed": verbs.count("remove"),
    }


def test_a_budget_change_shows_under_its_model_as_money(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_file(capsys, database_url, tmp_path, EMBED)
    import_file(capsys, database_url, tmp_path, EMBED.replace("95765", "75135"))

    code, out = run(capsys, database_url, "audit", "--subject", "model:embed")
    assert code == 0
    [line] = [x for x in out.splitlines() if "registry.budget.update" in x]
    assert "model:embed" in line
    assert line.endswith("monthly=$95,765 → monthly=$75,135")
    assert "0000000000" not in out

    records = audit_json(capsys, database_url, "--subject", "model:embed")
    [update] = [r for r in records if r["action"] == "registry.budget.update"]
    assert update["actor"].startswith("cli")
    assert update["before"]["monthly"] == "95765"
    assert update["after"]["monthly"] == "75135"
    assert update["after"]["currency"] == "USD"
    assert "0000000000" not in json.dumps(records)


def test_the_printed_counts_are_the_audited_ones(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dry = import_file(capsys, database_url, tmp_path, EMBED, "--dry-run")
    assert "would create 4, update 1, remove 0" in dry
    first = import_file(capsys, database_url, tmp_path, EMBED)
    # a team, a model, two budgets; the registry's settings (admins) updated
    assert printed_counts(first) == {"created": 4, "updated": 1, "removed": 0}
    summary, entities = import_records(capsys, database_url, first)
    assert audited_counts(entities) == printed_counts(first)
    assert summary["after"] == {**printed_counts(first), "import": summary["id"]}

    dry = import_file(capsys, database_url, tmp_path, CHANGED, "--dry-run")
    second = import_file(capsys, database_url, tmp_path, CHANGED)
    # created: team vision, model detect; updated: embed's owners and budget; removed: a budget
    assert printed_counts(second) == {"created": 2, "updated": 2, "removed": 1}
    assert "would create 2, update 2, remove 1" in dry
    summary, entities = import_records(capsys, database_url, second)
    assert audited_counts(entities) == printed_counts(second)
    assert summary["after"]["created"] == 2

    again = import_file(capsys, database_url, tmp_path, CHANGED)
    assert printed_counts(again) == {"created": 0, "updated": 0, "removed": 0}
    assert "audited as import" not in again


def test_each_created_updated_and_removed_entity_shows_under_its_subject(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_file(capsys, database_url, tmp_path, EMBED)
    team = {r["action"]: r for r in audit_json(capsys, database_url, "--subject", "team:search")}
    assert set(team) == {"registry.team.create", "registry.budget.create"}  # and its budget
    assert team["registry.team.create"]["before"] is None
    assert team["registry.team.create"]["after"] == {"channel": "C0SEARCH", "owners": ["U0SSS111"]}
    assert team["registry.budget.create"]["after"]["monthly"] == "200000"
    assert team["registry.budget.create"]["currency"] == "EUR"
    model = {r["action"]: r for r in audit_json(capsys, database_url, "--subject", "model:embed")}
    assert set(model) == {"registry.model.create", "registry.budget.create"}
    assert model["registry.model.create"]["after"]["owners"] == ["U0SSS111"]
    assert model["registry.model.create"]["after"]["team"] == "search"
    code, out = run(capsys, database_url, "audit", "--subject", "team:search")
    assert code == 0 and "— → owners=[U0SSS111], channel=C0SEARCH" in out

    import_file(capsys, database_url, tmp_path, CHANGED)
    records = audit_json(capsys, database_url, "--subject", "model:embed")
    # newest first: the second import's budget and owner list, then the first import's
    assert [r["action"] for r in records[:2]] == [
        "registry.budget.update",
        "registry.owners.update",
    ]
    owners = records[1]
    assert (owners["before"], owners["after"]) == (["U0SSS111"], ["U0NEW0001", "U0SSS111"])
    # the removed EUR budget reads in euros; the new team and model under their own names
    code, out = run(capsys, database_url, "audit", "--subject", "team:search")
    [removed] = [x for x in out.splitlines() if "registry.budget.remove" in x]
    assert "monthly=€200,000" in removed and removed.endswith("→ —")
    code, out = run(capsys, database_url, "audit", "--subject", "vision")
    assert {"registry.team.create", "registry.model.create"} <= set(out.split())


def test_the_import_is_audited_as_whoever_ran_it(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("getpass.getuser", lambda: "alice\x1b[31m")
    out = import_file(capsys, database_url, tmp_path, EMBED)
    summary, entities = import_records(capsys, database_url, out)
    assert {r["actor"] for r in [summary, *entities]} == {"cli:alice[31m"}
    assert [r["action"] for r in audit_json(capsys, database_url, "--actor", "cli:alice[31m")]

    def no_login() -> str:
        raise OSError("no login name")

    monkeypatch.setattr("getpass.getuser", no_login)
    out = import_file(capsys, database_url, tmp_path, EMBED.replace("95765", "1"))
    summary, entities = import_records(capsys, database_url, out)
    assert {r["actor"] for r in [summary, *entities]} == {"cli"}


def test_audit_import_lists_nothing_for_an_id_that_is_not_an_import(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = import_file(capsys, database_url, tmp_path, EMBED)
    match = IMPORT_ID.search(first)
    assert match, first
    import_id = int(match.group(1))
    entity_ids = [r["id"] for r in audit_json(capsys, database_url) if r["id"] != import_id]
    assert entity_ids
    for other in entity_ids:
        # another record's id is no import: its record is not listed as one
        assert audit_json(capsys, database_url, "--import", str(other)) == []
    assert len(audit_json(capsys, database_url, "--import", str(import_id))) == len(entity_ids) + 1
