"""Dependencies point one way (ARCHITECTURE.md): every project import goes to the same layer or a lower one.

The imports are read from the source (ast), so an import inside a function or under `TYPE_CHECKING`
counts like any other: a type-only import back up is still a dependency back up.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Top to bottom. A module belongs to the first layer with a prefix of its dotted name.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("command line", ("executor.cli",)),
    (
        "services",
        (
            "executor.agent.runtime",
            "executor.agent.studio",
            "executor.agent.mcp_server",
            "executor.agent.feedback",
            "evals",
        ),
    ),
    ("agent", ("executor.agent",)),
    ("nodes", ("executor.nodes",)),
    ("tools", ("executor.tools",)),
    ("retrieval", ("executor.retrieval",)),
    ("stores", ("executor.stores", "executor.local_llm")),
    ("prompts", ("executor.prompts",)),
    ("core", ("executor.core",)),
]
# the names the wheel puts into site-packages
PACKAGES = {"executor", "evals"}
NAMESPACE = "executor"  # its __init__ holds no code: it sits with core


def package_of(module: str) -> str:
    """`executor.retrieval.lookup` -> `executor.retrieval`; `evals.runner` -> `evals`."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == NAMESPACE and len(parts) > 1 else parts[0]


def layer_of(module: str) -> int:
    if module == NAMESPACE:
        return len(LAYERS) - 1
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS and to ARCHITECTURE.md")


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in sorted(PACKAGES) for p in (REPO / pkg).rglob("*.py")}


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `module` imports (`from pkg import mod` names the module `pkg.mod` when it is one)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        found.update(t for t in targets if t.split(".")[0] in PACKAGES)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (itself left out: `from pkg import x` inside pkg/__init__)."""
    modules = project_modules()
    return {m: imports_of(m, path, set(modules)) - {m} for m, path in modules.items()}


def edges(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return [(a, b) for a, targets in graph.items() for b in targets]


def test_every_module_has_a_layer():
    unplaced = []
    for module in project_modules():
        try:
            layer_of(module)
        except AssertionError as exc:
            unplaced.append(str(exc))
    assert not unplaced, "\n".join(unplaced)


def test_no_import_from_a_lower_layer_to_a_higher_one():
    upward = sorted(
        f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
        for a, b in edges(import_graph())
        if layer_of(b) < layer_of(a)
    )
    assert not upward, "\n".join(upward)


def test_no_import_cycle():
    try:
        TopologicalSorter(import_graph()).prepare()
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_no_cycle_between_packages():
    """A package is one unit to a reader: `executor.agent` must not need `evals`, which needs `executor.agent`."""
    packages: dict[str, set[str]] = {}
    for a, b in edges(import_graph()):
        if package_of(a) != package_of(b):
            packages.setdefault(package_of(a), set()).add(package_of(b))
    try:
        TopologicalSorter(packages).prepare()
    except CycleError as exc:
        pytest.fail(f"package cycle: {' -> '.join(exc.args[1])}")


def test_the_wheel_installs_only_names_it_owns():
    tops = {p.name for p in REPO.iterdir() if (p / "__init__.py").exists()} - {"tests"}
    assert tops == PACKAGES


def test_core_imports_nothing_of_the_project():
    outside = sorted(
        f"{a} imports {b}" for a, b in edges(import_graph()) if layer_of(a) == layer_of("executor.core") != layer_of(b)
    )
    assert not outside, "\n".join(outside)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import executor.core.errors", {"executor.core.errors"}),
        ("from executor.stores import vectors", {"executor.stores.vectors"}),
        ("from .vectors import X", {"executor.stores.vectors"}),
        ("import json\nfrom pydantic import BaseModel", set()),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from executor.agent.runtime import Runtime",
            {"executor.agent.runtime"},
        ),
    ],
)
def test_the_walker_sees_every_kind_of_import(tmp_path, source, expected):
    path = tmp_path / "catalog.py"
    path.write_text(source)
    assert (
        imports_of(
            "executor.stores.catalog",
            path,
            {"executor.stores.vectors", "executor.core.errors", "executor.agent.runtime"},
        )
        == expected
    )
