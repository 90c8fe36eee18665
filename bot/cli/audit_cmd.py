"""`mlcost audit`: who changed what, before and after, newest first (from the audit log)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from typing import TYPE_CHECKING, Any

from bot.cli.arguments import day_argument

if TYPE_CHECKING:
    from bot.audit.trail import AuditPage
    from bot.cli.context import CliContext

SUBJECTS = """subjects:
  model:recsys, team:ranking/stage:training, a resource key ...  that exact subject
  recsys                                                         the model or team of that name:
      its budgets, owners, sign-offs, reviews, resource findings (a team: its models' too)
A registry import records each team, model, owner list and budget it changed; --import ID
(printed by `mlcost registry import`) lists one import as a whole."""


def register(commands: Any) -> None:
    audit = commands.add_parser(
        "audit",
        help="who changed what, before and after, newest first",
        description="List changes from the audit log, newest first (times in UTC).",
        epilog=SUBJECTS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    audit.add_argument(
        "--since",
        type=day_argument,
        help="first day (YYYY-MM-DD, today...; default: the first change)",
    )
    audit.add_argument("--until", type=day_argument, help="last day, inclusive (default: today)")
    audit.add_argument(
        "--actor", help="who made the change (a Slack user ID, cli, mlcost...; default: anyone)"
    )
    audit.add_argument(
        "--subject", help="a model, team, budget scope or resource (see below; default: any)"
    )
    audit.add_argument(
        "--import",
        dest="import_id",
        type=_positive,
        metavar="ID",
        help="one registry import's changes (its id is printed by `mlcost registry import`; "
        "default: every change)",
    )
    audit.add_argument(
        "--format", choices=["table", "json"], default="table", help="(default: table)"
    )
    audit.add_argument(
        "--limit", type=_positive, default=50, help="at most N changes (default: 50)"
    )
    audit.set_defaults(handler=run)


def _positive(text: str) -> int:
    """Parse a count of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Print the matching changes as a table or as JSON."""
    from bot.audit.trail import audit_trail

    with ctx.reading() as session:
        page = audit_trail(
            session=session,
            since=args.since,
            until=args.until,
            actor=args.actor,
            subject=args.subject,
            import_id=args.import_id,
            limit=args.limit,
            currency=ctx.settings.currency,
        )
    if args.format == "json":
        print(json.dumps([entry.as_json() for entry in page.entries], indent=2, default=str))
    else:
        print(render_table(page))
    return 0


def render_table(page: AuditPage) -> str:
    """One line per change: when (UTC), actor, action, subject, before → after."""
    from bot.audit.trail import change_line, one_line
    from bot.cli.table import Column, Table

    if not page.entries:
        return "no changes match these filters"
    rows = [
        (
            entry.at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M"),
            one_line(entry.actor),
            one_line(entry.action),
            one_line(entry.subject),
            change_line(entry),
        )
        for entry in page.entries
    ]
    columns = [Column(head, cut=48) for head in ("when (UTC)", "actor", "action", "subject")]
    out = Table([*columns, Column("before → after")], rows).lines()
    if page.total > len(page.entries):
        more = page.total - len(page.entries)
        out.append(f"…and {more} more (raise --limit or narrow the filters)")
    return "\n".join(out)
