"""The compilation pipeline, as named stages: frontend -> verify -> passes -> verify.

``TRITIUM_DUMP=ir`` prints each kernel's IR after the passes.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from .. import config
from . import errors  # noqa: F401  (triton.compiler.errors, reachable as an attribute as in Triton)
from .frontend import generate_ir
from .ir.ops import Function
from .ir.verifier import verify
from .passes import eliminate_dead_code, fold_constants

PASSES = [fold_constants, eliminate_dead_code]


@dataclass
class CompiledIR:
    function: Function
    static_output: list[str]


def compile_ir(jit_fn, arg_specs) -> CompiledIR:
    fn, static_output = generate_ir(jit_fn, arg_specs)
    verify(fn)
    for stage in PASSES:
        stage(fn)
    verify(fn)
    if "ir" in config.dump_stages():
        print(f"// IR of {fn.name}\n{fn}", file=sys.stderr)
    return CompiledIR(fn, static_output)


def __getattr__(name):
    # triton.compiler.CompiledKernel, imported on first use: runtime.jit imports this package.
    if name == "CompiledKernel":
        from .compiler import CompiledKernel

        return CompiledKernel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
