"""Money that burns silently: orphaned spend, idle endpoints, stale checkpoints, killed models,
and on-demand training that Spot would run for much less.

Each finding carries a monthly run-rate (the last week's cost scaled to 30 days), the evidence,
and the fix. Findings come from the ledger and value metrics; idle GPU instances can also be
confirmed from CloudWatch CPU utilisation when a client is given.
"""

from __future__ import annotations

import datetime as dt
import difflib
import logging
from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.schema import MLModel, Team
from bot.errors import NotFoundError, UsageError
from bot.waste.checks import (
    RUN_RATE_DAYS,
    WasteFinding,
    idle_endpoints,
    idle_gpu_instances,
    killed_still_spending,
    orphaned,
    serving_without_autoscaling,
    spot_candidates,
    stale_checkpoints,
)
from bot.waste.spot import SpotAdvisor, load_spot_advisor

log = logging.getLogger(__name__)

MIN_MONTHLY = Decimal(50)  # below this a finding is noise, not waste
SPOT_MAX_BAND = 2  # recommend Spot where it is interrupted less than 15 % of the time


def find_waste(
    *,
    session: Session,
    as_of: dt.date,
    cloudwatch: Any | None = None,
    min_monthly: Decimal = MIN_MONTHLY,
    spot: SpotAdvisor | None = None,
    spot_max_band: int = SPOT_MAX_BAND,
    currency: str = "USD",
) -> list[WasteFinding]:
    """Return every waste finding as of a day, largest monthly cost first.

    Findings are in `currency` (the organisation's): spend billed in other currencies is never
    added to it, and is left out. With a Spot advisor, on-demand training on instance types whose
    Spot interruption band is at most `spot_max_band` is a finding too, worth the monthly saving.
    """
    week = (as_of - dt.timedelta(days=RUN_RATE_DAYS - 1), as_of + dt.timedelta(days=1))
    findings = [
        *orphaned(session, week, currency),
        *stale_checkpoints(session, week, as_of, currency),
        *idle_endpoints(session, week, currency),
        *killed_still_spending(session, week, currency),
        *serving_without_autoscaling(session, as_of, currency),
    ]
    if cloudwatch is not None:
        findings += idle_gpu_instances(session, week, cloudwatch, as_of, currency)
    if spot is not None:
        findings += spot_candidates(session, week, spot, spot_max_band, currency)
    return sorted(
        (f for f in findings if f.monthly_cost >= min_monthly),
        key=lambda f: f.monthly_cost,
        reverse=True,
    )


def find_configured_waste(
    *,
    session: Session,
    settings: Settings,
    as_of: dt.date,
    cloudwatch: Any | None = None,
    strict: bool = True,
) -> list[WasteFinding]:
    """Return find_waste() with the configured Spot advisor feed and interruption band.

    An unreadable feed is an error, unless `strict` is off (scheduled jobs): then it is logged
    and the other findings still come.
    """
    try:
        spot: SpotAdvisor | None = load_spot_advisor(settings.spot_advisor_file)
    except UsageError as exc:
        if strict:
            raise
        log.warning("waste: no Spot candidates this time: %s", exc)
        spot = None
    return find_waste(
        session=session,
        as_of=as_of,
        cloudwatch=cloudwatch,
        spot=spot,
        spot_max_band=settings.spot_max_interruption_band,
        currency=settings.currency,
    )


def findings_for(session: Session, findings: list[WasteFinding], name: str) -> list[WasteFinding]:
    """Keep the findings of one team's models, or of one model; an unknown name is NotFound."""
    wanted = name.strip().lower()
    teams = dict(session.execute(select(Team.name, Team.id)).all())
    models = dict(session.execute(select(MLModel.name, MLModel.team_id)).all())
    if wanted in teams:
        keep = {m for m, team_id in models.items() if team_id == teams[wanted]}
    elif wanted in models:
        keep = {wanted}
    else:
        close = difflib.get_close_matches(wanted, [*teams, *models], n=3, cutoff=0.5)
        hint = (" Did you mean " + ", ".join(f"`{c}`" for c in close) + "?") if close else ""
        raise NotFoundError(f"No team or model named `{name[:60]}`.{hint}")
    return [f for f in findings if f.model in keep]
