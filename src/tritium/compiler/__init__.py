"""The compilation pipeline, as named stages: frontend -> verify -> passes -> verify.

The passes are ``passes.manager.PIPELINE``, in order (lower_tile_access, fold_constants,
canonicalize, licm, cse, dce). There is no inline pass: the frontend inlines each ``@jit`` helper
while it generates IR (the IR has no call op). ``TRITIUM_DUMP=<pass>`` prints the IR after a pass;
``TRITIUM_CHECK_IR=1`` verifies after every pass and round-trips the final IR through its text.

``compile_ir(kernel, arg_specs, arg_attrs)`` takes a kernel's function (a ``JITCallable``) and the
specification of its arguments, and needs nothing of the runtime; ``compile_source`` does the same
for an ``ASTSource``. ``TRITIUM_DUMP=ir`` prints each kernel's IR after the last pass.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Optional

from .. import config
from . import errors  # noqa: F401  (triton.compiler.errors, reachable as an attribute as in Triton)
from .compiled_kernel import CompiledKernel
from .frontend import generate_ir
from .ir.ops import Function
from .ir.verifier import verify
from .passes import PIPELINE, run_passes
from .source import ASTSource, JITCallable, parse_type

PASSES = PIPELINE


@dataclass
class CompiledIR:
    function: Function
    static_output: list[str]


def compile_ir(kernel, arg_specs: dict, arg_attrs: Optional[dict] = None, skipped_passes=(),
               other_stages=(), num_warps: int = 4) -> CompiledIR:
    """The verified, optimized IR of ``kernel`` (a ``JITCallable``: anything with ``parsed``) for
    ``arg_specs`` (parameter name -> IR type, or constexpr value). ``arg_attrs`` (run-time parameter
    name -> {"divisibility": 16, "equal_to_1": True}) are the facts the specialization proved about
    the arguments; they become ``fn.arg_attrs``, one dict per IR argument. ``skipped_passes``: names
    of pipeline passes the backend does without (``Backend.skipped_passes``); ``other_stages``: the
    names of the backend's own stages, which ``TRITIUM_DUMP`` may name besides the passes; ``num_warps``:
    the launch's, which ``tl.extra.cuda.num_warps()`` and ``num_threads()`` give the kernel."""
    fn, static_output = generate_ir(kernel, arg_specs, num_warps)
    arg_attrs = arg_attrs or {}
    fn.arg_attrs = [dict(arg_attrs.get(name, {})) for name in fn.arg_names]
    verify(fn)
    passes = tuple(p for p in PIPELINE if p.name not in skipped_passes)
    run_passes(fn, verify_each=config.check_ir(), passes=passes, other_stages=other_stages)
    verify(fn)
    if "ir" in config.dump_stages():
        print(f"// IR of {fn.name}\n{fn}", file=sys.stderr)
    return CompiledIR(fn, static_output)


def compile_source(source: ASTSource) -> CompiledIR:
    """``compile_ir`` for an ``ASTSource``: its signature, constexprs and attributes."""
    from .passes.manager import skipped_without_fusion

    specs, attrs = source.arg_specs()
    return compile_ir(source.fn, specs, attrs, skipped_without_fusion())


__all__ = ["PASSES", "ASTSource", "CompiledIR", "CompiledKernel", "JITCallable", "compile_ir", "compile_source",
           "errors", "parse_type"]
