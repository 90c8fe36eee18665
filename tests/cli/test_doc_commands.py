"""Every `mlcost` command the README and docs/*.md show is one the real command line takes, and
each one that can run offline runs, against a copy of the demo's database.

Commands are read from shell code blocks (every line; in a plain block only `$ ` lines, the rest
is output), from YAML blocks' `run:` steps, from inline code that is a whole command (no
placeholders), and from the deployment files (the image's and compose's commands, the systemd
unit's). `docker run IMAGE ARGS`, `docker compose run SERVICE ARGS` and `systemd-run ... mlcost`
count as the mlcost command they run. Each is parsed by the parser `mlcost` itself builds
(`bot.cli.build_cli`). One that needs Slack, AWS, the network or a file the reader brings is
only parsed; the others run in a folder holding the README's registry file and this checkout's
`tests/data`, and must exit as documented.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from bot.cli import build_cli, main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
SHELLS = {"", "bash", "sh", "shell", "console"}
INLINE = re.compile(r"`((?:\.venv/bin/)?mlcost(?: [^`]*)?)`")
# written in the docs for the reader to fill in: not a command as it stands
PLACEHOLDER = re.compile(r"\.\.\.|[\[<>|]|\b(?:[A-Z][A-Z_0-9]*|YYYY-MM(?:-DD)?|D|M|T|W|A)\b")


@dataclass(frozen=True)
class Shown:
    """An mlcost command as a page shows it: where, and the arguments mlcost gets."""

    where: str
    argv: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.where}: mlcost {shlex.join(self.argv)}"


def _dockerfile_cmd() -> list[str]:
    found = re.search(r"^CMD (\[.*\])$", (ROOT / "Dockerfile").read_text(), re.M)
    assert found, "the Dockerfile has a CMD"
    return list(json.loads(found[1]))


def _compose_services() -> dict[str, list[str]]:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return {
        name: list(service.get("command") or _dockerfile_cmd())
        for name, service in compose["services"].items()
        if "build" in service or service.get("image", "").startswith("mlcost")
    }


OPTIONS_WITH_VALUES = {"-v", "--volume", "-e", "--env", "--env-file", "-p", "--publish", "--name"}


def _after_options(words: list[str]) -> list[str]:
    """Drop docker's options (and their values) up to the first positional word."""
    rest = list(words)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in OPTIONS_WITH_VALUES and "=" not in option and rest:
            rest.pop(0)
    return rest


def mlcost_arguments(words: list[str]) -> list[str] | None:
    """Return the arguments mlcost gets from one simple shell command, or None if it runs none."""
    while words and (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]) or words[0] == "sudo"):
        words = words[1:]
    if not words:
        return None
    if Path(words[0]).name == "mlcost":
        return words[1:]
    if words[0] == "systemd-run":  # its options come first, then the command it runs
        at = next(i for i, w in enumerate(words) if w.endswith("/mlcost") and "=" not in w)
        return words[at + 1 :]
    if words[:2] == ["docker", "run"]:
        image, *args = _after_options(words[2:])
        assert image == "mlcost", words
        return args or _dockerfile_cmd()
    if words[:3] == ["docker", "compose", "run"]:
        service, *args = _after_options(words[3:])
        return args or _compose_services()[service]
    return None


def simple_commands(line: str) -> Iterator[list[str]]:
    """Split a shell line into its simple commands (at |, &&, || and ;), comments dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    for token in lexer:
        if token in ("|", "||", "&&", ";", "&"):
            yield words
            words = []
        else:
            words.append(token)
    yield words


def shell_lines(page: Path) -> Iterator[tuple[int, str]]:
    """Yield (line number, command line) for each command line in the page's code blocks."""
    text = page.read_text(encoding="utf-8")
    for block in FENCE.finditer(text):
        lang, body = block.groups()
        first = text.count("\n", 0, block.start()) + 2
        if lang in ("yaml", "yml"):
            steps = yaml.safe_load(body)
            for step in steps if isinstance(steps, list) else [steps]:
                run = step.get("run", "") if isinstance(step, dict) else ""
                for line in run.replace("\\\n", " ").splitlines():
                    yield first, line
        elif lang in SHELLS:
            for offset, line in enumerate(body.replace("\\\n", " ").splitlines()):
                if lang == "" and not line.startswith("$ "):
                    continue  # a plain block shows output; its commands are the `$ ` lines
                yield first + offset, line.removeprefix("$ ")


def shown_commands() -> list[Shown]:
    """Return every mlcost command the README, docs/*.md and the deployment files show."""
    shown = []
    for page in PAGES:
        name = str(page.relative_to(ROOT))
        for number, line in shell_lines(page):
            for words in simple_commands(line):
                args = mlcost_arguments(words)
                if args is not None:
                    shown.append(Shown(f"{name}:{number}", tuple(args)))
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for span in INLINE.findall(line):
                words = span.split()[1:]
                if words and not PLACEHOLDER.search(" ".join(words)):
                    shown.append(Shown(f"{name}:{number} (inline)", tuple(words)))
    shown.append(Shown("Dockerfile: CMD", tuple(_dockerfile_cmd())))
    for service, command in _compose_services().items():
        shown.append(Shown(f"compose.yaml: {service}", tuple(command)))
    unit = (ROOT / "deploy" / "mlcost.service").read_text(encoding="utf-8")
    for key, line in re.findall(r"^(Exec\w+)=(.*)$", unit, re.M):
        args = mlcost_arguments(shlex.split(line.lstrip("-+!@")))
        if args is not None:
            shown.append(Shown(f"deploy/mlcost.service: {key}", tuple(args)))
    return shown


SHOWN = shown_commands()
COMMAND_WORDS = {command.words for command in build_cli()[1]}


def command_words(argv: tuple[str, ...]) -> tuple[str, ...]:
    """Return the subcommand the arguments name (`report spend`), options skipped."""
    words: tuple[str, ...] = ()
    for word in argv:
        if word.startswith("-"):
            continue
        if (*words, word) not in COMMAND_WORDS:
            break
        words = (*words, word)
    return words


def parse(argv: tuple[str, ...]) -> argparse.Namespace:
    """Parse with mlcost's own parser; fail the test with argparse's message if it refuses."""
    parser = build_cli()[0]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return parser.parse_args(list(argv))
    except SystemExit as exit_:
        if exit_.code == 0:  # --version, --help
            return argparse.Namespace()
        raise AssertionError(err.getvalue().strip().splitlines()[-1]) from None


def test_the_commands_are_found() -> None:
    places = {(s.where.split(":")[0], s.argv) for s in SHOWN}
    for expected in (
        ("README.md", ("demo",)),
        ("README.md", ("serve", "--socket", "--no-scheduler")),
        ("docs/slack.md", ("serve", "--http", "--host", "0.0.0.0", "--port", "3000")),
        ("docs/deploy.md", ("report", "spend", "--month", "2026-11")),  # systemd-run's
        ("compose.yaml", ("db", "upgrade")),
        ("deploy/mlcost.service", ("db", "upgrade")),
    ):
        assert expected in places, sorted(places)
    assert any(s.argv[:2] == ("registry", "import") and "deploy.md" in s.where for s in SHOWN)
    assert any("(inline)" in s.where for s in SHOWN)
    assert len(SHOWN) >= 40


@pytest.mark.parametrize("shown", SHOWN, ids=str)
def test_every_command_shown_is_one_mlcost_takes(shown: Shown) -> None:
    words = command_words(shown.argv)
    if shown.where.endswith("(inline)"):
        # prose names a command (`mlcost ingest focus`), a group or an option (`mlcost -v`)
        if not words:
            assert all(w.startswith("-") for w in shown.argv), shown
            parse((*shown.argv, "db", "upgrade"))  # an option mlcost takes before a command
            return
        if shown.argv == words:
            return
    parse(shown.argv)


# What keeps a shown command from running here; everything else runs.
NEEDS = {
    ("serve",): "Slack",
    ("review", "post"): "Slack",
    ("waste", "scan"): "AWS",
    ("ingest", "athena"): "AWS",
    ("ingest", "cloudwatch"): "AWS",
    ("demo",): "nothing, but tests/cli/conftest.py runs it once for every test",
}


def why_not_run(shown: Shown, args: argparse.Namespace) -> str | None:
    """Return what the command needs that a test here does not have, or None if it can run."""
    words = command_words(shown.argv)
    if words in NEEDS:
        return NEEDS[words]
    if words == ("ingest", "cost-explorer") and not getattr(args, "from_file", None):
        return "AWS"
    if getattr(args, "post", False):
        return "Slack"
    if any(re.match(r"(s3|https?)://", word) for word in shown.argv):
        return "the network"
    for name in ("locations", "location", "file", "files"):
        value = getattr(args, name, None)
        paths = [str(p) for p in (value if isinstance(value, list) else [value]) if p]
        missing = [p for p in paths if p not in SANDBOX_FILES and not (ROOT / p).exists()]
        if missing:
            return f"the reader's own {', '.join(missing)}"
    return None


def readme_registry() -> str:
    """The registry file README step 1 writes."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return next(b for b in re.findall(r"```yaml\n(.*?)```", readme, re.S) if "teams:" in b)


# Files a command shown in the docs names, as the docs' reader would have them.
SANDBOX_FILES = {"registry.yaml": readme_registry}

# Commands that exit with more than 0 by design, by subcommand: the gate's exit code is its
# verdict (0 pass, 1 fail, 3 could not evaluate: the demo's data ages with the calendar).
EXPECTED_EXITS: dict[tuple[str, ...], set[int]] = {("gate",): {0, 1, 3}}

# Commands the docs run on the reader's own new database, not on the demo's organisation.
ON_A_NEW_DATABASE = {("registry", "import")}


def runnable() -> list[pytest.ParameterSet]:
    cases = []
    for shown in SHOWN:
        try:
            args = parse(shown.argv)
        except AssertionError:
            continue  # the test above fails for it
        if not vars(args):
            continue  # --version, --help
        reason = why_not_run(shown, args)
        marks = [pytest.mark.skip(reason=f"needs {reason}")] if reason else []
        cases.append(pytest.param(shown, id=str(shown), marks=marks))
    return cases


@pytest.mark.parametrize("shown", runnable())
def test_every_command_shown_that_runs_offline_runs(
    shown: Shown,
    demo_copy: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "reader"
    folder.mkdir()
    (folder / "tests").symlink_to(ROOT / "tests")  # `tests/data/...` as from a checkout
    for name, content in SANDBOX_FILES.items():
        (folder / name).write_text(content(), encoding="utf-8")
    monkeypatch.chdir(folder)
    words = command_words(shown.argv)
    database = folder / "mlcost.db" if words in ON_A_NEW_DATABASE else demo_copy / "mlcost-demo.db"
    monkeypatch.setenv("MLCOST_DATABASE_URL", f"sqlite:///{database}")
    for name in [n for n in os.environ if n.startswith(("SLACK_", "GITHUB_"))]:
        monkeypatch.delenv(name)
    code = main(list(shown.argv))
    out, err = capsys.readouterr()
    if getattr(parse(shown.argv), "handler", None) is None:
        # a group named in prose (`mlcost ingest`): like git, it lists its commands, exit 2
        assert code == 2 and out.startswith("usage: mlcost"), f"{shown} exited {code}:\n{out}"
        return
    expected = EXPECTED_EXITS.get(words, {0})
    assert code in expected, f"{shown} exited {code}:\n{err[-2000:]}\n{out[-2000:]}"


def test_no_page_says_serve_migrates() -> None:
    # serve refuses a database behind the latest schema (tests/cli/test_serve_checks.py,
    # test_a_database_behind_the_latest_migration_is_refused); only `mlcost db upgrade` migrates
    claim = re.compile(r"\bserve`? (?:would |also |then )*migrates?\b", re.I)
    found = []
    for page in PAGES:
        text = " ".join(page.read_text(encoding="utf-8").split())
        found += [
            f"{page.relative_to(ROOT)}: ...{text[m.start() - 40 : m.end() + 40]}..."
            for m in claim.finditer(text)
        ]
    assert not found, found
