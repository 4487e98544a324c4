"""``TRITIUM_VALIDATE=interpreter``: every launch on another backend is checked against the interpreter.

Before the launch, the bytes each pointer argument may touch are copied; the launch runs on its
backend; the same IR then runs on the reference backend over the copies, and each argument's
bytes are compared, element by element in the argument's dtype. Integers, booleans and floats of
kernels without math are compared exactly (NaN equals any NaN: payloads are not specified).
Float outputs of a kernel that uses math functions (exp, log, sin, sqrt, ..., libdevice calls,
approximate division) or ``dot`` may differ by ``MATH_ULP_BOUND`` units in the last place: a
compiled backend may sum dots in another order, and a GPU backend uses its own math library. The
CPU backend's math functions are the interpreter's (``Backend.math_as_interpreter``): there only
``dot`` has the bound. A mismatch raises ``ValidationError``
naming the kernel, the argument, the first differing element and both values.
"""
from __future__ import annotations

import ctypes
import weakref

import numpy as np

from ..backends import registry
from ..backends.base import Backend, KernelArgument
from ..compiler.ir import types as T
from ..compiler.ir.spec import ELEMENTWISE, INEXACT, opcodes_with
from ..errors import ValidationError
from .arguments import TensorView

MATH_ULP_BOUND = 4
# Opcodes whose float results a backend may compute within MATH_ULP_BOUND rather than exactly.
INEXACT_OPCODES = opcodes_with(INEXACT)
# ... of them, the elementwise ones (math functions, libdevice): those a backend computes exactly as
# the interpreter does when math_as_interpreter.
SHARED_MATH_OPCODES = opcodes_with(INEXACT, ELEMENTWISE)

_references: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def ulp_bound(fn, math_as_interpreter: bool = False) -> int:
    """The ulp bound for float outputs of ``fn``: 0 unless it uses inexact ops (only ``dot`` when
    the backend's math is the interpreter's)."""
    for op in fn.walk():
        if math_as_interpreter and (op.opcode in SHARED_MATH_OPCODES or op.opcode == "div"):
            continue
        if op.opcode in INEXACT_OPCODES or (op.opcode == "div" and op.attrs.get("rounding") in ("full", "approx")):
            return MATH_ULP_BOUND
    return 0


def _host_bytes(view) -> np.ndarray:
    """The bytes ``[address + low, address + high)`` of a host buffer (a view, not a copy)."""
    size = view.high - view.low
    if size <= 0:
        return np.zeros(0, dtype=np.uint8)
    raw = (ctypes.c_uint8 * size).from_address(view.address + view.low)
    return np.ctypeslib.as_array(raw)


def _snapshot(arguments: list[KernelArgument], read=None) -> list[KernelArgument]:
    """The pointer arguments with their memory copied to host memory, so a second launch can run on
    the copies. Arguments whose bytes overlap (the same tensor passed twice, views of one buffer)
    share one copy, as they share memory in the launch being checked. ``read(start, end)`` gives a
    host copy of device bytes (device memory); host memory is copied directly."""
    spans = sorted((a.value.address + a.value.low, a.value.address + a.value.high) for a in arguments)
    regions: list[list[int]] = []
    for start, end in spans:
        if regions and start < regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], end)
        else:
            regions.append([start, end])
    copies = [(start, read(start, end) if read is not None
               else _host_bytes(TensorView(None, start, 0, end - start, "cpu", None)).copy())
              for start, end in regions]
    copied = []
    for argument in arguments:
        view = argument.value
        begin = view.address + view.low
        start, copy = next((s, c) for s, c in copies if s <= begin < s + max(c.size, 1))
        base = copy.ctypes.data if copy.size else start
        address = base + (view.address - start)
        copied.append(KernelArgument(argument.name, argument.type,
                                     TensorView(view.dtype, address, view.low, view.high, "cpu", copy)))
    return copied


def _ordered(bits: np.ndarray, width: int) -> list[int]:
    """Float bit patterns mapped to integers in the order of the floats they encode; -0 sits one
    step below +0, so that exact comparison tells the zeros apart."""
    sign = 1 << (width - 1)
    return [-(b & (sign - 1)) - 1 if b & sign else b for b in (int(x) for x in bits)]


def compare(kernel: str, argument: str, dtype: T.dtype, actual: np.ndarray, expected: np.ndarray, bound: int,
            backend: str = "the backend", reference: str = "the interpreter") -> None:
    """Raises ValidationError when the bytes ``actual`` (after the launch on ``backend``) and
    ``expected`` (after the reference launch) differ, as elements of ``dtype``: exactly, or for
    floats by more than ``bound`` ulp (NaN matching any NaN)."""
    if actual.shape != expected.shape:
        raise ValidationError(f"{kernel}: argument '{argument}' spans {actual.size} bytes after the launch but "
                              f"{expected.size} on {reference}")
    if np.array_equal(actual, expected):
        return
    itemsize = dtype.itemsize
    width = itemsize * 8
    unsigned = np.dtype(f"u{itemsize}")
    a_bits = actual.view(unsigned)
    e_bits = expected.view(unsigned)
    differ = a_bits != e_bits
    if dtype.is_floating():
        a_values = actual.view(dtype.numpy).astype(np.float64)
        e_values = expected.view(dtype.numpy).astype(np.float64)
        differ &= ~(np.isnan(a_values) & np.isnan(e_values))
        indices = np.flatnonzero(differ)
        distances = np.array([abs(a - e) for a, e in zip(_ordered(a_bits[indices], width),
                                                         _ordered(e_bits[indices], width))], dtype=object)
        either_nan = np.isnan(a_values[indices]) | np.isnan(e_values[indices])
        bad = indices[(distances > bound) | either_nan] if indices.size else indices
    else:
        a_values, e_values = actual.view(dtype.numpy), expected.view(dtype.numpy)
        bad = np.flatnonzero(differ)
        distances = None
    if bad.size == 0:
        return
    first = int(bad[0])
    detail = ""
    if dtype.is_floating():
        position = int(np.searchsorted(indices, first))
        detail = f" ({distances[position]} ulp apart; the bound is {bound} ulp)"
    raise ValidationError(
        f"{kernel}: the {backend} backend and {reference} disagree on argument '{argument}' ({dtype}): element "
        f"{first} of its span (byte {first * itemsize}) is {a_values[first].item()!r} on {backend} but "
        f"{e_values[first].item()!r} on {reference}{detail}; {bad.size} of {a_bits.size} elements differ")


def _reference_executable(kernel, reference: str):
    executable = _references.get(kernel.executable)
    if executable is None:
        backend = registry.get(reference)
        known = backend.options_class.names()
        options = backend.parse_options({k: v for k, v in kernel.options.as_dict().items() if k in known})
        executable = backend.compile(_reference_ir(kernel, reference, backend), options, kernel.target)
        _references[kernel.executable] = executable
    return executable


def _reference_ir(kernel, reference: str, backend):
    """``kernel.ir`` with the pipeline's passes that ``backend`` (the reference) runs but the kernel's
    backend skipped: the CUDA backend keeps ``inline_asm``, which the host backends emulate, and
    contracts multiply-adds in its LLVM, which the reference does as the ``contract`` pass."""
    skipped = set(registry.get(kernel.backend).skipped_passes) - set(backend.skipped_passes)
    if not getattr(kernel.options, "enable_fp_fusion", True):
        skipped.discard("contract")  # the kernel was compiled without contraction
    if not skipped:
        return kernel.ir
    from ..compiler.ir.parser import parse_function
    from ..compiler.ir.printer import print_function
    from ..compiler.passes.manager import PIPELINE
    from ..errors import CompilationError

    fn = parse_function(print_function(kernel.ir))  # a copy: the kernel's own IR stays as it was compiled
    for step in PIPELINE:
        if step.name in skipped:
            try:
                step.run(fn)
            except CompilationError as error:
                raise ValidationError(f"TRITIUM_VALIDATE cannot run {kernel.name} on the {reference}: {error.error}") \
                    from None
    return fn


def launch_and_compare(kernel, reference: str, grid3, arguments: list[KernelArgument], stream, debug: bool) -> None:
    """Launches ``kernel`` on its backend, then on ``reference`` over copies of the arguments as they
    were before, and compares every pointer argument's bytes (see the module's docstring). Device
    memory (a GPU's) is copied to the host for the reference launch and read back for the comparison
    through the backend's ``copy_to_host``."""
    pointers = [i for i, argument in enumerate(arguments) if isinstance(argument.type, T.pointer_type)]
    devices = {arguments[i].value.device for i in pointers}
    if len(devices - {"cpu"}) > 1 or ("cpu" in devices and len(devices) > 1):
        raise ValidationError(f"TRITIUM_VALIDATE: the arguments of {kernel.name} are on several devices {sorted(devices)}")
    backend = registry.get(kernel.backend)
    on_device = bool(devices - {"cpu"})
    if on_device and type(backend).copy_to_host is Backend.copy_to_host:  # the protocol's refusal
        raise ValidationError(f"TRITIUM_VALIDATE compares host memory, but the {kernel.backend} backend cannot copy "
                              f"device {sorted(devices)[0]!r} memory to the host")

    def read(start: int, end: int) -> np.ndarray:
        out = np.empty(max(0, end - start), dtype=np.uint8)
        if out.size:
            backend.copy_to_host(out.ctypes.data, start, out.size)
        return out

    copies = list(arguments)
    for i, copied in zip(pointers, _snapshot([arguments[i] for i in pointers], read if on_device else None)):
        copies[i] = copied
    kernel.executable.launch(grid3, arguments, stream, debug=debug)
    _reference_executable(kernel, reference).launch(grid3, copies, None, debug=debug)
    bound = ulp_bound(kernel.ir, backend.math_as_interpreter)
    for i in pointers:
        argument = arguments[i]
        view = argument.value
        actual = (read(view.address + view.low, view.address + view.high) if on_device else _host_bytes(view))
        compare(kernel.name, argument.name, argument.type.element_ty, actual,
                _host_bytes(copies[i].value), bound if argument.type.element_ty.is_floating() else 0,
                backend=kernel.backend, reference=f"the {reference}")
