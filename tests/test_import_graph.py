"""The layering of src/tritium, read from its import statements (ast), function-level ones included.

Rules (docs/backends.md): compiler/ imports no backend and no runtime; backends/ import the
compiler's IR, never the runtime; the runtime finds backends through the registry and never imports
one by name. The Triton-path modules (``compat.TRITON_PATHS``) stay thin re-exports.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tritium import compat

SOURCE = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SOURCE / "tritium"
# Modules of backends/ that are not a backend: the seam itself and Triton's import path.
SEAM = {"tritium.backends", "tritium.backends.base", "tritium.backends.registry", "tritium.backends.compiler"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path = PACKAGE) -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(root.rglob("*.py"))}


def _resolve(module: str, is_package: bool, node: ast.AST, modules) -> list[str]:
    """The modules an import statement in ``module`` names: ``from X import y`` names X.y when that
    is a module, else X (the parent packages Python runs first are not counted)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]


def import_graph(root: Path = PACKAGE) -> dict[str, list[tuple[str, int]]]:
    """module -> [(imported tritium module, line)], each import resolved to the module it names
    (``from . import config`` names ``tritium.config``; ``from .x import f`` names ``...x``)."""
    modules = _modules(root)
    graph: dict[str, list[tuple[str, int]]] = {}
    for name, path in modules.items():
        edges = []
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _resolve(name, path.name == "__init__.py", node, modules):
                    if target in modules and target != name:
                        edges.append((target, node.lineno))
        graph[name] = edges
    return graph


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_backend(module: str) -> bool:
    """A module of a backend's folder (tritium.backends.<backend>...), as opposed to the seam."""
    return module.startswith("tritium.backends.") and not any(module == s for s in SEAM)


def layering_violations(graph: dict[str, list[tuple[str, int]]]) -> list[str]:
    problems = []
    for module, edges in graph.items():
        layer = _layer(module)
        for target, line in edges:
            where = f"{module} (line {line}) imports {target}"
            if layer in ("compiler", "backends") and _layer(target) == "runtime":
                problems.append(f"{where}: the runtime sits above the {layer}")
            if layer == "runtime" and _is_backend(target):
                problems.append(f"{where}: a backend is reached through backends.registry, never by name")
            if layer == "compiler" and _layer(target) == "backends":
                problems.append(f"{where}: the compiler knows no backend, not even the registry")
            if layer in ("compiler", "backends") and target == "tritium":
                problems.append(f"{where}: the root package imports the runtime")
    # No path from the compiler to the runtime, through any module: with runtime -> compiler, a cycle.
    reached, stack = {}, [(m, m) for m in graph if _layer(m) == "compiler"]
    while stack:
        module, start = stack.pop()
        for target, _ in graph.get(module, []):
            if target not in reached:
                reached[target] = start
                stack.append((target, start))
    for target, start in sorted(reached.items()):
        if _layer(target) == "runtime":
            problems.append(f"{start} reaches {target}: an import cycle between compiler/ and runtime/")
    return problems


def test_compiler_backends_and_runtime_are_layered():
    graph = import_graph()
    assert any(t.startswith("tritium.compiler") for t, _ in graph["tritium.runtime.jit"]), "the graph sees imports"
    problems = layering_violations(graph)
    assert problems == [], "\n".join(problems)


def test_the_checker_catches_each_kind_of_violation(tmp_path):
    """A copy of the tree with bad imports added: each rule reports its own."""
    import shutil

    copy = tmp_path / "src" / "tritium"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    bad = {
        "compiler/source.py": "from ..runtime import jit as _jit  # noqa\n",
        "backends/base.py": "def _late():\n    from ..runtime.arguments import tensor_view  # noqa\n",
        "runtime/launch.py": "from ..backends.interpreter import Executable as _E  # noqa\n",
        "compiler/passes/manager.py": "def _late():\n    from ...backends import registry  # noqa\n",
    }
    for path, line in bad.items():
        with open(copy / path, "a") as f:
            f.write("\n" + line)
    global SOURCE
    saved, SOURCE = SOURCE, tmp_path / "src"
    try:
        problems = layering_violations(import_graph(copy))
    finally:
        SOURCE = saved
    text = "\n".join(problems)
    assert "tritium.compiler.source" in text and "the runtime sits above the compiler" in text
    assert "tritium.backends.base" in text and "the runtime sits above the backends" in text
    assert "tritium.runtime.launch" in text and "never by name" in text
    assert "tritium.compiler.passes.manager" in text and "not even the registry" in text
    assert "an import cycle between compiler/ and runtime/" in text


def _is_thin(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return True  # the docstring
    if isinstance(statement, ast.Assign):
        return [t.id for t in statement.targets if isinstance(t, ast.Name)] == ["__all__"]
    if isinstance(statement, ast.FunctionDef):
        return statement.end_lineno - statement.lineno < 8
    return False


def test_triton_path_modules_are_marked_listed_and_thin():
    marked = set()
    for name, path in _modules().items():
        docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
        if docstring.startswith("Triton import path"):
            marked.add(name)
            tree = ast.parse(path.read_text())
            assert all(_is_thin(s) for s in tree.body), f"{name} must only re-export names"
            assert f"``triton{name[len('tritium'):]}``" in docstring.splitlines()[0], name
    assert marked == set(compat.TRITON_PATHS.values())


@pytest.mark.parametrize("triton_name", sorted(compat.TRITON_PATHS))
def test_triton_paths_import_under_the_alias(triton_name):
    import importlib

    compat.install()
    try:
        module = importlib.import_module(triton_name)
        assert module.__name__ == compat.TRITON_PATHS[triton_name]
    finally:
        import sys

        sys.meta_path.remove(compat._FINDER)
        for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
            del sys.modules[name]
