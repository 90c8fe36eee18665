"""Subcommand modules; each exposes SUBCOMMANDS, listed here in help order."""

from handlers.subcommands import spend, waste

MODULES = [spend, waste]
