"""The launch API: grids, argument binding, the specialization cache, argument kinds (torch
tensors of every dtype and layout, numpy arrays, Python scalars, None), misuse, kernel.ir and
the `tritium` command line.

Oracles: torch/numpy on the same inputs (exact for copies and integer arithmetic; floats
computed with the same single fp32/fp16 operation, so also exact) and the key rules Triton
documents (ints equal to 1 and ints divisible by 16 are specialized).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl

VENV_BIN = Path(sys.executable).parent
TRITIUM_CLI = VENV_BIN / "tritium"


# ------------------------------------------------------------------------------------------------
# grids, kwargs, defaults, launch options
# ------------------------------------------------------------------------------------------------
@triton.jit
def _axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def _axpy_ref(alpha, x, y):
    return (np.float32(alpha) * x.numpy() + y.numpy()).astype(np.float32)


def test_grid_as_tuple():
    n = 1000
    x, y = torch.randn(n), torch.randn(n)
    out = torch.full((n,), float("nan"))
    _axpy_kernel[(triton.cdiv(n, 128),)](x, y, out, n, 2.5, BLOCK=128)
    assert np.array_equal(out.numpy(), _axpy_ref(2.5, x, y))


@pytest.mark.parametrize("block", [64, 256])
def test_grid_as_lambda_of_meta_parameters(block):
    n = 1000
    x, y = torch.randn(n), torch.randn(n)
    out = torch.full((n,), float("nan"))
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (triton.cdiv(n, meta["BLOCK"]),)

    _axpy_kernel[grid](x, y, out, n, -1.5, BLOCK=block)
    assert seen["BLOCK"] == block and seen["n"] == n
    assert np.array_equal(out.numpy(), _axpy_ref(-1.5, x, y))
    # a grid too small for n leaves the tail untouched: the lambda's answer really is the grid
    out2 = torch.full((n,), float("nan"))
    _axpy_kernel[lambda meta: (1,)](x, y, out2, n, -1.5, BLOCK=block)
    assert np.array_equal(out2[:block].numpy(), _axpy_ref(-1.5, x, y)[:block])
    assert torch.isnan(out2[block:]).all()


def test_all_arguments_as_keywords():
    n = 300
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    _axpy_kernel[(3,)](out_ptr=out, y_ptr=y, x_ptr=x, BLOCK=128, alpha=0.5, n=n)
    assert np.array_equal(out.numpy(), _axpy_ref(0.5, x, y))


def test_constexpr_passed_positionally():
    n = 100
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    _axpy_kernel[(1,)](x, y, out, n, 3.0, 128)
    assert np.array_equal(out.numpy(), _axpy_ref(3.0, x, y))


@triton.jit
def _defaults_kernel(x_ptr, out_ptr, n, scale=3.0, shift=-1, BLOCK: tl.constexpr = 32,
                     SQUARE: tl.constexpr = False):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if SQUARE:
        x = x * x
    tl.store(out_ptr + offs, x * scale + shift, mask=mask)


def test_default_argument_values():
    n = 70
    x = torch.randn(n)
    out = torch.empty(n)
    _defaults_kernel[(triton.cdiv(n, 32),)](x, out, n)
    assert np.array_equal(out.numpy(), x.numpy() * np.float32(3) + np.float32(-1))
    _defaults_kernel[(triton.cdiv(n, 16),)](x, out, n, shift=5, BLOCK=16, SQUARE=True)
    xs = x.numpy()
    assert np.array_equal(out.numpy(), (xs * xs) * np.float32(3) + np.float32(5))


def test_num_warps_and_num_stages_are_accepted():
    n = 257
    x, y = torch.randn(n), torch.randn(n)
    for warps, stages in [(1, 1), (4, 3), (8, 5)]:
        out = torch.empty(n)
        _axpy_kernel[(triton.cdiv(n, 64),)](x, y, out, n, 2.0, BLOCK=64, num_warps=warps, num_stages=stages)
        assert np.array_equal(out.numpy(), _axpy_ref(2.0, x, y))


def test_empty_grid_launches_nothing_and_warns_once_at_the_launch_line():
    import warnings

    out = torch.full((4,), 7.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            _axpy_kernel[(0,)](out, out, out, 4, 1.0, BLOCK=4)
    assert out.tolist() == [7.0] * 4
    messages = [w for w in caught if "zero dimension" in str(w.message)]
    assert len(messages) == 1  # once per launch site
    assert messages[0].filename == __file__ and f"test_runtime.py:{messages[0].lineno}" in str(messages[0].message)


def test_wrong_number_of_arguments_is_a_launch_error():
    x = torch.zeros(4)
    with pytest.raises(triton.LaunchError):
        _axpy_kernel[(1,)](x, x, x, 4, BLOCK=4)  # alpha missing
    with pytest.raises(TypeError):  # LaunchError is also a TypeError
        _axpy_kernel[(1,)](x, x, x, 4, 1.0, BLOCK=4, bogus=1)


# ------------------------------------------------------------------------------------------------
# the specialization cache
# ------------------------------------------------------------------------------------------------
def _fresh(fn):
    """A new JITFunction for the same Python function: an empty cache."""
    return triton.jit(fn.fn)


def _scale_fn(x_ptr, out_ptr, n, k, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * k, mask=mask)


_scale_kernel = triton.jit(_scale_fn)


def test_same_key_compiles_once():
    kernel = _fresh(_scale_kernel)
    x = torch.arange(40, dtype=torch.float32)
    for _ in range(3):
        out = torch.empty(40)
        kernel[(3,)](x, out, 40, 7, BLOCK=16)
        assert out.tolist() == (x * 7).tolist()
    assert len(kernel.cache) == 1
    # other tensors of the same dtype and another (non-special) int: still the same key
    y = torch.arange(50, dtype=torch.float32)
    out = torch.empty(50)
    kernel[(4,)](y, out, 50, 9, BLOCK=16)
    assert out.tolist() == (y * 9).tolist()
    assert len(kernel.cache) == 1


def test_new_constexpr_value_compiles_again():
    kernel = _fresh(_scale_kernel)
    x = torch.arange(64, dtype=torch.float32)
    out = torch.empty(64)
    kernel[(4,)](x, out, 64, 3, BLOCK=16)
    kernel[(2,)](x, out, 64, 3, BLOCK=32)
    assert len(kernel.cache) == 2
    kernel[(4,)](x, out, 64, 3, BLOCK=16)
    assert len(kernel.cache) == 2
    assert out.tolist() == (x * 3).tolist()


def test_int_equal_to_1_and_divisible_by_16_are_specialized():
    kernel = _fresh(_scale_kernel)
    x = torch.arange(64, dtype=torch.float32)
    results = {}
    for k in (1, 7, 32, 9, 48):
        out = torch.empty(64)
        kernel[(4,)](x, out, 64, k, BLOCK=16)
        results[k] = out.tolist()
    # 1 -> its own key; 7 and 9 share one; 32 and 48 (divisible by 16) share one
    assert len(kernel.cache) == 3
    for k, got in results.items():
        assert got == (x * k).tolist(), k


def test_int_equal_to_1_is_compiled_as_a_constant():
    kernel = _fresh(_scale_kernel)
    x = torch.arange(16, dtype=torch.float32)
    out = torch.empty(16)
    compiled = kernel[(1,)](x, out, 16, 1, BLOCK=16)
    assert "k" not in compiled.ir.arg_names  # 1 became part of the program
    compiled = kernel[(1,)](x, out, 16, 2, BLOCK=16)
    assert "k" in compiled.ir.arg_names


def test_do_not_specialize_shares_one_key():
    kernel = triton.jit(_scale_fn, do_not_specialize=["k"])
    x = torch.arange(32, dtype=torch.float32)
    for k in (1, 7, 32):
        out = torch.empty(32)
        kernel[(2,)](x, out, 32, k, BLOCK=16)
        assert out.tolist() == (x * k).tolist()
    assert len(kernel.cache) == 1


def test_new_dtype_compiles_again():
    kernel = _fresh(_scale_kernel)
    for dtype in (torch.float32, torch.float16, torch.float32, torch.int32, torch.float16):
        x = torch.arange(32).to(dtype)
        out = torch.empty(32, dtype=dtype)
        kernel[(2,)](x, out, 32, 3, BLOCK=16)
        assert torch.equal(out, x * 3)
    assert len(kernel.cache) == 3


def test_pointer_alignment_is_part_of_the_key():
    kernel = _fresh(_scale_kernel)
    base = torch.arange(64, dtype=torch.float32)
    assert base.data_ptr() % 16 == 0
    n = 40  # the same n each time: only the pointer differs
    for view in (base, base[4:], base[1:], base[8:]):  # 0, 16, 4 and 32 bytes in
        out = torch.empty(n)
        kernel[(4,)](view, out, n, 2, BLOCK=16)
        assert out.tolist() == (view[:n] * 2).tolist()
    assert len(kernel.cache) == 2


# ------------------------------------------------------------------------------------------------
# argument kinds
# ------------------------------------------------------------------------------------------------
@triton.jit
def _double_kernel(x_ptr, out_ptr, n, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.static_assert(x.dtype == DTYPE)  # the element type the pointer argument was given
    if DTYPE == tl.int1:
        y = x == 0
    else:
        y = x * 2
    tl.store(out_ptr + offs, y, mask=mask)


_TORCH_TO_TL = {
    torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32,
    torch.float64: tl.float64, torch.int8: tl.int8, torch.int16: tl.int16, torch.int32: tl.int32,
    torch.int64: tl.int64, torch.uint8: tl.uint8, torch.bool: tl.int1,
}


@pytest.mark.parametrize("dtype", list(_TORCH_TO_TL), ids=lambda d: str(d).replace("torch.", ""))
def test_torch_tensors_of_every_dtype(dtype):
    n = 77
    g = torch.Generator().manual_seed(0)
    if dtype == torch.bool:
        x = torch.rand(n, generator=g) > 0.5
    elif dtype.is_floating_point:
        x = (torch.randn(n, generator=g) * 100).to(dtype)
    else:
        info = torch.iinfo(dtype)
        x = torch.randint(max(info.min, -(2**40)), min(info.max, 2**40), (n,), generator=g, dtype=dtype)
    out = torch.zeros(n, dtype=dtype)
    _double_kernel[(triton.cdiv(n, 32),)](x, out, n, DTYPE=_TORCH_TO_TL[dtype], BLOCK=32)
    expected = ~x if dtype == torch.bool else x * 2  # integers wrap in both
    assert torch.equal(out, expected)


@triton.jit
def _strided_copy_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_xn, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :] * stride_xn, mask=mask, other=0.0)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], x, mask=mask)


def _strided_copy(view):
    m, n = view.shape
    out = torch.full((m, n), float("nan"), dtype=view.dtype)
    _strided_copy_kernel[(1,)](view, out, m, n, view.stride(0), view.stride(1),
                               BLOCK_M=triton.next_power_of_2(m), BLOCK_N=triton.next_power_of_2(n))
    return out


def test_transposed_view_with_explicit_strides():
    base = torch.randn(12, 20)
    view = base.t()
    assert not view.is_contiguous()
    assert torch.equal(_strided_copy(view), view)


def test_column_slice_with_offset_data_pointer():
    base = torch.randn(9, 13)
    view = base[:, 1:]
    assert view.data_ptr() != base.data_ptr()
    assert torch.equal(_strided_copy(view), view)
    view2 = base[2:7, 3:11]
    assert torch.equal(_strided_copy(view2), view2)


@triton.jit
def _copy_1d_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=mask), mask=mask)


def test_step_slices():
    base = torch.arange(100, dtype=torch.float32)
    for view in (base[::2], base[3::7], base[1:50:3]):
        out = torch.zeros(view.numel())
        _copy_1d_kernel[(1,)](view, out, view.numel(), view.stride(0), BLOCK=64)
        assert torch.equal(out, view)


def test_strided_view_bounds_are_the_views():
    # reading one element past the last element of x[1:50:3] leaves the view: an error, not a read of base
    base = torch.arange(100, dtype=torch.float32)
    view = base[1:50:3]
    out = torch.zeros(view.numel() + 1)
    with pytest.raises(triton.OutOfBoundsError):
        _copy_1d_kernel[(1,)](view, out, view.numel() + 1, view.stride(0), BLOCK=64)


def test_numpy_arrays():
    for dtype in (np.float32, np.float64, np.int32, np.int16, np.uint8):
        x = (np.arange(50) % 37).astype(dtype)
        out = np.zeros_like(x)
        tl_dtype = {np.float32: tl.float32, np.float64: tl.float64, np.int32: tl.int32,
                    np.int16: tl.int16, np.uint8: tl.uint8}[dtype]
        _double_kernel[(2,)](x, out, 50, DTYPE=tl_dtype, BLOCK=32)
        assert np.array_equal(out, x * 2), dtype


def test_numpy_2d_non_contiguous():
    base = np.arange(6 * 10, dtype=np.float32).reshape(6, 10)
    view = base.T[::2]  # shape (5, 6), strides in bytes (8, 40)
    out = np.zeros(view.shape, dtype=np.float32)
    m, n = view.shape
    _strided_copy_kernel[(1,)](view, out, m, n, view.strides[0] // 4, view.strides[1] // 4,
                               BLOCK_M=8, BLOCK_N=8)
    assert np.array_equal(out, view)


@triton.jit
def _scalars_kernel(out_ptr, i, big, f, b, neg):
    tl.store(out_ptr + 0, i.to(tl.float64))
    tl.store(out_ptr + 1, big.to(tl.float64))
    tl.store(out_ptr + 2, f.to(tl.float64))
    tl.store(out_ptr + 3, b.to(tl.float64))
    tl.store(out_ptr + 4, neg.to(tl.float64))
    tl.static_print(i.dtype, big.dtype, f.dtype, b.dtype)


def test_python_scalars(capsys):
    kernel = _fresh(_scalars_kernel)  # compiled here, so static_print prints here
    out = torch.zeros(5, dtype=torch.float64)
    kernel[(1,)](out, 123, 2**40 + 5, 0.1, True, -17)
    assert out.tolist() == [123.0, float(2**40 + 5), float(np.float32(0.1)), 1.0, -17.0]
    # Triton's types for Python scalars: int -> i32 (i64 when it does not fit), float -> fp32, bool -> i1
    assert capsys.readouterr().out.split() == ["int32", "int64", "fp32", "int1"]


def test_python_scalar_types_in_ir():
    text = _scalars_kernel.ir("*fp64,i32,i64,fp32,i1,i32")
    assert "i64" in text and "i1" in text


@triton.jit
def _optional_kernel(x_ptr, bias_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if bias_ptr is not None:
        x += tl.load(bias_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)


def test_none_argument_with_is_not_none():
    kernel = _fresh(_optional_kernel)
    x, b = torch.randn(20), torch.randn(20)
    out = torch.empty(20)
    kernel[(1,)](x, None, out, 20, BLOCK=32)
    assert torch.equal(out, x)
    kernel[(1,)](x, b, out, 20, BLOCK=32)
    assert torch.equal(out, x + b)
    assert len(kernel.cache) == 2


# ------------------------------------------------------------------------------------------------
# misuse
# ------------------------------------------------------------------------------------------------
def test_calling_a_kernel_without_grid_says_how_to_launch():
    x = torch.zeros(4)
    with pytest.raises(triton.TritonError) as info:
        _axpy_kernel(x, x, x, 4, 1.0, BLOCK=4)
    message = str(info.value)
    assert "_axpy_kernel[grid](...)" in message
    assert x.tolist() == [0.0] * 4


def test_unsupported_argument_type_is_a_launch_error():
    with pytest.raises(triton.LaunchError, match="cannot pass"):
        _axpy_kernel[(1,)](object(), torch.zeros(4), torch.zeros(4), 4, 1.0, BLOCK=4)


# ------------------------------------------------------------------------------------------------
# kernel.ir and the command line
# ------------------------------------------------------------------------------------------------
@triton.jit
def _copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def test_kernel_ir_of_a_three_argument_kernel():
    text = _copy_kernel.ir("*fp32,*fp32,i32", BLOCK=128)
    assert "load" in text and "store" in text
    assert "<128xfp32>" in text  # blocks of the compiled-in size
    assert _copy_kernel.cache == {}  # ir() compiles for inspection only, it launches nothing
    text16 = _copy_kernel.ir("*fp16,*fp16,i32", BLOCK=64)
    assert "fp16" in text16 and "fp32" not in text16


def test_kernel_ir_text():
    text = _axpy_kernel.ir("*fp32,*fp32,*fp32,i32,fp32", BLOCK=128)
    assert "load" in text and "store" in text
    assert "_axpy_kernel" in text
    assert "128" in text  # the block size was compiled in
    assert "program_id" in text


def test_kernel_ir_signature_of_wrong_length_is_an_error():
    with pytest.raises(triton.LaunchError, match="run-time parameters"):
        _axpy_kernel.ir("*fp32,i32", BLOCK=128)


_CLI_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)
'''


def _cli_env():
    env = dict(os.environ)
    env.pop("TRITIUM_BATCH_ELEMENTS", None)
    return env


def test_cli_ir(tmp_path):
    script = tmp_path / "kernels.py"
    script.write_text(_CLI_KERNEL)
    result = subprocess.run([str(TRITIUM_CLI), "ir", f"{script}:copy_kernel", "--signature", "*fp32,*fp32,i32",
                             "-D", "BLOCK=64"], capture_output=True, text=True, timeout=120, env=_cli_env())
    assert result.returncode == 0, result.stderr
    assert "copy_kernel" in result.stdout
    assert "load" in result.stdout and "store" in result.stdout
    assert "64" in result.stdout


_CLI_SCRIPT = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


n = 1000
x = torch.arange(n, dtype=torch.float32)
y = torch.full((n,), 0.5)
out = torch.empty(n)
add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
print("sum", float(out.sum()))
print("module", triton.__name__, tl.__name__)
'''


def test_cli_run_script_importing_triton(tmp_path):
    script = tmp_path / "uses_triton.py"
    script.write_text(_CLI_SCRIPT)
    result = subprocess.run([str(TRITIUM_CLI), "run", str(script)], capture_output=True, text=True, timeout=300,
                            env=_cli_env(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    expected = sum(i + 0.5 for i in range(1000))
    assert f"sum {expected}" in result.stdout
    assert "module tritium tritium.language" in result.stdout


@triton.jit
def _constexpr_block_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


def test_launch_mistakes_name_the_launch_line_and_the_parameter():
    import inspect

    x = torch.zeros(8)
    cases = [
        (lambda: _constexpr_block_kernel[(1,)](x, 8, BLOCK=torch.tensor(8)), "parameter 'BLOCK' is a tl.constexpr"),
        (lambda: _constexpr_block_kernel[(1,)](x), "missing a required argument: 'n'"),
        (lambda: _constexpr_block_kernel[(1, 1, 1, 1)](x, 8, BLOCK=8), "_constexpr_block_kernel[grid]: the grid must"),
        (lambda: _constexpr_block_kernel[(1.5,)](x, 8, BLOCK=8), "the grid must be a tuple of up to 3 integers"),
        (lambda: _constexpr_block_kernel[(1,)](x, 8, 8, 9), "too many positional arguments"),
        (lambda: _constexpr_block_kernel[(1,)](x, 8, BLOCK=8, BLOK=8), "unexpected keyword argument 'BLOK'"),
        (lambda: _constexpr_block_kernel(x, 8, BLOCK=8), "launch it with a grid: _constexpr_block_kernel[grid]"),
    ]
    for launch, message in cases:
        line = inspect.getsourcelines(launch)[1]
        with pytest.raises(triton.LaunchError) as info:
            launch()
        text = str(info.value)
        assert text.startswith(f"{__file__}:{line}: "), text
        assert message in text
    # a zero dimension is legal (empty inputs launch such grids) but warns once, at the launch line
    with pytest.warns(RuntimeWarning, match="zero dimension") as record:
        _constexpr_block_kernel[(0,)](x, 8, BLOCK=8)
    assert record[0].filename == __file__ and record[0].lineno == inspect.currentframe().f_lineno - 1
    assert str(record[0].message).startswith(f"{__file__}:{record[0].lineno}: ")
    assert x.sum() == 0
    compiled = _constexpr_block_kernel.warmup(x, 8, BLOCK=8, grid=(1,))
    with pytest.raises(triton.LaunchError) as info:
        compiled[(1,)](x, 8, 4)  # a constexpr compiled in, launched with another value
    assert str(info.value).startswith(f"{__file__}:")
