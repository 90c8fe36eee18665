"""`mlcost registry import FILE` and `mlcost registry export [FILE]`."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.counts import counted
from bot.errors import RegistryError

if TYPE_CHECKING:
    from bot.cli.context import CliContext
    from bot.registry.plan import ImportPlan
    from bot.registry.spec import RegistrySpec


def register(commands: Any) -> None:
    registry = commands.add_parser("registry", help="teams, models, owners, budgets as YAML")
    sub = registry.add_subparsers(dest="registry_command", required=True)
    imp = sub.add_parser("import", help="make the database match a registry file")
    imp.add_argument("file", type=Path, help="the registry YAML file (see docs/ingestion.md)")
    imp.add_argument(
        "--dry-run", action="store_true", help="print what would change; change nothing"
    )
    imp.add_argument(
        "--yes",
        action="store_true",
        help="import even an empty file, one removing over half the registry, "
        "or one reverting changes made in Slack",
    )
    imp.add_argument(
        "--keep-slack-changes",
        action="store_true",
        help="keep budgets and owners changed in Slack since the last import; import the rest",
    )
    imp.set_defaults(handler=run_import)
    exp = sub.add_parser("export", help="write the registry as YAML (stdout by default)")
    exp.add_argument("file", type=Path, nargs="?", help="where to write it (default: stdout)")
    exp.set_defaults(handler=run_export)


def _show_diff(plan: ImportPlan) -> None:
    for line in plan.diff.lines():
        print(f"  {line}")
    for change in plan.kept:
        print(f"  keep (changed in Slack) {change.line()}")


def _show_slack_changes(plan: ImportPlan) -> None:
    if plan.reverted:
        print(
            f"warning: this import reverts {counted(len(plan.reverted), 'change')} made in Slack "
            "since the last import:",
            file=sys.stderr,
        )
        for change in plan.reverted:
            print(f"  {change.line()}", file=sys.stderr)


def _refusal(plan: ImportPlan) -> str:
    ways = "see every change with --dry-run"
    if plan.reverted:
        ways += ", keep the Slack changes with --keep-slack-changes (or export them into the file)"
    return f"not imported: {'; '.join(plan.refusals)}; {ways}, or pass --yes to import it anyway"


def run_import(args: argparse.Namespace, ctx: CliContext) -> int:
    """Validate the file, show the diff, refuse destructive imports, apply in one transaction.

    A dry run changes nothing, not even by creating the database: when the SQLite file does not
    exist yet, it compares the file with an empty registry in a database in memory.
    """
    from bot.cli.context import CliContext
    from bot.registry.spec import load_registry_file

    spec = load_registry_file(args.file)
    if not (args.dry_run and _database_file_missing(ctx.settings.database_url)):
        return _import(args, ctx, spec)
    print(f"no database at {ctx.settings.database_url} yet: compared with an empty registry")
    memory = CliContext(settings=ctx.settings.replace(database_url="sqlite://"))
    try:
        return _import(args, memory, spec)
    finally:
        memory.close()


def _import(args: argparse.Namespace, ctx: CliContext, spec: RegistrySpec) -> int:
    from bot.db.locks import hold_registry_lock
    from bot.registry.plan import kept_entities, plan_import
    from bot.registry.sync import import_registry

    source = str(args.file)
    with ctx.session() as session:
        if not args.dry_run:  # until the commit, a Slack change waits: the plan stays true
            hold_registry_lock(session, exclusive=True)
        plan = plan_import(
            spec,
            session=session,
            source=source,
            keep_slack_changes=args.keep_slack_changes,
            default_currency=ctx.settings.currency,
        )
        _show_slack_changes(plan)
        if plan.refusals and not args.yes and not args.dry_run:
            raise RegistryError(_refusal(plan))
        _show_diff(plan)
        counts = plan.diff.counts()
        summary = (
            f"{counted(len(plan.spec.teams), 'team')}, {counted(len(plan.spec.models), 'model')}, "
            f"{counted(len(plan.spec.budgets), 'budget')}"
        )
        if args.dry_run:
            print(
                f"dry run of {source}: {summary}; would create {counts['created']}, "
                f"update {counts['updated']}, remove {counts['removed']}; nothing was changed"
            )
            if plan.refusals and not args.yes:
                print(f"without --yes the import would be refused: {'; '.join(plan.refusals)}")
            return 0
        result = import_registry(
            plan.spec,
            session=session,
            actor=cli_actor(),
            kept=kept_entities(plan.kept),
            default_currency=ctx.settings.currency,
        )
    counts = result.counts()
    print(
        f"registry {source}: {summary}; {counts['created']} created, "
        f"{counts['updated']} updated, {counts['removed']} removed"
    )
    if result.import_id is not None:
        print(f"audited as import {result.import_id}: mlcost audit --import {result.import_id}")
    return 0


def _database_file_missing(url: str) -> bool:
    """Whether the URL names an SQLite file that does not exist (connecting would create it)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    name = parsed.database
    return (
        parsed.get_backend_name() == "sqlite"
        and bool(name)
        and name != ":memory:"
        and not str(name).startswith("file:")
        and not Path(str(name)).exists()
    )


def cli_actor() -> str:
    """Return who runs the command, as the audit log names them: `cli:<login>` (else `cli`)."""
    try:
        login = getpass.getuser()
    except (OSError, KeyError):  # no login name in the environment or the password database
        return "cli"
    login = "".join(c for c in login if c.isprintable() and not c.isspace())
    return f"cli:{login}"[:40] if login else "cli"


def run_export(args: argparse.Namespace, ctx: CliContext) -> int:
    """Write the current registry as YAML."""
    from bot.registry.spec import registry_to_yaml
    from bot.registry.sync import export_registry

    with ctx.session() as session:
        text = registry_to_yaml(export_registry(session=session))
    if args.file:
        args.file.write_text(text, encoding="utf-8")
        print(f"wrote {args.file}")
    else:
        print(text, end="")
    return 0
