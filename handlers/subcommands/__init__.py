"""Subcommand modules; each exposes SUBCOMMANDS, listed here in help order."""

from handlers.subcommands import budget, model, owner, spend, team

MODULES = [spend]
MODULES += [model, team, budget, owner]
