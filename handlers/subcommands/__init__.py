"""Subcommand modules; each exposes SUBCOMMANDS, listed here in help order."""

from handlers.subcommands import review, spend

MODULES = [spend]
MODULES += [review]
