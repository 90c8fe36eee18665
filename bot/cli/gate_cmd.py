"""`mlcost gate <model>`: the release gate for CI (exit 0 pass, 1 fail, 3 could not evaluate)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from bot.cli.arguments import day_argument

if TYPE_CHECKING:
    from bot.cli.context import CliContext

EXIT_CODES = """exit codes:
  0  pass: the model may ship
  1  fail: the model may not ship (the reasons are printed)
  2  bad command line (usage error)
  3  could not evaluate: database unusable or unreachable, unknown model, bad setting,
     or an unexpected error (one line on stderr with a reference; -v logs the traceback)"""


def register(commands: Any) -> None:
    gate = commands.add_parser(
        "gate",
        help="may this model ship? exit 0 pass, 1 fail, 3 could not evaluate",
        description="Decide whether a model may ship (for CI).",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gate.add_argument("model")
    gate.add_argument("--as-of", type=day_argument, help="last day of data (default: today)")
    gate.add_argument("--format", choices=["text", "json"], default="text")
    # 1 is reserved for "the model failed": every error, expected or not, is 3.
    gate.set_defaults(handler=run, known_error_exit=3, unexpected_error_exit=3)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Evaluate the gate and print the reasons."""
    from bot.economics.gate import evaluate_gate

    as_of = args.as_of or ctx.services.clock().date()
    with ctx.session() as session:
        result = evaluate_gate(
            session=session, model_name=args.model, as_of=as_of, settings=ctx.settings
        )
    if args.format == "json":
        print(json.dumps(result.as_json(), indent=2))
    else:
        print(result.as_text())
    return 0 if result.passed else 1
