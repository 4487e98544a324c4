"""What a kernel promises and checks of its values, and how it reports: the compiler hints
(``multiple_of``, ``max_contiguous``, ``max_constancy``, ``assume``), ``expect_zero``, and the
debugging builtins (``static_print``, ``static_assert``, ``device_print``, ``device_assert``,
``debug_barrier``)."""
from __future__ import annotations

from .core import _semantic, builtin, tensor, unwrap


# compiler hints ---------------------------------------------------------------------------------------
@builtin
def multiple_of(input, values):
    """Promises every element of ``input`` is a multiple of ``values``; checked at run time."""
    return _semantic().hint(input, "multiple_of", values)


@builtin
def max_contiguous(input, values):
    """Promises runs of ``values`` consecutive increasing elements; checked at run time."""
    return _semantic().hint(input, "max_contiguous", values)


@builtin
def max_constancy(input, values):
    """Promises runs of ``values`` equal elements; checked at run time."""
    return _semantic().hint(input, "max_constancy", values)


@builtin
def assume(cond):
    """Promises that ``cond`` holds (e.g. ``tl.assume(pid_n >= 0)``, ``tl.assume(stride > 0)``): a
    compiler that trusts hints may take ``x >= 0`` / ``x > 0`` as a fact about ``x``, which keeps
    runs of ``(x + arange) % n`` contiguous. The interpreter checks the promise: a false one is a
    warning, a HintViolationError in debug mode."""
    _semantic().assume(cond)


@builtin
def debug_barrier():
    """Synchronises the threads of a program; programs here run in lock step, so it only orders."""
    _semantic()._create("barrier")


# debugging -------------------------------------------------------------------------------------------
def _format_static(arg) -> str:
    arg = unwrap(arg)
    return str(arg)


@builtin
def static_print(*values, sep=" ", end="\n", file=None, flush=False):
    """Prints at compile time, once per compilation."""
    text = sep.join(_format_static(v) for v in values) + end
    _semantic().static_output.append(text)


@builtin
def static_assert(cond, msg=""):
    """Fails compilation when the constexpr ``cond`` is false."""
    value = unwrap(cond)
    if isinstance(value, tensor):
        raise TypeError("static_assert needs a constexpr condition; use tl.device_assert for run-time values")
    if not value:
        raise AssertionError(f"static_assert failed: {unwrap(msg)}" if unwrap(msg) else "static_assert failed")


@builtin
def device_print(prefix, *args, hex=False):
    """Prints ``prefix`` and the values of ``args`` from every program, at run time."""
    _semantic().device_print(str(unwrap(prefix)), args, unwrap(hex))


@builtin
def device_assert(cond, msg="", mask=None):
    """Raises DeviceAssertionError naming the program when ``cond`` is false in some lane."""
    sem = _semantic()
    if mask is not None:
        cond = sem.logical("or", cond, sem.logical_not(mask))
    sem.device_assert(cond, str(unwrap(msg)))


@builtin
def expect_zero(x, mask):
    """Returns ``x`` and states that it is zero wherever ``mask`` is true (values expected to have
    underflowed to zero). As in Triton, only debug mode checks it (``TRITIUM_DEBUG=1``,
    ``debug=True``): a nonzero lane under the mask is a DeviceAssertionError naming the program and
    lane; without debug mode nothing is checked and ``x`` is returned unchanged."""
    sem = _semantic()
    x = unwrap(x)
    mask = sem.to_tensor(unwrap(mask))
    holds = sem.logical("or", sem.compare("eq", sem.to_tensor(x), 0), sem.logical_not(mask))
    sem.device_assert(holds, "expect_zero expected x == 0 where mask is true", debug_only=True)
    return x
