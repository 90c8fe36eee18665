"""Run `mlcost` with its clock off: `python -m tests.chaos.skewed_clock SECONDS ARGS...`.

The clock every command reads comes from the composition root (`build_services`); this runs the
real command line with that clock SECONDS ahead (negative: behind), as on a host whose clock
has drifted.
"""

from __future__ import annotations

import datetime as dt
import sys

from bot import bootstrap
from bot.cli import main

host_clock = bootstrap.system_clock


def run(skew: dt.timedelta, argv: list[str]) -> int:
    """Run the CLI with the composition root's clock `skew` off the real time."""

    def skewed_clock() -> dt.datetime:
        return host_clock() + skew

    assert bootstrap.build_services.__kwdefaults__ is not None
    bootstrap.build_services.__kwdefaults__["clock"] = skewed_clock
    bootstrap.system_clock = skewed_clock
    return main(argv)


if __name__ == "__main__":
    sys.exit(run(dt.timedelta(seconds=float(sys.argv[1])), sys.argv[2:]))
