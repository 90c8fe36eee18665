"""The composition root: Settings -> sessions -> Slack client, notifier, history lookup, clock.

Everything that talks to the outside world is built here, once, and handed to whoever needs it:
the Bolt app (through `context["services"]`), the scheduler's jobs and the CLI commands. Tests
build the same object with fakes in place of the edges.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slack_sdk import WebClient
from sqlalchemy.orm import Session, sessionmaker

from bot.config import Settings
from bot.db.engine import session_scope
from bot.errors import AwsUnavailable, aws_error_reason

if TYPE_CHECKING:
    from bot.notify.outbox import FindPosted
    from bot.slack.notifier import Notifier
    from bot.waste.stopping import BackgroundActions


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


@dataclass
class AppServices:
    """The composition root's products, shared by handlers, scheduled jobs and CLI commands.

    `notifier` and `find_posted` default to the real Slack ones over `client`; this is the only
    place they are constructed.
    """

    settings: Settings
    session_factory: sessionmaker[Session]
    client: WebClient
    clock: Callable[[], dt.datetime] = field(default=system_clock)
    notifier: Notifier = field(default=None)  # type: ignore[assignment]
    find_posted: FindPosted = field(default=None)  # type: ignore[assignment]
    aws: AwsClientFactory = field(default=aws_client)
    # approved Stop it actions run here, off Slack's listener threads (created on first use)
    background: BackgroundActions | None = None
    _background_lock: threading.Lock = field(
        default_factory=threading.Lock, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        from bot.notify.outbox import HistoryLookup
        from bot.slack.notifier import SlackNotifier

        if self.notifier is None:
            self.notifier = SlackNotifier(self.client)
        if self.find_posted is None:
            self.find_posted = HistoryLookup(self.client)

    def stop_actions(self) -> BackgroundActions:
        """Return the pool that runs approved Stop it actions, creating it on first use."""
        from bot.waste.stopping import BackgroundActions

        with self._background_lock:
            if self.background is None:
                self.background = BackgroundActions()
            return self.background

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
    from bot.slack.client import make_web_client

    return AppServices(
        settings=settings,
        session_factory=session_factory,
        client=client if client is not None else make_web_client(settings),
        clock=clock,
        aws=aws,
    )
