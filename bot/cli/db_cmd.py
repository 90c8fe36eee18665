"""`mlcost db upgrade`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.cli.context import CliContext


def register(commands: Any) -> None:
    db = commands.add_parser("db", help="database schema")
    sub = db.add_subparsers(dest="db_command", required=True)
    up = sub.add_parser("upgrade", help="apply every migration")
    up.set_defaults(handler=run_upgrade)


def run_upgrade(args: argparse.Namespace, ctx: CliContext) -> int:
    """Apply migrations up to head."""
    _ = ctx.engine
    print(f"database is at the latest schema ({ctx.engine.url.render_as_string()})")
    return 0
