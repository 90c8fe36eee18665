"""`mlcost serve --http --port N` or `mlcost serve --socket`."""

from __future__ import annotations

import argparse
import logging
import os
import signal
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.bootstrap import AppServices
    from bot.cli.context import CliContext

log = logging.getLogger(__name__)


def register(commands: Any) -> None:
    serve = commands.add_parser("serve", help="run the Slack bot and its scheduler")
    mode = serve.add_mutually_exclusive_group()
    mode.add_argument("--http", action="store_true", help="HTTP mode (default)")
    mode.add_argument("--socket", action="store_true", help="Socket Mode (needs SLACK_APP_TOKEN)")
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--port", type=int, default=3000)
    serve.add_argument(
        "--no-scheduler",
        action="store_true",
        help="serve Slack only; never run scheduled jobs in this process",
    )
    serve.set_defaults(handler=run)


class Terminated(Exception):
    """SIGTERM arrived (a container stop, systemd, a supervisor): shut down like Ctrl-C."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Serve until interrupted or terminated."""
    from bot.slack.app import ConfigurationError, build_app
    from bot.slack.charts.spend_chart import start_render_processes, stop_render_processes

    logging.getLogger().setLevel(logging.INFO)
    if ctx.settings.slack_bot_token is None:
        raise ConfigurationError("SLACK_BOT_TOKEN is not set")
    services = ctx.services
    app = build_app(services)
    # Charts render after the ack, in worker processes so they never hold the GIL that acks need;
    # the workers warm matplotlib as they start.
    start_render_processes(max(1, (os.cpu_count() or 2) - 1))
    stop_scheduler = _start_scheduler(services, ctx, enabled=not args.no_scheduler)
    # the handler raises in the main thread, which leaves serve_forever through the finally below
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if args.socket:
            from slack_bolt.adapter.socket_mode import SocketModeHandler

            token = ctx.settings.slack_app_token
            if token is None:
                raise ConfigurationError("Socket Mode needs SLACK_APP_TOKEN (xapp-...)")
            log.info("serving Slack over Socket Mode")
            SocketModeHandler(app, token.get_secret_value()).start()
        else:
            from bot.web.server import make_http_server

            server = make_http_server(app, services, args.host, args.port)
            log.info("serving Slack on http://%s:%d/slack/events", args.host, args.port)
            server.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, Terminated):
        log.info("stopping: the scheduler, then the chart workers")
    finally:
        stop_scheduler()
        stop_render_processes()
    return 0


def _start_scheduler(services: AppServices, ctx: CliContext, enabled: bool) -> Any:
    """Start the scheduler if this process wins the leader lock; return a stop function."""
    from bot.notify.scheduler import start_leader_scheduler

    if not enabled:
        return lambda: None
    return start_leader_scheduler(services, ctx.engine)
