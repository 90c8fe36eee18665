"""`mlcost registry import FILE` and `mlcost registry export [FILE]`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bot.cli.context import CliContext
from bot.registry import export_registry, import_registry, load_registry_file, registry_to_yaml


def register(commands: Any) -> None:
    registry = commands.add_parser("registry", help="teams, models, owners, budgets as YAML")
    sub = registry.add_subparsers(dest="registry_command", required=True)
    imp = sub.add_parser("import", help="make the database match a registry file")
    imp.add_argument("file", type=Path)
    imp.set_defaults(handler=run_import)
    exp = sub.add_parser("export", help="write the registry as YAML (stdout by default)")
    exp.add_argument("file", type=Path, nargs="?")
    exp.set_defaults(handler=run_export)


def run_import(args: argparse.Namespace, ctx: CliContext) -> int:
    """Validate the whole file, then apply it in one transaction."""
    spec = load_registry_file(args.file)
    with ctx.session() as session:
        changes = import_registry(
            spec, session=session, actor="cli", default_currency=ctx.settings.currency
        )
    print(
        f"registry {args.file}: {len(spec.teams)} teams, {len(spec.models)} models, "
        f"{len(spec.budgets)} budgets; {changes['created']} created, "
        f"{changes['updated']} updated, {changes['removed']} removed"
    )
    return 0


def run_export(args: argparse.Namespace, ctx: CliContext) -> int:
    """Write the current registry as YAML."""
    with ctx.session() as session:
        text = registry_to_yaml(export_registry(session=session))
    if args.file:
        args.file.write_text(text, encoding="utf-8")
        print(f"wrote {args.file}")
    else:
        print(text, end="")
    return 0
