"""`mlcost serve --http --port N` or `mlcost serve --socket`."""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import io
import logging
import os
import signal
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from bot.cli.context import CliContext
    from bot.config import ServerSettings, SlackSettings

log = logging.getLogger(__name__)

# Read once into Settings; Bolt would read SLACK_BOT_TOKEN again (and warn that the client's token
# wins), and the chart workers need not inherit any of them.
SLACK_SECRET_VARIABLES = ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET")


def register(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the Slack bot and its scheduler",
        description="Run the Slack bot (HTTP or Socket Mode) and, on the leading replica, "
        "its scheduled jobs; checks the settings, the bot token and the database first.",
    )
    mode = serve.add_mutually_exclusive_group()
    mode.add_argument("--http", action="store_true", help="HTTP mode (default)")
    mode.add_argument("--socket", action="store_true", help="Socket Mode (needs SLACK_APP_TOKEN)")
    serve.add_argument("--host", default="0.0.0.0", help="HTTP mode's address (default: 0.0.0.0)")
    serve.add_argument("--port", type=int, default=3000, help="HTTP mode's port (default: 3000)")
    serve.add_argument(
        "--no-scheduler",
        action="store_true",
        help="serve Slack only; never run scheduled jobs in this process",
    )
    serve.add_argument(
        "--catch-up",
        action="store_true",
        help="post last month's review even if its round (the first working day to the 7th) "
        "began before this database had any review (MLCOST_REVIEW_CATCH_UP=true)",
    )
    serve.set_defaults(handler=run)


class Terminated(BaseException):
    """SIGTERM arrived (a container stop, systemd, a supervisor): shut down like Ctrl-C.

    A BaseException, like KeyboardInterrupt, so no `except Exception` on the way swallows it.
    """


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    # one is enough: a second SIGTERM must not interrupt the shutdown the first one started
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Check settings, the bot token and the database; then serve until SIGTERM or Ctrl-C."""
    # first of all: from here on SIGTERM stops serve through the cleanups below, never midway
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    # `kill -USR1 <pid>` writes every thread's stack to stderr: where a serve that hangs is stuck
    with contextlib.suppress(AttributeError, ValueError, io.UnsupportedOperation):
        faulthandler.register(signal.SIGUSR1, all_threads=True)  # not when stderr has no file
    # a signal mask survives exec: a parent that had SIGINT or SIGTERM blocked would leave serve
    # deaf to them (they would wait, pending, forever); serve stops on them, so it takes them
    blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    if blocked & {signal.SIGINT, signal.SIGTERM}:
        log.warning("SIGINT and SIGTERM were blocked by the process that started serve: unblocked")
    restore_levels = _log_what_serving_does()
    try:
        with ExitStack() as cleanups:
            try:
                _serve(args, ctx, cleanups)
            except (KeyboardInterrupt, Terminated) as stop:
                why = "SIGTERM" if isinstance(stop, Terminated) else "interrupted"
                log.info("stopping (%s): listeners, scheduler, chart workers", why)
        log.info("stopped")
    finally:
        restore_levels()
        signal.signal(signal.SIGTERM, previous)
    return 0


def _log_what_serving_does() -> Callable[[], None]:
    """Log at INFO (unless -v asked for DEBUG), but no line per job run or migration check.

    Return a function that puts the levels back.
    """
    loggers = [logging.getLogger(name) for name in ("", "apscheduler", "alembic")]
    levels = [logger.level for logger in loggers]
    root, *chatty = loggers
    if root.level > logging.INFO:
        root.setLevel(logging.INFO)
        for logger in chatty:
            logger.setLevel(logging.WARNING)

    def restore() -> None:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)

    return restore


# Resident memory measured with benchmarks/serve_memory.py (docs/deploy.md): serve itself about
# 135 MB, multiprocessing's resource tracker 12 MB, a chart worker about 115 MB once it has drawn.
SERVE_MB, WORKER_MB = 160, 120


def chart_workers(settings: ServerSettings, memory_limit: int | None = None) -> int:
    """Return how many chart-render processes to start: MLCOST_CHART_WORKERS, else one fewer
    than the CPUs this process may run on (its affinity, which a container's cpuset limits), and
    no more than fit in 90% of the memory limit (a container's cgroup limit) beside serve, with
    room for the replacement workers while old ones finish; at least 1.
    """
    if settings.chart_workers is not None:
        return settings.chart_workers
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = max(1, (usable or 2) - 1)
    limit = memory_limit if memory_limit is not None else cgroup_memory_limit()
    if limit is not None:
        per_worker = WORKER_MB * (2 if settings.chart_worker_max_charts else 1)
        fit = (limit * 9 // 10 // 2**20 - SERVE_MB) // per_worker
        workers = max(1, min(workers, fit))
    return workers


def cgroup_memory_limit(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """Return this process's cgroup memory limit in bytes (v2, else v1); None when unlimited."""
    for path in (root / "memory.max", root / "memory" / "memory.limit_in_bytes"):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if not text.isdigit() or int(text) >= 2**60:  # "max", or v1's "no limit" (near 2**63)
            return None
        return int(text)
    return None


def _serve(args: argparse.Namespace, ctx: CliContext, cleanups: ExitStack) -> None:
    """Run the checks in order, start everything (each start with its stop), then serve."""
    from bot.bootstrap import build_services
    from bot.db.engine import make_engine, make_session_factory
    from bot.slack.app import build_app, identify_bot
    from bot.slack.charts.spend_chart import start_render_processes, stop_render_processes

    settings = ctx.settings
    if args.catch_up:
        settings = settings.replace(review_catch_up=True)
    _check_settings(settings.slack, socket_mode=args.socket)
    for name in SLACK_SECRET_VARIABLES:
        os.environ.pop(name, None)
    # serve never migrates: with several replicas that is a deployment step (`mlcost db upgrade`)
    engine = make_engine(settings.database_url)
    cleanups.callback(engine.dispose)
    services = build_services(settings, make_session_factory(engine))
    cleanups.callback(services.shutdown_background)  # approved Stop it actions run there
    identity = identify_bot(services.client)
    _check_database(engine)
    app = build_app(services, identity=identity, socket_mode=args.socket)
    listener = _bind_listener(args, app, services, settings)
    cleanups.callback(listener.close)
    # Charts render after the ack, in worker processes so they never hold the GIL that acks need.
    # They start while this is the only thread (see start_render_processes).
    start_render_processes(
        chart_workers(settings.server),
        max_charts_per_worker=settings.server.chart_worker_max_charts,
    )
    cleanups.callback(stop_render_processes)
    listener.open()
    scheduler = _start_scheduler(services, engine, enabled=not args.no_scheduler)
    cleanups.callback(scheduler.stop)
    log.info(
        "mlcost serve: Slack %s, as %s; scheduler: %s",
        listener.where,
        identity.describe(),
        scheduler.state(),
    )
    listener.serve()


# Where each credential is found in the Slack app's settings, for the refusal that names it.
CREDENTIAL_SOURCES = {
    "SLACK_BOT_TOKEN": "OAuth & Permissions > Bot User OAuth Token, xoxb-...",
    "SLACK_SIGNING_SECRET": "Basic Information > App Credentials > Signing Secret",
    "SLACK_APP_TOKEN": "Basic Information > App-Level Tokens, xapp-... with connections:write",
}


def _check_settings(settings: SlackSettings, *, socket_mode: bool) -> None:
    """Refuse to start without the settings the chosen mode needs (nothing has started yet).

    Socket Mode needs the app-level token and no signing secret (Slack signs nothing it sends
    over the WebSocket); HTTP mode needs the signing secret and no app-level token.
    """
    from bot.slack.app import ConfigurationError

    needed = {"SLACK_BOT_TOKEN": settings.slack_bot_token}
    if socket_mode:
        needed["SLACK_APP_TOKEN"] = settings.slack_app_token
    else:
        needed["SLACK_SIGNING_SECRET"] = settings.slack_signing_secret
    values = {name: value.get_secret_value() if value else "" for name, value in needed.items()}
    missing = [name for name, value in values.items() if not value]
    if missing:
        also = " (Socket Mode needs the app-level token, xapp-...)" if socket_mode else ""
        raise ConfigurationError(f"not set: {', '.join(missing)}{also}")
    # .env.example's values (xoxb-..., xapp-..., ...): no real credential contains "..."
    placeholders = [name for name, value in values.items() if "..." in value]
    if placeholders:
        where = "; ".join(f"{name}: {CREDENTIAL_SOURCES[name]}" for name in placeholders)
        verb = "is" if len(placeholders) == 1 else "are"
        raise ConfigurationError(
            f"{' and '.join(placeholders)} {verb} still the placeholder from .env.example; "
            f"copy the app's own from api.slack.com/apps ({where})"
        )
    app_token = values.get("SLACK_APP_TOKEN")
    if app_token is not None and not app_token.startswith("xapp-"):
        raise ConfigurationError(
            "SLACK_APP_TOKEN is not an app-level token: those start with xapp- (Basic "
            "Information > App-Level Tokens, with the connections:write scope)"
        )


def _check_database(engine: Engine) -> None:
    """Refuse a database that cannot be reached or is not at the latest migration."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy.exc import InterfaceError, OperationalError

    from bot.db.engine import DatabaseError, alembic_config, database_unavailable

    where = engine.url.render_as_string(hide_password=True)
    file = engine.url.database if engine.url.get_backend_name() == "sqlite" else None
    if file and file != ":memory:" and not Path(file).exists():  # connecting would create it
        raise DatabaseError(f"the database {where} does not exist: run `mlcost db upgrade` first")
    try:
        with engine.connect() as connection:
            current = set(MigrationContext.configure(connection).get_current_heads())
    except (OperationalError, InterfaceError) as exc:
        raise database_unavailable(exc, engine.url) from None
    script = ScriptDirectory.from_config(alembic_config(where))
    heads = set(script.get_heads())
    if current != heads:
        state = f"at revision {', '.join(sorted(current))}" if current else "empty"
        raise DatabaseError(
            f"the database {where} is {state}, not at the latest schema "
            f"({', '.join(sorted(heads))}): run `mlcost db upgrade` first"
        )


class _Listener:
    """Slack's way in: the HTTP server or the Socket Mode connection."""

    where: str

    def open(self) -> None:
        """Start taking Slack's requests (the HTTP port is bound already)."""

    def serve(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _HttpListener(_Listener):
    def __init__(self, server: Any, host: str, port: int) -> None:
        self.server = server
        self.where = f"events on http://{host}:{port}/slack/events (health on /healthz)"

    def serve(self) -> None:
        self.server.serve()

    def close(self) -> None:
        self.server.close()


class _SocketListener(_Listener):
    where = "over Socket Mode"

    def __init__(self, handler: Any) -> None:
        import threading

        self.handler = handler
        self.stopped = threading.Event()

    def open(self) -> None:
        from slack_sdk.errors import SlackApiError

        from bot.slack.app import ConfigurationError

        try:
            self.handler.connect()
        except SlackApiError as exc:
            error = exc.response.get("error") if isinstance(exc.response.data, dict) else None
            raise ConfigurationError(
                f"Slack refused SLACK_APP_TOKEN ({error or exc.response.status_code}): use an "
                "app-level token (xapp-...) with connections:write, and turn Socket Mode on"
            ) from None

    def serve(self) -> None:
        from bot.interrupts import wait_interruptibly

        wait_interruptibly(self.stopped)  # until a signal raises here

    def close(self) -> None:
        self.stopped.set()
        self.handler.close()


def _bind_listener(args: argparse.Namespace, app: Any, services: Any, settings: Any) -> _Listener:
    """Bind the HTTP port (a port in use is refused here) or prepare Socket Mode."""
    from bot.slack.app import ConfigurationError

    if args.socket:
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        token = settings.slack_app_token.get_secret_value()
        return _SocketListener(SocketModeHandler(app, token))
    from bot.web.server import make_http_server

    try:
        server = make_http_server(app, services, args.host, args.port)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
        ) from None
    return _HttpListener(server, args.host, server.port)


class _Scheduler:
    """The leader election (or nothing, with --no-scheduler), stopped on the way out."""

    def __init__(self, election: Any | None, first_runs: str = "") -> None:
        self.election = election
        self.first_runs = first_runs

    def state(self) -> str:
        if self.election is None:
            return "off (--no-scheduler)"
        if self.election.is_leader:
            return (
                f"leader (this process runs the scheduled jobs); first, at once: {self.first_runs}"
            )
        return "standby (another process leads; this one takes over if it stops)"

    def stop(self) -> None:
        if self.election is not None:
            self.election.stop()


def _start_scheduler(services: Any, engine: Engine, enabled: bool) -> _Scheduler:
    """Start the scheduler if this process wins the leader lock."""
    from bot.bootstrap import scheduled_jobs
    from bot.notify.scheduler import describe_first_runs, start_leader_scheduler

    if not enabled:
        return _Scheduler(None)
    jobs = scheduled_jobs(services)
    # said before the jobs start: the first runs change what they look at (a review posted)
    first_runs = describe_first_runs(jobs)
    election = start_leader_scheduler(
        jobs, engine, ledger=services.settings.ledger, delivery=services.settings.delivery
    )
    return _Scheduler(election, first_runs)
