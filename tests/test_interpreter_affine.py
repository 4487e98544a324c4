"""Comparisons of index blocks kept symbolic (``pid * BLOCK + arange`` against a bound) decide
whole batches at once when the answer is the same in every lane; everywhere else they compute
lane by lane. Either way the result must be numpy's comparison of the same integers.

Oracle: numpy comparing the materialised int32 (or wrapped) offsets, element by element.
"""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl

PREDICATES = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
              "eq": np.equal, "ne": np.not_equal}


@triton.jit
def compare_offsets(out_ptr, bound, scale, PREDICATE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    idx = offs * scale
    if PREDICATE == "lt":
        result = idx < bound
    elif PREDICATE == "le":
        result = idx <= bound
    elif PREDICATE == "gt":
        result = idx > bound
    elif PREDICATE == "ge":
        result = idx >= bound
    elif PREDICATE == "eq":
        result = idx == bound
    else:
        result = idx != bound
    tl.store(out_ptr + offs, result.to(tl.int8))


@pytest.mark.parametrize("predicate", list(PREDICATES))
@pytest.mark.parametrize("bound", [-5, 0, 100, 127, 128, 200, 256, 10_000])  # before, inside, at and past the grid
@pytest.mark.parametrize("scale", [1, -1, 3])
def test_offsets_against_a_bound(predicate, bound, scale):
    programs, block = 8, 32
    out = np.full(programs * block, 7, np.int8)
    compare_offsets[(programs,)](out, bound, scale, PREDICATE=predicate, BLOCK=block)
    offsets = np.arange(programs * block, dtype=np.int32) * scale
    np.testing.assert_array_equal(out, PREDICATES[predicate](offsets, bound).astype(np.int8))


def test_offsets_that_wrap_in_int32_compare_as_wrapped():
    """pid * BLOCK + arange times a huge scale overflows int32: the comparison sees the wrapped
    values, as a GPU's 32-bit arithmetic would."""
    programs, block, scale = 4, 16, 1 << 28
    out = np.zeros(programs * block, np.int8)
    compare_offsets[(programs,)](out, 0, scale, PREDICATE="lt", BLOCK=block)
    wrapped = (np.arange(programs * block, dtype=np.int64) * scale).astype(np.int32)  # two's complement wrap
    np.testing.assert_array_equal(out, (wrapped < 0).astype(np.int8))
    assert out.any() and not out.all()


@triton.jit
def masked_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=-1.0), mask=mask)


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 255, 256])
def test_mask_decided_for_whole_batches_still_guards_the_tail(n):
    x = np.arange(256, dtype=np.float32)
    y = np.full(256, 99.0, np.float32)
    masked_copy[(4,)](x, y, n, BLOCK=64)
    np.testing.assert_array_equal(y[:n], x[:n])
    assert (y[n:] == 99.0).all()
