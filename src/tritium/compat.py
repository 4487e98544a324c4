"""Makes ``import triton`` (and its submodules) resolve to tritium, for unmodified Triton scripts."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys

# triton module -> tritium module, where the layout differs.
ALIASES = {
    "triton": "tritium",
    "triton.compiler.errors": "tritium.errors",
    "triton.runtime.errors": "tritium.errors",
}


class _TritonAliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "triton" and not fullname.startswith("triton."):
            return None
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
        return module

    def exec_module(self, module):
        pass


_FINDER = _TritonAliasFinder()


def install() -> None:
    """From now on, ``import triton`` gives tritium. ``TRITON_INTERPRET`` is accepted and ignored."""
    os.environ.pop("TRITON_INTERPRET", None)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        del sys.modules[name]
