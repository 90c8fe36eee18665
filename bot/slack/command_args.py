"""Parse the words after a subcommand: positionals and `--flag value` options (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.errors import UsageError
from bot.money import CostBasis

USER_MENTION = re.compile(r"^<@([UW][A-Z0-9]{2,30})(?:\|[^>]*)?>$")
CHANNEL_MENTION = re.compile(r"^<#([CG][A-Z0-9]{2,30})(?:\|[^>]*)?>$")
BARE_USER_ID = re.compile(r"^[UW][A-Z0-9]{6,30}$")
BARE_CHANNEL_ID = re.compile(r"^[CG][A-Z0-9]{6,30}$")


def split_options(args: Sequence[str], options: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Split args into positionals and the named `--option value` (or `--option=value`) pairs."""
    positional: list[str] = []
    found: dict[str, str] = {}
    words = list(args)
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--") or (word.startswith("-") and len(word) > 1 and word[1].isalpha()):
            name, _, value = word.partition("=")
            name = name.lower()
            if name not in options:
                known = ", ".join(f"`{o}`" for o in options) or "none"
                raise UsageError(f"unknown option `{clip_word(name)}`; options here: {known}")
            if not value:
                if i + 1 >= len(words):
                    raise UsageError(f"`{name}` needs a value")
                i += 1
                value = words[i]
            found[name] = value
        else:
            positional.append(word)
        i += 1
    return positional, found


def cost_basis(options: dict[str, str]) -> CostBasis:
    """Return the `--cost` option (billed by default)."""
    basis = options.get("--cost", CostBasis.BILLED).lower()
    try:
        return CostBasis(basis)
    except ValueError:
        raise UsageError(f"`--cost` is billed or effective, not `{clip_word(basis)}`") from None


def parse_user(word: str) -> str | None:
    """Return the user ID in `<@U123|name>`, `<@U123>` or `U123...`, else None."""
    match = USER_MENTION.match(word)
    if match:
        return match[1]
    return word if BARE_USER_ID.match(word) else None


def parse_channel(word: str) -> str | None:
    """Return the channel ID in `<#C123|name>`, `<#C123>` or `C123...`, else None."""
    match = CHANNEL_MENTION.match(word)
    if match:
        return match[1]
    return word if BARE_CHANNEL_ID.match(word) else None


def clip_word(word: str, limit: int = 40) -> str:
    """Make a user's word safe to quote back in backticks."""
    cleaned = word.replace("`", "'").replace("\n", " ")
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"
