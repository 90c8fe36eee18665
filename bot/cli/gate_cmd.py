"""`mlcost gate <model>`: the release gate for CI (exit 0 pass, 1 fail, 3 could not evaluate)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.cli.arguments import day_argument
from bot.cli.terminal import NOT_DELIVERED

if TYPE_CHECKING:
    from bot.cli.context import CliContext
    from bot.economics.gate import GateResult

EXIT_CODES = """output formats:
  text    a verdict line, then one line per check (the default)
  json    the result as JSON
  github  the text, one `::error title=mlcost gate::...` annotation per failed check, and a
          Markdown summary appended to the file $GITHUB_STEP_SUMMARY names (when set);
          the default when GITHUB_ACTIONS=true

  --output FILE writes the report (in the chosen format) to FILE instead of stdout, so a CI
  step needs no pipe (`mlcost gate m --format json | tee gate.json` exits 0 on a failing gate
  unless the shell has `set -o pipefail`).

exit codes:
  0  pass: the model may ship
  1  fail: the model may not ship (the reasons are printed)
  2  bad command line (usage error)
  3  could not evaluate: stale data (the ledger's newest day is more than
     MLCOST_GATE_MAX_DATA_AGE_DAYS, default 3, before the day evaluated, or it is empty),
     database unusable or unreachable, unknown model, bad setting, an unwritable --output,
     or an unexpected error (one line on stderr with a reference; -v logs the traceback)"""

POST_KIND = "gate"


def register(commands: Any) -> None:
    gate = commands.add_parser(
        "gate",
        help="may this model ship? exit 0 pass, 1 fail, 3 could not evaluate",
        description="Decide whether a model may ship (for CI).",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gate.add_argument("model", help="the registered model to check")
    gate.add_argument("--as-of", type=day_argument, help="last day of data (default: today)")
    gate.add_argument(
        "--format",
        choices=["text", "json", "github"],
        default=None,
        help="text, json or github (default: github when GITHUB_ACTIONS=true, else text)",
    )
    gate.add_argument(
        "--output",
        metavar="FILE",
        type=Path,
        help="write the report to FILE (default: stdout; the exit code is the gate's)",
    )
    gate.add_argument(
        "--post",
        action="store_true",
        help="post the result to the model's channel (once per model, day and result; "
        "delivered now when SLACK_BOT_TOKEN is set)",
    )
    # 1 is reserved for "the model failed": every error, expected or not, is 3.
    gate.set_defaults(handler=run, known_error_exit=3, unexpected_error_exit=3)


def output_format(requested: str | None) -> str:
    """Return the format to print: the one asked for, else github inside GitHub Actions."""
    if requested is not None:
        return requested
    return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Evaluate the gate and print the reasons."""
    from bot.economics.gate import evaluate_gate

    as_of = args.as_of or ctx.now().date()
    with ctx.reading() as session:
        result = evaluate_gate(
            session=session, model_name=args.model, as_of=as_of, settings=ctx.settings.economics
        )
    fmt = output_format(args.format)
    report = render_report(result, fmt)
    if args.output is not None:
        write_report(args.output, report)
    else:
        print(report)
    if fmt == "github":
        write_step_summary(result)
    if args.post:
        post_result(ctx, result, out=sys.stderr if fmt == "json" else sys.stdout)
    return EXIT_BY_STATUS[result.status]


EXIT_BY_STATUS = {"pass": 0, "fail": 1, "unknown": 3}


def render_report(result: GateResult, fmt: str) -> str:
    """Return the report in a format: JSON, text, or text with GitHub annotations."""
    if fmt == "json":
        return json.dumps(result.as_json(), indent=2)
    lines = [result.as_text()]
    if fmt == "github":
        lines += result.as_github_annotations()
    return "\n".join(lines)


def write_report(path: Path, report: str) -> None:
    """Write the report to --output's file; one that cannot be written is a could-not-evaluate."""
    from bot.errors import MlcostError

    try:
        path.write_text(report + "\n", encoding="utf-8")
    except OSError as exc:
        raise MlcostError(f"cannot write --output {path}: {exc.strerror}") from None


def write_step_summary(result: GateResult) -> None:
    """Append the Markdown summary to $GITHUB_STEP_SUMMARY when it names a file."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as summary:
            summary.write(result.as_markdown() + "\n")
    except OSError as exc:  # the verdict still stands; its exit code is what CI reads
        print(
            f"mlcost gate: cannot write $GITHUB_STEP_SUMMARY ({path}): {exc.strerror}",
            file=sys.stderr,
        )


def post_result(ctx: CliContext, result: GateResult, *, out: Any) -> None:
    """Record the result in the outbox for the model's channel; deliver it when a token is set."""
    from bot.economics.messages import GateResultMessage
    from bot.notify.delivery import deliver_pending, outbox_timing
    from bot.notify.outbox import enqueue_message
    from bot.registry.catalog import find_model

    verdict = result.status
    key = f"gate/{result.model}/{result.as_of}/{verdict}"
    with ctx.services.unit_of_work() as session:
        channel = find_model(session, result.model).effective_channel
        if channel is None:
            print(
                f"not posted: {result.model} has no channel (set channel on the model or its "
                "team in the registry)",
                file=out,
            )
            return
        new = enqueue_message(
            session=session,
            dedupe_key=key,
            kind=POST_KIND,
            channel=channel,
            message=GateResultMessage(result),
        )
    if new:
        print(f"queued the {verdict} result for {channel} ({key})", file=out)
    else:
        print(f"already queued: {key} (one post per model, day and result)", file=out)
    if ctx.settings.slack_bot_token is None:
        print(NOT_DELIVERED, file=out)
        return
    services = ctx.services
    delivery = deliver_pending(
        session_factory=services.session_factory,
        edge=services.delivery_edge,
        kinds=(POST_KIND,),
        timing=outbox_timing(services.settings.delivery),
    )
    print(
        f"delivered {len(delivery.delivered)}, found already posted {len(delivery.recovered)}, "
        f"to retry {len(delivery.failed)}, undeliverable {len(delivery.dead)}",
        file=out,
    )
