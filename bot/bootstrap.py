"""What the Slack app and the scheduler share: settings, sessions, clock, Slack client."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from slack_sdk import WebClient
from sqlalchemy.orm import Session, sessionmaker

from bot.config import Settings


def system_clock() -> dt.datetime:
    """Return the current time, aware, in UTC."""
    return dt.datetime.now(dt.UTC)


@dataclass
class AppServices:
    """The composition root's products, passed to every handler's register()."""

    settings: Settings
    session_factory: sessionmaker[Session]
    client: WebClient
    clock: Callable[[], dt.datetime] = field(default=system_clock)
