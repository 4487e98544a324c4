"""What ``tl.multiple_of`` / ``tl.max_contiguous`` promise, and when a false promise is reported.

Triton's definition: along each dimension a block's values fall into contiguous groups (runs of
consecutive integers); ``multiple_of(x, v)`` says the first element of every group is a multiple of
``v`` (every element, where values are not contiguous). For pointers the multiple is of the byte
address, contiguity is in elements. A GPU compiler turns the promise into vector accesses that
read or write a run from its first address, so a false promise matters only at an access whose
address relies on it, for lanes that are active there (docs/language.md, "Hints"): a store with
such lanes is a ``HintViolationError`` in debug mode (else a warning), a load a warning, and the
kernel's values are always the ones its addresses mean. The oracle for each case is the arithmetic
on the offsets done here in numpy, and the run-wise address check written out in the test.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.backends.interpreter import hint_check
from tritium.errors import HintViolationError

# The interpreter's own behaviour: its kernels run on it whatever the default backend is.
pytestmark = pytest.mark.usefixtures("on_the_interpreter")


@pytest.fixture(autouse=True)
def _fresh_warnings():
    """Each test sees the once-per-access warnings afresh."""
    hint_check._WARNED.clear()
    yield
    hint_check._WARNED.clear()


def _hint_warnings(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [w for w in caught if "relies on" in str(w.message)]


@triton.jit
def _aligned_run_copy(x_ptr, out_ptr, off_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK) + tl.load(off_ptr)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs))  # LOAD


@pytest.mark.parametrize("start", [0, 32, 64])
def test_a_true_hint_runs_silently(start):
    x = torch.randn(128)
    out = torch.zeros(32)
    found = _hint_warnings(lambda: _aligned_run_copy[(1,)](x, out, torch.tensor([start], dtype=torch.int32),
                                                             BLOCK=32))
    assert found == []
    assert torch.equal(out, x[start:start + 32])


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("start", [1, 16, 31])
def test_a_false_hint_at_a_load_warns_once_at_the_load_and_the_values_follow_the_addresses(start, debug):
    x = torch.randn(128)
    out = torch.zeros(32)
    offset = torch.tensor([start], dtype=torch.int32)
    found = _hint_warnings(lambda: _aligned_run_copy[(1,)](x, out, offset, BLOCK=32, debug=debug))
    assert torch.equal(out, x[start:start + 32])
    if start % 4 == 0:
        # false, but the address's alignment is capped by x's 16 bytes: 16 elements in, the run
        # starts as aligned as the compiler could use
        assert found == []
        return
    assert len(found) == 1
    message = str(found[0].message)
    line = _line_of(_aligned_run_copy, "# LOAD")
    assert found[0].lineno == line and f"test_hint_semantics.py:{line}:" in message
    assert "tl.multiple_of([32])" in message and "this load" in message
    assert torch.equal(out, x[start:start + 32])
    # once per access: the second launch is quiet
    assert _hint_warnings(lambda: _aligned_run_copy[(1,)](x, out, offset, BLOCK=32)) == []


@triton.jit
def _scatter_runs(out_ptr, off_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK) + tl.load(off_ptr)
    hinted = tl.max_contiguous(offs % n, BLOCK)  # wraps at n
    tl.store(out_ptr + hinted, offs, mask=offs < n)  # STORE


def test_lanes_that_a_false_hint_misplaces_do_not_count_where_they_are_masked_off():
    out = torch.zeros(64, dtype=torch.int32)
    offset = torch.tensor([8], dtype=torch.int32)
    # the run 8..39 wraps at n = 20, but only lanes 8..19 are active, and they are where the run's
    # first address puts them
    assert _hint_warnings(lambda: _scatter_runs[(1,)](out, offset, 20, BLOCK=32, debug=True)) == []
    assert out[8:20].tolist() == list(range(8, 20)) and out[20:].abs().sum() == 0


@triton.jit
def _scatter_wrapped(out_ptr, off_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK) + tl.load(off_ptr)
    hinted = tl.max_contiguous(offs % n, BLOCK)
    tl.store(out_ptr + hinted, offs)  # STORE


def test_active_lanes_that_a_false_contiguity_hint_misplaces_are_reported_at_the_store():
    out = torch.zeros(64, dtype=torch.int32)
    offset = torch.tensor([8], dtype=torch.int32)
    with pytest.raises(HintViolationError) as info:
        _scatter_wrapped[(1,)](out, offset, 20, BLOCK=32, debug=True)
    message = str(info.value)
    line = _line_of(_scatter_wrapped, "# STORE")
    assert f"test_hint_semantics.py:{line}:" in message and "tl.max_contiguous([32])" in message
    assert "program (0, 0, 0)" in message
    # without debug mode: a warning, and every lane lands where its own address says
    out.zero_()
    found = _hint_warnings(lambda: _scatter_wrapped[(1,)](out, offset, 20, BLOCK=32))
    assert len(found) == 1
    offs = np.arange(32) + 8
    expected = np.zeros(64, dtype=np.int32)
    expected[offs % 20] = offs  # the last writer of each address, in lane order
    assert out.numpy().tolist() == expected.tolist()


@triton.jit
def _runs_of_four(x_ptr, out_ptr, GAP: tl.constexpr, V: tl.constexpr):
    i = tl.arange(0, 8)
    offs = tl.multiple_of(i + (i // 4) * GAP, V)  # two runs of 4: [0..3] and [4+GAP..7+GAP]
    tl.store(out_ptr + i, tl.load(x_ptr + offs))


@pytest.mark.parametrize("gap,v", [(4, 4), (4, 8), (4, 16), (12, 16), (12, 32), (8, 4), (9, 1), (9, 2)])
def test_a_false_multiple_of_matters_only_through_the_alignment_of_the_runs_it_is_used_for(gap, v):
    """The load reads two runs of four; the promise can only make the compiler believe a run of four
    starts at a multiple of min(v, 4) elements (a longer alignment is not about these runs)."""
    x = torch.arange(32, dtype=torch.float32)
    out = torch.zeros(8)
    i = np.arange(8)
    offs = i + (i // 4) * gap
    starts = offs[[0, 4]]
    g = int(np.gcd.reduce(starts))
    natural = g & -g  # the largest power of two dividing both starts
    claimed = max(min(v, 4), min(natural, 4))  # the run starts' alignment, in elements, with the hint
    harmful = bool(np.any(starts % claimed))
    found = _hint_warnings(lambda: _runs_of_four[(1,)](x, out, GAP=gap, V=v))
    assert len(found) == int(harmful)
    assert out.tolist() == offs.astype(np.float32).tolist()


@triton.jit
def _tile_offsets(x_ptr, out_ptr, stride, V0: tl.constexpr, V1: tl.constexpr):
    rows = tl.arange(0, 4)
    cols = tl.arange(0, 16)
    offs = tl.multiple_of(rows[:, None] * stride + cols[None, :], [V0, V1])
    tl.store(out_ptr + rows[:, None] * 16 + cols[None, :], tl.load(x_ptr + offs))


def test_per_dimension_values_follow_each_dimensions_runs():
    x = torch.arange(4 * 64, dtype=torch.float32)
    out = torch.zeros(4, 16)
    expected = (torch.arange(4)[:, None] * 32 + torch.arange(16)[None, :]).float()
    # rows are 32 apart, each row one run of 16 starting at a multiple of 32
    assert _hint_warnings(lambda: _tile_offsets[(1,)](x, out, 32, V0=1, V1=32)) == []
    assert torch.equal(out, expected)
    # rows 24 apart start at 0, 24, 48, 72: multiples of 8 but not of 16 elements; the false
    # promise of 16 is harmless: an address's alignment is capped by the tensor's 16 bytes
    assert _hint_warnings(lambda: _tile_offsets[(1,)](x, out, 24, V0=1, V1=8)) == []
    assert _hint_warnings(lambda: _tile_offsets[(1,)](x, out, 24, V0=1, V1=16)) == []
    # rows 2 apart start at 0, 8, 16, 24 bytes: a promise of 4 elements (16 bytes) misaligns rows 1, 3
    assert _hint_warnings(lambda: _tile_offsets[(1,)](x, out, 2, V0=1, V1=2)) == []
    assert len(_hint_warnings(lambda: _tile_offsets[(1,)](x, out, 2, V0=1, V1=4))) == 1
    assert torch.equal(out, (torch.arange(4)[:, None] * 2 + torch.arange(16)[None, :]).float())


@triton.jit
def _pointer_hints(x_ptr, out_ptr, STEP: tl.constexpr, ALIGN: tl.constexpr, BLOCK: tl.constexpr):
    p = x_ptr + tl.arange(0, BLOCK) * STEP
    p = tl.max_contiguous(tl.multiple_of(p, ALIGN), BLOCK if STEP == 1 else 1)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(p))


def test_pointer_alignment_counts_bytes():
    storage = torch.randn(256)
    out = torch.zeros(16)
    assert storage.data_ptr() % 64 == 0  # torch's CPU allocator aligns storage
    assert _hint_warnings(lambda: _pointer_hints[(1,)](storage, out, STEP=1, ALIGN=64, BLOCK=16)) == []
    assert torch.equal(out, storage[:16])
    shifted = storage[1:]  # 4 bytes past an aligned address
    assert shifted.data_ptr() % 16 == 4
    assert _hint_warnings(lambda: _pointer_hints[(1,)](shifted, out, STEP=1, ALIGN=4, BLOCK=16)) == []
    found = _hint_warnings(lambda: _pointer_hints[(1,)](shifted, out, STEP=1, ALIGN=16, BLOCK=16))
    assert len(found) == 1 and "tl.multiple_of([16])" in str(found[0].message)
    assert torch.equal(out, storage[1:17])


@triton.jit
def _claims_contiguous(x_ptr, out_ptr, STEP: tl.constexpr, BLOCK: tl.constexpr):
    p = tl.max_contiguous(x_ptr + tl.arange(0, BLOCK) * STEP, BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(p))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_max_contiguous_on_pointers_counts_elements(dtype):
    x = torch.arange(64, dtype=dtype)
    out = torch.zeros(16, dtype=dtype)
    assert _hint_warnings(lambda: _claims_contiguous[(1,)](x, out, STEP=1, BLOCK=16)) == []
    assert torch.equal(out, x[:16])
    found = _hint_warnings(lambda: _claims_contiguous[(1,)](x, out, STEP=2, BLOCK=16))
    assert len(found) == 1 and "tl.max_contiguous([16])" in str(found[0].message)
    assert torch.equal(out, x[:32:2])


@triton.jit
def _unused_promise(x_ptr, out_ptr, start, BLOCK: tl.constexpr):
    s = tl.multiple_of(start, 16)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + tl.arange(0, BLOCK)) + s)


@triton.jit
def _block_sparse_rows(x_ptr, out_ptr, index_ptr, stride, BLOCK: tl.constexpr):
    block_id = tl.multiple_of(tl.load(index_ptr + tl.program_id(0)), 8)  # false for ids 3 and 1
    offs = block_id * stride + tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), tl.load(x_ptr + offs))


def test_a_false_hint_that_no_address_relies_on_is_quiet(monkeypatch):
    x = torch.arange(64, dtype=torch.float32)
    out = torch.zeros(16)
    assert _hint_warnings(lambda: _unused_promise[(1,)](x, out, 5, BLOCK=16, debug=True)) == []
    assert torch.equal(out, x[:16] + 5)
    # block_id * stride is a multiple of 8 elements anyway, with or without the promise
    index = torch.tensor([3, 1], dtype=torch.int32)
    assert _hint_warnings(lambda: _block_sparse_rows[(2,)](x, out, index, 8, BLOCK=8, debug=True)) == []
    assert torch.equal(out, torch.cat([x[24:32], x[8:16]]))


@triton.jit
def _triton_matmul(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # Triton's long-standing matmul tutorial kernel, as written there
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    A = A + (ram[:, None] * stride_am + rk[None, :] * stride_ak)
    B = B + (rk[:, None] * stride_bk + rbn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(K, 0, -BLOCK_K):
        a = tl.load(A, mask=rk[None, :] < k, other=0.)
        b = tl.load(B, mask=rk[:, None] < k, other=0.)
        acc += tl.dot(a, b, input_precision="ieee")
        A += BLOCK_K * stride_ak
        B += BLOCK_K * stride_bk
    C = C + (rm[:, None] * stride_cm + rn[None, :] * stride_cn)
    mask = (rm < M)[:, None] & (rn < N)[None, :]
    tl.store(C, acc, mask=mask)


def test_tritons_matmul_with_the_rm_mod_m_hint_runs_unmodified_at_m_107():
    """The hint is false for the last row block (rows wrap at 107), but the row dimension is not
    the contiguous one of A's address and the wrapped rows are masked off at the store."""
    gen = torch.Generator().manual_seed(0)
    M, N, K = 107, 64, 48
    a = torch.randn(M, K, generator=gen)
    b = torch.randn(K, N, generator=gen)
    c = torch.zeros(M, N)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    found = _hint_warnings(lambda: _triton_matmul[grid](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, debug=True))
    assert found == []
    expected = a.double() @ b.double()
    # fp32 accumulation of K = 48 products of unit normals: |error| << 48 * 2^-24 * max|partial sum|
    assert torch.allclose(c.double(), expected, rtol=0, atol=1e-4)


def test_the_cpu_backend_gives_the_addresses_values_whatever_the_hints(monkeypatch):
    """It plans its vector accesses from what the arithmetic proves, not from the hints."""
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    out = torch.zeros(64, dtype=torch.int32)
    _scatter_wrapped[(1,)](out, torch.tensor([8], dtype=torch.int32), 20, BLOCK=32)
    offs = np.arange(32) + 8
    expected = np.zeros(64, dtype=np.int32)
    expected[offs % 20] = offs
    assert out.numpy().tolist() == expected.tolist()
    x = torch.arange(64, dtype=torch.float32)
    copy = torch.zeros(16)
    _claims_contiguous[(1,)](x, copy, STEP=2, BLOCK=16)
    assert torch.equal(copy, x[:32:2])


def _line_of(kernel, marker: str) -> int:
    import inspect
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)
