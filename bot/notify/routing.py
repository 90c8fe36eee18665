"""Where an alert goes: a scope's channel and owners, loading only what is needed."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from bot.db.schema import MLModel, RegistrySetting, Team
from bot.registry.catalog import model_owner_ids


class Router:
    """Find the channel and owners for a scope, loading only the models and teams needed."""

    def __init__(self, session: Session) -> None:
        self.session = session
        finops = session.get(RegistrySetting, "finops_channel")
        self.finops_channel: str | None = finops.value if finops is not None else None
        self._models: dict[str, MLModel | None] = {}
        self._teams: dict[str, Team | None] = {}
        # a burst routes thousands of alerts to a few thousand scopes: each is worked out once
        self._routes: dict[tuple[str | None, str | None], tuple[str | None, frozenset[str]]] = {}

    def preload(self, models: Iterable[str], teams: Iterable[str]) -> None:
        """Load the named models and teams with their owners in two queries."""
        wanted_models = {m for m in models if m not in self._models}
        if wanted_models:
            for model in self.session.scalars(
                select(MLModel)
                .where(MLModel.name.in_(wanted_models))
                .options(
                    selectinload(MLModel.owners),
                    selectinload(MLModel.team).selectinload(Team.owners),
                )
            ):
                self._models[model.name] = model
            for name in wanted_models:
                self._models.setdefault(name, None)
        wanted_teams = {t for t in teams if t not in self._teams}
        if wanted_teams:
            for team in self.session.scalars(
                select(Team).where(Team.name.in_(wanted_teams)).options(selectinload(Team.owners))
            ):
                self._teams[team.name] = team
            for name in wanted_teams:
                self._teams.setdefault(name, None)

    def route(
        self, model_name: str | None, team_name: str | None
    ) -> tuple[str | None, frozenset[str]]:
        """Return (channel, owners): the model's channel, else its team's, else FinOps."""
        key = (model_name, team_name)
        if key not in self._routes:
            self._routes[key] = self._route(model_name, team_name)
        return self._routes[key]

    def _route(
        self, model_name: str | None, team_name: str | None
    ) -> tuple[str | None, frozenset[str]]:
        if model_name is not None:
            self.preload([model_name], [])
            model = self._models.get(model_name)
            if model is not None:
                channel = model.effective_channel or self.finops_channel
                return channel, frozenset(model_owner_ids(model))
        elif team_name is not None:
            self.preload([], [team_name])
            team = self._teams.get(team_name)
            if team is not None:
                owners = frozenset(o.user_id for o in team.owners)
                return team.channel or self.finops_channel, owners
        return self.finops_channel, frozenset()
