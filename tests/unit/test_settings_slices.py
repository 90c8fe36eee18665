"""Each feature receives its own slice of the settings: outside the entry points, no function
takes the whole `Settings` (issue 22, item 4).

`Settings` is every slice, so a function typed `settings: Settings` type-checks whatever it reads;
typed by its slice (`ScanSettings`, `ReviewSettings`, ...), it says what it reads and mypy holds
its callers to handing over that slice. Only the entry points, which read the environment and
hand the slices down, see the settings whole.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The entry points: the composition root, the CLI's context and `serve`, the Slack app factory,
# the HTTP server, the demo; logging is set up before any feature runs; the settings themselves.
ENTRY_POINTS = (
    "bot/bootstrap.py",
    "bot/cli/context.py",
    "bot/cli/serve_cmd.py",
    "bot/slack/app.py",
    "bot/web/server.py",
    "bot/demo/",
    "bot/logs.py",
    "bot/config.py",
    "bot/config_doc.py",
)

WHOLE = "Settings"


def _names_whole_settings(annotation: ast.expr) -> bool:
    """Say whether an annotation names `Settings` itself (bare, dotted, in a union or quoted)."""
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id == WHOLE:
            return True
        if isinstance(node, ast.Attribute) and node.attr == WHOLE:
            return True
        quoted = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if quoted and re.search(rf"(?<!\w){WHOLE}\b", node.value):
            return True
    return False


def whole_settings_parameters(source: str, filename: str = "<source>") -> list[str]:
    """Return `function(parameter)` for each parameter annotated with the whole `Settings`."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = node.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        params += [a for a in (args.vararg, args.kwarg) if a is not None]
        found += [
            f"{node.name}({p.arg})"
            for p in params
            if p.annotation is not None and _names_whole_settings(p.annotation)
        ]
    return found


def _is_entry_point(relative: str) -> bool:
    return any(
        relative.startswith(entry) if entry.endswith("/") else relative == entry
        for entry in ENTRY_POINTS
    )


def test_only_entry_points_take_the_whole_settings() -> None:
    offenders = []
    for package in ("bot", "handlers"):
        for path in sorted(ROOT.joinpath(package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if _is_entry_point(relative):
                continue
            for where in whole_settings_parameters(path.read_text(encoding="utf-8"), relative):
                offenders.append(f"{relative}: {where}")
    assert offenders == [], "type these by the feature's slice (settings.scan, ...): " + ", ".join(
        offenders
    )


def test_the_entry_points_named_exist() -> None:
    missing = [entry for entry in ENTRY_POINTS if not ROOT.joinpath(entry).exists()]
    assert missing == []


def test_the_check_finds_the_whole_settings_however_it_is_written() -> None:
    source = """
from bot import config
from bot.config import ScanSettings, Settings

def bare(settings: Settings) -> None: ...
def dotted(*, settings: config.Settings) -> None: ...
def optional(settings: Settings | None = None) -> None: ...
def quoted(settings: "Settings") -> None: ...
async def listener(body: dict, settings: "config.Settings") -> None: ...
def sliced(settings: ScanSettings, other: "ScanSettings", base: BaseSettings) -> None: ...
def untyped(settings) -> None: ...
"""
    assert whole_settings_parameters(source) == [
        "bare(settings)",
        "dotted(settings)",
        "optional(settings)",
        "quoted(settings)",
        "listener(settings)",
    ]
