"""Argument types the command parsers share; light to import (`mlcost --help` loads this)."""

from __future__ import annotations

import argparse
import datetime as dt

from bot.errors import UsageError
from bot.periods import parse_day


def day_argument(text: str) -> dt.date:
    """Parse a command-line date (`YYYY-MM-DD`, `today`, `yesterday`; today is the UTC date)."""
    try:
        return parse_day(text, dt.datetime.now(dt.UTC).date())
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
