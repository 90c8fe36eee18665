"""The registry the ingest and report tests attribute the sample exports to."""

from __future__ import annotations

from sqlalchemy.orm import Session

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
