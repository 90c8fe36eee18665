"""Every command explains itself: walks the real parser (issue 23, item 7).

Reads each command's --help as a user sees it (argparse's public format_help), so nothing here
depends on argparse's private attributes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

from bot.cli import build_cli, main

ROOT_PARSER, COMMANDS = build_cli()
LEAVES = [c for c in COMMANDS if c.runnable]
GROUPS = [c for c in COMMANDS if not c.runnable]


@dataclass(frozen=True)
class Entry:
    """One argument as --help lists it: how it is written, and its help text."""

    section: str
    invocation: str
    help: str

    @property
    def takes_value(self) -> bool:
        return any(" " in spelling for spelling in self.invocation.split(", "))


def entries(help_text: str) -> list[Entry]:
    """Split a --help text into its arguments (two-space indented, help after 2+ spaces)."""
    found: list[list[str]] = []
    section = ""
    for line in help_text.splitlines():
        if not line.strip():  # sections are contiguous; an epilog follows a blank line
            section = ""
        elif line in ("positional arguments:", "options:"):  # not an epilog's own titles
            section = line[:-1]
        elif section and re.match(r"  \S", line):
            found.append([section, line.strip()])
        elif section and found and line.startswith("   "):
            found[-1].append(line.strip())
    result = []
    for section, first, *more in found:
        invocation, *help_ = re.split(r"\s{2,}", first, maxsplit=1)
        result.append(Entry(section, invocation, " ".join([*help_, *more]).strip()))
    return result


def words(command: object) -> str:
    return " ".join(getattr(command, "words", ()))


@pytest.mark.parametrize("command", LEAVES, ids=words)
def test_every_leaf_command_has_a_description(command: object) -> None:
    parser = command.parser  # type: ignore[attr-defined]
    assert parser.description, f"`mlcost {words(command)} --help` has no description"


@pytest.mark.parametrize("command", LEAVES, ids=words)
def test_every_positional_has_help_and_every_option_its_default(command: object) -> None:
    parser = command.parser  # type: ignore[attr-defined]
    problems = []
    for entry in entries(parser.format_help()):
        if entry.section == "positional arguments" and not entry.help:
            problems.append(f"positional {entry.invocation} has no help text")
        elif entry.section != "positional arguments" and entry.takes_value:
            said = entry.help.lower()
            if "default" not in said and "required" not in said:
                problems.append(f"option {entry.invocation} does not say its default")
    assert not problems, f"mlcost {words(command)}: " + "; ".join(problems)


@pytest.mark.parametrize("command", [*GROUPS], ids=words)
def test_every_subcommand_of_a_group_says_what_it_does(command: object) -> None:
    listed = command.parser.format_help()  # type: ignore[attr-defined]
    subs = [c for c in COMMANDS if c.words[:-1] == command.words]  # type: ignore[attr-defined]
    for sub in subs:
        assert re.search(rf"^    {re.escape(sub.words[-1])}\s+\S", listed, re.M), sub.words


def test_the_helper_reads_options_defaults_and_flags() -> None:
    text = (
        "usage: x\n\npositional arguments:\n  file                  a file\n\noptions:\n"
        "  -v, --verbose         log\n  --month MONTH         the month (default:\n"
        "                        this one)\n"
    )
    assert entries(text) == [
        Entry("positional arguments", "file", "a file"),
        Entry("options", "-v, --verbose", "log"),
        Entry("options", "--month MONTH", "the month (default: this one)"),
    ]
    assert [e.takes_value for e in entries(text)] == [False, False, True]


def test_bare_mlcost_lists_the_commands_like_git(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: mlcost")
    for command in COMMANDS:
        if len(command.words) == 1:
            assert re.search(rf"^    {command.words[0]}\s+\S", out, re.M), command.words


def test_a_group_without_its_subcommand_names_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: mlcost report")
    for sub in ("spend", "waste", "chargeback"):
        assert re.search(rf"^    {sub}\s+\S", out, re.M), sub


def test_bare_mlcost_as_a_process_prints_the_commands_and_exits_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "COMMAND" in done.stdout and "ingest" in done.stdout
    assert done.stderr == ""
