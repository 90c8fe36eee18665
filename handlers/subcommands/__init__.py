"""Subcommand modules, one per subcommand (team also has `top`), listed here in help order."""

from handlers.subcommands import (
    audit,
    budget,
    gate,
    model,
    owner,
    review,
    team,
    unallocated,
    value,
    waste,
)

MODULES = [model, team, budget, owner, unallocated, value, review, gate, waste, audit]
