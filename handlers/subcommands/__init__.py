"""Subcommand modules; each exposes SUBCOMMANDS, listed here in help order."""

from handlers.subcommands import budget, model, owner, review, spend, team, waste

MODULES = [model, team, budget, owner, spend, review, waste]
