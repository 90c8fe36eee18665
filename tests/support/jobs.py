"""Run a declared scheduled job now, with the dependencies the composition root binds."""

from __future__ import annotations

from typing import Any

from bot.bootstrap import AppServices, scheduled_jobs
from bot.notify.schedule import JobSpec


def declared_job(services: AppServices, job_id: str) -> JobSpec:
    """Return the job the domains declare under this id, bound to these services."""
    jobs = {spec.id: spec for spec in scheduled_jobs(services)}
    return jobs[job_id]


def run_job(services: AppServices, job_id: str) -> Any:
    """Run the job once, as the leader's scheduler would (its errors are raised, not logged)."""
    return declared_job(services, job_id).run()
