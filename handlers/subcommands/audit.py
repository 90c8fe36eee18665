"""`/mlcost audit <model|team> [--since D]`: who changed what (owners and admins only)."""

from __future__ import annotations

from bot.audit.trail import audit_trail, resolve_subject
from bot.errors import UsageError
from bot.periods import parse_day
from bot.slack.blocks.audit import MAX_SHOWN, build_audit_blocks
from bot.slack.command_args import split_options
from bot.slack.command_router import Invocation, Reply, subcommand
from bot.slack.permissions import audit_readers

USAGE = "audit <model|team> [--since YYYY-MM-DD]"


def _subject_named(args: list[str]) -> str | None:
    """Return the model or team `audit <name>` asks about, else None (the usage explains)."""
    words, _options = split_options(args, ["--since"])
    return words[0] if len(words) == 1 else None


@subcommand(
    "audit",
    usage=USAGE,
    example="/mlcost audit recsys --since 2026-11-01",
    permission=audit_readers(_subject_named),
)
def handle_audit_command(inv: Invocation) -> Reply:
    """Show who changed a model's or team's budgets, owners and decisions (owners and admins)."""
    words, options = split_options(inv.args, ["--since"])
    if len(words) != 1:
        raise UsageError(f"Usage: `/mlcost {USAGE}`, e.g. `/mlcost audit recsys`")
    since = parse_day(options["--since"], inv.now.date()) if "--since" in options else None
    subject = resolve_subject(inv.session, words[0])
    page = audit_trail(
        session=inv.session,
        since=since,
        subject=subject.name,
        subject_kind=subject.kind,
        limit=MAX_SHOWN,
        currency=inv.settings.currency,
    )
    text, blocks = build_audit_blocks(subject.kind, subject.name, page.entries, page.total, since)
    return Reply(text=text, blocks=blocks)
