"""`/mlcost <subcommand> ...`: parsing, the subcommand table, permissions, help and suggestions."""

from __future__ import annotations

import datetime as dt
import difflib
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from bot.config import Settings
from bot.errors import UsageError
from bot.slack.blocks.help import build_help_blocks

if TYPE_CHECKING:
    from bot.slack.middleware import ListenerServices, UnitOfWork

MAX_COMMAND_TEXT = 2000
HELP_WORDS = ("help", "-h", "--help", "?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class ChartFile:
    """A chart to upload beside a reply; rendered only after the transaction has closed."""

    filename: str
    title: str
    render: Callable[[], bytes]


@dataclass
class Reply:
    """What a subcommand answers: ephemeral by default; charts go to the channel."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    in_channel: bool = False
    charts: list[ChartFile] = field(default_factory=list)


@dataclass
class Invocation:
    """One slash command as a subcommand sees it."""

    user_id: str
    channel_id: str
    args: list[str]
    settings: Settings
    now: dt.datetime
    team_id: str | None = None
    services: ListenerServices | None = None  # for subcommands that post to Slack themselves
    open_session: Session | None = None  # the request's transaction, if the subcommand has one

    @property
    def session(self) -> Session:
        """Return the request's session (only for subcommands run in a transaction)."""
        if self.open_session is None:
            raise RuntimeError("this subcommand runs outside the request's transaction")
        return self.open_session


Permission = Callable[[Session, Invocation], None]
"""Raise PermissionDenied (with the message a person sees) unless the invocation is allowed."""


@dataclass(frozen=True)
class Subcommand:
    """A subcommand: its names, help, the function that answers and who may run it."""

    name: str
    usage: str
    example: str
    summary: str
    run: Callable[[Invocation], Reply]
    aliases: tuple[str, ...] = ()
    permission: Permission | None = None
    in_transaction: bool = True  # False: it opens its own short transactions (it calls Slack)

    def __call__(self, inv: Invocation) -> Reply:
        """Answer the invocation (the permission is the router's to check)."""
        return self.run(inv)


def subcommand(
    name: str,
    *,
    usage: str,
    example: str,
    aliases: tuple[str, ...] = (),
    permission: Permission | None = None,
    in_transaction: bool = True,
) -> Callable[[Callable[[Invocation], Reply]], Subcommand]:
    """Declare a subcommand; its help summary is the function's docstring's first line."""

    def declare(run: Callable[[Invocation], Reply]) -> Subcommand:
        summary = (run.__doc__ or "").strip().splitlines()[0] if run.__doc__ else name
        return Subcommand(name, usage, example, summary, run, aliases, permission, in_transaction)

    return declare


def split_command_text(text: str) -> list[str]:
    """Split command text like a shell, tolerating unbalanced quotes and Slack's smart quotes."""
    cleaned = (text or "").replace("\u201c", '"').replace("\u201d", '"').replace("\u2019", "'")
    # Control characters (NUL above all: PostgreSQL rejects it in text) are never meaningful.
    cleaned = _CONTROL.sub(" ", cleaned.replace("\u00a0", " ")).strip()
    if len(cleaned) > MAX_COMMAND_TEXT:
        raise UsageError(
            f"that command is {len(cleaned)} characters long; the limit is {MAX_COMMAND_TEXT}"
        )
    try:
        return shlex.split(cleaned)
    except ValueError:
        return cleaned.split()


class CommandRouter:
    """The table of subcommands."""

    def __init__(self, subcommands: list[Subcommand]) -> None:
        self.subcommands = subcommands
        self._by_name: dict[str, Subcommand] = {}
        for sub in subcommands:
            for name in (sub.name, *sub.aliases):
                self._by_name[name] = sub

    def resolve(self, text: str) -> tuple[Subcommand | None, list[str], str | None]:
        """Return (subcommand, args, unknown-name) for the command text."""
        words = split_command_text(text)
        if not words:
            return None, [], None
        name = words[0].lower()
        if name in HELP_WORDS:
            return None, words[1:], None
        sub = self._by_name.get(name)
        if sub is None:
            return None, words[1:], name
        return sub, words[1:], None

    def dispatch(self, sub: Subcommand, inv: Invocation, unit_of_work: UnitOfWork) -> Reply:
        """Check the subcommand's permission and run it, in one transaction unless it opts out."""
        if not sub.in_transaction:
            if sub.permission is not None:
                check = sub.permission
                unit_of_work(lambda session: check(session, inv))
            return sub.run(inv)
        return unit_of_work(lambda session: _run_in_transaction(sub, inv, session))

    def help_reply(self, unknown: str | None = None) -> Reply:
        """Every subcommand with an example; prefixed by a hint for an unknown one."""
        suggestion = None
        if unknown is not None:
            close = difflib.get_close_matches(unknown, list(self._by_name), n=1)
            suggestion = close[0] if close else None
        entries = [(sub.usage, sub.summary, sub.example) for sub in self.subcommands]
        text, blocks = build_help_blocks(entries, unknown, suggestion)
        return Reply(text=text, blocks=blocks)


def _run_in_transaction(sub: Subcommand, inv: Invocation, session: Session) -> Reply:
    """Check the permission and run the subcommand on the transaction's session."""
    inv.open_session = session
    try:
        if sub.permission is not None:
            sub.permission(session, inv)
        return sub.run(inv)
    finally:
        inv.open_session = None  # the reply outlives the transaction; the session must not
