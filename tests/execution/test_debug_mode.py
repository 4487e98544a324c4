"""Debug mode (TRITIUM_DEBUG=1, @jit(debug=True), kernel[grid](..., debug=True)) on every host
backend: the interpreter checks as it runs; the CPU backend runs a compiled variant of the kernel
with the same checks (kernels whose programs synchronise through memory, or that carry hints, go
to the interpreter there). The spin-wait and launch-order checks are tested with the interpreter
(tests/backends/interpreter/test_spin_and_launch_order.py).

Each check gets a kernel with one planted fault and must name the fault's line, the programs
involved and (for races) the tensor and element; each must stay silent on clean kernels (the
seed programs' GELU kernels, the benchmark suite's tiled matmul, softmax, layernorm and
attention give the same bits with debug mode on and off); and with debug mode off the same
faults give what a GPU gives (x // 0 == -1, NaN -> 0, int32 wraps, the last store wins).
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from helpers_kernel_checks import assert_points_at
from tritium import compat
from tritium.errors import (DeviceAssertionError, DivisionByZeroError, IntegerOverflowError,
                            InvalidConversionError, RaceError, TritonError)

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT.parent / "shared" / "seed_programs"
if not SEEDS.is_dir():
    SEEDS = Path(os.environ.get("TRITIUM_SEEDS", "/nonexistent"))


pytestmark = pytest.mark.not_on_backend(
    "cuda", reason="debug mode's race, overflow, division and conversion checks are the host backends'")


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch):
    for name in ("TRITIUM_DEBUG", "TRITIUM_SHUFFLE", "TRITIUM_SPIN_CHECK_AFTER", "TRITIUM_BATCH_ELEMENTS"):
        monkeypatch.delenv(name, raising=False)


# races ----------------------------------------------------------------------------------------------------
@triton.jit
def overlapping_blocks(out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * (BLOCK - 1) + tl.arange(0, BLOCK)  # off by one: blocks share an element
    tl.store(out_ptr + offs, tl.program_id(0))


@pytest.mark.parametrize("batched", [True, False])
def test_race_between_two_programs_names_both_and_the_element(batched, monkeypatch):
    if not batched:
        monkeypatch.setenv("TRITIUM_BATCH_ELEMENTS", "1")  # one program at a time: a race across batches
    out = np.zeros(64, np.int32)
    with pytest.raises(RaceError) as info:
        overlapping_blocks[(4,)](out, BLOCK=16, debug=True)
    error = info.value
    assert isinstance(error, TritonError) and isinstance(error, RuntimeError)
    assert error.program_ids == [(0, 0, 0), (1, 0, 0)]
    assert (error.tensor, error.offset) == ("out_ptr", 15)
    assert "programs (0, 0, 0) and (1, 0, 0)" in str(error) and "element 15 of 'out_ptr'" in str(error)
    assert_points_at(error, overlapping_blocks, "tl.store(out_ptr + offs")


@triton.jit
def store_through_two_pointers(a_ptr, b_ptr, a_index, b_index):
    """Program 0 stores through a_ptr, program 1 through b_ptr."""
    pid = tl.program_id(0)
    if pid == 0:
        tl.store(a_ptr + a_index, 1)
    else:
        tl.store(b_ptr + b_index, 2)


@pytest.mark.parametrize("batched", [True, False])
def test_race_through_two_arguments_aliasing_one_tensor(batched, monkeypatch):
    """Two pointer arguments over the same memory (one a view starting 4 elements in): stores by
    two programs to one element through different arguments are a race; to different elements,
    not. Oracle: the element each store lands on, worked out by hand."""
    if not batched:
        monkeypatch.setenv("TRITIUM_BATCH_ELEMENTS", "1")
    x = np.zeros(16, np.int32)
    with pytest.raises(RaceError) as info:
        store_through_two_pointers[(2,)](x, x[4:], 6, 2, debug=True)  # both land on x[6]
    assert info.value.program_ids == [(0, 0, 0), (1, 0, 0)]
    x = np.zeros(16, np.int32)
    store_through_two_pointers[(2,)](x, x[4:], 6, 3, debug=True)  # x[6] and x[7]: no race
    assert x[6] == 1 and x[7] == 2
    y = np.zeros(16, np.int32)
    store_through_two_pointers[(2,)](y, np.zeros(16, np.int32), 6, 6, debug=True)  # different tensors
    assert y[6] == 1


@triton.jit
def store_through_either(a_ptr, b_ptr, index):
    pid = tl.program_id(0)
    target = tl.where(pid % 2 == 0, a_ptr, b_ptr)  # which argument: known only at run time
    tl.store(target + index + tl.arange(0, 4), pid + 1)


def test_race_through_a_pointer_chosen_at_run_time():
    a, b = np.zeros(8, np.int32), np.zeros(8, np.int32)
    with pytest.raises(RaceError) as info:
        store_through_either[(3,)](a, b, 0, debug=True)  # programs 0 and 2 store to a[0:4]
    assert info.value.program_ids == [(0, 0, 0), (2, 0, 0)]
    assert (info.value.tensor, info.value.offset) == ("a_ptr", 0)
    a, b = np.zeros(8, np.int32), np.zeros(8, np.int32)
    store_through_either[(2,)](a, b, 0, debug=True)
    assert a.tolist()[:4] == [1] * 4 and b.tolist()[:4] == [2] * 4


@pytest.mark.parametrize("batched", [True, False])
def test_race_through_a_run_time_pointer_into_aliasing_arguments(batched, monkeypatch):
    """Program 0 stores x[2:6] through a_ptr, program 1 x[4:8] through b_ptr = x[2:]: a race on x[4],
    found whether the two programs run in one batch or not. The interpreter knows the pointer came
    from b_ptr (element 2); compiled code sees an address both arguments hold and names the first."""
    if not batched:
        monkeypatch.setenv("TRITIUM_BATCH_ELEMENTS", "1")
    x = np.zeros(16, np.int32)
    with pytest.raises(RaceError) as info:
        store_through_either[(2,)](x, x[2:], 2, debug=True)
    assert info.value.program_ids == [(0, 0, 0), (1, 0, 0)]
    assert (info.value.tensor, info.value.offset) in (("b_ptr", 2), ("a_ptr", 4))


def test_without_debug_mode_the_last_store_wins():
    out = np.zeros(64, np.int32)
    overlapping_blocks[(4,)](out, BLOCK=16)
    expected = np.zeros(64, np.int32)
    for p in range(4):
        expected[p * 15:p * 15 + 16] = p
    np.testing.assert_array_equal(out, expected)


@triton.jit
def rows_2d(out_ptr, BLOCK: tl.constexpr):
    row = tl.program_id(1) // 2  # programs (x, 0) and (x, 1) both write row x... of the same row
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + (tl.program_id(0) + row) * BLOCK + cols, cols)


def test_race_names_program_ids_of_a_2d_grid():
    out = np.zeros(3 * 8, np.int32)
    with pytest.raises(RaceError) as info:
        rows_2d[(2, 2)](out, BLOCK=8, debug=True)
    assert info.value.program_ids == [(0, 0, 0), (0, 1, 0)]
    assert (info.value.tensor, info.value.offset) == ("out_ptr", 0)


@triton.jit
def same_program_twice(out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs)
    tl.store(out_ptr + offs, offs + 1)  # the same program again: not a race
    tl.store(out_ptr + tl.program_id(0) * BLOCK + offs * 0, offs)  # every lane of one program, one element


def test_stores_by_one_program_to_one_address_are_not_races():
    out = np.zeros(64, np.int32)
    same_program_twice[(4,)](out, BLOCK=16, debug=True)
    expected = np.arange(64, dtype=np.int32) + 1
    expected[::16] = np.arange(0, 64, 16) + 15  # the lanes' stores land in lane order
    np.testing.assert_array_equal(out, expected)


@triton.jit
def release_too_early(x_ptr, acc_ptr, lock_ptr, BLOCK: tl.constexpr):
    partial = tl.sum(tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)), axis=0)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    total = tl.load(acc_ptr)
    tl.atomic_xchg(lock_ptr, 0)  # released before the store it should protect
    tl.store(acc_ptr, total + partial)


@triton.jit
def no_lock_at_all(x_ptr, acc_ptr, counter_ptr, BLOCK: tl.constexpr):
    partial = tl.sum(tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)), axis=0)
    ticket = tl.atomic_add(counter_ptr, 1)  # programs run one at a time, but nothing orders the store
    # min(ticket, 0) is 0 (tickets start at 0) but, unlike ticket * 0, no compiler identity: the
    # ticket stays used, which is what makes the programs run one at a time
    tl.store(acc_ptr, tl.load(acc_ptr) + partial + tl.minimum(ticket, 0))


@pytest.mark.parametrize("kernel", [release_too_early, no_lock_at_all], ids=["released-early", "no-lock"])
def test_race_between_synchronising_programs(kernel):
    x = np.arange(64, dtype=np.int32)
    acc, lock = np.zeros(1, np.int32), np.zeros(1, np.int32)
    with pytest.raises(RaceError) as info:
        kernel[(4,)](x, acc, lock, BLOCK=16, debug=True)
    assert info.value.program_ids == [(0, 0, 0), (1, 0, 0)]
    assert_points_at(info.value, kernel, "tl.store(acc_ptr")
    acc[:], lock[:] = 0, 0
    kernel[(4,)](x, acc, lock, BLOCK=16)  # without debug mode: runs, as on a GPU
    assert acc[0] == x.sum()  # (in launch order, one at a time, the race happens to be harmless)


@triton.jit
def atomics_everywhere(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr + offs % 4, tl.load(x_ptr + offs))
    tl.atomic_max(out_ptr + 4 + offs % 2, tl.load(x_ptr + offs))


def test_atomics_are_not_races():
    x = np.arange(64, dtype=np.int32)
    out = np.zeros(6, np.int32)
    atomics_everywhere[(4,)](x, out, BLOCK=16, debug=True)
    assert out.tolist() == [int(x[i::4].sum()) for i in range(4)] + [62, 63]


# integer overflow -------------------------------------------------------------------------------------------
@triton.jit
def strided_rows(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    start = pid * stride
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + pid * BLOCK + cols, tl.load(x_ptr + (start + cols) % BLOCK))


@triton.jit
def strided_rows_int64(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    start = pid * stride
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + pid * BLOCK + cols, tl.load(x_ptr + (start + cols) % BLOCK))


def test_int32_overflow_in_offsets_names_the_program():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(64, np.float32)
    with pytest.raises(IntegerOverflowError) as info:
        strided_rows[(4,)](x, out, 2 ** 30, BLOCK=16, debug=True)
    assert info.value.program_ids == [(2, 0, 0)]  # 2 * 2**30 is the first product past INT32_MAX
    assert "2 * 1073741824 = 2147483648" in str(info.value) and isinstance(info.value, OverflowError)
    assert_points_at(info.value, strided_rows, "start = pid * stride")
    strided_rows_int64[(4,)](x, out, 2 ** 30, BLOCK=16, debug=True)  # what the hint says: fine in int64
    np.testing.assert_array_equal(out, np.tile(x, 4))


@triton.jit
def int_binary(a_ptr, b_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    if OP == "add":
        c = a + b
    elif OP == "sub":
        c = a - b
    elif OP == "mul":
        c = a * b
    elif OP == "neg":
        c = -a
    elif OP == "floordiv":
        c = a // b
    else:
        c = a % b
    tl.store(out_ptr + offs, c)


@pytest.mark.parametrize("op, a21, b21, wrapped", [
    ("add", 2 ** 31 - 1, 1, -2 ** 31), ("sub", -2 ** 31, 1, 2 ** 31 - 1), ("mul", 2 ** 20, 2 ** 12, 0),
    ("neg", -2 ** 31, 1, -2 ** 31)])
def test_int32_overflow_in_arithmetic_names_program_and_lane(op, a21, b21, wrapped):
    a, b = np.ones(32, np.int32), np.ones(32, np.int32)
    a[21], b[21] = a21, b21
    with pytest.raises(IntegerOverflowError) as info:
        int_binary[(2,)](a, b, np.zeros(32, np.int32), OP=op, BLOCK=16, debug=True)
    assert info.value.program_ids == [(1, 0, 0)] and "program (1, 0, 0), lane 5" in str(info.value)
    assert f"(it would wrap to {wrapped})" in str(info.value)
    source = {"add": "c = a +", "sub": "c = a -", "mul": "c = a *", "neg": "c = -a"}[op]
    assert_points_at(info.value, int_binary, source)
    out = np.zeros(32, np.int32)
    int_binary[(2,)](a, b, out, OP=op, BLOCK=16)  # debug off: two's complement wrap, as a GPU
    assert out[21] == wrapped


@pytest.mark.parametrize("op, expected", [("floordiv", -1), ("mod", 1000)])
def test_integer_division_by_zero(op, expected):
    a, b = np.full(32, 1000, np.int32), np.ones(32, np.int32)
    b[21] = 0
    with pytest.raises(DivisionByZeroError) as info:
        int_binary[(2,)](a, b, np.zeros(32, np.int32), OP=op, BLOCK=16, debug=True)
    error = info.value
    assert isinstance(error, ZeroDivisionError) and error.program_ids == [(1, 0, 0)]
    assert f"program (1, 0, 0), lane 5: 1000 {'//' if op == 'floordiv' else '%'} 0" in str(error)
    assert_points_at(error, int_binary, "c = a //" if op == "floordiv" else "c = a %")
    out = np.zeros(32, np.int32)
    int_binary[(2,)](a, b, out, OP=op, BLOCK=16)  # debug off: what an H200 gives
    assert out[21] == expected


@triton.jit
def guarded_by_program(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c = a
    if tl.program_id(0) == 0:  # program 1 holds the zero divisor and the huge factors: it skips this
        c = a // b + a * b
    tl.store(out_ptr + offs, c)


def test_checks_ignore_programs_that_do_not_run_the_code():
    a, b = np.ones(32, np.int32), np.ones(32, np.int32)
    a[21], b[21] = 2 ** 20, 0
    b[20] = 2 ** 12
    out = np.zeros(32, np.int32)
    guarded_by_program[(2,)](a, b, out, BLOCK=16, debug=True)
    np.testing.assert_array_equal(out[:16], 2)
    np.testing.assert_array_equal(out[16:], a[16:])


@triton.jit
def float_mod(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(a_ptr + offs) % tl.load(b_ptr + offs))


def test_float_remainder_by_zero_is_not_an_integer_division():
    out = np.zeros(4, np.float32)
    float_mod[(1,)](np.ones(4, np.float32), np.zeros(4, np.float32), out, BLOCK=4, debug=True)
    assert np.isnan(out).all()


# float -> int conversions -------------------------------------------------------------------------------------
@triton.jit
def convert(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty))


@pytest.mark.parametrize("value, dtype, gpu", [
    (np.nan, np.int32, 0), (np.inf, np.int32, 2 ** 31 - 1), (-np.inf, np.int32, -2 ** 31),
    (3e9, np.int32, 2 ** 31 - 1), (-1.0, np.uint8, 0), (300.0, np.int8, 127), (2.0 ** 63, np.int64, 2 ** 63 - 1)])
def test_invalid_float_to_int_conversion(value, dtype, gpu):
    x = np.zeros(32, np.float32)
    x[17] = value
    with pytest.raises(InvalidConversionError) as info:
        convert[(2,)](x, np.zeros(32, dtype), BLOCK=16, debug=True)
    assert info.value.program_ids == [(1, 0, 0)] and "program (1, 0, 0), lane 1" in str(info.value)
    assert isinstance(info.value, ValueError)
    assert_points_at(info.value, convert, "x.to(out_ptr.dtype.element_ty)")
    out = np.zeros(32, dtype)
    convert[(2,)](x, out, BLOCK=16)  # debug off: saturate, NaN -> 0
    assert int(out[17]) == gpu


@pytest.mark.parametrize("source, value, dtype, text", [
    (np.float16, 300.0, np.int8, "300.0 (fp16) has no int8 value (valid: -128..127)"),
    (np.float64, 3e9, np.int32, "3000000000.0 (fp64) has no int32 value (valid: -2147483648..2147483647)"),
    (np.float64, -np.inf, np.uint16, "-inf (fp64) has no uint16 value (valid: 0..65535)")])
def test_invalid_conversion_from_each_float_width(source, value, dtype, text):
    x = np.zeros(32, source)
    x[3] = value
    with pytest.raises(InvalidConversionError) as info:
        convert[(2,)](x, np.zeros(32, dtype), BLOCK=16, debug=True)
    assert info.value.program_ids == [(0, 0, 0)] and f"program (0, 0, 0), lane 3: {text}" in str(info.value)


@triton.jit
def divide_rows(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    tl.store(out_ptr + offs, tl.load(a_ptr + offs) // tl.load(b_ptr + offs))


def test_unsigned_division_by_zero_names_the_dividend_and_the_2d_lane():
    a, b = np.full(16, 4_000_000_000, np.uint32), np.ones(16, np.uint32)
    b[6] = 0
    with pytest.raises(DivisionByZeroError) as info:
        divide_rows[(1,)](a, b, np.zeros(16, np.uint32), BLOCK=4, debug=True)
    assert "program (0, 0, 0), lane (1, 2): 4000000000 // 0" in str(info.value)


def test_valid_conversions_pass_in_debug_mode():
    x = np.array([-0.9, -0.5, 0.0, 0.99, 255.9, 1.5, 2.5, 254.0], np.float32)
    out = np.zeros(8, np.uint8)
    convert[(1,)](x, out, BLOCK=8, debug=True)
    assert out.tolist() == [0, 0, 0, 0, 255, 1, 2, 254]


@triton.jit
def asserting(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    tl.device_assert(x >= 0, "x must not be negative")


def test_device_assert_still_raises_in_debug_mode():
    x = np.zeros(32, np.float32)
    x[20] = -1
    with pytest.raises(DeviceAssertionError) as info:
        asserting[(2,)](x, BLOCK=16, debug=True)
    assert info.value.program_id == (1, 0, 0) and "x must not be negative" in str(info.value)


# switching debug mode on ------------------------------------------------------------------------------------------
@triton.jit(debug=True)
def divide_always_debug(a_ptr, b_ptr, out_ptr):
    tl.store(out_ptr, tl.load(a_ptr) // tl.load(b_ptr))


@triton.jit
def divide(a_ptr, b_ptr, out_ptr):
    tl.store(out_ptr, tl.load(a_ptr) // tl.load(b_ptr))


def test_how_debug_mode_is_switched_on(monkeypatch):
    a, b, out = np.ones(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    divide[(1,)](a, b, out)  # off by default
    compiled = len(divide.cache)  # (entries of other backends' runs of this test included)
    assert out[0] == -1
    with pytest.raises(DivisionByZeroError):
        divide[(1,)](a, b, out, debug=True)  # per launch
    with pytest.raises(DivisionByZeroError):
        divide_always_debug[(1,)](a, b, out)  # per kernel
    divide_always_debug[(1,)](a, b, out, debug=False)  # the launch's setting wins
    monkeypatch.setenv("TRITIUM_DEBUG", "1")
    with pytest.raises(DivisionByZeroError):
        divide[(1,)](a, b, out)  # the environment
    divide[(1,)](a, b, out, debug=False)
    assert len(divide.cache) == compiled  # one compilation serves both modes
    monkeypatch.delenv("TRITIUM_DEBUG")
    compiled = divide.warmup(a, b, out, grid=(1,))
    compiled[(1,)](a, b, out)
    with pytest.raises(DivisionByZeroError):
        compiled[(1,)](a, b, out, debug=True)  # a compiled kernel's launch takes it too


# clean kernels: silent, and the same bits -------------------------------------------------------------------------
def _load_with_triton_alias(path: Path, name: str):
    """Imports a script written against ``import triton``, with ``triton`` resolving to tritium."""
    compat.install()
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.meta_path.remove(compat._FINDER)
        for key in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
            del sys.modules[key]


_MODULES = {}


def _benchmark_kernels():
    if "kernels" not in _MODULES:
        _MODULES["kernels"] = _load_with_triton_alias(ROOT / "benchmarks" / "kernels.py", "_bench_kernels")
    return _MODULES["kernels"]


def _same_bits_with_and_without_debug(launch, outputs):
    results = []
    for debug in (False, True):
        for out in outputs:
            out.fill(0)
        launch(debug)
        results.append([o.tobytes() for o in outputs])
    assert results[0] == results[1]


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed programs are not here")
def test_seed_gelu_kernels_are_clean_in_debug_mode():
    ch12 = _load_with_triton_alias(SEEDS / "ch12_04_standalone_complete.py", "_seed_ch12_04")
    ch16 = _load_with_triton_alias(SEEDS / "ch16_04_standalone_complete.py", "_seed_ch16_04")
    x = torch.randn(3000)
    dy = torch.randn(3000)
    out = torch.empty(3000)
    n = x.numel()
    _same_bits_with_and_without_debug(
        lambda d: ch12.gelu_exact_kernel[(1,)](x, out, n, BLOCK=4096, debug=d), [out.numpy()])
    _same_bits_with_and_without_debug(
        lambda d: ch12.gelu_tanh_approx_kernel[(1,)](x, out, n, BLOCK=4096, debug=d), [out.numpy()])
    _same_bits_with_and_without_debug(
        lambda d: ch16.gelu_forward_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024, debug=d), [out.numpy()])
    _same_bits_with_and_without_debug(
        lambda d: ch16.gelu_backward_kernel_upcast[(triton.cdiv(n, 1024),)](dy, x, out, n, BLOCK=1024, debug=d),
        [out.numpy()])
    torch.testing.assert_close(out, torch.ops.aten.gelu_backward(dy, x), atol=1e-6, rtol=1e-5)


def test_benchmark_kernels_are_clean_in_debug_mode():
    k = _benchmark_kernels()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((96, 80)).astype(np.float32)
    b = rng.standard_normal((80, 72)).astype(np.float32)
    c = np.zeros((96, 72), np.float32)
    _same_bits_with_and_without_debug(
        lambda d: k.matmul_tiled[(3, 3)](a, b, c, 96, 72, 80, 80, 1, 72, 1, 72, 1, TILE_M=32, TILE_N=32,
                                         TILE_K=32, debug=d), [c])
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, atol=0.05, rtol=0.01)  # tf32 inputs
    x = rng.standard_normal((64, 100)).astype(np.float32)
    y = np.zeros_like(x)
    _same_bits_with_and_without_debug(lambda d: k.softmax_rows[(64,)](x, y, 100, 100, 100, BLOCK=128, debug=d), [y])
    w, bias = rng.standard_normal(100).astype(np.float32), rng.standard_normal(100).astype(np.float32)
    _same_bits_with_and_without_debug(
        lambda d: k.layernorm_rows[(64,)](x, w, bias, y, 100, 100, 1e-5, BLOCK=128, debug=d), [y])
    q, kk, v = (rng.standard_normal((2, 128, 32)).astype(np.float32) for _ in range(3))
    o = np.zeros_like(q)
    _same_bits_with_and_without_debug(
        lambda d: k.causal_attention_fwd[(2, 2)](q, kk, v, o, 128, 32 ** -0.5, HEAD_DIM=32, BLOCK_M=64, BLOCK_N=64,
                                                 debug=d), [o])
    xs = rng.standard_normal(5000).astype(np.float32)
    ys = np.zeros_like(xs)
    _same_bits_with_and_without_debug(lambda d: k.vector_add[(5,)](xs, xs, ys, 5000, BLOCK=1024, debug=d), [ys])
    _same_bits_with_and_without_debug(lambda d: k.gelu_bwd[(5,)](xs, xs, ys, 5000, BLOCK=1024, debug=d), [ys])


@triton.jit
def bytes_of_words(words_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * 3 + tl.arange(0, BLOCK)  # programs 0 and 1 share byte 3: word 0
    tl.store(words_ptr.to(tl.pointer_type(tl.int8)) + offs, 1)


def test_stores_of_bytes_into_one_word_race_on_the_word():
    """A store through a pointer cast to a narrower type counts as a store to the whole element of
    the argument it falls in: programs 0 (bytes 0-3) and 1 (bytes 3-6) race on word 0."""
    words = np.zeros(4, np.int32)
    with pytest.raises(RaceError) as info:
        bytes_of_words[(2,)](words, BLOCK=4, debug=True)
    assert info.value.program_ids == [(0, 0, 0), (1, 0, 0)]
    assert (info.value.tensor, info.value.offset) == ("words_ptr", 0)
