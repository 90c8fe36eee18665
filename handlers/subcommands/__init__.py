"""Subcommand modules; each exposes SUBCOMMANDS, listed here in help order."""

from handlers.subcommands import review, spend, waste

MODULES = [spend, waste, review]
