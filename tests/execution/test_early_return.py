"""``return`` inside run-time ``if``s: programs that return skip the rest; the others go on."""
import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def skip_programs_past_the_end(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)


def test_programs_past_the_end_return_before_touching_memory():
    # 8 programs over 64 elements of a 64-element tensor: programs 4..7 would be out of bounds
    x = torch.arange(64.0)
    out = torch.zeros(64)
    skip_programs_past_the_end[(8,)](x, out, 64, BLOCK=16)
    assert torch.equal(out, x + 1)


@triton.jit
def absolute(v):
    if v > 0:
        return v
    return -v


@triton.jit
def absolute_kernel(x_ptr, out_ptr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, absolute(tl.load(x_ptr + pid)))


def test_helper_returning_from_both_paths():
    x = torch.tensor([-1.5, 2.0, -3.0, 0.0, 7.25])
    out = torch.empty(5)
    absolute_kernel[(5,)](x, out)
    assert torch.equal(out, x.abs())


@triton.jit
def nested_returns(out_ptr):
    pid = tl.program_id(0)
    if pid % 2 == 0:
        if pid % 4 == 0:
            tl.store(out_ptr + pid, 4)
            return
        tl.store(out_ptr + pid, 2)
        return
    tl.store(out_ptr + pid, 1)


def test_nested_returns_each_program_stores_once():
    out = torch.zeros(12, dtype=torch.int32)
    nested_returns[(12,)](out)
    expected = torch.tensor([4 if p % 4 == 0 else 2 if p % 2 == 0 else 1 for p in range(12)], dtype=torch.int32)
    assert torch.equal(out, expected)


@triton.jit
def constexpr_return(out_ptr, EARLY: tl.constexpr):
    if EARLY:
        tl.store(out_ptr, 1.0)
        return
    tl.store(out_ptr, 2.0)


def test_return_under_a_constexpr_condition_is_resolved_at_compile_time():
    out = torch.zeros(1)
    constexpr_return[(1,)](out, EARLY=True)
    assert out.item() == 1.0
    constexpr_return[(1,)](out, EARLY=False)
    assert out.item() == 2.0
    assert " if " not in constexpr_return.ir("*fp32", EARLY=True)


@triton.jit
def rows_after_an_early_return(x_ptr, out_ptr, n_rows, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x_ptr = x_ptr + pid * BLOCK  # a scalar pointer here...
    factor = 1
    if pid >= n_rows:
        return
    offs = tl.arange(0, BLOCK)
    x_ptr = x_ptr + offs  # ...and a block of pointers after the return: the returned programs never read it
    factor = SCALE * 1.5  # an int before, a float constexpr after
    total = tl.sum(tl.load(x_ptr), axis=0)  # defined only after the return
    out_ptr = out_ptr + pid
    tl.store(out_ptr, total * factor)


def test_variables_change_kind_after_an_early_return():
    # as in Triton, where the code after `if ...: return` simply follows it
    x = torch.arange(48.0).reshape(3, 16)
    out = torch.full((5,), -1.0)
    rows_after_an_early_return[(5,)](x, out, 3, SCALE=2, BLOCK=16)
    assert torch.equal(out[:3], x.sum(1) * 3.0)
    assert torch.equal(out[3:], torch.full((2,), -1.0))


@triton.jit
def nested_return_then_use(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid % 2 == 0:
        if pid % 4 == 0:
            return
        v = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK))  # a block, defined under the guard only
    else:
        v = tl.zeros((BLOCK,), tl.float32) + 1.0
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), v * 2)


def test_a_variable_defined_after_a_nested_return_is_visible_after_the_if():
    x = torch.arange(64.0)
    out = torch.zeros(64)
    nested_return_then_use[(8,)](x, out, BLOCK=8)
    expected = torch.zeros(8, 8)
    for p in range(8):
        if p % 4 == 0:
            continue
        expected[p] = x[p * 8:(p + 1) * 8] * 2 if p % 2 == 0 else 2.0
    assert torch.equal(out.reshape(8, 8), expected)


@triton.jit
def loop_changes_kind_after_return_error(out_ptr, n):
    acc = 0
    if n > 3:
        return
    for i in range(n):
        acc = acc + 1
    acc = acc + tl.arange(0, 4)  # fine: after the return, acc may become a block
    tl.store(out_ptr + tl.arange(0, 4), acc)


def test_loop_after_early_return_then_kind_change():
    out = torch.zeros(4, dtype=torch.int32)
    loop_changes_kind_after_return_error[(1,)](out, 2)
    assert out.tolist() == [2, 3, 4, 5]
    out.zero_()
    loop_changes_kind_after_return_error[(1,)](out, 5)
    assert out.tolist() == [0, 0, 0, 0]
