"""What the pass tests share: running passes on IR text, and running IR on the interpreter."""
from __future__ import annotations

import numpy as np

from tritium.backends import registry
from tritium.backends.base import KernelArgument
from tritium.compiler.ir.ops import Function
from tritium.compiler.ir.parser import parse_function
from tritium.compiler.ir.printer import print_function
from tritium.compiler.ir.verifier import verify
from tritium.runtime.arguments import tensor_view


def after(text: str, *passes) -> str:
    """``text`` parsed, run through ``passes`` (each followed by the verifier), printed."""
    fn = parse_function(text)
    verify(fn)
    for run in passes:
        run(fn)
        verify(fn)
    return print_function(fn)


def execute(fn: Function, *arrays, grid=(1, 1, 1)) -> None:
    """Runs ``fn`` on the interpreter: a pointer argument points into its array in ``arrays``, a
    scalar argument takes its (numpy scalar) value."""
    backend = registry.get("interpreter")
    executable = backend.compile(fn, backend.parse_options({}), backend.default_target())
    args = [KernelArgument(name, value.type, tensor_view(array) if value.type.is_ptr() else array)
            for name, value, array in zip(fn.arg_names, fn.args, arrays)]
    executable.launch(grid, args)


def same_results(text: str, passes, inputs: list[np.ndarray], grid=(1, 1, 1)) -> Function:
    """Runs ``text`` before and after ``passes``; the last argument's array is the output, which
    must come out bit-identical. Returns the function after the passes."""
    outputs = []
    for chosen in ((), passes):
        fn = parse_function(text)
        for run in chosen:
            run(fn)
        verify(fn)
        arrays = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
        execute(fn, *arrays, grid=grid)
        outputs.append(arrays[-1])
    assert outputs[0].tobytes() == outputs[1].tobytes(), (outputs[0], outputs[1])
    return fn
