"""``triton._filecheck``: the helpers Triton's frontend tests call.

``run_parser(kernel, args, kwargs)`` runs tritium's frontend on ``kernel`` for arguments given as
for a launch (tensors, ``MockTensor``, numbers, dtypes and other constexprs) and returns the IR it
builds, before any pass: a compile error is raised as it would be at a launch, which is what most
of those tests check. ``run_filecheck_test`` and ``filecheck_test`` also match the ``CHECK`` lines
of the kernel's source against the IR; those lines are written for Triton's MLIR (``tt.load``,
``arith.addi``...), and tritium compiles to its own IR (docs/ir.md), so a kernel with such lines
fails with ``MatchError`` showing tritium's IR (one with none passes once it compiles).
"""
from __future__ import annotations

import functools
import inspect
import re

from .backends.compiler import GPUTarget

stub_target = GPUTarget("cuda", 100, 32)

_CHECK = re.compile(r"#\s*CHECK(-[A-Z]+)?:")


class MatchError(ValueError):
    def __init__(self, message, module_str):
        super().__init__(message)
        self.module_str = module_str

    def __str__(self):
        return f"{super().__str__()}\n{self.module_str}"


class ParsedModule:
    """The IR ``run_parser`` built: ``str()`` prints it, ``function`` is the IR function."""

    def __init__(self, function, static_output):
        self.function = function
        self.static_output = static_output

    def __str__(self) -> str:
        return str(self.function)

    def str_nodebug(self) -> str:
        return str(self.function)


def run_parser(kernel_fn, args=(), kwargs=None, target=stub_target) -> ParsedModule:
    from .compiler.frontend import generate_ir

    kwargs = dict(kwargs or {})
    kwargs.pop("sanitize_overflow", None)
    values, _ = kernel_fn._bind(tuple(args), kwargs)
    _, specs, _, _ = kernel_fn._specialize(values)
    return ParsedModule(*generate_ir(kernel_fn, specs))


def run_filecheck(name, module_str, check_template):
    checks = [line.strip() for line in check_template.splitlines() if _CHECK.search(line)]
    if checks:
        raise MatchError(f"{name}: {len(checks)} CHECK lines describe Triton's MLIR (first: {checks[0]!r}); "
                         "tritium compiles to its own IR, which is:", module_str)


def run_filecheck_test(kernel_fn, args=(), kwargs=None, target=stub_target):
    module = run_parser(kernel_fn, args=args, kwargs=kwargs, target=target)
    run_filecheck(kernel_fn.__name__, module.str_nodebug(), inspect.getsource(kernel_fn.fn))


def filecheck_test(fn):
    """A test whose kernel ``fn`` (a @jit function of no run-time arguments) is parsed and checked."""

    @functools.wraps(fn)
    def test_fn():
        run_filecheck_test(fn)

    return test_fn
