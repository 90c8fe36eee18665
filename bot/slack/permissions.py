"""Who may run a subcommand: declared on it, checked by the router before it runs.

Each check returns quietly when the invocation changes nothing that needs permission (listing
budgets, showing a model's value); the domain functions check again when they change data.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from bot.audit.trail import MODEL, resolve_subject
from bot.budgets.admin import check_budget_permission
from bot.errors import PermissionDenied, RegistryError
from bot.registry.catalog import (
    can_manage_model,
    can_manage_team,
    find_model,
    find_team,
    is_admin,
    model_owner_ids,
)
from bot.registry.sync import parse_scope
from bot.review.summary import may_post_reviews
from bot.slack.command_router import Invocation, Permission
from bot.slack.mrkdwn import is_user_id


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


def audit_readers(subject_named: Callable[[list[str]], str | None]) -> Permission:
    """Allow the owners of the model (or its team) or of the team named, or an admin."""

    def check(session: Session, inv: Invocation) -> None:
        name = subject_named(inv.args)
        if name is None:
            return  # the subcommand's usage message explains what to name
        subject = resolve_subject(session, name)
        if subject.removed:  # its owners went with it
            if is_admin(session, inv.user_id):
                return
            raise PermissionDenied(
                f"`{subject.name}` is no longer in the registry: only an admin can see its "
                "audit trail."
            )
        if subject.kind == MODEL:
            model = find_model(session, subject.name)
            if can_manage_model(session, inv.user_id, model):
                return
            owners = model_owner_ids(model) | {o.user_id for o in model.team.owners}
            what = f"`{model.name}`"
        else:
            team = find_team(session, subject.name)
            if can_manage_team(session, inv.user_id, team):
                return
            owners = {o.user_id for o in team.owners}
            what = f"team `{team.name}`"
        # the error boundary escapes this message and keeps only valid mentions
        named = ", ".join(f"<@{u}>" if is_user_id(u) else u for u in sorted(owners))
        who = f"the owners of {what} ({named})" if owners else f"the owners of {what}"
        raise PermissionDenied(f"Only {who} or an admin can see its audit trail.")

    return check
