"""`/mlcost`: ack at once, answer on a worker pool of our own, errors to the one boundary."""

from __future__ import annotations

import functools
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from slack_bolt import Ack, App, BoltContext, Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.slack.blocks.common import chart_failure_note
from bot.slack.command_router import CommandRouter, Invocation, Reply, Subcommand
from bot.slack.error_boundary import guarded, handle_error
from bot.slack.guard import MAX_BLOCKS, checked_message
from bot.slack.middleware import ListenerServices, services_of, unit_of_work_for
from bot.slack.mrkdwn import code
from handlers import subcommands

log = logging.getLogger(__name__)

COMMAND_WORKERS = 4


def build_router() -> CommandRouter:
    """Collect the subcommands each subcommand module declares, in help order."""
    table: list[Subcommand] = []
    for module in subcommands.MODULES:
        table.extend(v for v in vars(module).values() if isinstance(v, Subcommand))
    return CommandRouter(table)


@functools.cache
def command_router() -> CommandRouter:
    """Return the one router (built on first use, not at import)."""
    return build_router()


@functools.cache
def command_workers() -> ThreadPoolExecutor:
    """Return the pool that answers commands (its threads start on first use)."""
    # Bolt runs ack functions and listeners on one small thread pool; if slow chart work held
    # those threads, other users' acks would queue behind it and miss Slack's 3 s.
    return ThreadPoolExecutor(max_workers=COMMAND_WORKERS, thread_name_prefix="mlcost-command")


def acknowledge_command(
    ack: Ack, body: dict[str, Any], client: WebClient, context: BoltContext, respond: Respond
) -> None:
    """Acknowledge at once, then hand the command to the worker pool."""
    text = (body.get("text") or "").strip()
    if not text or text.split()[0].lower() in ("help", "-h", "--help"):
        ack()  # the worker answers with help
    else:
        ack(response_type="ephemeral", text=f"Working on {code('/mlcost ' + text[:80])}…")
    services = services_of(context)
    command_workers().submit(handle_command, body, respond, client, services, command_router())


def handle_command(
    body: dict[str, Any],
    respond: Respond,
    client: WebClient,
    services: ListenerServices,
    router: CommandRouter,
) -> None:
    """Answer one command on a worker; its errors go through the app's one error boundary."""
    try:
        send_reply(answer_command(body, services, router), body, respond, client)
    except Exception as exc:  # the worker is off Bolt's threads: the boundary is called here
        handle_error(exc, body, None, client, respond)


def answer_command(
    body: dict[str, Any], services: ListenerServices, router: CommandRouter
) -> Reply:
    """Route one command text to its subcommand, or to help."""
    sub, args, unknown = router.resolve(body.get("text") or "")
    if sub is None:
        return router.help_reply(unknown)
    inv = Invocation(
        user_id=body.get("user_id", ""),
        channel_id=body.get("channel_id", ""),
        args=args,
        settings=services.settings,
        now=services.clock(),
        team_id=body.get("team_id"),
        services=services,
    )
    return router.dispatch(sub, inv, unit_of_work_for(services))


def send_reply(reply: Reply, body: dict[str, Any], respond: Respond, client: WebClient) -> None:
    """Send a reply: charts rendered and uploaded to the channel, then the message."""
    message = checked_message(reply.text, reply.blocks) if reply.blocks else {"text": reply.text}
    channel = body.get("channel_id")
    for chart in reply.charts:
        try:
            client.files_upload_v2(
                channel=channel, filename=chart.filename, content=chart.render(), title=chart.title
            )
        except SlackApiError as exc:
            # The numbers still go out; say why the chart did not (e.g. the bot is not invited).
            error = str(exc.response.get("error", "upload failed"))[:60]
            log.warning("chart upload to %s failed: %s", channel, error)
            if message.get("blocks") and len(message["blocks"]) < MAX_BLOCKS:
                message = {**message, "blocks": [*message["blocks"], chart_failure_note(error)]}
    respond(
        response_type="in_channel" if reply.in_channel else "ephemeral",
        replace_original=False,
        **message,
    )


def register(app: App) -> None:
    """Wire `/mlcost`."""
    app.command("/mlcost")(guarded(acknowledge_command))
