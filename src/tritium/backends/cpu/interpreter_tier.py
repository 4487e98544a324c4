"""Tier 0: a kernel's first launch on the interpreter, when that finishes sooner than compiling.

Most kernels a test suite launches run once, on a few thousand lanes: the interpreter runs such a
launch in a few milliseconds, where compiling it for the CPU takes tens (Python lowering, then LLVM
even for the quick tier). So when the CPU backend is the default (TRITIUM_BACKEND does not name it)
and nothing was compiled before (no disk-cache entry), ``CPUBackend.compile`` hands back a
``StartsOnInterpreter``: its first launch runs on the interpreter when its work (programs x the
largest block) is at most ``SMALL_WORK`` lanes; the second launch, a bigger first one, a debug-mode
launch, a launch being timed (``config.timed_launches``: ``do_bench``, the autotuner), or a read of a
compiled stage (``asm["llir"]``, ``["obj"]``, ...) compiles the kernel (then
its quick and optimized tiers, ``tiers.py``) and everything goes there from then on.

The tiers must not be told apart. The interpreter and the CPU backend compute the same bits for the
IR (the CPU backend's math is the interpreter's, ``math_as_interpreter``; both sum reductions in
the spec's fixed tree; the same Philox) and report the same errors at the same lines, except for
``dot`` (the two sum its products in different orders, within the rounding) and float atomics (the
order in which programs on threads land), so kernels with those compile from the first launch.
``TRITIUM_INTERPRETER_FIRST=0`` turns this tier off.
"""
from __future__ import annotations

import threading
from typing import Any, Optional, Sequence

from ... import config
from ...compiler.ir.ops import Function
from ...errors import NotLoweredError, note_interpreter_fallback
from ...compiler.ir.spec import ATOMICS
from .. import registry
from ..base import Executable as ExecutableBase
from ..base import KernelArgument, Stages, largest_block

# Lanes of work (programs x the largest block) a first launch may have to run on the interpreter:
# about 10 ms there for elementwise work, which compiling the kernel would cost at least.
SMALL_WORK = 1 << 18

_DIFFERENT_BITS = frozenset({"dot", "dot_scaled"})  # summation orders differ between the two


def starts_on_interpreter(fn: Function) -> bool:
    """Whether ``fn``'s first launch may run on the interpreter (see the module's text)."""
    if config.backend_name() or not config.interpreter_first():
        return False
    for op in fn.walk():
        if op.opcode in _DIFFERENT_BITS:
            return False
        if op.opcode in ATOMICS and op.results and op.results[0].type.scalar.is_floating():
            return False
    return True


class StartsOnInterpreter(ExecutableBase):
    """A CPU kernel not compiled yet: its first small launch runs on the interpreter, the rest on the
    compiled code, made when first needed (``compile_now``: the backend's own compilation)."""

    def __init__(self, fn: Function, compile_now):
        self.fn = fn
        self._compile_now = compile_now
        self._compiled = None
        self._interpreted = None
        self._lock = threading.Lock()
        self._waiting: list = []  # when_optimized callbacks from before the compilation
        self._direct: dict = {}
        self.launches = 0
        self.largest_block = largest_block(fn)
        self.asm = Stages({"ttir": str(fn)}, {name: self._stage(name) for name in ("layouts", "llir", "asm", "obj")})

    def _stage(self, name: str):
        return lambda: self.compiled().asm[name]

    def compiled(self):
        """The kernel's compiled executable, compiled now if it was not yet. A kernel with an op this
        backend cannot lower stays on the interpreter, with the note a default backend gives then
        (``errors.note_interpreter_fallback``); nothing is stored on disk for it."""
        with self._lock:
            if self._compiled is None:
                try:
                    self._compiled = self._compile_now()
                except NotLoweredError as error:
                    note_interpreter_fallback(self.fn.name, "cpu", error)
                    self._compiled = self._interpreter()
                    self._waiting = []
                waiting, self._waiting = self._waiting, []
            else:
                waiting = []
        for callback in waiting:
            self._compiled.when_optimized(callback)
        return self._compiled

    def _interpreter(self):
        if self._interpreted is None:
            interpreter = registry.get("interpreter")
            self._interpreted = interpreter.compile(self.fn, interpreter.parse_options({}), interpreter.default_target())
        return self._interpreted

    def launch(self, grid, args: Sequence[KernelArgument], stream: Any = None, *, debug: Optional[bool] = None) -> None:
        self.launches += 1
        gx, gy, gz = (int(g) for g in grid)
        small = gx * gy * gz * self.largest_block <= SMALL_WORK
        if self._compiled is None and self.launches == 1 and small and not debug and not config.debug_mode() \
                and not config.launches_timed():
            self._interpreter().launch(grid, args, stream, debug=False)
            return
        self.compiled().launch(grid, args, stream, debug=debug)

    def direct_launcher(self, arg_names: list):
        """A launcher that goes to the compiled code's once there is some, and until then declines
        (False: the runtime calls ``launch``, which decides)."""
        key = tuple(arg_names)

        def launch(grid3, values):
            if self._compiled is None:
                return False
            direct = self._direct.get(key)
            if direct is None:
                direct = self._direct[key] = self._compiled.direct_launcher(list(arg_names)) or (lambda *a: False)
            return direct(grid3, values)

        return launch

    def when_optimized(self, callback) -> None:
        """``callback()`` once the compiled code is final: it is stored on disk then, never the
        interpreter's run."""
        with self._lock:
            if self._compiled is None:
                self._waiting.append(callback)
                return
        self._compiled.when_optimized(callback)

    def __getattr__(self, name: str):
        # what a caller reads of the compiled executable (ptxas-style figures, the error-record
        # facts, tier state) is the compiled kernel's
        if name.startswith("__") or name in ("_compiled", "_compile_now", "_lock"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)
