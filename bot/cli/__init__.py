"""The `mlcost` command line: one module per command group, each with register()."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from bot.cli import (
    db_cmd,
    demo_cmd,
    gate_cmd,
    ingest_cmd,
    poll_cmd,
    registry_cmd,
    report_cmd,
    review_cmd,
    serve_cmd,
)
from bot.cli.context import CliContext
from bot.errors import MlcostError

COMMAND_MODULES = [db_cmd, registry_cmd, ingest_cmd, report_cmd, serve_cmd, demo_cmd]
COMMAND_MODULES += [poll_cmd, review_cmd, gate_cmd]


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every command group registered."""
    parser = argparse.ArgumentParser(
        prog="mlcost", description="Make ML cloud spend legible and governed."
    )
    parser.add_argument("--database-url", help="override MLCOST_DATABASE_URL")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug detail")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    ctx = CliContext.from_args(args)
    try:
        return int(args.handler(args, ctx) or 0)
    except MlcostError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; nothing was committed", file=sys.stderr)
        return 130
    finally:
        ctx.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
