"""`/mlcost budget list|show [scope]|set <scope> <amount> [period] [--alert 50,80,100]`."""

from __future__ import annotations

import re

from pydantic import ValidationError

from bot.budgets.admin import parse_amount, set_budget
from bot.budgets.board import budget_board, current_amount, normalise_scope
from bot.errors import UsageError
from bot.money import format_money
from bot.periods import check_budget_period, per_period, per_suffix
from bot.slack.blocks.budget import (
    build_budget_list_blocks,
    build_budget_set_blocks,
    build_budget_show_blocks,
)
from bot.slack.command_args import clip_word, cost_basis, split_options
from bot.slack.command_router import Invocation, Reply, subcommand
from bot.slack.permissions import scope_owners_or_admins

USAGE = "budget list | show <scope> | set <scope> <amount> [period] [--alert 50,80,100]"
SET_USAGE = "budget set <scope> <amount> [daily|weekly|monthly|quarterly] [--alert 50,80,100]"
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
    if len(words) in (3, 4) and words[0].lower() == "set":
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
    """List, show or set budgets, monthly or per day, week or quarter (owners and admins set)."""
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
    if len(rest) not in (2, 3):
        raise UsageError(
            f"Usage: `/mlcost {SET_USAGE}`, e.g. "
            "`/mlcost budget set model:recsys 15000 --alert 50,80,100` or "
            "`/mlcost budget set model:recsys 2000 weekly`"
        )
    scope = normalise_scope(rest[0])
    amount = parse_amount(rest[1])
    # no period: a new budget is monthly, a changed one keeps its period
    period = check_budget_period(rest[2]) if len(rest) == 3 else None
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
            period=period,
        )
    except ValidationError as exc:
        problems = "; ".join(
            str(e.get("msg", "invalid")).removeprefix("Value error, ") for e in exc.errors()
        )
        raise UsageError(f"{clip_word(problems, 300)}. Scopes look like {SCOPES}") from None
    # a budget keeps its currency when changed; a new one is in the organisation's
    before = None
    if existing is not None:
        was_amount, was_period = existing
        unit = f" / {per_period(was_period)}" if was_period != budget.period else ""
        before = format_money(was_amount, budget.currency) + (unit or per_suffix(was_period))
    text, blocks = build_budget_set_blocks(budget, before, inv.user_id, budget.currency)
    return Reply(text=text, blocks=blocks, in_channel=True)
