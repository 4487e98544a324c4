"""Edge cases the IR spec states, through the kernels' two paths (the interpreter's handlers and
constant folding), which share ``numerics.elementwise``: shifts of i1 by its width, and signed zeros
and NaN in max/min reductions.

Oracles are written out from the spec's sentences with Python integers and ``math``; the reduction
cases also match what Triton 3.6 gave on an H200 (``tl.max([-0., 0., -0., -0.])`` is +0, ``tl.min``
-0, NaN ignored). Tolerance: none, bits compared.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.backends import registry
from tritium.backends.base import KernelArgument
from tritium.compiler.ir.parser import parse_function
from tritium.compiler.ir.verifier import verify
from tritium.compiler.passes import fold_constants
from tritium.numerics import elementwise
from tritium.runtime.arguments import tensor_view


def spec_shift(value: int, amount: int, width: int, left: bool) -> int:
    """The spec's shl/shr on an unsigned value: an amount < 0 or >= the bit width gives 0."""
    if amount < 0 or amount >= width:
        return 0
    return (value << amount) % (1 << width) if left else value >> amount


def _run_ir(text: str, *arrays, fold: bool) -> None:
    """Runs IR text on the interpreter, constant-folded first when ``fold``."""
    fn = parse_function(text)
    if fold:
        fold_constants(fn)
    verify(fn)
    backend = registry.get("interpreter")
    executable = backend.compile(fn, backend.parse_options({}), backend.default_target())
    executable.launch((1, 1, 1), [KernelArgument(name, value.type, tensor_view(array) if value.type.is_ptr() else array)
                                  for name, value, array in zip(fn.arg_names, fn.args, arrays)])


# The frontend refuses shifts of booleans, as Triton's documentation of << does; IR can hold them.
_SHIFTS_OF_ARGUMENTS = """func @k(%a: i1, %b: i1, %left: ptr<i8>, %right: ptr<i8>) {
  %l = shl %a, %b : i1
  %r = shr %a, %b : i1
  %l8 = cast %l {to=i8} : i8
  %r8 = cast %r {to=i8} : i8
  store %left, %l8
  store %right, %r8
}"""


@pytest.mark.parametrize("a,b", [(False, False), (True, False), (False, True), (True, True)])
def test_i1_shift_by_one_is_past_the_width(a, b):
    left, right = np.full(1, 9, np.int8), np.full(1, 9, np.int8)
    _run_ir(_SHIFTS_OF_ARGUMENTS, np.bool_(a), np.bool_(b), left, right, fold=False)
    assert (int(left[0]), int(right[0])) == (spec_shift(a, b, 1, True), spec_shift(a, b, 1, False))


@pytest.mark.parametrize("a,b", [(True, True), (True, False)])
def test_folded_i1_shift_by_one_is_past_the_width(a, b):
    text = _SHIFTS_OF_ARGUMENTS.replace("%a: i1, %b: i1, ", "").replace(
        "  %l = shl", f"  %a = constant {{value={a}}} : i1\n  %b = constant {{value={b}}} : i1\n  %l = shl")
    fn = parse_function(text)
    fold_constants(fn)
    assert not any(op.opcode in ("shl", "shr") for op in fn.walk())  # folded away
    left, right = np.full(1, 9, np.int8), np.full(1, 9, np.int8)
    _run_ir(text, left, right, fold=True)
    assert (int(left[0]), int(right[0])) == (spec_shift(a, b, 1, True), spec_shift(a, b, 1, False))


@pytest.mark.parametrize("dtype,width", [(np.uint8, 8), (np.uint16, 16), (np.uint32, 32), (np.uint64, 64)])
def test_unsigned_shifts_follow_the_width(dtype, width):
    values = np.array([1, 3, (1 << width) - 1, 5, 7], dtype)
    amounts = np.array([0, width - 1, width, width + 1, 2], dtype)
    assert elementwise.shift_left(values, amounts).tolist() == [
        spec_shift(int(v), int(s), width, True) for v, s in zip(values, amounts)]
    assert elementwise.shift_right(values, amounts).tolist() == [
        spec_shift(int(v), int(s), width, False) for v, s in zip(values, amounts)]


# max/min reductions: NaN ignored, -0 < +0 ------------------------------------------------------------------
def spec_extreme(row: list[float], maximum: bool) -> float:
    """The largest (smallest) of the non-NaN values with -0 < +0; NaN when all are NaN."""
    numbers = [v for v in row if not math.isnan(v)]
    if not numbers:
        return math.nan
    def order(v: float) -> tuple[float, float]:
        return (v, math.copysign(1.0, v))  # -0 sorts before +0

    return max(numbers, key=order) if maximum else min(numbers, key=order)


@triton.jit
def _row_extremes(x_ptr, max_ptr, min_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    x = tl.load(x_ptr + rows[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(max_ptr + rows, tl.max(x, axis=1))
    tl.store(min_ptr + rows, tl.min(x, axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_max_min_reductions_order_signed_zeros_and_ignore_nan(dtype):
    rng = np.random.default_rng(5)
    choices = np.array([0.0, -0.0, math.nan, -1.0, 2.0], dtype)
    x = rng.choice(choices, (64, 8), p=[0.35, 0.35, 0.1, 0.1, 0.1]).astype(dtype)
    x[0] = [-0.0, 0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0]  # rows the H200 reduced
    x[1] = [math.nan, -1.0, math.nan, -2.0, math.nan, math.nan, math.nan, math.nan]
    x[2] = math.nan
    high, low = np.zeros(64, dtype), np.zeros(64, dtype)
    _row_extremes[(1,)](x, high, low, M=64, N=8)
    for name, out, maximum in (("max", high, True), ("min", low, False)):
        expected = np.array([spec_extreme(row.tolist(), maximum) for row in x], dtype)
        same = (out.view(f"u{x.itemsize}") == expected.view(f"u{x.itemsize}")) | (np.isnan(out) & np.isnan(expected))
        assert same.all(), (name, x[~same][:3], out[~same][:3], expected[~same][:3])
    assert high[:2].tolist() == [0.0, -1.0] and not np.signbit(high[0])
    assert low[:2].tolist() == [0.0, -2.0] and np.signbit(low[0])


# clamp: maximum then minimum ---------------------------------------------------------------------------
_CLAMP_AND_ITS_STEPS = """func @k(%x: ptr<{t}>, %lo: ptr<{t}>, %hi: ptr<{t}>, %one: ptr<{t}>, %two: ptr<{t}>) {{
  %i = arange {{start=0, end=16}} : <16xi32>
  %xs = splat %x : <16xptr<{t}>>
  %xp = addptr %xs, %i : <16xptr<{t}>>
  %los = splat %lo : <16xptr<{t}>>
  %lop = addptr %los, %i : <16xptr<{t}>>
  %his = splat %hi : <16xptr<{t}>>
  %hip = addptr %his, %i : <16xptr<{t}>>
  %a = load %xp : <16x{t}>
  %b = load %lop : <16x{t}>
  %c = load %hip : <16x{t}>
  %r = clamp %a, %b, %c{nan} : <16x{t}>
  %m = maximum %a, %b{nan} : <16x{t}>
  %s = minimum %m, %c{nan} : <16x{t}>
  %ones = splat %one : <16xptr<{t}>>
  %onep = addptr %ones, %i : <16xptr<{t}>>
  store %onep, %r
  %twos = splat %two : <16xptr<{t}>>
  %twop = addptr %twos, %i : <16xptr<{t}>>
  store %twop, %s
}}"""


@pytest.mark.parametrize("backend_name", ["interpreter", "cpu"])
@pytest.mark.parametrize("dtype,nan", [(np.float32, ""), (np.float32, " {propagate_nan='all'}"), (np.float16, ""),
                                       (np.float64, " {propagate_nan='all'}"), (np.int8, ""), (np.uint32, "")])
def test_clamp_is_maximum_then_minimum(backend_name, dtype, nan):
    """The clamp op on floats, which only IR holds (tl.clamp on floats emits the two steps), and on
    integers: bit for bit the two steps, NaN and signed zeros included."""
    backend = registry.get(backend_name)
    if not backend.is_available():
        pytest.skip(f"the {backend_name} backend is not available here")
    t = {np.float32: "fp32", np.float16: "fp16", np.float64: "fp64", np.int8: "i8", np.uint32: "u32"}[dtype]
    if np.dtype(dtype).kind == "f":
        values = [0.0, -0.0, math.nan, -math.inf, math.inf, 1.5, -2.0, 3.0]
    else:
        info = np.iinfo(dtype)
        values = [info.min, info.max, 0, 1, info.max - 1, info.min + 1, 3, 2]
    rng = np.random.default_rng(7)
    x, lo, hi = (rng.choice(np.array(values, dtype), 16) for _ in range(3))
    fn = parse_function(_CLAMP_AND_ITS_STEPS.format(t=t, nan=nan))
    verify(fn)
    one, two = np.zeros(16, dtype), np.ones(16, dtype)
    executable = backend.compile(fn, backend.parse_options({}), backend.default_target())
    executable.launch((1, 1, 1), [KernelArgument(name, value.type, tensor_view(array))
                                  for name, value, array in zip(fn.arg_names, fn.args, (x, lo, hi, one, two))])
    bits = f"u{np.dtype(dtype).itemsize}"
    assert (one.view(bits) == two.view(bits)).all(), (x, lo, hi, one, two)
