"""Counts in words: `counted(1, "finding")` is "1 finding", `counted(2, "finding")` "2 findings"."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """Return the count with its noun, singular for exactly one (thousands separated)."""
    word = noun if count == 1 else (plural if plural is not None else noun + "s")
    return f"{count:,} {word}"
