"""Control flow inside kernels: run-time `if`/`for`/`while` (also where programs diverge),
constexpr `if`, static loops, @jit helpers, conditional expressions, multi-dimensional grids
and 2-D blocks.

Every test compares with an independent oracle computed in numpy/torch (or plain Python),
exactly for integer results and within the stated tolerance for floats.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl

RTOL_FP32 = 1e-6  # float results of a handful of fp32 operations


@pytest.fixture(params=["wide", "one"], ids=["batched", "one-program-at-a-time"])
def batching(request, monkeypatch):
    """Runs a test twice: all programs in one numpy batch, and one program per batch.

    Divergent control flow is predicated in the first case and uniform in the second; both
    must give the oracle's answer.
    """
    if request.param == "one":
        monkeypatch.setenv("TRITIUM_BATCH_ELEMENTS", "1")
    return request.param


def _assert_close(actual: torch.Tensor, expected, rtol=RTOL_FP32, atol=1e-6):
    expected = torch.as_tensor(np.asarray(expected), dtype=actual.dtype)
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)


# ------------------------------------------------------------------------------------------------
# run-time `if` on scalars, programs diverging
# ------------------------------------------------------------------------------------------------
@triton.jit
def _even_odd_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if pid % 2 == 0:
        y = x * 2.0
        z = y + 1.0
    else:
        y = x - 3.0
        z = y * y
    tl.store(out_ptr + offs, z, mask=mask)


def test_if_programs_diverge_values_defined_in_both_branches(batching):
    n, block = 100, 16  # 7 programs, the last one partial
    x = torch.randn(n)
    out = torch.full((n,), float("nan"))
    _even_odd_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
    xs = x.numpy().astype(np.float32)
    pid = np.arange(n) // block
    expected = np.where(pid % 2 == 0, xs * np.float32(2) + np.float32(1), (xs - np.float32(3)) ** 2)
    _assert_close(out, expected)


@triton.jit
def _if_without_else_kernel(out_ptr):
    pid = tl.program_id(0)
    v = pid * 10
    if pid >= 3:
        v = v + 1000
    tl.store(out_ptr + pid, v)


def test_if_without_else_keeps_old_value_in_other_programs():
    out = torch.zeros(8, dtype=torch.int32)
    _if_without_else_kernel[(8,)](out)
    expected = [p * 10 + (1000 if p >= 3 else 0) for p in range(8)]
    assert out.tolist() == expected


@triton.jit
def _nested_if_kernel(out_ptr, threshold):
    pid = tl.program_id(0)
    if pid < threshold:
        if pid % 2 == 0:
            r = pid + 100
        else:
            if pid % 3 == 0:
                r = pid + 200
            else:
                r = pid + 300
    else:
        if pid == threshold:
            r = -1
        else:
            r = pid * pid
    tl.store(out_ptr + pid, r)


def _nested_oracle(pid, threshold):
    if pid < threshold:
        if pid % 2 == 0:
            return pid + 100
        return pid + 200 if pid % 3 == 0 else pid + 300
    return -1 if pid == threshold else pid * pid


@pytest.mark.parametrize("threshold", [0, 5, 11, 20])
def test_nested_ifs(threshold, batching):
    n = 16
    out = torch.zeros(n, dtype=torch.int32)
    _nested_if_kernel[(n,)](out, threshold)
    assert out.tolist() == [_nested_oracle(p, threshold) for p in range(n)]


@triton.jit
def _if_elif_chain_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    sel = pid % 4
    if sel == 0:
        y = x + 1.0
    elif sel == 1:
        y = tl.maximum(x, 0.0)
    elif sel == 2:
        y = -x
    else:
        y = x * x
    tl.store(out_ptr + offs, y)


def test_if_elif_chain_with_blocks():
    block, programs = 8, 9
    x = torch.randn(block * programs)
    out = torch.empty_like(x)
    _if_elif_chain_kernel[(programs,)](x, out, BLOCK=block)
    xs = x.numpy().reshape(programs, block)
    rows = []
    for p in range(programs):
        r = xs[p]
        rows.append([r + 1, np.maximum(r, 0), -r, r * r][p % 4])
    _assert_close(out, np.concatenate(rows))


@triton.jit
def _if_on_loaded_scalar_kernel(flag_ptr, x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    flag = tl.load(flag_ptr + pid)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if flag > 0:
        x = x * 10.0
    tl.store(out_ptr + offs, x)


def test_if_on_scalar_loaded_from_memory():
    block, programs = 4, 6
    flags = torch.tensor([1, 0, 0, 5, -2, 1], dtype=torch.int32)
    x = torch.arange(block * programs, dtype=torch.float32)
    out = torch.empty_like(x)
    _if_on_loaded_scalar_kernel[(programs,)](flags, x, out, BLOCK=block)
    scale = np.repeat(np.where(flags.numpy() > 0, 10.0, 1.0), block)
    _assert_close(out, x.numpy() * scale)


@triton.jit
def _guarded_store_kernel(out_ptr, n_programs_writing):
    pid = tl.program_id(0)
    if pid < n_programs_writing:
        tl.store(out_ptr + pid, pid + 1)


def test_side_effects_in_untaken_branch_do_not_happen():
    out = torch.full((10,), -7, dtype=torch.int32)
    _guarded_store_kernel[(10,)](out, 4)
    assert out.tolist() == [1, 2, 3, 4] + [-7] * 6


# ------------------------------------------------------------------------------------------------
# for loops
# ------------------------------------------------------------------------------------------------
@triton.jit
def _range_sum_kernel(out_ptr, start, end, STEP: tl.constexpr):
    acc = 0
    for i in range(start, end, STEP):
        acc += i
    tl.store(out_ptr, acc)


@pytest.mark.parametrize("start,end,step", [(0, 10, 1), (3, 50, 7), (10, 10, 1), (20, 3, 1), (-5, 40, 3),
                                            (40, -5, -3), (10, 0, -1)])
def test_range_start_end_step(start, end, step):
    out = torch.zeros(1, dtype=torch.int32)
    _range_sum_kernel[(1,)](out, start, end, STEP=step)
    assert out.item() == sum(range(start, end, step))


@triton.jit
def _runtime_step_kernel(out_ptr, start, end, step):
    acc = 0
    count = 0
    for i in range(start, end, step):
        acc += i * i
        count += 1
    tl.store(out_ptr, acc)
    tl.store(out_ptr + 1, count)


@pytest.mark.parametrize("start,end,step", [(0, 17, 4), (2, 100, 9), (0, 0, 3)])
def test_range_with_runtime_step(start, end, step):
    # step 1 would be specialized to a constant; these are genuine run-time steps
    out = torch.zeros(2, dtype=torch.int32)
    _runtime_step_kernel[(1,)](out, start, end, step)
    assert out.tolist() == [sum(i * i for i in range(start, end, step)), len(range(start, end, step))]


@triton.jit
def _block_accumulate_kernel(x_ptr, out_ptr, n_rows, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    acc = 0.0
    for r in range(n_rows):
        acc += tl.load(x_ptr + r * BLOCK + cols)
    tl.store(out_ptr + cols, acc)


@pytest.mark.parametrize("rows", [13, 2, 0])
def test_accumulator_starting_as_python_float_becomes_block(rows):
    block = 32
    x = torch.randn(max(rows, 1), block)
    out = torch.full((block,), float("nan"))
    _block_accumulate_kernel[(1,)](x, out, rows, BLOCK=block)  # rows=0: the initial 0.0, as a block
    expected = np.zeros(block, dtype=np.float32)
    for r in range(rows):  # the same sequential fp32 order as the kernel
        expected = expected + x.numpy()[r]
    _assert_close(out, expected, rtol=0, atol=0)


@triton.jit
def _int_acc_to_float_block_kernel(x_ptr, out_ptr, n_rows, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    acc = 0
    for r in range(n_rows):
        acc = acc + tl.load(x_ptr + r * BLOCK + cols) * 0.5
    tl.store(out_ptr + cols, acc)


def test_accumulator_starting_as_python_int_becomes_fp32_block():
    rows, block = 6, 16
    x = torch.randn(rows, block)
    out = torch.empty(block)
    _int_acc_to_float_block_kernel[(1,)](x, out, rows, BLOCK=block)
    expected = np.zeros(block, dtype=np.float32)
    for r in range(rows):
        expected = expected + x.numpy()[r] * np.float32(0.5)
    _assert_close(out, expected, rtol=0, atol=0)


@triton.jit
def _scalar_float_acc_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    total = 0.0
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        total += tl.sum(x * x, axis=0)
    tl.store(out_ptr, total)


def test_scalar_accumulator_over_masked_chunks():
    n, block = 1000, 128
    x = torch.randn(n, dtype=torch.float32)
    out = torch.empty(1)
    _scalar_float_acc_kernel[(1,)](x, out, n, BLOCK=block)
    expected = float((x.double() ** 2).sum())
    assert out.item() == pytest.approx(expected, rel=1e-5)


@triton.jit
def _divergent_trip_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    steps = 0
    for k in range(pid + 1):  # program p runs p + 1 iterations
        acc += tl.load(x_ptr + k * BLOCK + cols)
        steps += 1
    tl.store(out_ptr + pid * BLOCK + cols, acc)
    tl.store(out_ptr + pid * BLOCK, steps.to(tl.float32))


def test_loop_trip_count_depends_on_program_id(batching):
    programs, block = 7, 8
    x = torch.randn(programs, block)
    out = torch.empty(programs, block)
    _divergent_trip_kernel[(programs,)](x, out, BLOCK=block)
    expected = np.cumsum(x.numpy(), axis=0, dtype=np.float32)
    expected = expected.copy()
    expected[:, 0] = np.arange(1, programs + 1)
    _assert_close(out, expected, rtol=1e-6, atol=1e-6)


@triton.jit
def _divergent_bounds_kernel(lo_ptr, hi_ptr, out_ptr):
    pid = tl.program_id(0)
    lo = tl.load(lo_ptr + pid)
    hi = tl.load(hi_ptr + pid)
    acc = 0
    for i in tl.range(lo, hi, 2):
        acc += i
    tl.store(out_ptr + pid, acc)


def test_tl_range_divergent_runtime_bounds(batching):
    lo = torch.tensor([0, 5, 9, -4, 3, 8, 0, 1], dtype=torch.int32)
    hi = torch.tensor([10, 5, 2, 11, 30, 9, 1, 0], dtype=torch.int32)
    out = torch.zeros(8, dtype=torch.int32)
    _divergent_bounds_kernel[(8,)](lo, hi, out)
    assert out.tolist() == [sum(range(a, b, 2)) for a, b in zip(lo.tolist(), hi.tolist())]


@triton.jit
def _tl_range_options_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    offs = tl.arange(0, BLOCK)
    for i in tl.range(0, n, num_stages=3):
        acc = acc * 0.5 + tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + offs, acc)


def test_tl_range_accepts_pipelining_options():
    n, block = 5, 16
    x = torch.randn(n, block)
    out = torch.empty(block)
    _tl_range_options_kernel[(1,)](x, out, n, BLOCK=block)
    acc = np.zeros(block, dtype=np.float32)
    for i in range(n):
        acc = acc * np.float32(0.5) + x.numpy()[i]
    _assert_close(out, acc, rtol=0, atol=0)


@triton.jit
def _nested_loop_kernel(out_ptr, N: tl.constexpr, M):
    pid = tl.program_id(0)
    total = 0
    for i in range(N):
        for j in range(i, M):
            if (i + j + pid) % 3 == 0:
                total += i * j
            else:
                total -= 1
    tl.store(out_ptr + pid, total)


def test_nested_loops_with_if_inside(batching):
    n, m, programs = 5, 9, 4
    out = torch.zeros(programs, dtype=torch.int32)
    _nested_loop_kernel[(programs,)](out, N=n, M=m)
    expected = []
    for pid in range(programs):
        t = 0
        for i in range(n):
            for j in range(i, m):
                t += i * j if (i + j + pid) % 3 == 0 else -1
        expected.append(t)
    assert out.tolist() == expected


@triton.jit
def _persistent_kernel(x_ptr, out_ptr, n_tiles, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    # grid-stride loop: divergent start, run-time step from num_programs
    for t in range(pid, n_tiles, tl.num_programs(0)):
        offs = t * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0 + pid)


@pytest.mark.parametrize("programs", [1, 3, 4, 16])
def test_persistent_grid_stride_loop(programs, batching):
    n_tiles, block = 10, 8
    x = torch.randn(n_tiles, block)
    out = torch.full((n_tiles, block), float("nan"))
    _persistent_kernel[(programs,)](x, out, n_tiles, BLOCK=block)
    owner = (np.arange(n_tiles) % programs).astype(np.float32)[:, None]
    _assert_close(out, x.numpy() * np.float32(2) + owner, rtol=0, atol=0)


@triton.jit
def _boolean_conditions_kernel(out_ptr, n):
    pid = tl.program_id(0)
    i = 0
    s = 0
    while i < n and s < 20:
        s += pid + i
        i += 1
    r = 0
    if 0 <= pid < 3 or not (pid != 5):  # noqa: SIM202 - `not` of a comparison, on purpose
        r = 1
    tl.store(out_ptr + pid * 3, i)
    tl.store(out_ptr + pid * 3 + 1, s)
    tl.store(out_ptr + pid * 3 + 2, r)


def test_and_or_not_and_chained_comparisons_on_runtime_scalars(batching):
    programs, n = 8, 10
    out = torch.zeros(programs, 3, dtype=torch.int32)
    _boolean_conditions_kernel[(programs,)](out, n)
    expected = []
    for pid in range(programs):
        i = s = 0
        while i < n and s < 20:
            s += pid + i
            i += 1
        expected.append([i, s, int(0 <= pid < 3 or pid == 5)])
    assert out.tolist() == expected


@triton.jit
def _static_range_with_runtime_if_kernel(out_ptr):
    pid = tl.program_id(0)
    acc = 0
    for k in tl.static_range(3):
        if pid == k:
            acc += 10 ** k  # 10 ** k is computed at compile time
        else:
            acc -= 1
    tl.store(out_ptr + pid, acc)


def test_static_range_containing_runtime_if():
    out = torch.zeros(5, dtype=torch.int32)
    _static_range_with_runtime_if_kernel[(5,)](out)
    assert out.tolist() == [sum(10 ** k if p == k else -1 for k in range(3)) for p in range(5)]


@triton.jit
def _loop_index_is_int32_kernel(out_ptr, n):
    for i in range(n):
        tl.store(out_ptr + i, i * 3 - 1)


def test_store_inside_loop_every_iteration():
    out = torch.zeros(11, dtype=torch.int32)
    _loop_index_is_int32_kernel[(1,)](out, 11)
    assert out.tolist() == [i * 3 - 1 for i in range(11)]


# ------------------------------------------------------------------------------------------------
# tl.static_range: unrolled, loop variable is a constexpr
# ------------------------------------------------------------------------------------------------
@triton.jit
def _static_range_kernel(x_ptr, out_ptr, N_TERMS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    power = tl.full((BLOCK,), 1.0, tl.float32)
    for k in tl.static_range(N_TERMS):
        tl.static_assert(k < N_TERMS)  # k is a compile-time value
        coeff: tl.constexpr = k + 1
        acc += coeff * power
        power = power * x
    tl.store(out_ptr + offs, acc)


def test_static_range_polynomial():
    block, terms = 16, 5
    x = torch.linspace(-1, 1, block)
    out = torch.empty(block)
    _static_range_kernel[(1,)](x, out, N_TERMS=terms, BLOCK=block)
    xs = x.double().numpy()
    expected = sum((k + 1) * xs ** k for k in range(terms))
    _assert_close(out, expected, rtol=1e-6, atol=1e-6)


@triton.jit
def _static_range_arange_kernel(out_ptr, START: tl.constexpr, END: tl.constexpr, STEP: tl.constexpr):
    for k in tl.static_range(START, END, STEP):
        # tl.arange needs constexpr bounds: this only compiles if k is a constexpr
        vals = tl.arange(0, 2 ** k)
        tl.store(out_ptr + k, tl.sum(vals, axis=0))


def test_static_range_loop_variable_is_constexpr():
    out = torch.full((8,), -1, dtype=torch.int32)
    _static_range_arange_kernel[(1,)](out, START=1, END=7, STEP=2)
    expected = [-1] * 8
    for k in range(1, 7, 2):
        expected[k] = sum(range(2 ** k))
    assert out.tolist() == expected


@triton.jit
def _static_range_ir_kernel(x_ptr, N: tl.constexpr):
    for k in tl.static_range(N):
        tl.store(x_ptr + k, k)


def test_static_range_is_unrolled_in_ir():
    text = _static_range_ir_kernel.ir("*i32", N=3)
    assert text.count("store") == 3
    assert " for" not in text and "scf.for" not in text


def test_python_range_with_constexpr_bounds_is_a_runtime_loop_with_same_result():
    # range(N) with a constexpr N is still a loop; the result must match static_range's
    out = torch.zeros(1, dtype=torch.int32)
    _range_sum_kernel[(1,)](out, 0, 37, STEP=3)
    assert out.item() == sum(range(0, 37, 3))


# ------------------------------------------------------------------------------------------------
# while loops
# ------------------------------------------------------------------------------------------------
@triton.jit
def _collatz_kernel(start_ptr, out_ptr):
    pid = tl.program_id(0)
    x = tl.load(start_ptr + pid)
    steps = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    tl.store(out_ptr + pid, steps)


def _collatz(n):
    s = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        s += 1
    return s


def test_while_loop_divergent_trip_counts(batching):
    starts = torch.tensor([1, 2, 3, 6, 7, 27, 97, 16], dtype=torch.int32)
    out = torch.full((8,), -1, dtype=torch.int32)
    _collatz_kernel[(8,)](starts, out)
    assert out.tolist() == [_collatz(s) for s in starts.tolist()]


@triton.jit
def _while_block_kernel(x_ptr, out_ptr, iters_ptr, limit, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    i = 0
    while tl.max(x, axis=0) < limit:
        x = x * 2.0
        i += 1
    tl.store(out_ptr + offs, x)
    tl.store(iters_ptr + pid, i)


def test_while_loop_with_block_state_and_reduced_condition(batching):
    block, programs, limit = 8, 5, 100.0
    x = torch.rand(programs, block) * torch.tensor([[0.5], [3.0], [200.0], [1e-3], [10.0]]) + 1e-2
    out = torch.empty_like(x)
    iters = torch.zeros(programs, dtype=torch.int32)
    _while_block_kernel[(programs,)](x, out, iters, limit, BLOCK=block)
    expected_rows, expected_iters = [], []
    for row in x.numpy():
        r, k = row.copy(), 0
        while r.max() < limit:
            r = r * np.float32(2)
            k += 1
        expected_rows.append(r)
        expected_iters.append(k)
    _assert_close(out, np.stack(expected_rows), rtol=0, atol=0)
    assert iters.tolist() == expected_iters


@triton.jit
def _while_uniform_kernel(out_ptr, n):
    i = 0
    total = 0
    while i < n:
        total += i
        i += 1
    tl.store(out_ptr, total)
    tl.store(out_ptr + 1, i)


@pytest.mark.parametrize("n", [0, 1, 9, 40])
def test_while_loop_uniform_condition(n):
    out = torch.zeros(2, dtype=torch.int32)
    _while_uniform_kernel[(1,)](out, n)
    assert out.tolist() == [sum(range(n)), max(n, 0)]


@triton.jit
def _while_side_effect_kernel(out_ptr, limits_ptr):
    pid = tl.program_id(0)
    limit = tl.load(limits_ptr + pid)
    i = 0
    while i < limit:
        tl.store(out_ptr + pid * 8 + i, i + 1)
        i += 1


def test_while_stores_only_for_running_programs(batching):
    limits = torch.tensor([0, 3, 8, 1], dtype=torch.int32)
    out = torch.zeros(4, 8, dtype=torch.int32)
    _while_side_effect_kernel[(4,)](out, limits)
    expected = np.zeros((4, 8), dtype=np.int32)
    for p, lim in enumerate(limits.tolist()):
        expected[p, :lim] = np.arange(1, lim + 1)
    assert np.array_equal(out.numpy(), expected)


@triton.jit
def _nested_while_kernel(out_ptr, n, W: tl.constexpr):
    pid = tl.program_id(0)
    i = 0
    while i < n + pid:  # divergent outer trip count
        j = 0
        while j < i:  # inner trip count depends on the outer variable
            j += 1
            tl.store(out_ptr + (pid * W + i) * W + j, i * 10 + j)
        i += 1


def test_nested_while_loops(batching):
    n, w, programs = 4, 8, 3
    out = torch.zeros(programs, w, w, dtype=torch.int32)
    _nested_while_kernel[(programs,)](out, n, W=w)
    expected = np.zeros((programs, w, w), dtype=np.int32)
    for p in range(programs):
        for i in range(n + p):
            for j in range(1, i + 1):
                expected[p, i, j] = i * 10 + j
    assert np.array_equal(out.numpy(), expected)


# ------------------------------------------------------------------------------------------------
# constexpr `if`
# ------------------------------------------------------------------------------------------------
@triton.jit
def _activation_kernel(x_ptr, out_ptr, n, ACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if ACT == "relu":
        y = tl.maximum(x, 0.0)
    elif ACT == "leaky":
        y = tl.where(x > 0, x, 0.1 * x)
    elif ACT == "sigmoid":
        y = tl.sigmoid(x)
    else:
        tl.static_assert(ACT == "none", "unknown activation")
        y = x
    tl.store(out_ptr + offs, y, mask=mask)


@pytest.mark.parametrize("act", ["relu", "leaky", "sigmoid", "none"])
def test_constexpr_if_selects_code(act):
    n = 77
    x = torch.randn(n)
    out = torch.empty(n)
    _activation_kernel[(triton.cdiv(n, 32),)](x, out, n, ACT=act, BLOCK=32)
    ref = {"relu": torch.relu(x), "leaky": torch.nn.functional.leaky_relu(x, 0.1),
           "sigmoid": torch.sigmoid(x.double()).float(), "none": x}[act]
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-7)


def test_constexpr_if_only_compiles_the_taken_branch():
    # the static_assert in the else-branch must not fire when another branch is selected
    text = _activation_kernel.ir("*fp32,*fp32,i32", ACT="relu", BLOCK=32)
    assert "max" in text
    assert "exp" not in text
    with pytest.raises(triton.CompilationError, match="unknown activation"):
        _activation_kernel.ir("*fp32,*fp32,i32", ACT="gelu", BLOCK=32)


@triton.jit
def _optional_bias_kernel(x_ptr, b_ptr, out_ptr, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if HAS_BIAS:
        x += tl.load(b_ptr + offs)
    if not HAS_BIAS:
        x = x * 3.0
    tl.store(out_ptr + offs, x)


def test_constexpr_bool_flags():
    x, b = torch.randn(16), torch.randn(16)
    out = torch.empty(16)
    _optional_bias_kernel[(1,)](x, b, out, HAS_BIAS=True, BLOCK=16)
    torch.testing.assert_close(out, x + b, rtol=0, atol=0)
    _optional_bias_kernel[(1,)](x, b, out, HAS_BIAS=False, BLOCK=16)
    torch.testing.assert_close(out, x * 3, rtol=0, atol=0)


# ------------------------------------------------------------------------------------------------
# @jit helper functions
# ------------------------------------------------------------------------------------------------
@triton.jit
def _scale_shift(x, scale, shift: tl.constexpr = 1.0):
    return x * scale + shift


@triton.jit
def _min_max_pair(a, b):
    return tl.minimum(a, b), tl.maximum(a, b)


@triton.jit
def _power(x, N: tl.constexpr):
    r = x
    for _ in tl.static_range(N - 1):
        r = r * x
    return r


@triton.jit
def _clamped(x, lo=0.0, hi=1.0):
    return tl.minimum(tl.maximum(x, lo), hi)


@triton.jit
def _nested_helper(x, y):
    lo, hi = _min_max_pair(x, y)
    return _scale_shift(hi - lo, 2.0, shift=0.0)


@triton.jit
def _helpers_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    a = _scale_shift(x, 3.0)  # default constexpr shift
    b = _scale_shift(x, scale=0.5, shift=-2.0)  # keyword arguments
    lo, hi = _min_max_pair(x, y)  # a tuple result
    c = _power(x, 3)  # a constexpr parameter
    d = _power(y, N=2)
    e = _clamped(x)  # defaults
    f = _clamped(x, hi=0.25)
    g = _nested_helper(x, y)
    tl.store(out_ptr + 0 * BLOCK + offs, a)
    tl.store(out_ptr + 1 * BLOCK + offs, b)
    tl.store(out_ptr + 2 * BLOCK + offs, lo)
    tl.store(out_ptr + 3 * BLOCK + offs, hi)
    tl.store(out_ptr + 4 * BLOCK + offs, c)
    tl.store(out_ptr + 5 * BLOCK + offs, d)
    tl.store(out_ptr + 6 * BLOCK + offs, e)
    tl.store(out_ptr + 7 * BLOCK + offs, f)
    tl.store(out_ptr + 8 * BLOCK + offs, g)


def test_jit_helpers_values_tuples_constexpr_defaults_kwargs():
    block = 32
    x, y = torch.randn(block), torch.randn(block)
    out = torch.empty(9, block)
    _helpers_kernel[(1,)](x, y, out, BLOCK=block)
    xs, ys = x.numpy(), y.numpy()
    f32 = np.float32
    expected = np.stack([
        xs * f32(3) + f32(1), xs * f32(0.5) - f32(2), np.minimum(xs, ys), np.maximum(xs, ys),
        xs * xs * xs, ys * ys, np.clip(xs, 0, 1), np.clip(xs, 0, 0.25),
        (np.maximum(xs, ys) - np.minimum(xs, ys)) * f32(2),
    ])
    _assert_close(out, expected, rtol=0, atol=0)


@triton.jit
def _helper_with_control_flow(x, pid):
    if pid % 2 == 1:
        r = x + 100
    else:
        r = x - 100
    return r


@triton.jit
def _helper_if_kernel(out_ptr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, _helper_with_control_flow(pid * 2, pid))


def test_jit_helper_with_runtime_if_inlined_per_program():
    out = torch.zeros(6, dtype=torch.int32)
    _helper_if_kernel[(6,)](out)
    assert out.tolist() == [p * 2 + (100 if p % 2 else -100) for p in range(6)]


@triton.jit
def _helper_with_load(ptr, offs, mask):
    return tl.load(ptr + offs, mask=mask, other=0.0)


@triton.jit
def _helper_pointer_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = _helper_with_load(x_ptr, offs, mask)
    tl.store(out_ptr + offs, v + 1.0, mask=mask)


def test_jit_helper_taking_pointers_and_masks():
    n = 45
    x = torch.randn(n)
    out = torch.zeros(n)
    _helper_pointer_kernel[(triton.cdiv(n, 16),)](x, out, n, BLOCK=16)
    torch.testing.assert_close(out, x + 1, rtol=0, atol=0)


# ------------------------------------------------------------------------------------------------
# conditional expressions
# ------------------------------------------------------------------------------------------------
@triton.jit
def _ifexp_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    a = x * 2.0
    b = x - 1.0
    y = a if pid == 0 else b
    s = 7 if pid == 2 else pid * 10
    tl.store(out_ptr + offs, y + s)


def test_conditional_expression_on_runtime_scalar():
    block, programs = 8, 4
    x = torch.randn(programs * block)
    out = torch.empty_like(x)
    _ifexp_kernel[(programs,)](x, out, BLOCK=block)
    xs = x.numpy().reshape(programs, block)
    rows = []
    for p in range(programs):
        y = xs[p] * np.float32(2) if p == 0 else xs[p] - np.float32(1)
        s = 7 if p == 2 else p * 10
        rows.append(y + np.float32(s))
    _assert_close(out, np.concatenate(rows), rtol=0, atol=0)


@triton.jit
def _ifexp_constexpr_kernel(out_ptr, FLAG: tl.constexpr):
    v = tl.arange(0, 8) if FLAG else tl.arange(0, 8) * 2
    tl.store(out_ptr + tl.arange(0, 8), v)


def test_conditional_expression_on_constexpr():
    out = torch.zeros(8, dtype=torch.int32)
    _ifexp_constexpr_kernel[(1,)](out, FLAG=True)
    assert out.tolist() == list(range(8))
    _ifexp_constexpr_kernel[(1,)](out, FLAG=False)
    assert out.tolist() == [2 * i for i in range(8)]


# ------------------------------------------------------------------------------------------------
# multi-dimensional grids
# ------------------------------------------------------------------------------------------------
@triton.jit
def _grid3d_kernel(out_ptr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    nz = tl.num_programs(2)
    linear = (z * ny + y) * nx + x
    base = out_ptr + linear * 6
    tl.store(base + 0, x)
    tl.store(base + 1, y)
    tl.store(base + 2, z)
    tl.store(base + 3, nx)
    tl.store(base + 4, ny)
    tl.store(base + 5, nz)


@pytest.mark.parametrize("grid", [(3,), (4, 5), (3, 2, 4), (1, 1, 7)])
def test_program_id_and_num_programs_on_3d_grids(grid):
    gx, gy, gz = (tuple(grid) + (1, 1))[:3]
    out = torch.full((gx * gy * gz, 6), -1, dtype=torch.int32)
    _grid3d_kernel[grid](out)
    expected = np.array([[x, y, z, gx, gy, gz] for z in range(gz) for y in range(gy) for x in range(gx)])
    assert np.array_equal(out.numpy(), expected)


@triton.jit
def _grid_divergent_kernel(out_ptr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    if x > y:
        v = x - y
    else:
        v = (y - x) * 100
    tl.store(out_ptr + y * tl.num_programs(0) + x, v)


def test_2d_grid_with_divergent_branch(batching):
    gx, gy = 6, 5
    out = torch.zeros(gy, gx, dtype=torch.int32)
    _grid_divergent_kernel[(gx, gy)](out)
    expected = np.array([[x - y if x > y else (y - x) * 100 for x in range(gx)] for y in range(gy)])
    assert np.array_equal(out.numpy(), expected)


# ------------------------------------------------------------------------------------------------
# 2-D blocks
# ------------------------------------------------------------------------------------------------
@triton.jit
def _add_2d_kernel(x_ptr, y_ptr, out_ptr, M, N, stride_xm, stride_ym, stride_om,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :], mask=mask, other=0.0)
    y = tl.load(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :], x * 2.0 + y, mask=mask)


@pytest.mark.parametrize("m,n", [(32, 64), (37, 19), (5, 130)])
def test_2d_blocks_with_row_strides_and_masks(m, n):
    x = torch.randn(m, n)
    y_big = torch.randn(m, n + 7)
    y = y_big[:, :n]  # row stride n + 7
    out = torch.full((m, n), float("nan"))
    bm, bn = 16, 32
    _add_2d_kernel[(triton.cdiv(m, bm), triton.cdiv(n, bn))](
        x, y, out, m, n, x.stride(0), y.stride(0), out.stride(0), BLOCK_M=bm, BLOCK_N=bn)
    torch.testing.assert_close(out, x * 2 + y, rtol=0, atol=0)


@triton.jit
def _row_max_kernel(x_ptr, out_ptr, M, N, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    for start in range(0, N, BLOCK_N):
        c = start + cols
        mask = (rows[:, None] < M) & (c[None, :] < N)
        tile = tl.load(x_ptr + rows[:, None] * stride + c[None, :], mask=mask, other=float("-inf"))
        acc = tl.maximum(acc, tl.max(tile, axis=1))
    tl.store(out_ptr + rows, acc, mask=rows < M)


def test_2d_tiles_in_a_loop_row_max():
    m, n = 45, 100
    x = torch.randn(m, n)
    out = torch.empty(m)
    _row_max_kernel[(triton.cdiv(m, 8),)](x, out, m, n, x.stride(0), BLOCK_M=8, BLOCK_N=32)
    torch.testing.assert_close(out, x.max(dim=1).values, rtol=0, atol=0)
