"""Small compatibilities Triton's own test suite relies on."""
import pytest
import torch

import tritium as triton
import tritium.language as tl


@triton.jit
def doubled_block(out_ptr, BLOCK: tl.constexpr):
    TWICE: tl.constexpr = tl.constexpr(BLOCK * 2)
    tl.store(out_ptr + tl.arange(0, TWICE), tl.arange(0, TWICE))


def test_constexpr_constructed_inside_a_kernel():
    out = torch.zeros(8, dtype=torch.int32)
    doubled_block[(1,)](out, BLOCK=4)
    assert out.tolist() == list(range(8))


def test_pointer_type_alias():
    assert tl.pi32_t == tl.pointer_type(tl.int32)


@triton.jit
def erf_of_half(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.math.erf(x))


def test_compilation_error_keeps_the_original_error_as_its_cause():
    with pytest.raises(triton.CompilationError) as info:
        erf_of_half[(1,)](torch.zeros(4, dtype=torch.float16), BLOCK=4)
    assert isinstance(info.value.__cause__, ValueError)
    assert "Expected dtype ['fp32', 'fp64'] but got fp16" in str(info.value.__cause__)
    assert info.value.__cause__.__traceback__ is None  # tritium's own frames are not shown


@triton.jit
def expand_many(out_ptr):
    x = tl.arange(0, 4)
    y = tl.expand_dims(x, (-4, 2, -1))  # negative axes count from the end of the rank-4 result
    tl.static_assert(y.shape[0] == 1 and y.shape[1] == 4 and y.shape[2] == 1 and y.shape[3] == 1)
    tl.store(out_ptr + tl.reshape(y, (4,)) * 0 + tl.arange(0, 4), tl.reshape(y, (4,)))


def test_expand_dims_with_several_axes_numbers_them_in_the_result():
    out = torch.zeros(4, dtype=torch.int32)
    expand_many[(1,)](out)
    assert out.tolist() == [0, 1, 2, 3]


def test_dtype_name_lists_match_triton():
    import tritium.language as tl
    assert tl.dtype.SINT_TYPES == ["int8", "int16", "int32", "int64"]
    assert tl.dtype.UINT_TYPES == ["int1", "uint8", "uint16", "uint32", "uint64"]
    assert tl.dtype.STANDARD_FP_TYPES == ["fp16", "bf16", "fp32", "fp64"]
    for name in tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.FP_TYPES:
        assert tl.dtype(name).name == name


def test_assume_is_a_noop_hint():
    import numpy as np
    import tritium as triton
    import tritium.language as tl

    @triton.jit
    def kernel(out_ptr, N: tl.constexpr):
        x = N - tl.program_id(0) * 4
        tl.assume(x >= 4)
        tl.store(out_ptr + tl.program_id(0), x)

    out = np.zeros(4, dtype=np.int32)
    kernel[(4, )](out, N=16)
    np.testing.assert_array_equal(out, 16 - np.arange(4) * 4)


@triton.jit
def fp8_to_fp32(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))


def test_reinterpret_passes_bytes_as_another_dtype():
    import ml_dtypes
    import numpy as np

    values = np.array([0.5, -1.5, 448.0, 0.0, -0.0, 2.0, 3.5, -6.0], dtype=ml_dtypes.float8_e4m3fn)
    raw = torch.from_numpy(values.view(np.uint8).copy())  # torch sees bytes only
    out = torch.empty(8)
    fp8_to_fp32[(1,)](triton.reinterpret(raw, tl.float8e4nv), out, BLOCK=8)
    np.testing.assert_array_equal(out.numpy(), values.astype(np.float32))
    same = triton.reinterpret(raw, tl.uint8)  # Triton wraps the tensor even in its own dtype
    assert isinstance(same, triton.TensorWrapper) and same.base is raw and same.dtype == tl.uint8
    wrapped = triton.reinterpret(raw, tl.float8e5)
    assert triton.reinterpret(wrapped, tl.uint8) is raw  # a wrapper in its base's dtype: the base
    assert triton.reinterpret(wrapped, tl.int8).base is raw
    with pytest.raises(ValueError, match="widths differ"):
        triton.reinterpret(raw, tl.float16)
