"""Run an approved Stop it away from Slack's listener threads, and retry one a crash left behind.

The button claims the action (lifecycle.approve_stop: under the finding's row lock, so it is claimed
once) and hands it to `BackgroundActions`, a small thread pool the composition root owns; the
listener returns at once. The pool runs the AWS action (which may wait up to 20 minutes for a
snapshot), records the result, delivers the reply to the finding's thread through the outbox and
updates the post.

A claim whose process died before recording a result stays `acting`; after ACTING_LEASE (1 hour,
longer than any action takes) `resume_stale_stops` (the `resource-stop-retry` job) re-claims it
under the same lock and runs it: retried once, never by two processes at once.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.config import WasteSettings
from bot.db.engine import session_scope
from bot.db.schema import OutboxMessage
from bot.notify.delivery import DeliveryEdge, deliver_pending, outbox_timing
from bot.slack.notifier import SLACK_FAILURES, Notifier
from bot.waste.actions import ActionResult, Outcome, perform_stop
from bot.waste.lifecycle import (
    REPLY_KIND,
    StopApproval,
    claim_stale_stops,
    message_of,
    owners_of,
    post_key,
    record_action_result,
)

log = logging.getLogger(__name__)

STOP_RETRY_MINUTES = 15  # how often the resource-stop-retry job looks for expired claims
STOP_WORKERS = 2  # Stop it is rare; more only queue AWS calls against the same account

Where = tuple[str, str]  # (channel, ts) of the finding's post
Clock = Callable[[], dt.datetime]
AwsClientFactory = Callable[..., Any]


class BackgroundActions:
    """A small thread pool for approved Stop it actions, able to wait until it is idle."""

    def __init__(self, workers: int = STOP_WORKERS) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stop-it")
        self._pending: set[Future[Any]] = set()
        self._idle = threading.Condition()

    def submit(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Run fn(*args) in the pool; False when the pool is shut down (the lease retries it)."""
        try:
            future = self._pool.submit(fn, *args)
        except RuntimeError:  # shut down: serve is stopping
            return False
        with self._idle:
            self._pending.add(future)
        future.add_done_callback(self._finished)
        return True

    def _finished(self, future: Future[Any]) -> None:
        with self._idle:
            self._pending.discard(future)
            self._idle.notify_all()

    def wait(self, timeout: float) -> bool:
        """Wait until nothing runs or is queued; say whether that happened within timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._pending, timeout)

    def shutdown(self) -> None:
        """Stop taking work and drop what has not started (its claim is retried after the lease).

        A running action is not interrupted; the interpreter waits for it at exit, and if the
        process is killed first the lease retries it.
        """
        self._pool.shutdown(wait=False, cancel_futures=True)


def run_stop(
    approval: StopApproval,
    where: Where | None = None,
    *,
    session_factory: sessionmaker[Session],
    settings: WasteSettings,
    clock: Clock,
    aws: AwsClientFactory,
    edge: DeliveryEdge,
) -> None:
    """Carry out a claimed Stop it: act, record the result, reply in the thread, update the post."""
    result = _perform(aws, approval, enabled=settings.actions_enabled)
    user = approval.user_id or "mlcost"

    def record(session: Any) -> tuple[Where | None, tuple[str, list[dict[str, Any]]]]:
        row = record_action_result(
            session=session, approval=approval, user_id=user, result=result, now=clock()
        )
        return where or _posted_at(session, row.id, row.post_count), edge.renderer(
            message_of(row, owners_of(session, row))
        )

    with session_scope(session_factory) as session:
        post, rendered = record(session)
    deliver_pending(
        session_factory=session_factory,
        edge=edge,
        kinds=(REPLY_KIND,),
        timing=outbox_timing(settings),
    )
    if post is not None:
        update_post(edge.notifier, post, rendered)


def update_post(
    notifier: Notifier, where: Where, rendered: tuple[str, list[dict[str, Any]]]
) -> None:
    """Show the decision on the post; the decision is kept even if Slack refuses the update."""
    channel, ts = where
    if not (channel and ts):
        return
    try:
        notifier.update(channel, ts, rendered[0], rendered[1])
    except SLACK_FAILURES as exc:
        log.warning("resource finding post %s/%s not updated: %s", channel, ts, exc)


def _posted_at(session: Any, finding_id: int, post_count: int) -> Where | None:
    """Return where the finding's latest post went (None: not posted, or not delivered yet)."""
    if post_count == 0:
        return None
    message = session.scalars(
        select(OutboxMessage).where(OutboxMessage.dedupe_key == post_key(finding_id, post_count))
    ).first()
    if message is None or not message.slack_ts:
        return None
    return (message.slack_channel or message.channel, message.slack_ts)


def _perform(aws: AwsClientFactory, approval: StopApproval, *, enabled: bool) -> ActionResult:
    """Run the action; an unexpected error is a failed result (the claim must be released)."""
    try:
        return perform_stop(
            aws,
            action=approval.action,
            region=approval.region,
            target=approval.target,
            enabled=enabled,
        )
    except Exception as exc:
        log.exception("Stop it for resource finding %s failed", approval.finding_id)
        return ActionResult(
            Outcome.FAILED, f"failed: {type(exc).__name__}", error_code=type(exc).__name__
        )


def resume_stale_stops(
    *,
    session_factory: sessionmaker[Session],
    settings: WasteSettings,
    clock: Clock,
    aws: AwsClientFactory,
    edge: DeliveryEdge,
) -> list[int]:
    """Re-claim Stop it actions whose process died (lease expired), run them; return their ids."""
    with session_scope(session_factory) as session:
        approvals = claim_stale_stops(session=session, now=clock())
    for approval in approvals:
        log.warning(
            "Stop it for resource finding %s was claimed by a process that stopped before "
            "finishing; acting now",
            approval.finding_id,
        )
        run_stop(
            approval,
            session_factory=session_factory,
            settings=settings,
            clock=clock,
            aws=aws,
            edge=edge,
        )
    return [a.finding_id for a in approvals]
