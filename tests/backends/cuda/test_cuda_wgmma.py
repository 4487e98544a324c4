"""Hopper's wgmma dot (backends/cuda/wgmma.py), modelled without a GPU.

The operands are written into a byte image of shared memory where ``mma.a_offset`` / ``b_offset`` put
them; each instruction's descriptors are built as wgmma.py builds them (``descriptor_bits`` of
``a_start`` / ``b_start`` and the leading and stride offsets) and then *decoded* the way the PTX ISA
says the tensor cores read a swizzled tile (its "Matrix Descriptor Format" and the canonical layouts
of "Shared Memory Matrix Layout", written out below independently of mma.py): K-major A element
(r, k) at start + (r // 8) SBO + (r % 8) W + k bytes, N-major B element (k, n) at start + (n bytes // W)
LBO + (k // 8) SBO + (k % 8) W + n bytes % W, K-major B element (k, n) where A has (n, k), each
address then swizzled (16-byte unit bits 4.. XORed
with bits 7..). The products go into the accumulators the PTX ISA's m64nNk16 fragment names (lane 4g
+ t of warp w holds d[4j + 2h + e] at row 16 w + g + 8 h, column 8 j + 2 t + e), which are read back
through the plan's result layout. The result must be a @ b + c.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from tritium.backends.cuda import mma
from tritium.backends.cuda import wgmma

from test_cuda_mma import SharedMemory, _decode, _encode, _held


def _fields(descriptor: int) -> tuple[int, int, int, int]:
    """(start, leading, stride, swizzle bytes) of a 64-bit descriptor."""
    start = (descriptor & 0x3FFF) << 4
    leading = (descriptor >> 16 & 0x3FFF) << 4
    stride = (descriptor >> 32 & 0x3FFF) << 4
    assert descriptor >> 49 & 0x7 == 0, "base offset 0: the tiles are 1024-byte aligned"
    swizzle = {1: 128, 2: 64, 3: 32}[descriptor >> 62]
    return start, leading, stride, swizzle


def _swizzled(address: int, width: int) -> int:
    return address ^ (((address >> 7) & (width // 16 - 1)) << 4)


def _a_read(smem, descriptor: int, kind: str) -> np.ndarray:
    """The 64 x 16 A tile a K-major descriptor addresses (one k16 step of 16-bit elements)."""
    start, _, stride, width = _fields(descriptor)
    tile = np.empty((64, 16))
    for r, k in itertools.product(range(64), range(16)):
        address = start + (r // 8) * stride + (r % 8) * width + 2 * k
        tile[r, k] = _decode(kind, smem.read(_swizzled(address, width), 2))
    return tile


def _b_read(smem, descriptor: int, n: int, kind: str, transposed: int) -> np.ndarray:
    """The 16 x n B tile an N-major descriptor addresses (imm-trans-b 1), or a K-major one (0: element
    (k, j) where a K-major A has element (j, k))."""
    start, leading, stride, width = _fields(descriptor)
    tile = np.empty((16, n))
    for k, j in itertools.product(range(16), range(n)):
        if transposed:
            address = start + (2 * j // width) * leading + (k // 8) * stride + (k % 8) * width + 2 * j % width
        else:
            address = start + (j // 8) * stride + (j % 8) * width + 2 * k
        tile[k, j] = _decode(kind, smem.read(_swizzled(address, width), 2))
    return tile


def simulate(plan: mma.Plan, a: np.ndarray, b: np.ndarray, c: np.ndarray, kind: str) -> np.ndarray:
    layout = plan.layout
    smem = SharedMemory(plan.smem_bytes)
    for i, k in itertools.product(range(plan.m), range(plan.k)):
        smem.write(mma.a_offset(plan, 0, i, k), _encode(kind, a[i, k]))
    for k, j in itertools.product(range(plan.k), range(plan.n)):
        smem.write(mma.b_offset(plan, 0, k, j), _encode(kind, b[k, j]))
    _, repeats, columns = plan.repeats
    count = 4 * columns
    assert count == plan.n // 2
    result = np.full(c.shape, np.nan)
    groups = plan.num_warps // wgmma.WARPGROUP
    for group in range(groups):
        warps = range(group * 4, group * 4 + 4)
        acc = {(w, lane): [c[_held(layout, w, lane, r)] for r in range(layout.num_regs)]
               for w in warps for lane in range(32)}
        for step, repeat in itertools.product(range(plan.k_steps), range(repeats)):
            desc_a = wgmma.descriptor_bits(wgmma.a_start(plan, group, repeat, step), *wgmma.a_layout(plan),
                                           plan.a_swizzle)
            desc_b = wgmma.descriptor_bits(wgmma.b_start(plan, step), *wgmma.b_layout(plan), plan.b_swizzle)
            product = _a_read(smem, desc_a, kind) @ _b_read(smem, desc_b, plan.n, kind, wgmma.imm_trans_b(plan))
            for w, lane in itertools.product(warps, range(32)):
                g, t = lane >> 2, lane & 3
                for j, h, e in itertools.product(range(plan.n // 8), range(2), range(2)):
                    row, col = 16 * (w % 4) + g + 8 * h, 8 * j + 2 * t + e
                    acc[(w, lane)][count * repeat + 4 * j + 2 * h + e] += product[row, col]
        for (w, lane), values in acc.items():
            for r, x in enumerate(values):
                index = _held(layout, w, lane, r)
                assert np.isnan(result[index]), "two threads hold one element"
                result[index] = x
    return result


CASES = [("fp16", (128, 128), 64, 4), ("fp16", (128, 256), 64, 8), ("bf16", (64, 256), 32, 4),
         ("fp16", (128, 64), 32, 4), ("bf16", (256, 32), 16, 8), ("fp16", (64, 128), 128, 4)]


@pytest.mark.parametrize("b_kmajor", [False, True], ids=["b-n-major", "b-k-major"])
@pytest.mark.parametrize("kind,shape_c,k,num_warps", CASES)
def test_the_modelled_wgmma_dot_is_a_at_b_plus_c(kind, shape_c, k, num_warps, b_kmajor):
    """B N-major (a K x N tile, N contiguous) or K-major (stored N x K: attention's K^T)."""
    plan = mma.plan_for(shape_c, k, kind, num_warps, wgmma=True, b_kmajor=b_kmajor)
    assert plan.wgmma and plan.b_kmajor == b_kmajor
    rng = np.random.default_rng(hash((kind, shape_c, k, num_warps)) % 2**32)
    a = rng.integers(-8, 8, (shape_c[0], k)).astype(np.float64)
    b = rng.integers(-8, 8, (k, shape_c[1])).astype(np.float64)
    c = rng.integers(-100, 100, shape_c).astype(np.float64)
    result = simulate(plan, a, b, c, kind)
    assert not np.isnan(result).any(), "an element of the result no thread holds"
    np.testing.assert_array_equal(result, a @ b + c)  # small integers: every product and sum is exact


@pytest.mark.parametrize("shape_c,num_warps,fits", [((128, 128), 4, True), ((64, 128), 8, False),
                                                    ((128, 512), 4, False), ((32, 64), 4, False),
                                                    ((128, 128), 2, False), ((64, 16), 4, True),
                                                    ((64, 8), 4, False)])
def test_wgmma_takes_whole_warpgroups_of_64_rows_and_one_instructions_n(shape_c, num_warps, fits):
    plan = mma.plan_for(shape_c, 64, "fp16", num_warps, wgmma=True)
    assert plan.wgmma == fits
    assert not mma.plan_for(shape_c, 64, "tf32", num_warps, wgmma=True).wgmma  # 16-bit inputs only, so far


@pytest.mark.parametrize("shape_c,k,num_warps", [((128, 64), 64, 8), ((128, 128), 32, 4), ((64, 64), 128, 4)])
def test_wgmma_reads_a_from_registers_in_the_accumulators_layout(shape_c, k, num_warps):
    """The RS form's A registers for 64-row block r and K step s (``mma.packed_a`` of
    ``mma.operand_layout``'s registers r K/2 + 8 s ..) hold, in warp w of its warpgroup, a0..a7 at row
    16 w + g + 8 h, column 16 s + 2 t + e + 8 q, as the PTX ISA's register fragment for A says; and
    the result of a wgmma dot whose N is this K, cast, is in that layout."""
    from test_cuda_mma import _held as held

    plan = mma.plan_for(shape_c, k, "fp16", num_warps, wgmma=True)
    layout = mma.operand_layout(plan)
    assert mma.plan_for((shape_c[0], k), 16, "fp16", num_warps, wgmma=True).layout == layout
    groups = num_warps // wgmma.WARPGROUP
    _, repeats, _ = plan.repeats
    for warp, lane in itertools.product(range(num_warps), range(32)):
        g, t = lane >> 2, lane & 3
        for repeat, step in itertools.product(range(repeats), range(plan.k_steps)):
            first = repeat * (plan.k // 2) + 8 * step
            for i in range(8):
                h, e, q = (i >> 1) & 1, i & 1, i >> 2
                row = 64 * (warp // 4) + 64 * groups * repeat + 16 * (warp % 4) + g + 8 * h
                assert held(layout, warp, lane, first + i) == (row, 16 * step + 2 * t + e + 8 * q)
    assert mma.a_in_registers(plan, layout)
