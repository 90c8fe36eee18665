"""Models and teams by name on the tables, without the ORM: what reading commands look up.

A misspelt name is refused with the closest names (bot/registry/catalog.py says the same for
the ORM's lookups, which Slack's handlers use to change what they find).
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row, select

from bot.db.tables import models, owners
from bot.errors import NotFoundError

if TYPE_CHECKING:
    from bot.db.reading import Reader


def suggestion(name: str, names: list[str], kind: str) -> str:
    """Say there is no `kind` called `name`, naming the closest (or the first ten) known names."""
    close = difflib.get_close_matches(name.lower(), names, n=3, cutoff=0.5)
    if close:
        return f"No {kind} named `{name}`. Did you mean " + ", ".join(f"`{c}`" for c in close) + "?"
    return f"No {kind} named `{name}`. Known {kind}s: " + ", ".join(f"`{n}`" for n in names[:10])


def model_row(reader: Reader, name: str) -> Row[Any]:
    """Return the registered model's row, or raise NotFoundError naming the closest names."""
    found = reader.execute(select(models).where(models.c.name == name.lower())).first()
    if found is None:
        raise NotFoundError(suggestion(name, list(reader.scalars(select(models.c.name))), "model"))
    return found


def model_name(reader: Reader, name: str) -> str:
    """Return the registered model's name, or raise NotFoundError naming the closest names."""
    return str(model_row(reader, name).name)


def model_owners(reader: Reader, model: Row[Any]) -> set[str]:
    """Return the model's owners, or its team's owners when it names none (as catalog does)."""
    own = set(reader.scalars(select(owners.c.user_id).where(owners.c.model_id == model.id)))
    if own:
        return own
    return set(reader.scalars(select(owners.c.user_id).where(owners.c.team_id == model.team_id)))
