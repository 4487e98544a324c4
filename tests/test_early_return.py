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
