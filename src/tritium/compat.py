"""Makes ``import triton`` (and its submodules) resolve to tritium, for unmodified Triton scripts."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# triton module -> tritium module, where the layout differs (elsewhere triton.X is tritium.X).
ALIASES = {
    "triton": "tritium",
}

# The modules that exist only so that Triton's import paths resolve: thin re-exports of names that
# live elsewhere, each opening with "Triton import path ``triton.X``". They are exempt from nothing:
# tests/test_import_graph.py checks that they stay thin and respect the layering like any module.
TRITON_PATHS = {
    "triton.backends.compiler": "tritium.backends.compiler",
    "triton.compiler.compiler": "tritium.compiler.compiler",
    "triton.compiler.code_generator": "tritium.compiler.code_generator",
    "triton.compiler.errors": "tritium.compiler.errors",
    "triton.runtime.errors": "tritium.runtime.errors",
    "triton.language.extra.cuda": "tritium.language.extra.cuda",
    "triton.language.extra.cuda.libdevice": "tritium.language.extra.cuda.libdevice",
}


def _alias_loaded_submodules(triton_name: str, tritium_name: str) -> None:
    """Registers the already imported submodules of ``tritium_name`` under their triton names.

    Importing ``triton.runtime.driver`` through the finder would make Python set the attribute
    ``driver`` of the parent package to the module, clobbering a name the package binds to
    something else (``triton.runtime.driver`` is the driver object in Triton); a module already in
    ``sys.modules`` is returned as it is.
    """
    prefix = tritium_name + "."
    for name, module in list(sys.modules.items()):
        if name.startswith(prefix) and module is not None:
            sys.modules.setdefault(triton_name + name[len(tritium_name):], module)


class _TritonAliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self):
        self._real_specs = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "triton" and not fullname.startswith("triton."):
            return None
        if fullname == "triton.ops" or fullname.startswith("triton.ops."):
            # Triton 2.x's module (matmul, attention), gone since 3.0: libraries import it to tell
            # the versions apart; tritium.ops, tritium's own kernels, is another thing
            raise ModuleNotFoundError(f"No module named {fullname!r} (Triton 3 has none)", name=fullname)
        if self._target_name(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    @staticmethod
    def _target_name(fullname: str):
        if fullname in ALIASES:
            return ALIASES[fullname]
        candidate = "tritium" + fullname[len("triton"):]
        try:
            return candidate if importlib.util.find_spec(candidate) is not None else None
        except (ImportError, ValueError):
            return None

    def create_module(self, spec):
        module = importlib.import_module(self._target_name(spec.name))
        # Python replaces __spec__ with the alias's; keep the real one to put it back.
        self._real_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        alias = module.__spec__.name  # the triton name, which Python just gave the module
        module.__spec__ = self._real_specs.pop(alias, module.__spec__)
        _alias_loaded_submodules(alias, module.__name__)


_FINDER = _TritonAliasFinder()


def install() -> None:
    """From now on, ``import triton`` gives tritium. ``TRITON_INTERPRET`` is left as it is (tritium
    ignores it; code that reads it, Inductor among it, still sees what the user set).

    What torch.compile needs besides is set up too (compat_torch.py): Inductor compiles in this
    process, and torch's analysis of which tensors a user kernel writes reads tritium's IR."""
    from . import compat_torch

    compat_torch.prepare()
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        del sys.modules[name]
