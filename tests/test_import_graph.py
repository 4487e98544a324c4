"""The layering of src/tritium, read from its import statements (ast), function-level ones included.

Rules (docs/backends.md): compiler/ imports no backend and no runtime; backends/ import the
compiler's IR, never the runtime; the runtime finds backends through the registry and never imports
one by name. A folder under backends/ imports only the seam (the modules directly in backends/),
the shared folder backends/llvm/, the layers below (compiler/ir, compiler/analysis, the helpers
passes rewrite with (compiler/passes/rewriting, for a backend's own passes), numerics/, errors,
config, knobs) and itself, never another backend's folder; backends/llvm/ and the seam
import no backend at all. numerics/ imports no backend. The Triton-path modules (``compat.TRITON_PATHS``) stay
thin re-exports.
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
# Folders of backends/ that are not a backend: the LLVM lowering and host JIT the compiled backends share.
SHARED_FOLDERS = {"llvm"}
# What a folder under backends/ may import besides the seam, the shared folders and itself.
BELOW_THE_BACKENDS = ("tritium.compiler.ir", "tritium.compiler.analysis", "tritium.compiler.passes.rewriting",
                      "tritium.numerics", "tritium.errors", "tritium.config", "tritium.knobs")


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


def _folders(graph) -> set[str]:
    """The folders under backends/ (a backend's, or a shared one): those holding modules."""
    return {m.split(".")[2] for m in graph if m.startswith("tritium.backends.") and m.count(".") > 2}


def _folder(module: str, folders: set[str]):
    """The folder under backends/ that holds ``module`` (its package included), or None."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["tritium", "backends"] and len(parts) > 2 and parts[2] in folders else None


def _is_within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _folder_problem(module: str, target: str, folders: set[str]):
    """What is wrong with ``module`` (of backends/) or a numerics module importing ``target``, or None."""
    mine, theirs = _folder(module, folders), _folder(target, folders)
    if _layer(module) == "numerics":
        if _layer(target) == "backends":
            return "numerics/ sits below the backends (they and the compiler's constant folding use it)"
        return None
    if theirs is not None and theirs != mine and theirs not in SHARED_FOLDERS:
        if mine is None:
            return "the seam imports no backend (the registry names them as strings)"
        if mine in SHARED_FOLDERS:
            return f"backends/{mine}/ is shared by the backends and imports none of them"
        return (f"a backend never imports another backend's folder (backends/{theirs}/): what both need goes "
                "to backends/*.py or backends/llvm/")
    if mine is None or theirs is not None:  # the seam; its own folder or a shared one
        return None
    if _is_within(target, "tritium.backends") or any(_is_within(target, p) for p in BELOW_THE_BACKENDS):
        return None  # the seam (backends/*.py) or a layer below
    if _layer(target) == "runtime" or target == "tritium":
        return None  # reported by the rule on the runtime
    return (f"backends/{mine}/ imports only the seam (backends/*.py), backends/llvm/, compiler/ir, "
            "compiler/analysis, compiler/passes/rewriting, numerics/, errors, config, knobs and its own folder")


def layering_violations(graph: dict[str, list[tuple[str, int]]]) -> list[str]:
    problems = []
    folders = _folders(graph)
    for module, edges in graph.items():
        layer = _layer(module)
        for target, line in edges:
            where = f"{module} (line {line}) imports {target}"
            if layer in ("backends", "numerics"):
                problem = _folder_problem(module, target, folders)
                if problem:
                    problems.append(f"{where}: {problem}")
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


def _violations_with(tmp_path, bad: dict[str, str]) -> list[str]:
    """The checker's report on a copy of the tree with the lines ``bad`` (path -> text) appended."""
    import shutil

    copy = tmp_path / "src" / "tritium"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for path, line in bad.items():
        with open(copy / path, "a") as f:
            f.write("\n" + line)
    global SOURCE
    saved, SOURCE = SOURCE, tmp_path / "src"
    try:
        return layering_violations(import_graph(copy))
    finally:
        SOURCE = saved


def test_the_checker_catches_each_kind_of_violation(tmp_path):
    """A copy of the tree with bad imports added: each rule reports its own."""
    problems = _violations_with(tmp_path, {
        "compiler/source.py": "from ..runtime import jit as _jit  # noqa\n",
        "backends/base.py": "def _late():\n    from ..runtime.arguments import tensor_view  # noqa\n",
        "runtime/launch.py": "from ..backends.interpreter import Executable as _E  # noqa\n",
        "compiler/passes/manager.py": "def _late():\n    from ...backends import registry  # noqa\n",
    })
    text = "\n".join(problems)
    assert "tritium.compiler.source" in text and "the runtime sits above the compiler" in text
    assert "tritium.backends.base" in text and "the runtime sits above the backends" in text
    assert "tritium.runtime.launch" in text and "never by name" in text
    assert "tritium.compiler.passes.manager" in text and "not even the registry" in text
    assert "an import cycle between compiler/ and runtime/" in text


def test_the_checker_catches_a_backend_importing_another(tmp_path):
    """Sibling imports planted in a copy of the tree (at module level and inside functions, in each
    form an import takes): each is reported, and nothing else is."""
    problems = _violations_with(tmp_path, {
        "backends/interpreter/memory.py": "from ..cpu import launcher as _launcher  # noqa\n",
        "backends/cpu/dot.py": "def _late():\n    from ..interpreter.executor import handles  # noqa\n",
        "backends/cuda/layouts.py": "def _late():\n    from .. import interpreter  # noqa\n",
        "backends/cpu/tiers.py": "import tritium.backends.cuda.driver  # noqa\n",
        "backends/llvm/casts.py": "def _late():\n    from ..cpu import workers  # noqa\n",
        "backends/reports.py": "def _late():\n    from .interpreter import Executable  # noqa\n",
        "backends/cuda/mma.py": "from ...language import core as _core  # noqa\n",
        "numerics/native_loops.py": "def _late():\n    from ..backends.llvm import host  # noqa\n",
    })
    expected = [
        ("tritium.backends.interpreter.memory", "tritium.backends.cpu.launcher", "never imports another backend"),
        ("tritium.backends.cpu.dot", "tritium.backends.interpreter.executor", "never imports another backend"),
        ("tritium.backends.cuda.layouts", "tritium.backends.interpreter", "never imports another backend"),
        ("tritium.backends.cpu.tiers", "tritium.backends.cuda.driver", "never imports another backend"),
        ("tritium.backends.llvm.casts", "tritium.backends.cpu.workers", "is shared by the backends"),
        ("tritium.backends.reports", "tritium.backends.interpreter", "the seam imports no backend"),
        ("tritium.backends.cuda.mma", "tritium.language.core", "imports only the seam"),
        ("tritium.numerics.native_loops", "tritium.backends.llvm.host", "numerics/ sits below the backends"),
    ]
    for module, target, rule in expected:
        assert any(p.startswith(f"{module} (line ") and f"imports {target}: " in p and rule in p for p in problems), \
            (module, target, problems)
    assert len(problems) == len(expected), "\n".join(problems)


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
