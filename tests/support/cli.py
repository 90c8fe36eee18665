"""Command-line steps shared by the end-to-end CLI tests."""

from __future__ import annotations

from pathlib import Path

from bot.cli import main


def import_registry_file(database_url: str, directory: Path, text: str) -> list[str]:
    """Write registry.yaml, import it with `mlcost registry import`; return the database args."""
    registry = directory / "registry.yaml"
    registry.write_text(text)
    db = ["--database-url", database_url]
    assert main([*db, "registry", "import", str(registry)]) == 0
    return db
