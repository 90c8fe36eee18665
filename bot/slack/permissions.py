"""Who may run a subcommand: declared on it, checked by the router before it runs.

Each check returns quietly when the invocation changes nothing that needs permission (listing
budgets, showing a model's value); the domain functions check again when they change data.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from bot.budgets.admin import check_budget_permission
from bot.errors import PermissionDenied, RegistryError
from bot.registry.catalog import can_manage_model, find_model
from bot.registry.sync import parse_scope
from bot.review.summary import may_post_reviews
from bot.slack.command_router import Invocation, Permission


def model_owners_or_admins(
    model_named: Callable[[list[str]], str | None], refusal: str
) -> Permission:
    """Allow the model's owners (and its team's) or an admin; `refusal` names `{model}`."""

    def check(session: Session, inv: Invocation) -> None:
        name = model_named(inv.args)
        if name is None:
            return
        model = find_model(session, name)
        if not can_manage_model(session, inv.user_id, model):
            raise PermissionDenied(refusal.format(model=model.name))

    return check


def scope_owners_or_admins(scope_named: Callable[[list[str]], str | None]) -> Permission:
    """Allow a budget scope's owners or an admin (an organisation-wide scope: admins only)."""

    def check(session: Session, inv: Invocation) -> None:
        scope = scope_named(inv.args)
        if scope is None:
            return
        try:
            parse_scope(scope)
        except RegistryError:
            return  # not a scope: the subcommand's own validation explains what one looks like
        check_budget_permission(session, inv.user_id, scope)

    return check


def team_owners_or_admins(session: Session, inv: Invocation) -> None:
    """Allow the owners of at least one team, or an admin."""
    teams = may_post_reviews(session, inv.user_id)
    if teams is not None and not teams:
        raise PermissionDenied("Only team owners or an admin can post a review.")
