"""`mlcost gate <model>`: the release gate for CI (exit 0 pass, 1 fail)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from typing import Any

from bot.cli.context import CliContext
from bot.gate import evaluate_gate


def register(commands: Any) -> None:
    gate = commands.add_parser("gate", help="may this model ship? exit 0 pass, 1 fail")
    gate.add_argument("model")
    gate.add_argument(
        "--as-of", type=dt.date.fromisoformat, help="last day of data (default: today)"
    )
    gate.add_argument("--format", choices=["text", "json"], default="text")
    gate.set_defaults(handler=run)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Evaluate the gate and print the reasons."""
    as_of = args.as_of or dt.datetime.now(dt.UTC).date()
    with ctx.session() as session:
        result = evaluate_gate(
            session=session, model_name=args.model, as_of=as_of, settings=ctx.settings
        )
    if args.format == "json":
        print(json.dumps(result.as_json(), indent=2))
    else:
        print(result.as_text())
    return 0 if result.passed else 1
