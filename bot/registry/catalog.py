"""Look up models and teams (ORM objects, with their owners) by name; suggest a misspelt one."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from bot.db.schema import Admin, MLModel, Team
from bot.errors import NotFoundError
from bot.registry.names import suggestion


def find_model(session: Session, name: str) -> MLModel:
    """Return the model, or raise NotFoundError naming the closest names."""
    model = session.scalars(
        select(MLModel)
        .where(MLModel.name == name.lower())
        .options(selectinload(MLModel.owners), selectinload(MLModel.team).selectinload(Team.owners))
    ).first()
    if model is None:
        raise NotFoundError(suggestion(name, list(session.scalars(select(MLModel.name))), "model"))
    return model


def find_team(session: Session, name: str) -> Team:
    """Return the team, or raise NotFoundError naming the closest names."""
    team = session.scalars(
        select(Team).where(Team.name == name.lower()).options(selectinload(Team.owners))
    ).first()
    if team is None:
        raise NotFoundError(suggestion(name, list(session.scalars(select(Team.name))), "team"))
    return team


def is_admin(session: Session, user_id: str) -> bool:
    """Return whether the user is an mlcost admin."""
    return session.get(Admin, user_id) is not None


def model_owner_ids(model: MLModel) -> set[str]:
    """Return the model's owners, or its team's owners when it names none."""
    owners = {o.user_id for o in model.owners}
    return owners or {o.user_id for o in model.team.owners}


def can_manage_model(session: Session, user_id: str, model: MLModel) -> bool:
    """Owners of the model (or of its team) and admins may change it."""
    team_owners = {o.user_id for o in model.team.owners}
    return user_id in model_owner_ids(model) or user_id in team_owners or is_admin(session, user_id)


def can_manage_team(session: Session, user_id: str, team: Team) -> bool:
    """Team owners and admins may change a team's budgets."""
    return user_id in {o.user_id for o in team.owners} or is_admin(session, user_id)
