"""The `mlcost` command line: one module per command group, each with register().

Building the parser imports only the command modules, which import their heavy dependencies
(SQLAlchemy, pandas, pyarrow, boto3, Slack, matplotlib) inside the handlers: `mlcost --help`
and a bad command line answer without loading them (tests/cli/test_help_imports.py).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple

from bot.cli import (
    audit_cmd,
    db_cmd,
    demo_cmd,
    gate_cmd,
    ingest_cmd,
    poll_cmd,
    progress,
    registry_cmd,
    report_cmd,
    review_cmd,
    serve_cmd,
    waste_cmd,
)
from bot.errors import MlcostError, new_reference
from bot.logs import configure_logging

COMMAND_MODULES = [db_cmd, registry_cmd, ingest_cmd, report_cmd, serve_cmd, demo_cmd]
COMMAND_MODULES += [poll_cmd, review_cmd, gate_cmd, waste_cmd, audit_cmd]


class Command(NamedTuple):
    """One subcommand: the words that reach it (`report spend`) and its parser."""

    words: tuple[str, ...]
    parser: argparse.ArgumentParser

    @property
    def runnable(self) -> bool:
        """Whether the command runs something (a group like `report` only holds subcommands)."""
        return self.parser.get_default("handler") is not None


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every command group registered."""
    return build_cli()[0]


def build_cli() -> tuple[argparse.ArgumentParser, list[Command]]:
    """Build the argument parser; return it with every subcommand, nested ones included."""
    made: list[argparse.ArgumentParser] = []

    class Parser(argparse.ArgumentParser):
        # add_subparsers makes each subcommand's parser with its parent's class (its documented
        # parser_class default), so every parser of the tree is kept here as it is made:
        # argparse itself keeps them only in private attributes
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

        def add_subparsers(self, **kwargs: Any) -> Any:
            # a group given without its subcommand (`mlcost`, `mlcost report`) prints its help,
            # listing the subcommands, as git does (main); argparse would only say "required"
            kwargs["required"] = False
            self.set_defaults(help_of_group=self.format_help)
            subcommands = super().add_subparsers(**kwargs)
            add_parser = subcommands.add_parser

            def add_described_parser(name: str, **options: Any) -> Any:
                # a subcommand's --help opens with what it does: its one-line help, unless it
                # has a longer description of its own
                if options.get("help") and not options.get("description"):
                    options["description"] = _sentence(options["help"])
                return add_parser(name, **options)

            subcommands.add_parser = add_described_parser  # type: ignore[method-assign]
            return subcommands

    parser = Parser(prog="mlcost", description="Make ML cloud spend legible and governed.")
    parser.add_argument("--version", action=_VersionAction)
    add_global_options(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(commands)
    # a subcommand's prog is its parent's prog and its name (no positional comes before one)
    found = [Command(tuple(sub.prog.split()[1:]), sub) for sub in made if sub is not parser]
    for command in found:
        # after the subcommand too (`mlcost report spend -v`); SUPPRESS keeps a value given
        # before the subcommand from being reset to the default by the subcommand's parser
        add_global_options(command.parser, default=argparse.SUPPRESS)
    return parser, found


def add_global_options(parser: argparse.ArgumentParser, default: object = None) -> None:
    """Add the options every command takes: --database-url, -v and -q."""
    parser.add_argument(
        "--database-url",
        default=default,
        help="database to use (default: MLCOST_DATABASE_URL, else sqlite:///mlcost.db)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=False if default is None else default,
        help="log debug detail",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=False if default is None else default,
        help="no progress bars (they are only drawn when stderr is a terminal)",
    )


def _sentence(text: str) -> str:
    """Return a one-line help as a sentence: a capital first letter and a full stop."""
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!", ")")) else text + "."


class _VersionAction(argparse.Action):
    """`--version`: print the installed version and exit, reading the package's metadata only
    then (argparse's own action wants the text up front, on every command line)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "show the version and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"mlcost {package_version()}")  # to stdout, as argparse's version action does
        parser.exit()


def package_version() -> str:
    """Return the installed mlcost version ("unknown" when run from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mlcost")
    except PackageNotFoundError:
        return "unknown"


log = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code.

    Exit codes: 0 done; 1 an unexpected error (or a command's own "no", e.g. a failed
    reconciliation); 2 a known error (bad input or settings, database unusable), also argparse's
    code for a bad command line and for a bare group (`mlcost`, `mlcost report`: its help, with
    the subcommands, goes to stdout). A command may set its own codes (the gate: 3 when it could not
    evaluate); 141 when the reader of its output stopped early (`mlcost demo | head`).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:  # a group without its subcommand: list them
        print(args.help_of_group(), end="")
        return 2
    # the command line is valid: now load what running a command needs
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import InterfaceError, OperationalError

    from bot.cli.context import CliContext
    from bot.cli.terminal import terminal_text
    from bot.config import SettingsError
    from bot.db.engine import database_unavailable

    configure_logging(args.verbose)
    progress.set_quiet(args.quiet)
    known_error = getattr(args, "known_error_exit", 2)
    unexpected_error = getattr(args, "unexpected_error_exit", 1)
    ctx: CliContext | None = None
    try:
        try:
            ctx = CliContext.from_args(args)
        except SettingsError as exc:  # a setting from the environment or .env
            raise MlcostError(str(exc)) from None
        return int(args.handler(args, ctx) or 0)
    except MlcostError as exc:
        print(f"error: {terminal_text(str(exc))}", file=sys.stderr)
        return known_error
    except (OperationalError, InterfaceError) as exc:  # the database went away mid-command
        url = make_url(ctx.settings.database_url) if ctx is not None else make_url("sqlite://")
        print(f"error: {terminal_text(str(database_unavailable(exc, url)))}", file=sys.stderr)
        return known_error
    except KeyboardInterrupt:
        print("interrupted; nothing was committed", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader stopped early (`mlcost demo | head`): end as a process killed by SIGPIPE
        # does, quietly; point stdout at /dev/null so the flush at exit cannot fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except Exception as exc:
        ref = new_reference()
        if args.verbose:
            log.error("unexpected error (reference %s)", ref, exc_info=exc)
        hint = "" if args.verbose else " (run with -v for the traceback)"
        print(f"error: unexpected {type(exc).__name__}; reference {ref}{hint}", file=sys.stderr)
        return unexpected_error
    finally:
        progress.set_quiet(False)  # --quiet is this command's, not its caller's (tests, the demo)
        if ctx is not None:
            ctx.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
