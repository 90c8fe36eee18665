"""Every documented CI snippet that runs `mlcost gate` fails its step when the gate does not pass.

The snippets are read from README.md and docs/*.md (a YAML workflow step's `run:`, or a shell
block) and run as GitHub runs a step by default: `bash -e`, no `pipefail`. A failing gate and a
gate on stale data must make the step fail; a passing one must not (so a snippet that fails for
any reason at all, e.g. a typo, is caught too).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.cli import days_back, import_registry_file, ingest_focus_days

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
SHELLS = {"", "bash", "sh", "shell"}

OWNED = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: recsys, team: ranking, owners: [U0AAA111]}
"""
PASSING = OWNED + 'budgets:\n  - {scope: "model:recsys", monthly: 1000}\n'
FAILING = OWNED  # no budget: the gate fails


def gate_snippets() -> list[tuple[str, str]]:
    """Return (where, script) for each documented snippet that runs the gate."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        where = str(page.relative_to(ROOT))
        for lang, body in FENCE.findall(page.read_text(encoding="utf-8")):
            if "mlcost gate" not in body:
                continue
            if lang in ("yaml", "yml"):
                steps = yaml.safe_load(body)
                for step in steps if isinstance(steps, list) else [steps]:
                    run = step.get("run", "") if isinstance(step, dict) else ""
                    if "mlcost gate" in run:
                        found.append((f"{where}: {step.get('name', 'step')}", run))
            elif lang in SHELLS:
                found.append((f"{where}: {lang or 'shell'} block", body))
            else:
                raise AssertionError(f"{where}: a `{lang}` block runs the gate; teach this test")
    return found


SNIPPETS = gate_snippets()


def test_the_documented_snippets_are_found() -> None:
    places = [where for where, _ in SNIPPETS]
    assert any(w.startswith("docs/economics.md: mlcost release gate") for w in places), places
    assert len(SNIPPETS) >= 2


def run_step(script: str, database_url: str, workdir: Path) -> int:
    """Run a snippet as a GitHub Actions step's default shell would (`bash -e`, no pipefail)."""
    # installing is the runner's business: this checkout's mlcost is on PATH instead
    body = "\n".join(
        ": skipped install" if line.strip().startswith("pip install") else line
        for line in script.splitlines()
    )
    path = workdir / "step.sh"
    path.write_text(body + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "MLCOST_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["MLCOST_DATABASE_URL"] = database_url
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-e", str(path)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    return done.returncode


@pytest.mark.parametrize(
    ("registry", "days_ago", "should_pass"),
    [(PASSING, 1, True), (FAILING, 1, False), (PASSING, 30, False)],
    ids=["passing", "failing", "stale"],
)
def test_each_documented_gate_step_fails_when_the_gate_does_not_pass(
    registry: str,
    days_ago: int,
    should_pass: bool,
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = import_registry_file(database_url, tmp_path, registry)
    today = dt.datetime.now(dt.UTC).date()  # what the mlcost processes below will read
    last = today - dt.timedelta(days=days_ago)
    ingest_focus_days(db, tmp_path, days_back(last, 3), model="unregistered")
    capsys.readouterr()
    for where, script in SNIPPETS:
        code = run_step(script, database_url, tmp_path)
        if should_pass:
            assert code == 0, f"{where}: the step failed on a passing gate"
        else:
            assert code != 0, f"{where}: the step passed on a gate that did not"
        assert (tmp_path / "gate.json").exists(), where
        (tmp_path / "gate.json").unlink()
