"""`/mlcost budget list|show [scope]|set <scope> <amount> [--alert 50,80,100]`."""

from __future__ import annotations

import re

from pydantic import ValidationError

from bot.budgets.admin import parse_amount, set_budget
from bot.budgets.board import budget_board, current_amount, normalise_scope
from bot.errors import UsageError
from bot.money import format_money
from bot.slack.blocks.budget import (
    build_budget_list_blocks,
    build_budget_set_blocks,
    build_budget_show_blocks,
)
from bot.slack.command_args import clip_word, cost_basis, split_options
from bot.slack.command_router import Invocation, Reply, subcommand
from bot.slack.permissions import scope_owners_or_admins

USAGE = "budget list | show <scope> | set <scope> <amount> [--alert 50,80,100]"
SET_USAGE = "budget set <scope> <amount> [--alert 50,80,100]"
SCOPES = "`model:recsys`, `team:ranking`, `stage:storage` or `model:recsys/stage:training`"


def parse_thresholds(text: str) -> list[int]:
    """Parse `50,80,100` (a `%` is allowed) into whole percentages."""
    parts = [p.strip().rstrip("%").strip() for p in text.split(",") if p.strip()]
    if not parts or not all(re.fullmatch(r"[0-9]{1,4}", p) for p in parts):
        raise UsageError(f"`--alert` takes percentages like `50,80,100`, not `{clip_word(text)}`")
    values = sorted({int(p) for p in parts})
    if values[0] < 1 or values[-1] > 1000:
        raise UsageError("alert thresholds are percentages between 1 and 1000")
    return values


def _scope_to_set(args: list[str]) -> str | None:
    """Return the scope that `budget set <scope> <amount>` would change, else None."""
    words, _options = split_options(args, ["--alert", "--cost"])
    if len(words) == 3 and words[0].lower() == "set":
        return normalise_scope(words[1])
    return None


@subcommand(
    "budget",
    usage=USAGE,
    example="/mlcost budget set model:recsys 15000 --alert 50,80,100",
    aliases=("budgets",),
    permission=scope_owners_or_admins(_scope_to_set),
)
def handle_budget_command(inv: Invocation) -> Reply:
    """List, show or set monthly budgets (owners and admins set)."""
    words, options = split_options(inv.args, ["--alert", "--cost"])
    action = words[0].lower() if words else "list"
    rest = words[1:]
    if action == "set":
        return _set(inv, rest, options)
    if "--alert" in options:
        raise UsageError("`--alert` goes with `budget set`")
    basis = cost_basis(options)
    if action in ("list", "ls") or (action == "show" and not rest):
        if rest:
            raise UsageError("`budget list` takes no arguments; `budget show <scope>` shows one")
        board = budget_board(session=inv.session, today=inv.now.date(), basis=basis)
        text, blocks = build_budget_list_blocks(board, inv.settings.currency)
        return Reply(text=text, blocks=blocks)
    if action == "show":
        if len(rest) != 1:
            raise UsageError(f"Usage: `/mlcost budget show <scope>`, scope like {SCOPES}")
        board = budget_board(session=inv.session, today=inv.now.date(), scope=rest[0], basis=basis)
        text, blocks = build_budget_show_blocks(board.statuses[0], board, inv.settings.currency)
        return Reply(text=text, blocks=blocks)
    raise UsageError(
        f"`budget {clip_word(action)}` is not a budget action. Usage: `/mlcost {USAGE}`"
    )


def _set(inv: Invocation, rest: list[str], options: dict[str, str]) -> Reply:
    if "--cost" in options:
        raise UsageError("`--cost` does not apply to `budget set`")
    if len(rest) != 2:
        raise UsageError(
            f"Usage: `/mlcost {SET_USAGE}`, e.g. "
            "`/mlcost budget set model:recsys 15000 --alert 50,80,100`"
        )
    scope = normalise_scope(rest[0])
    amount = parse_amount(rest[1])
    thresholds = parse_thresholds(options["--alert"]) if "--alert" in options else None
    existing = current_amount(inv.session, scope)
    try:
        budget = set_budget(
            session=inv.session,
            user_id=inv.user_id,
            scope=scope,
            amount=amount,
            thresholds=thresholds,
            currency=inv.settings.currency,
        )
    except ValidationError as exc:
        problems = "; ".join(
            str(e.get("msg", "invalid")).removeprefix("Value error, ") for e in exc.errors()
        )
        raise UsageError(f"{clip_word(problems, 300)}. Scopes look like {SCOPES}") from None
    # a budget keeps its currency when changed; a new one is in the organisation's
    before = format_money(existing, budget.currency) if existing is not None else None
    text, blocks = build_budget_set_blocks(budget, before, inv.user_id, budget.currency)
    return Reply(text=text, blocks=blocks, in_channel=True)
