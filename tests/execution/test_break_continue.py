"""``break``, ``continue`` and ``return`` inside run-time loops, with programs that leave their loops
at different iterations, checked against the same loops run in Python."""
import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError


def _data(rows, cols, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=g)


# for + break ------------------------------------------------------------------------------------------
@triton.jit
def first_negative(x_ptr, out_ptr, n):
    pid = tl.program_id(0)
    found = -1
    for i in range(n):
        if tl.load(x_ptr + pid * n + i) < 0:
            found = i
            break
    tl.store(out_ptr + pid, found)


def test_for_break_each_program_stops_at_its_own_iteration():
    x = _data(16, 24).abs()
    stops = [0, 3, 7, 23, 11, 5, 1, 2, 19, 4, 8, 9, 13, 6, 15]
    for p, s in enumerate(stops):
        x[p, s] = -1.0  # program 15 never breaks
    out = torch.zeros(16, dtype=torch.int32)
    first_negative[(16,)](x, out, 24)
    expected = []
    for p in range(16):
        found = -1
        for i in range(24):
            if x[p, i] < 0:
                found = i
                break
        expected.append(found)
    assert out.tolist() == expected


@triton.jit
def sum_until_limit(x_ptr, out_ptr, count_ptr, n, limit, BLOCK: tl.constexpr):
    """Adds rows of a block until the running sum passes ``limit``; counts the rows added."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    rows = 0
    for r in range(n):
        total += tl.load(x_ptr + (pid * n + r) * BLOCK + offs)
        rows += 1
        if tl.sum(total) > limit:
            break
    tl.store(out_ptr + pid * BLOCK + offs, total)
    tl.store(count_ptr + pid, rows)


def test_for_break_with_block_values_carried():
    programs, n, block = 6, 10, 8
    x = _data(programs * n, block, seed=1).abs()
    out = torch.zeros(programs, block)
    count = torch.zeros(programs, dtype=torch.int32)
    sum_until_limit[(programs,)](x, out, count, n, 12.0, BLOCK=block)
    rows = x.view(programs, n, block)
    for p in range(programs):
        total = torch.zeros(block)
        added = 0
        for r in range(n):
            total += rows[p, r]
            added += 1
            if total.sum() > 12.0:
                break
        assert count[p].item() == added
        torch.testing.assert_close(out[p], total, rtol=1e-6, atol=1e-6)
    assert len(set(count.tolist())) > 1  # the programs really diverged


@triton.jit
def countdown_break(out_ptr, start, stop, step):
    pid = tl.program_id(0)
    last = 0
    for i in range(start, stop, step):
        if i % (pid + 2) == 0:
            break
        last = i
    tl.store(out_ptr + pid, last)


@pytest.mark.parametrize("start,stop,step", [(20, 0, -3), (1, 30, 4), (5, 5, 1)])
def test_for_break_with_run_time_step(start, stop, step):
    out = torch.full((5,), -7, dtype=torch.int32)
    countdown_break[(5,)](out, start, stop, step)
    expected = []
    for p in range(5):
        last = 0
        for i in range(start, stop, step):
            if i % (p + 2) == 0:
                break
            last = i
        expected.append(last)
    assert out.tolist() == expected


def test_for_break_does_not_serialize_programs():
    # the loop ends on loaded data, but its counter bounds it: no spin wait, programs run batched
    first_negative.cache.clear()  # only this backend's kernel
    first_negative[(2,)](torch.ones(2, 4), torch.zeros(2, dtype=torch.int32), 4)
    (kernel,) = first_negative.cache.values()
    assert "while" in str(kernel.ir) and not kernel.executable.program_order


# continue -----------------------------------------------------------------------------------------------
@triton.jit
def sum_of_positives(x_ptr, out_ptr, skipped_ptr, n):
    pid = tl.program_id(0)
    total = 0.0
    skipped = 0
    for i in range(n):
        v = tl.load(x_ptr + pid * n + i)
        if v < 0:
            skipped += 1
            continue
        total += v
    tl.store(out_ptr + pid, total)
    tl.store(skipped_ptr + pid, skipped)


def test_for_continue_skips_the_rest_of_the_iteration():
    x = _data(8, 17, seed=2)
    out = torch.zeros(8)
    skipped = torch.zeros(8, dtype=torch.int32)
    sum_of_positives[(8,)](x, out, skipped, 17)
    for p in range(8):
        total, count = np.float32(0), 0
        for i in range(17):
            v = np.float32(x[p, i].item())
            if v < 0:
                count += 1
                continue
            total = np.float32(total + v)
        assert skipped[p].item() == count
        assert out[p].item() == total


# while + break / continue ---------------------------------------------------------------------------------
@triton.jit
def collatz_steps(x_ptr, out_ptr, cap):
    """Steps for x to reach 1 (the Collatz map), stopping at ``cap``; even values below 10 are not counted."""
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    steps = 0
    visits = 0
    while True:
        visits += 1
        if x == 1:
            break
        if visits > cap:
            break
        if x % 2 == 0:
            x = x // 2
            if x < 10:
                continue
        else:
            x = 3 * x + 1
        steps += 1
    tl.store(out_ptr + pid, steps)


def test_while_true_with_break_and_continue():
    starts = torch.tensor([1, 2, 3, 6, 7, 9, 27, 97, 12, 5], dtype=torch.int32)
    out = torch.zeros(10, dtype=torch.int32)
    collatz_steps[(10,)](starts, out, 60)
    expected = []
    for x in starts.tolist():
        steps = visits = 0
        while True:
            visits += 1
            if x == 1:
                break
            if visits > 60:
                break
            if x % 2 == 0:
                x //= 2
                if x < 10:
                    continue
            else:
                x = 3 * x + 1
            steps += 1
        expected.append(steps)
    assert out.tolist() == expected


@triton.jit
def while_condition_not_evaluated_after_break(x_ptr, out_ptr, n):
    # after the break, `tl.load(x_ptr + i)` would read past the end: it must not be evaluated again
    pid = tl.program_id(0)
    i = 0
    while tl.load(x_ptr + i) >= 0:
        i += 1
        if i == n:
            break
    tl.store(out_ptr + pid, i)


def test_while_condition_is_not_evaluated_after_break():
    x = torch.ones(5)
    out = torch.zeros(2, dtype=torch.int32)
    while_condition_not_evaluated_after_break[(2,)](x, out, 5)
    assert out.tolist() == [5, 5]


# nested loops ----------------------------------------------------------------------------------------------
@triton.jit
def nested(x_ptr, out_ptr, rows, cols):
    pid = tl.program_id(0)
    total = 0.0
    for r in range(rows):
        if r == pid:
            continue  # skip the program's own row
        for c in range(cols):
            v = tl.load(x_ptr + r * cols + c)
            if v > 1.0:
                break  # ends this row only
            total += v
        if total > 3.0 + pid:
            break
    tl.store(out_ptr + pid, total)


def test_nested_loops_break_and_continue_belong_to_their_own_loop():
    rows, cols = 7, 9
    x = _data(rows, cols, seed=3)
    out = torch.zeros(6)
    nested[(6,)](x, out, rows, cols)
    for p in range(6):
        total = np.float32(0)
        for r in range(rows):
            if r == p:
                continue
            for c in range(cols):
                v = np.float32(x[r, c].item())
                if v > 1.0:
                    break
                total = np.float32(total + v)
            if total > 3.0 + p:
                break
        assert out[p].item() == total


# return inside loops -----------------------------------------------------------------------------------------
@triton.jit
def store_until_negative(x_ptr, out_ptr, n):
    pid = tl.program_id(0)
    for i in range(n):
        v = tl.load(x_ptr + pid * n + i)
        if v < 0:
            return
        tl.store(out_ptr + pid * n + i, v)
    tl.store(out_ptr + pid * n, -100.0)  # only programs that never returned get here


def test_return_inside_a_loop_ends_the_program():
    x = _data(6, 8, seed=4)
    x[5] = x[5].abs()
    out = torch.zeros(6, 8)
    store_until_negative[(6,)](x, out, 8)
    expected = torch.zeros(6, 8)
    for p in range(6):
        for i in range(8):
            if x[p, i] < 0:
                break
            expected[p, i] = x[p, i]
        else:
            expected[p, 0] = -100.0
    assert torch.equal(out, expected)


@triton.jit
def index_of(x_ptr, n, target):
    for i in range(n):
        if tl.load(x_ptr + i) == target:
            return i
    return -1


@triton.jit
def search_kernel(x_ptr, targets_ptr, out_ptr, n):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, index_of(x_ptr, n, tl.load(targets_ptr + pid)))


def test_return_inside_a_loop_of_a_helper():
    x = torch.tensor([5, 3, 9, 3, 1, 8], dtype=torch.int32)
    targets = torch.tensor([9, 3, 7, 8, 5], dtype=torch.int32)
    out = torch.zeros(5, dtype=torch.int32)
    search_kernel[(5,)](x, targets, out, 6)
    assert out.tolist() == [x.tolist().index(t) if t in x.tolist() else -1 for t in targets.tolist()]


@triton.jit
def while_return(x_ptr, out_ptr, n):
    pid = tl.program_id(0)
    i = 0
    while i < n:
        if tl.load(x_ptr + pid * n + i) > 1.5:
            tl.store(out_ptr + pid, i)
            return
        i += 1
    tl.store(out_ptr + pid, -1)


def test_return_inside_a_while_loop():
    x = _data(8, 12, seed=5)
    out = torch.zeros(8, dtype=torch.int32)
    while_return[(8,)](x, out, 12)
    expected = [next((i for i in range(12) if x[p, i] > 1.5), -1) for p in range(8)]
    assert out.tolist() == expected


# unrolled loops --------------------------------------------------------------------------------------------
@triton.jit
def static_loop_break(x_ptr, out_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    total = 0.0
    for i in tl.static_range(N):
        v = tl.load(x_ptr + pid * N + i)
        if v < 0:
            break
        total += v
    tl.store(out_ptr + pid, total)


def test_break_in_static_range_with_run_time_condition():
    x = _data(5, 6, seed=6)
    out = torch.zeros(5)
    static_loop_break[(5,)](x, out, N=6)
    for p in range(5):
        total = np.float32(0)
        for i in range(6):
            if x[p, i] < 0:
                break
            total = np.float32(total + np.float32(x[p, i].item()))
        assert out[p].item() == total


@triton.jit
def static_loop_constexpr_break(out_ptr, N: tl.constexpr, STOP: tl.constexpr):
    total = 0
    for i in tl.static_range(N):
        if i == STOP:
            break
        if i % 2 == 1:
            continue
        total += i
    tl.store(out_ptr, total)


def test_break_and_continue_on_constexprs_cost_nothing():
    out = torch.zeros(1, dtype=torch.int32)
    static_loop_constexpr_break[(1,)](out, N=10, STOP=7)
    assert out.item() == 0 + 2 + 4 + 6
    ir = static_loop_constexpr_break.ir("*i32", N=10, STOP=7)
    assert " if " not in ir and "while" not in ir


# tuples carried through loops and joined by ifs ------------------------------------------------------------
@triton.jit
def fibonacci_pair(out_ptr, n):
    pid = tl.program_id(0)
    pair = (0, 1)
    for i in range(n + pid):
        pair = (pair[1], pair[0] + pair[1])
    a, b = pair
    tl.store(out_ptr + 2 * pid, a)
    tl.store(out_ptr + 2 * pid + 1, b)


def test_tuples_carried_through_a_loop():
    out = torch.zeros(10, dtype=torch.int32)
    fibonacci_pair[(5,)](out, 3)
    expected = []
    for p in range(5):
        a, b = 0, 1
        for _ in range(3 + p):
            a, b = b, a + b
        expected += [a, b]
    assert out.tolist() == expected


@triton.jit
def tuple_through_if_and_while(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    stats = (tl.zeros((BLOCK,), dtype=tl.float32), 0)
    i = 0
    while i < n:
        v = tl.load(x_ptr + (pid * n + i) * BLOCK + offs)
        if tl.max(v) > 0:
            stats = (stats[0] + v, stats[1] + 1)
        else:
            stats = (stats[0] - v, stats[1])
        i += 1
    tl.store(out_ptr + pid * BLOCK + offs, stats[0])
    tl.store(out_ptr + pid * BLOCK, stats[1].to(tl.float32), mask=stats[1] > 100)


def test_tuples_joined_in_if_and_carried_through_while():
    programs, n, block = 3, 5, 4
    x = _data(programs * n, block, seed=7)
    out = torch.zeros(programs * block)
    tuple_through_if_and_while[(programs,)](x, out, n, BLOCK=block)
    rows = x.view(programs, n, block)
    for p in range(programs):
        acc = torch.zeros(block)
        for i in range(n):
            v = rows[p, i]
            acc = acc + v if v.max() > 0 else acc - v
        torch.testing.assert_close(out[p * block:(p + 1) * block], acc, rtol=0, atol=1e-6)


@triton.jit
def tuple_changes_kind(out_ptr, n):
    t = (0, 1)
    for i in range(n):
        t = (1, 2, 3)
    tl.store(out_ptr, t[0])


def test_a_carried_tuple_must_keep_its_length():
    with pytest.raises(CompilationError, match="tuple of 2 elements.*tuple of 3 elements"):
        tuple_changes_kind[(1,)](torch.zeros(1, dtype=torch.int32), 3)
