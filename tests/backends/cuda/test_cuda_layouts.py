"""The CUDA backend's layout algebra (backends/cuda/layouts.py), checked by enumerating threads.

A layout says which element of a block each (thread, register) holds; the code generator relies on
these facts, which these tests check for many shapes, warp counts, vector widths and orders:
every element is held, each by the same number of threads (the replication); a reduction's slice
holds exactly the projections of what the thread held; the views through which broadcast, reshape
and permute read their operand name the operand element each result register needs.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from tritium.backends.cuda import layouts as L
from tritium.backends.cuda.values import _map_offset

SHAPES = [(1,), (2,), (8,), (64,), (128,), (4096,), (1, 8), (4, 4), (2, 64), (16, 16), (8, 128), (64, 32), (2, 4, 8),
          (1, 1, 16), (4, 1, 32)]


def _elements(layout: L.Layout, num_warps: int) -> dict:
    """(warp, lane) -> the list of element indices its registers hold, in register order."""
    held = {}
    for warp, lane in itertools.product(range(num_warps), range(32)):
        index = []
        for r, offset in enumerate(layout.offsets):
            element = list(offset)
            for bits, source in ((layout.lane_bits, lane), (layout.warp_bits, warp)):
                for i, bit in enumerate(bits):
                    if bit is not None and source >> i & 1:
                        element[bit[0]] += bit[1]
            index.append(tuple(element))
        held[(warp, lane)] = index
    return held


def _layouts():
    for shape in SHAPES:
        for num_warps in (1, 4, 8):
            for vec in (1, 2, 4):
                for order in itertools.permutations(range(len(shape))):
                    yield shape, num_warps, vec, order


@pytest.mark.parametrize("shape,num_warps,vec,order", list(_layouts()))
def test_blocked_layouts_hold_every_element_equally_often(shape, num_warps, vec, order):
    layout = L.blocked(shape, num_warps, order, vec)
    held = _elements(layout, num_warps)
    counts = {}
    for elements in held.values():
        assert len(set(elements)) == len(elements)  # a thread's registers hold distinct elements
        for e in elements:
            assert all(0 <= i < n for i, n in zip(e, shape))
            counts[e] = counts.get(e, 0) + 1
    assert len(counts) == int(np.prod(shape))
    lanes, warps = layout.replica_masks()
    replicas = (1 << lanes.bit_count()) * (1 << warps.bit_count())
    assert set(counts.values()) == {replicas}
    # the first `vec` registers are consecutive along the fastest dimension
    fast = order[0]
    run = min(vec, shape[fast])
    for r in range(run):
        expected = [0] * len(shape)
        expected[fast] = r
        assert layout.offsets[r] == tuple(expected)


@pytest.mark.parametrize("shape,num_warps", [(s, w) for s in SHAPES for w in (1, 4, 8) if len(s) > 1 or s[0] > 1])
def test_a_slice_holds_the_projections_of_what_the_thread_held(shape, num_warps):
    layout = L.blocked(shape, num_warps, None, 4)
    held = _elements(layout, num_warps)
    for axis in range(len(shape)):
        sliced = L.sliced(layout, axis)
        held_sliced = _elements(sliced, num_warps)
        for thread, elements in held.items():
            projected = {e[:axis] + e[axis + 1:] for e in elements}
            assert set(held_sliced[thread]) == projected


def _check_view(result: L.Layout, source_shape, bit_map, element_of, num_warps):
    """The view of the source through ``bit_map`` gives each result register the source element
    ``element_of(result element)``."""
    view = L.source_layout(result, source_shape, bit_map)
    held_result = _elements(result, num_warps)
    held_view = _elements(view, num_warps)
    for thread, elements in held_result.items():
        for r, e in enumerate(elements):
            k = view.register_of[_map_offset(result.offsets[r], bit_map, len(source_shape))]
            assert held_view[thread][k] == element_of(e)


@pytest.mark.parametrize("result_shape,source_shape", [((8, 16), (1, 16)), ((8, 16), (8, 1)), ((4, 8, 2), (4, 1, 2)),
                                                       ((64, 32), (1, 32)), ((16, 16), (1, 1))])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_broadcast_reads_the_operand_element_of_each_result_register(result_shape, source_shape, num_warps):
    result = L.blocked(result_shape, num_warps, None, 4)
    _check_view(result, source_shape, L.broadcast_source(source_shape),
                lambda e: tuple(0 if n == 1 else i for i, n in zip(e, source_shape)), num_warps)


@pytest.mark.parametrize("result_shape,source_shape", [((8, 16), (128,)), ((128,), (8, 16)), ((4, 1, 32), (4, 32)),
                                                       ((2, 64), (16, 8)), ((16, 1), (16,))])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_reshape_reads_the_operand_element_with_the_same_row_major_position(result_shape, source_shape, num_warps):
    result = L.blocked(result_shape, num_warps, None, 2)

    def element_of(e):
        flat = int(np.ravel_multi_index(e, result_shape))
        return tuple(int(i) for i in np.unravel_index(flat, source_shape))

    _check_view(result, source_shape, L.reshape_source(result_shape, source_shape), element_of, num_warps)


@pytest.mark.parametrize("source_shape,order", [((8, 16), (1, 0)), ((2, 4, 8), (2, 0, 1)), ((4, 8, 16), (1, 2, 0))])
def test_permute_reads_the_permuted_operand_element(source_shape, order):
    result_shape = tuple(source_shape[o] for o in order)
    result = L.blocked(result_shape, 4, None, 4)

    def element_of(e):
        source = [0] * len(source_shape)
        for i, o in enumerate(order):
            source[o] = e[i]
        return tuple(source)

    _check_view(result, source_shape, L.permute_source(order), element_of, 4)


def test_same_threads_recognises_a_reduction_broadcast_back_and_refuses_a_transpose():
    layout = L.blocked((16, 64), 4, None, 4)
    row = L.sliced(layout, 1)
    back = L.source_layout(layout, (16, 1), L.broadcast_source((16, 1)))
    assert L.same_threads(L.expand_dims(row, 1), back)
    transposed = L.blocked((16, 64), 4, (0, 1), 4)
    assert not L.same_threads(layout, transposed)
