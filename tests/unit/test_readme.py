"""The README stays the product's front page: short, every command listed, every link real."""

from __future__ import annotations

import re
from pathlib import Path

from bot.cli import build_cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _leaf_commands() -> list[str]:
    """Every runnable command line, e.g. 'mlcost ingest value'."""
    return [" ".join(("mlcost", *c.words)) for c in build_cli()[1] if c.runnable]


def _commands_table() -> str:
    section = README.split("## Commands", 1)[1]
    return section.split("\n## ", 1)[0]


def test_every_command_is_in_the_readme_table() -> None:
    table = _commands_table()
    rows = [line for line in table.splitlines() if line.startswith("| `mlcost")]
    listed = {re.match(r"\| `(mlcost(?: [a-z][a-z-]*)*)", row).group(1) for row in rows}  # type: ignore[union-attr]
    missing = [cmd for cmd in _leaf_commands() if cmd not in listed]
    assert not missing, f"commands missing from the README's Commands table: {missing}"


def test_the_readme_is_a_front_page_not_a_manual() -> None:
    assert len(README.splitlines()) < 250


def test_every_local_link_and_picture_in_the_readme_and_docs_exists() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_the_readme_picture_is_a_real_png() -> None:
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", README)
    assert pictures, "the README shows a chart"
    for picture in pictures:
        head = (ROOT / picture).read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(
        r"^(?:MLCOST_TEST_DATABASE_URL=\S+ )?\.venv/bin/pytest\b.*$", quick_start, re.M
    )
    assert len(commands) == 2, commands  # SQLite and PostgreSQL
    for command in commands:
        assert re.search(rf"^{re.escape(command)}$", ci, re.M), command
    assert ".venv/bin/pip install -e '.[dev]'" in quick_start
    assert "pip install mlcost" not in README  # not published: install from the repository


def test_the_registry_examples_in_the_readme_and_docs_load(tmp_path: Path) -> None:
    from bot.registry.spec import load_registry_file

    pages = [ROOT / "README.md", ROOT / "docs" / "ingestion.md"]
    blocks = [b for p in pages for b in re.findall(r"```yaml\n(.*?)```", p.read_text(), re.S)]
    registries = [b for b in blocks if b.lstrip().startswith("teams:")]
    assert len(registries) >= 2
    for n, block in enumerate(registries):
        path = tmp_path / f"registry-{n}.yaml"
        path.write_text(block, encoding="utf-8")
        assert load_registry_file(path).models  # raises with FILE:LINE on any error


def test_the_test_section_says_how_long_and_what_postgresql_needs() -> None:
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    tests = quick_start.split("Run the tests", 1)[1]
    assert re.search(r"`\.ci/run` .* took \d+ s in all", tests, re.S), "how long the suite takes"
    conftest = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    # what the harness does to the server, as the README tells it
    assert 'CREATE DATABASE "{name}"' in conftest and "CREATEDB" in tests
    assert "mlcost_test_" in conftest and "`mlcost_test_*`" in tests
    assert "WITH (FORCE)" in conftest and "PostgreSQL (13 or later)" in tests  # FORCE is 13+


def test_the_readme_says_once_how_a_bare_mlcost_runs() -> None:
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    steps = README.split("## From the demo to your own data", 1)[1].split("\n## ", 1)[0]
    assert ".venv/bin/mlcost demo" in quick_start
    assert "`.venv/bin/pip install .`" in quick_start  # runtime only, beside the dev install
    assert re.search(r"^mlcost ", steps, re.M)  # the steps run a bare mlcost...
    assert steps.count("source .venv/bin/activate") == 1  # ...after saying once how
    assert steps.index("source .venv/bin/activate") < steps.index("**1. ")
