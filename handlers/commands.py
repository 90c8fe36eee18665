"""`/mlcost`: ack at once, do the work in a lazy listener, one error boundary."""

from __future__ import annotations

import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.bootstrap import AppServices
from bot.db.engine import session_scope
from bot.errors import MlcostError
from bot.slack.command_router import CommandRouter, Invocation, Reply, Subcommand
from bot.slack.guard import checked_message
from bot.slack.mrkdwn import code, escape_message
from handlers import subcommands

log = logging.getLogger(__name__)

COMMAND_WORKERS = 4


def build_router() -> CommandRouter:
    """Collect the subcommands of every subcommand module, help first."""
    table: list[Subcommand] = []
    for module in subcommands.MODULES:
        table.extend(module.SUBCOMMANDS)
    return CommandRouter(table)


def register(app: App, services: AppServices) -> None:
    router = build_router()

    def ack_command(ack: Ack, body: dict[str, Any]) -> None:
        text = (body.get("text") or "").strip()
        if not text or text.split()[0].lower() in ("help", "-h", "--help"):
            ack()  # the lazy listener answers with help
            return
        ack(response_type="ephemeral", text=f"Working on `/mlcost {text[:80]}`…")

    # Bolt runs ack functions and lazy listeners on one small thread pool; if slow chart work
    # held those threads, other users' acks would queue behind it and miss Slack's 3 s. So the
    # lazy listener only hands the command to this pool of its own and returns at once.
    workers = ThreadPoolExecutor(max_workers=COMMAND_WORKERS, thread_name_prefix="mlcost-command")

    def run_command(body: dict[str, Any], respond: Respond, client: WebClient) -> None:
        workers.submit(handle_command, body, respond, client, services, router)

    app.command("/mlcost")(ack=ack_command, lazy=[run_command])


def handle_command(
    body: dict[str, Any],
    respond: Respond,
    client: WebClient,
    services: AppServices,
    router: CommandRouter,
) -> None:
    """Route one command and send its reply; errors become ephemeral messages."""
    text = body.get("text") or ""
    try:
        sub, args, unknown = router.resolve(text)
        if sub is None:
            reply = router.help_reply(unknown)
        else:
            with session_scope(services.session_factory) as session:
                reply = sub.run(
                    Invocation(
                        user_id=body.get("user_id", ""),
                        channel_id=body.get("channel_id", ""),
                        args=args,
                        session=session,
                        settings=services.settings,
                        now=services.clock(),
                        team_id=body.get("team_id"),
                        services=services,
                    )
                )
        send_reply(reply, body, respond, client)
    except MlcostError as exc:
        respond(
            response_type="ephemeral",
            replace_original=False,
            text=f":warning: {escape_message(exc)}",
        )
    except Exception:
        ref = uuid.uuid4().hex[:8]
        log.exception("/mlcost failed (ref %s)", ref)
        respond(
            response_type="ephemeral",
            replace_original=False,
            text=f":x: Sorry, something went wrong on our side (ref `{ref}`).",
        )


def send_reply(reply: Reply, body: dict[str, Any], respond: Respond, client: WebClient) -> None:
    """Send a reply: charts uploaded to the channel, then the message."""
    message = checked_message(reply.text, reply.blocks) if reply.blocks else {"text": reply.text}
    channel = body.get("channel_id")
    for chart in reply.charts:
        try:
            client.files_upload_v2(
                channel=channel, filename=chart.filename, content=chart.data, title=chart.title
            )
        except SlackApiError as exc:
            # The numbers still go out; say why the chart did not (e.g. the bot is not invited).
            error = str(exc.response.get("error", "upload failed"))[:60]
            log.warning("chart upload to %s failed: %s", channel, error)
            note = {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": (
                            f":warning: I could not post the chart here ({code(error)}); "
                            "invite me with `/invite @mlcost` and try again."
                        ),
                    }
                ],
            }
            if message.get("blocks") and len(message["blocks"]) < 50:
                message = {**message, "blocks": [*message["blocks"], note]}
    respond(
        response_type="in_channel" if reply.in_channel else "ephemeral",
        replace_original=False,
        **message,
    )
