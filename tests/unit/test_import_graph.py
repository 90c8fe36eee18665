"""bot/ imports one way down: its import graph, function-level imports included, has no loop,
and only the entry points import the composition root (issue 22, item 2)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BOOTSTRAP = "bot.bootstrap"

# The entry points: they build the composition root's services and hand pieces of them down.
# The CLI reaches the root through its context (and `serve`, which also wires the scheduler's
# jobs); the Slack app factory registers the listeners; the HTTP server; the demo.
ENTRY_POINTS = {
    "bot.cli.context",
    "bot.cli.serve_cmd",
    "bot.slack.app",
    "bot.web.server",
}
ENTRY_PACKAGES = ("bot.demo",)


def modules(root: Path, packages: tuple[str, ...] = ("bot",)) -> dict[str, Path]:
    """Return every module of these top-level packages by its dotted name."""
    found = {}
    paths = [path for package in packages for path in root.joinpath(package).rglob("*.py")]
    for path in paths:
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imported_by_name(call: ast.Call) -> bool:
    """Say whether the call is `import_module("x")` or `__import__("x")` with a literal name."""
    name = getattr(call.func, "attr", None) or getattr(call.func, "id", None)
    return (
        name in ("import_module", "__import__")
        and bool(call.args)
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    )


def import_graph(root: Path, packages: tuple[str, ...] = ("bot",)) -> dict[str, set[str]]:
    """Return module -> the modules of `packages` it imports anywhere in its body (TYPE_CHECKING
    too), or loads by a literal name (`importlib.import_module("bot.x")`)."""
    mods = modules(root, packages)

    def known(name: str) -> str:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Call) and _imported_by_name(node):
                targets = [node.args[0].value]  # type: ignore[attr-defined]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                # `from bot.x import y` imports bot.x.y when y is a module, else bot.x
                targets = [
                    f"{module}.{alias.name}" if f"{module}.{alias.name}" in mods else module
                    for alias in node.names
                ]
            for target in targets:
                if target.split(".")[0] in packages:
                    resolved = known(target)
                    if resolved and resolved != name:
                        edges[name].add(resolved)
    return edges


def loops(edges: dict[str, set[str]]) -> list[set[str]]:
    """Return the strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    bot = tmp_path / "bot"
    (bot / "a").mkdir(parents=True)
    (bot / "__init__.py").write_text("")
    (bot / "a" / "__init__.py").write_text("")
    (bot / "a" / "x.py").write_text("def f():\n    from bot.b import g\n")
    (bot / "a" / "y.py").write_text("from . import x\n")
    (bot / "b.py").write_text("from bot.a.y import z\n")
    edges = import_graph(tmp_path)
    assert edges["bot.a.x"] == {"bot.b"}
    assert edges["bot.a.y"] == {"bot.a.x"}
    assert loops(edges) == [{"bot.a.x", "bot.a.y", "bot.b"}]


def test_bot_has_no_import_loop() -> None:
    found = [sorted(c) for c in loops(import_graph(ROOT))]
    assert found == []


def importers_of(target: str, edges: dict[str, set[str]]) -> set[str]:
    """Return the modules that import `target`."""
    return {module for module, imported in edges.items() if target in imported}


def is_entry_point(module: str) -> bool:
    return module in ENTRY_POINTS or module.startswith(tuple(f"{p}." for p in ENTRY_PACKAGES))


def test_the_graph_sees_type_checking_and_named_imports_of_the_root(tmp_path: Path) -> None:
    for package in ("bot", "handlers"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "bot" / "bootstrap.py").write_text("")
    (tmp_path / "bot" / "typed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bot.bootstrap import A\n"
    )
    (tmp_path / "bot" / "named.py").write_text(
        "import importlib\nroot = importlib.import_module('bot.bootstrap')\n"
    )
    (tmp_path / "bot" / "package.py").write_text("from bot import bootstrap\n")
    (tmp_path / "handlers" / "listener.py").write_text("def f():\n    import bot.bootstrap\n")
    edges = import_graph(tmp_path, ("bot", "handlers"))
    assert importers_of(BOOTSTRAP, edges) == {
        "bot.typed",
        "bot.named",
        "bot.package",
        "handlers.listener",
    }


def test_only_entry_points_import_the_composition_root() -> None:
    edges = import_graph(ROOT, ("bot", "handlers"))
    importers = importers_of(BOOTSTRAP, edges)
    assert "bot.slack.app" in importers  # the graph does see the root's importers
    assert sorted(m for m in importers if not is_entry_point(m)) == []
