"""The shape of the tree: dependencies run one way, engine <- realtime <- accounts <- matches
<- lobby <- clients <- config (docs/architecture.md), with no circle between modules and no
import hidden inside a function to dodge one."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Lower layers first: a package may import its own layer and the ones before it.
LAYERS = ("engine", "realtime", "accounts", "matches", "lobby", "clients", "config")
RANK = {package: rank for rank, package in enumerate(LAYERS)}
# Django's documented place for imports that need the app registry ready: AppConfig.ready.
READY_HOOKS = {"lobby.apps"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def first_party_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for package in LAYERS
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    }


MODULES = first_party_modules()


def imports_of(name: str, path: Path) -> list[tuple[str, bool]]:
    """(imported first-party module, whether the import sits inside a function)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []

    def visit(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend((alias.name, nested) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(child, package)
                found.append((base, nested))
                found.extend(
                    (f"{base}.{alias.name}", nested)
                    for alias in child.names
                    if f"{base}.{alias.name}" in MODULES
                )
            visit(child, nested)

    visit(tree, False)
    return [(target, nested) for target, nested in found if target.split(".")[0] in RANK]


def _resolve(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


GRAPH = {name: imports_of(name, path) for name, path in MODULES.items()}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_imports(name):
    importlib.import_module(name)


def test_dependencies_between_apps_run_one_way():
    wrong = sorted(
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        for target, _nested in targets
        if RANK[target.split(".")[0]] > RANK[name.split(".")[0]]
    )
    assert wrong == []


def test_nothing_below_the_lobby_imports_it():
    assert not [
        (name, target)
        for name, targets in GRAPH.items()
        if name.split(".")[0] in ("engine", "realtime", "accounts", "matches")
        for target, _ in targets
        if target.split(".")[0] == "lobby"
    ]


def test_no_import_hides_inside_a_function():
    hidden = sorted(
        f"{name} imports {target} inside a function"
        for name, targets in GRAPH.items()
        if name not in READY_HOOKS
        for target, nested in targets
        if nested
    )
    assert hidden == []


def test_no_circle_between_modules():
    edges = {
        name: {target for target, _ in targets if target in MODULES and target != name}
        for name, targets in GRAPH.items()
    }
    assert find_cycle(edges) is None


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A circle of imports (as a path that comes back to its start), or None."""
    done: set[str] = set()

    def walk(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node) :] + [node]
        if node in done:
            return None
        for target in sorted(edges.get(node, ())):
            # A package's __init__ importing its own submodules is how packages re-export.
            if target.startswith(node + ".") or node.startswith(target + "."):
                continue
            cycle = walk(target, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for start in sorted(edges):
        cycle = walk(start, [])
        if cycle:
            return cycle
    return None


def test_the_cycle_finder_finds_a_planted_circle():
    planted = {"a.x": {"b.y"}, "b.y": {"c.z"}, "c.z": {"a.x"}}
    assert find_cycle(planted) == ["a.x", "b.y", "c.z", "a.x"]
    assert find_cycle({"a.x": {"b.y"}, "b.y": set()}) is None
