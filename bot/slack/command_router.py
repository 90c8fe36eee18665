"""`/mlcost <subcommand> ...`: parsing, the subcommand table, help and suggestions (pure)."""

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
from bot.slack.mrkdwn import escape

if TYPE_CHECKING:
    from bot.bootstrap import AppServices

MAX_COMMAND_TEXT = 2000
HELP_WORDS = ("help", "-h", "--help", "?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class ChartFile:
    filename: str
    data: bytes
    title: str


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
    session: Session
    settings: Settings
    now: dt.datetime
    team_id: str | None = None
    services: AppServices | None = None  # for subcommands that post to Slack themselves


@dataclass(frozen=True)
class Subcommand:
    name: str
    usage: str
    example: str
    summary: str
    run: Callable[[Invocation], Reply]
    aliases: tuple[str, ...] = ()


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

    def help_reply(self, unknown: str | None = None) -> Reply:
        """Every subcommand with an example; prefixed by a hint for an unknown one."""
        lines = []
        intro = "*mlcost* — ML cloud spend, legible and governed. Subcommands:"
        if unknown is not None:
            close = difflib.get_close_matches(unknown, list(self._by_name), n=1)
            hint = f" Did you mean `{close[0]}`?" if close else ""
            intro = f"I don't know `{_safe(unknown)}`.{hint} Here is what I can do:"
        for sub in self.subcommands:
            lines.append(
                f"• `/mlcost {escape(sub.usage)}` — {escape(sub.summary)}\n"
                f"    e.g. `{escape(sub.example)}`"
            )
        lines.append("• `/mlcost help` — this list")
        body = "\n".join(lines)
        blocks = [
            {"type": "section", "text": {"type": "mrkdwn", "text": intro}},
            {"type": "section", "text": {"type": "mrkdwn", "text": body[:2990]}},
        ]
        return Reply(text=intro + "\n" + body, blocks=blocks)


def _safe(text: str) -> str:
    return escape(text.replace("`", "'")[:40])
