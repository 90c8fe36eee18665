"""The composition root: Settings -> sessions -> Slack client, notifier, history lookup, clock.

Everything that talks to the outside world is built here, once, and handed by the entry points
(the CLI, the Slack app factory, the HTTP server, `serve`'s scheduler, the demo) to whatever
needs it, piece by piece: the Bolt listeners get what the app factory puts in their context, the
domains' scheduled jobs get their dependencies bound (`scheduled_jobs`). Only entry points import
this module. Tests build the same object with fakes in place of the edges.
"""

from __future__ import annotations

import datetime as dt
import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from bot.config import Settings
from bot.db.engine import session_scope
from bot.errors import AwsUnavailable, aws_error_reason

if TYPE_CHECKING:
    from slack_sdk import WebClient
    from sqlalchemy.orm import Session, sessionmaker

    from bot.notify.delivery import DeliveryEdge
    from bot.notify.outbox import FindPosted, Renderer
    from bot.notify.schedule import JobSpec
    from bot.slack.notifier import Notifier
    from bot.waste.lifecycle import StopApproval
    from bot.waste.stopping import BackgroundActions, Where


def system_clock() -> dt.datetime:
    """Return the current time, aware, in UTC."""
    return dt.datetime.now(dt.UTC)


def aws_client(service: str, region: str | None = None) -> Any:
    """Create a boto3 client that retries throttling with backoff (standard mode)."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import NoRegionError

    try:
        return boto3.client(  # type: ignore[call-overload]
            service,
            region_name=region,
            config=Config(retries={"mode": "standard", "max_attempts": 8}),
        )
    except NoRegionError as exc:
        raise AwsUnavailable(f"{service}: {aws_error_reason(exc)}") from None


AwsClientFactory = Callable[..., Any]


class AppServices:
    """The composition root's products, which the entry points hand out piece by piece.

    `client`, `notifier`, `find_posted` and `renderer` default to the real Slack ones (the
    Block Kit renderer is bot/slack/render.py), built on first use: a command that only reads
    the ledger never loads slack_sdk or the Block Kit builders. This is the only place they are
    constructed. The Slack app hands the object to its listeners as `ListenerServices`
    (bot/slack/middleware.py), which it satisfies; no listener or domain sees it whole.
    """

    def __init__(
        self,
        settings: Settings,
        session_factory: sessionmaker[Session],
        client: WebClient | None = None,
        clock: Callable[[], dt.datetime] = system_clock,
        notifier: Notifier | None = None,
        find_posted: FindPosted | None = None,
        aws: AwsClientFactory = aws_client,
        # turns the outbox's typed messages into Block Kit when they are sent or updated
        renderer: Renderer | None = None,
        # approved Stop it actions run here, off Slack's listener threads (created on first use)
        background: BackgroundActions | None = None,
    ) -> None:
        self.settings = settings
        self.session_factory = session_factory
        self.clock = clock
        self.aws = aws
        self.background = background
        self._background_lock = threading.Lock()
        given = {
            "client": client,
            "notifier": notifier,
            "find_posted": find_posted,
            "renderer": renderer,
        }
        for name, value in given.items():  # what is given wins over the lazy default
            if value is not None:
                self.__dict__[name] = value

    @functools.cached_property
    def client(self) -> WebClient:
        """The Slack Web API client (no token needed to build it; posting without one fails)."""
        from bot.slack.client import make_web_client

        return make_web_client(self.settings.slack)

    @functools.cached_property
    def notifier(self) -> Notifier:
        """Posts, updates and uploads to Slack through `client`."""
        from bot.slack.notifier import SlackNotifier

        return SlackNotifier(self.client)

    @functools.cached_property
    def find_posted(self) -> FindPosted:
        """Finds, in a channel's history, a message the outbox may already have posted."""
        from bot.notify.outbox import HistoryLookup

        return HistoryLookup(self.client)

    @functools.cached_property
    def renderer(self) -> Renderer:
        """Turns the outbox's typed messages into Block Kit."""
        from bot.slack.render import SlackRenderer

        return SlackRenderer()

    @functools.cached_property
    def delivery_edge(self) -> DeliveryEdge:
        """What delivering the outbox uses: `notifier`, `renderer` and `find_posted` together."""
        from bot.notify.delivery import DeliveryEdge

        return DeliveryEdge(self.notifier, self.renderer, self.find_posted)

    def stop_actions(self) -> BackgroundActions:
        """Return the pool that runs approved Stop it actions, creating it on first use."""
        from bot.waste.stopping import BackgroundActions

        with self._background_lock:
            if self.background is None:
                self.background = BackgroundActions()
            return self.background

    def stop_in_background(self, approval: StopApproval, where: Where) -> bool:
        """Run an approved Stop it on the pool; False once it is shut down (the lease retries)."""
        from bot.waste.stopping import run_stop

        run = functools.partial(
            run_stop, **outbox_deps(self), settings=self.settings.waste, aws=self.aws
        )
        return self.stop_actions().submit(run, approval, where)

    def shutdown_background(self) -> None:
        """Stop the Stop it pool, if one was started (serve's cleanups call this)."""
        with self._background_lock:
            if self.background is not None:
                self.background.shutdown()

    @contextmanager
    def unit_of_work(self) -> Iterator[Session]:
        """Open one transaction: commit if the block succeeds, roll back if it raises."""
        with session_scope(self.session_factory) as session:
            yield session


def build_services(
    settings: Settings,
    session_factory: sessionmaker[Session],
    *,
    client: WebClient | None = None,
    clock: Callable[[], dt.datetime] = system_clock,
    aws: AwsClientFactory = aws_client,
) -> AppServices:
    """Wire settings, sessions, the Slack client and everything built over it.

    The Slack client needs no token to be built (a command that never posts runs without one);
    tests pass `client`, `clock` and `aws` (moto or Stubber clients) to replace the edges.
    """
    return AppServices(
        settings=settings, session_factory=session_factory, client=client, clock=clock, aws=aws
    )


def outbox_deps(services: AppServices) -> dict[str, Any]:
    """Return, by keyword, what a job that queues and delivers messages uses (but its settings)."""
    return {
        "session_factory": services.session_factory,
        "clock": services.clock,
        "edge": services.delivery_edge,
    }


def scheduled_jobs(services: AppServices) -> list[JobSpec]:
    """Collect every domain's scheduled jobs, their dependencies bound, in registration order."""
    from bot.poll.jobs import poll_jobs
    from bot.review.jobs import review_jobs
    from bot.waste.jobs import waste_jobs

    settings = services.settings
    deps = outbox_deps(services)
    return [
        *poll_jobs(settings.poll, attribution=settings.attribution, aws=services.aws, **deps),
        *review_jobs(settings.review, **deps),
        *waste_jobs(settings.scan, aws=services.aws, **deps),
    ]
