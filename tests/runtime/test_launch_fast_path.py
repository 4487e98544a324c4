"""The launch fast path (plain arguments skip signature binding) must pick the same compiled kernel
as the full path: a change of dtype, constexpr value, integer specialization (1, divisible by 16)
or alignment compiles anew, and clearing the kernel cache forgets the shortcuts."""
import pytest
import torch

import tritium
import tritium.language as tl


@tritium.jit
def scale(x, out, n, S: tl.constexpr):
    o = tl.arange(0, 16)
    m = o < n
    tl.store(out + o, tl.load(x + o, mask=m) * S, mask=m)


def test_each_specialization_gets_its_own_kernel():
    scale.cache.clear()
    for dtype in (torch.float32, torch.float16, torch.int32):
        x = torch.arange(17).to(dtype)
        for view in (x[:16], x[1:]):  # 16-byte aligned, then not
            out = torch.zeros(16, dtype=dtype)
            for factor in (2, 3):
                for n in (16, 1, 5):
                    out.zero_()
                    scale[(1,)](view, out, n, factor)
                    expected = torch.zeros(16, dtype=dtype)
                    expected[:n] = view[:n] * factor
                    assert torch.equal(out, expected), (dtype, factor, n)
    assert len(scale.cache) >= 3 * 2 * 3  # the alignment of x counts only where it is used


def test_clearing_the_cache_forgets_the_shortcuts():
    x, out = torch.ones(16), torch.zeros(16)
    scale[(1,)](x, out, 16, 2)
    scale.cache.clear()
    assert not scale._fast
    scale[(1,)](x, out, 16, 4)
    assert torch.equal(out, torch.full((16,), 4.0)) and len(scale.cache) == 1


@tritium.jit
def fill(out, value, n, BLOCK: tl.constexpr = 16):
    o = tl.arange(0, BLOCK)
    tl.store(out + o, tl.full((BLOCK,), value, tl.float32), mask=o < n)


def test_defaulted_parameters_take_the_shortcut():
    out = torch.zeros(16)
    fill.cache.clear()
    fill[(1,)](out, 2.0, 16)
    fill[(1,)](out, 3.0, 16)
    assert torch.equal(out, torch.full((16,), 3.0)) and len(fill._fast) == 1 and len(fill.cache) == 1
    fill[lambda meta: (1,)](out, 5.0, n=16, BLOCK=16)  # a grid function and keywords
    assert torch.equal(out, torch.full((16,), 5.0)) and len(fill.cache) == 1


@tritium.jit
def store_scalar(out, n):
    tl.store(out, n)


def test_an_integer_too_wide_for_64_bits_is_refused_after_a_wide_one_ran():
    out = torch.zeros(1, dtype=torch.int64)
    store_scalar[(1,)](out, 2**63 + 16)  # an unsigned 64-bit entry in the shortcuts
    assert out.item() == 2**63 + 16 - 2**64
    for value in (2**64 + 16, 2**70, -(2**63) - 16):
        with pytest.raises(tritium.LaunchError, match="does not fit in 64 bits"):
            store_scalar[(1,)](out, value)
    assert out.item() == 2**63 + 16 - 2**64


def test_compile_options_take_the_shortcut_and_keep_their_kernels_apart():
    out = torch.zeros(16)
    fill.cache.clear()
    fill[(1,)](out, 2.0, 16, num_warps=8)
    fill[(1,)](out, 3.0, 16, num_warps=8)
    assert torch.equal(out, torch.full((16,), 3.0)) and len(fill._fast) == 1 and len(fill.cache) == 1
    fill[(1,)](out, 4.0, 16, num_warps=2)  # another option value: its own kernel and shortcut
    assert torch.equal(out, torch.full((16,), 4.0)) and len(fill._fast) == 2 and len(fill.cache) == 2
    seen = []
    fill[lambda meta: seen.append(meta["num_warps"]) or (1,)](out, 5.0, 16, num_warps=8)  # a grid function sees them
    assert seen == [8] and torch.equal(out, torch.full((16,), 5.0)) and len(fill.cache) == 2
    fill[(1,)](out, 6.0, 16, num_warps=8, warmup=True)  # warmup compiles and launches nothing
    assert torch.equal(out, torch.full((16,), 5.0))
    with pytest.raises(tritium.LaunchError, match="unexpected keyword"):
        fill[(1,)](out, 7.0, 16, num_warp=8)  # a misspelt option is still refused


@tritium.jit
def named_like_builtins(type, int, sorted, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(sorted + o, tl.load(type + o, mask=o < n) * int, mask=o < n)


def test_parameters_named_like_builtins_take_the_shortcut():
    # the generated binder calls builtins under names of its own, so these parameters shadow nothing
    x, out = torch.arange(16.0), torch.zeros(16)
    named_like_builtins.cache.clear()
    for factor in (2, 3):
        named_like_builtins[(1,)](x, factor, out, 16, BLOCK=16)
        assert torch.equal(out, x * factor)
    assert len(named_like_builtins._fast) == 1 and len(named_like_builtins.cache) == 1
