"""The bit-layout facts of the float dtypes (width, mantissa bits, exponent bias), checked against
numpy's and ml_dtypes' own description of the types and by decoding every bit pattern by hand."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import tritium.language as tl

FLOATS = [tl.float8e4nv, tl.float8e5, tl.float16, tl.bfloat16, tl.float32, tl.float64]


def _finfo(dtype):
    np_type = dtype.numpy
    return ml_dtypes.finfo(np_type) if np_type.name.startswith(("float8", "bfloat")) else np.finfo(np_type)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_layout_matches_finfo(dtype):
    info = _finfo(dtype)
    assert dtype.primitive_bitwidth == info.bits
    assert dtype.fp_mantissa_width == info.nmant
    # the smallest normal exponent is 1 - bias
    assert dtype.exponent_bias == 1 - info.minexp


@pytest.mark.parametrize("dtype", [tl.float16, tl.bfloat16, tl.float8e5, tl.float8e4nv], ids=str)
def test_every_finite_bit_pattern_decodes_with_mantissa_width_and_bias(dtype):
    bits = dtype.primitive_bitwidth
    m = dtype.fp_mantissa_width
    e_bits = bits - 1 - m
    bias = dtype.exponent_bias
    patterns = np.arange(1 << bits, dtype=np.uint64)
    sign = (patterns >> (bits - 1)) & 1
    exp = ((patterns >> m) & ((1 << e_bits) - 1)).astype(np.int64)
    frac = (patterns & ((1 << m) - 1)).astype(np.float64)
    magnitude = np.where(exp == 0, np.ldexp(frac / (1 << m), 1 - bias), np.ldexp(1 + frac / (1 << m), exp - bias))
    decoded = np.where(sign == 1, -magnitude, magnitude)

    with np.errstate(invalid="ignore"):  # NaN patterns
        stored = patterns.astype({8: np.uint8, 16: np.uint16}[bits]).view(dtype.numpy).astype(np.float64)
    finite = np.isfinite(stored)
    assert finite.sum() > (1 << bits) * 0.9
    np.testing.assert_array_equal(decoded[finite], stored[finite])


def test_integer_types_have_no_exponent_bias():
    for dtype in (tl.int1, tl.int8, tl.uint32, tl.int64):
        assert not hasattr(dtype, "exponent_bias")
    with pytest.raises(AttributeError, match="not a floating-point type"):
        tl.int32.exponent_bias  # noqa: B018


def test_exponent_bias_reaches_through_the_torch_name():
    # code written for Triton looks the dtype up from a torch dtype's name
    for torch_dtype, bias in ((torch.float16, 15), (torch.bfloat16, 127), (torch.float32, 127)):
        assert getattr(tl, str(torch_dtype).split(".")[1]).exponent_bias == bias
