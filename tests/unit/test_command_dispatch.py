"""The router runs a subcommand's declared permission, then the subcommand, in one transaction;
charts render only after that transaction has closed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

from bot.errors import PermissionDenied
from bot.slack.command_router import (
    ChartFile,
    CommandRouter,
    Invocation,
    Reply,
    Subcommand,
    subcommand,
)
from handlers.commands import build_router, send_reply


class FakeUnitOfWork:
    """Records when the transaction opens and closes (commit or rollback)."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def __call__(self, step: Callable[[Any], Any]) -> Any:
        self.events.append("begin")
        try:
            result = step("the session")
        except Exception:
            self.events.append("rollback")
            raise
        self.events.append("commit")
        return result


def invocation(*args: str) -> Invocation:
    return Invocation(
        user_id="U0AAA111",
        channel_id="C0RANKING",
        args=list(args),
        settings=None,  # type: ignore[arg-type]
        now=dt.datetime(2026, 11, 20, tzinfo=dt.UTC),
    )


def test_the_declared_permission_refuses_before_the_subcommand_runs() -> None:
    events: list[str] = []

    def owners_only(session: Any, inv: Invocation) -> None:
        events.append(f"check on {session}")
        raise PermissionDenied("Only the owners of `recsys` or an admin can do that.")

    @subcommand("poke", usage="poke <model>", example="/mlcost poke recsys", permission=owners_only)
    def handle_poke(inv: Invocation) -> Reply:
        """Poke a model."""
        events.append("run")
        return Reply(text="poked")

    router = CommandRouter([handle_poke])
    with pytest.raises(PermissionDenied, match="Only the owners"):
        router.dispatch(handle_poke, invocation("recsys"), FakeUnitOfWork(events))
    assert events == ["begin", "check on the session", "rollback"]


def test_charts_render_after_the_transaction_closed() -> None:
    events: list[str] = []

    def render() -> bytes:
        events.append("render")
        return b"png"

    @subcommand("draw", usage="draw", example="/mlcost draw")
    def handle_draw(inv: Invocation) -> Reply:
        """Draw a chart."""
        events.append(f"run with {inv.session}")
        return Reply(text="drawn", charts=[ChartFile("a.png", "a", render=render)])

    reply = CommandRouter([handle_draw]).dispatch(handle_draw, invocation(), FakeUnitOfWork(events))
    assert events == ["begin", "run with the session", "commit"]

    class Client:
        def files_upload_v2(self, **kwargs: Any) -> None:
            events.append(f"upload {kwargs['content']!r}")

    sent: list[dict[str, Any]] = []
    send_reply(reply, {"channel_id": "C0RANKING"}, lambda **kw: sent.append(kw), Client())  # type: ignore[arg-type]
    assert events[3:] == ["render", "upload b'png'"]
    assert sent[0]["text"] == "drawn"


def test_help_summaries_are_the_handlers_docstrings() -> None:
    router = build_router()
    assert all(isinstance(sub, Subcommand) for sub in router.subcommands)
    names = [sub.name for sub in router.subcommands]
    assert names == [
        "model",
        "team",
        "top",
        "budget",
        "owner",
        "unallocated",
        "value",
        "review",
        "gate",
        "waste",
        "audit",
    ]
    for sub in router.subcommands:
        assert sub.summary == (sub.run.__doc__ or "").strip().splitlines()[0]
    help_text = router.help_reply().text
    assert "• `/mlcost gate &lt;model&gt;` — Run the release gate" in help_text
