"""`mlcost demo`: the whole loop on a fresh SQLite file with the bundled sample data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.cli.context import CliContext


def register(commands: Any) -> None:
    demo = commands.add_parser("demo", help="run the whole loop locally on sample data")
    demo.add_argument(
        "--dir",
        type=Path,
        default=Path("mlcost-demo"),
        help="folder for the demo database and outputs (default: ./mlcost-demo)",
    )
    demo.set_defaults(handler=run)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run the demo in its own folder; running it twice is harmless."""
    from bot.cli import progress
    from bot.cli.context import CliContext
    from bot.config import Settings
    from bot.demo.run import run_demo

    folder: Path = args.dir
    folder.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{(folder / 'mlcost-demo.db').resolve()}"
    demo_ctx = CliContext(settings=Settings(database_url=url))
    # On a terminal the section headings are the progress; a bar (on stderr) would be drawn over
    # by them. With the output going to a file or a pipe, the terminal gets the bar.
    bar_enabled = None if not sys.stdout.isatty() else False
    try:
        with progress.task("mlcost demo", enabled=bar_enabled) as bar:
            return run_demo(demo_ctx.services, folder, bar)
    finally:
        demo_ctx.close()
