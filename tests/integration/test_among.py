"""`among`: a column among many values, as one array parameter on PostgreSQL (issue 24)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.engine import among
from bot.db.schema import Team


def test_among_selects_what_in_selects_with_one_parameter_on_postgresql(
    session: Session,
) -> None:
    names = [f"team-{i:04d}" for i in range(3_000)]
    session.add_all(Team(name=name) for name in names[::2])  # every other one exists
    session.flush()
    asked = names[:2_001]  # more values than a statement would want as parameters
    statement = select(Team.name).where(among(session, Team.name, asked)).order_by(Team.name)
    found = list(session.scalars(statement))
    assert found == list(
        session.scalars(select(Team.name).where(Team.name.in_(asked)).order_by(Team.name))
    )
    assert found == asked[::2]
    assert list(session.scalars(select(Team.name).where(among(session, Team.name, [])))) == []
    compiled = statement.compile(session.get_bind())
    if session.get_bind().dialect.name == "postgresql":
        assert "= ANY (" in str(compiled) and len(compiled.params) == 1
    else:
        assert " IN (" in str(compiled)
