"""The one global middleware: the services and the request's unit of work, in the context.

Bolt runs a listener after the middleware chain has returned (on its own thread, or on our
command workers), so a `with` block around `next()` would not span the listener. Instead the
middleware hands the listener a unit of work to call: it runs one step in a transaction and
commits or rolls back before returning, so no session stays open across a Slack call or a
chart render.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from slack_bolt import BoltContext
from sqlalchemy.orm import Session

from bot.bootstrap import AppServices

T = TypeVar("T")

SERVICES = "services"
UNIT_OF_WORK = "unit_of_work"


class UnitOfWork(Protocol):
    """Run one step in a transaction: commit if it returns, roll back if it raises."""

    def __call__(self, step: Callable[[Session], T], /) -> T: ...


def unit_of_work_for(services: AppServices) -> UnitOfWork:
    """Return the unit of work over the services' sessions (looked up at each call)."""

    def run_in_transaction(step: Callable[[Session], T]) -> T:
        with services.unit_of_work() as session:
            return step(session)

    return run_in_transaction


def services_middleware(services: AppServices) -> Callable[[BoltContext, Callable[[], None]], None]:
    """Return the global middleware that puts the services and a unit of work in the context."""
    unit_of_work = unit_of_work_for(services)

    def provide_services(context: BoltContext, next: Callable[[], None]) -> None:
        context[SERVICES] = services
        context[UNIT_OF_WORK] = unit_of_work
        next()

    return provide_services


def services_of(context: BoltContext) -> AppServices:
    """Return the services the middleware put in the context."""
    services: AppServices = context[SERVICES]
    return services


def unit_of_work_of(context: BoltContext) -> UnitOfWork:
    """Return the unit of work the middleware put in the context."""
    unit_of_work: UnitOfWork = context[UNIT_OF_WORK]
    return unit_of_work
