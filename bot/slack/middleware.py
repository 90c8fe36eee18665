"""The one global middleware: what listeners use and the request's unit of work, in the context.

Listeners never see the composition root: the Slack app factory hands this middleware an object
with what they use (`ListenerServices`, which the root's services satisfy) and the middleware puts
it in each request's context. Bolt runs a listener after the middleware chain has returned (on
its own thread, or on our command workers), so a `with` block around `next()` would not span the
listener. Instead the middleware hands the listener a unit of work to call: it runs one step in a
transaction and commits or rolls back before returning, so no session stays open across a Slack
call or a chart render.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from slack_bolt import BoltContext
from sqlalchemy.orm import Session, sessionmaker

from bot.config import Settings
from bot.db.engine import session_scope

if TYPE_CHECKING:
    from bot.notify.delivery import DeliveryEdge
    from bot.notify.outbox import Renderer
    from bot.slack.notifier import Notifier
    from bot.waste.lifecycle import StopApproval
    from bot.waste.stopping import Where

T = TypeVar("T")

SERVICES = "services"
UNIT_OF_WORK = "unit_of_work"


class ListenerServices(Protocol):
    """What listeners use: settings, the clock, sessions, the outbox's edges and Stop it's pool.

    Read at each request, so whatever the app factory hands in may change between requests.
    """

    @property
    def settings(self) -> Settings: ...

    @property
    def session_factory(self) -> sessionmaker[Session]: ...

    @property
    def clock(self) -> Callable[[], dt.datetime]: ...

    @property
    def notifier(self) -> Notifier: ...

    @property
    def renderer(self) -> Renderer: ...

    @property
    def delivery_edge(self) -> DeliveryEdge: ...

    def stop_in_background(self, approval: StopApproval, where: Where) -> bool:
        """Run an approved Stop it off the listener's thread; False if it cannot start now."""
        ...


class UnitOfWork(Protocol):
    """Run one step in a transaction: commit if it returns, roll back if it raises."""

    def __call__(self, step: Callable[[Session], T], /) -> T: ...


def unit_of_work_for(services: ListenerServices) -> UnitOfWork:
    """Return the unit of work over the services' sessions (looked up at each call)."""

    def run_in_transaction(step: Callable[[Session], T]) -> T:
        with session_scope(services.session_factory) as session:
            return step(session)

    return run_in_transaction


def services_middleware(
    services: ListenerServices,
) -> Callable[[BoltContext, Callable[[], None]], None]:
    """Return the global middleware that puts the services and a unit of work in the context."""
    unit_of_work = unit_of_work_for(services)

    def provide_services(context: BoltContext, next: Callable[[], None]) -> None:
        context[SERVICES] = services
        context[UNIT_OF_WORK] = unit_of_work
        next()

    return provide_services


def services_of(context: BoltContext) -> ListenerServices:
    """Return what the middleware put in the context for listeners to use."""
    services: ListenerServices = context[SERVICES]
    return services


def unit_of_work_of(context: BoltContext) -> UnitOfWork:
    """Return the unit of work the middleware put in the context."""
    unit_of_work: UnitOfWork = context[UNIT_OF_WORK]
    return unit_of_work
