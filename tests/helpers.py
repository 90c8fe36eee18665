"""Small builders shared by tests."""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend, SpendRollup
from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry

REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
  - {name: platform, channel: C0PLATFORM, owners: [U0PPP111]}
models:
  - {name: recsys, team: ranking, owners: [U0AAA111], match: {tags: {"ml:model": recsys}}}
  - {name: brightpath, team: platform, owners: [U0PPP111],
     match: {tags: {application: BrightPathMatrix}}}
  - {name: prod, team: platform, owners: [U0PPP111]}
  - {name: staging, team: platform, owners: [U0PPP111]}
budgets:
  - {scope: "model:recsys", monthly: 12000, thresholds: [50, 80, 100], forecast: true}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
attribution:
  model_tag_keys: ["ml:model", model, "2i2c:hub-name", workload]
  stage_tag_keys: ["ml:stage", stage]
  team_tag_keys: [team]
"""


def load_registry(session: Session, text: str = REGISTRY) -> None:
    """Import a registry into the session's database."""
    import_registry(parse_registry(text), session=session, actor="test")
    session.flush()


def ledger_totals(session: Session) -> tuple[Decimal, Decimal, int]:
    """Return (billed, effective, rows) over the whole ledger."""
    billed, effective, rows = session.execute(
        select(func.sum(DailySpend.billed_cost), func.sum(DailySpend.effective_cost), func.count())
    ).one()
    return Decimal(billed or 0), Decimal(effective or 0), int(rows)


def assert_rollup_matches_ledger(session: Session) -> int:
    """Check spend_rollup row by row against the ledger grouped in Python; return its rows."""
    expected: dict[tuple[object, ...], list[Decimal]] = {}
    for row in session.execute(
        select(
            DailySpend.day,
            DailySpend.model,
            DailySpend.team,
            DailySpend.stage,
            DailySpend.currency,
            DailySpend.billed_cost,
            DailySpend.effective_cost,
            DailySpend.gpu_hours,
        )
    ):
        sums = expected.setdefault(tuple(row[:5]), [Decimal(0)] * 3)
        for i, value in enumerate(row[5:]):
            sums[i] += value
    rolled = {
        tuple(row[:5]): list(row[5:])
        for row in session.execute(
            select(
                SpendRollup.day,
                SpendRollup.model,
                SpendRollup.team,
                SpendRollup.stage,
                SpendRollup.currency,
                SpendRollup.billed_cost,
                SpendRollup.effective_cost,
                SpendRollup.gpu_hours,
            )
        )
    }
    assert session.scalar(select(func.count()).select_from(SpendRollup)) == len(rolled)
    assert rolled == expected
    return len(rolled)
