"""The same kernels under tritium's CUDA backend and under Triton, on the same GPU and inputs, give the
same bits: elementwise math (Triton's instruction choices: ex2.approx for exp, div.full for ``/``,
libdevice for log/erf/sin/cos, ...), casts with each rounding mode, and Philox.

Runs where there is a CUDA GPU with Triton and torch installed (the device machine); skipped
elsewhere. Each kernel's source is written once and imported twice, once with ``import tritium as
triton`` and once with the real Triton. Two NaNs count as the same result whatever their payload
(PTX leaves the payload of a NaN result to the hardware).

The bits of libdevice's functions depend on libdevice's version (``erf``'s polynomial for |x| >= 1
changed between CUDA releases): tritium links the copy an installed Triton ships, so both link the
same file.
"""
from __future__ import annotations

import importlib.util
import os
import sys

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)
if importlib.util.find_spec("triton") is None:
    pytest.skip("needs Triton beside tritium", allow_module_level=True)

KERNELS = '''
import {lib} as triton
import {lib}.language as tl


@triton.jit
def unary(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if OP == "exp":
        r = tl.exp(x)
    elif OP == "exp2":
        r = tl.exp2(x)
    elif OP == "log":
        r = tl.log(x)
    elif OP == "log2":
        r = tl.log2(x)
    elif OP == "erf":
        r = tl.erf(x)
    elif OP == "sqrt":
        r = tl.sqrt(x)
    elif OP == "sqrt_rn":
        r = tl.sqrt_rn(x)
    elif OP == "rsqrt":
        r = tl.rsqrt(x)
    elif OP == "sigmoid":
        r = tl.sigmoid(x)
    elif OP == "sin":
        r = tl.sin(x)
    elif OP == "cos":
        r = tl.cos(x)
    elif OP == "floor":
        r = tl.floor(x)
    elif OP == "ceil":
        r = tl.ceil(x)
    else:
        r = tl.abs(x)
    tl.store(out_ptr + offs, r, mask=m)


@triton.jit
def binary(x_ptr, y_ptr, z_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    if OP == "div":
        r = x / y
    elif OP == "div_rn":
        r = tl.div_rn(x, y)
    elif OP == "fdiv":
        r = tl.fdiv(x, y)
    elif OP == "fma":
        r = tl.fma(x, y, tl.load(z_ptr + offs, mask=m))
    elif OP == "maximum":
        r = tl.maximum(x, y)
    elif OP == "minimum":
        r = tl.minimum(x, y)
    elif OP == "maximum_nan":
        r = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "minimum_nan":
        r = tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)
    else:
        r = x * y + tl.load(z_ptr + offs, mask=m)
    tl.store(out_ptr + offs, r, mask=m)


@triton.jit
def row_extremum(x_ptr, out_ptr, index_ptr, stride, OP: tl.constexpr, N: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * stride + tl.arange(0, N))
    if OP == "max":
        tl.store(out_ptr + row, tl.max(x, 0))
    elif OP == "min":
        tl.store(out_ptr + row, tl.min(x, 0))
    elif OP == "argmax":
        tl.store(index_ptr + row, tl.argmax(x, 0))
    else:
        tl.store(index_ptr + row, tl.argmin(x, 0))


@triton.jit
def cast(x_ptr, out_ptr, n, ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty, fp_downcast_rounding=ROUNDING), mask=m)


@triton.jit
def convert(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m).to(out_ptr.dtype.element_ty), mask=m)


@triton.jit
def philox(out_ptr, out_int_ptr, seed, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    if KIND == "rand":
        tl.store(out_ptr + offs, tl.rand(seed, offs), mask=m)
    elif KIND == "randn":
        tl.store(out_ptr + offs, tl.randn(seed, offs), mask=m)
    else:
        tl.store(out_int_ptr + offs, tl.randint(seed, offs), mask=m)
'''


def _load(lib: str, folder):
    path = os.path.join(folder, f"bits_kernels_{lib}.py")
    with open(path, "w") as f:
        f.write(KERNELS.format(lib=lib))
    spec = importlib.util.spec_from_file_location(f"bits_kernels_{lib}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bits")
    saved = os.environ.pop("TRITIUM_BACKEND", None)
    try:
        yield _load("tritium", str(folder)), _load("triton", str(folder))
    finally:
        if saved is not None:
            os.environ["TRITIUM_BACKEND"] = saved


N = 1 << 20
BLOCK = 1024


def _inputs(seed: int):
    """fp32 values over the whole range: random bit patterns (denormals, infinities and NaNs
    included), normal values of moderate size, and the special values."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    bits = torch.randint(-2 ** 31, 2 ** 31 - 1, (N // 2,), device="cuda", dtype=torch.int32, generator=generator)
    wide = bits.view(torch.float32)
    moderate = torch.randn(N // 2 - 16, device="cuda", generator=generator) * 8
    special = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1.0, -1.0, 0.5, 2.0, 1e-45,
                            -1e-45, 1.17549435e-38, 3.4028235e38, -3.4028235e38, 88.72, -103.9], device="cuda")
    return torch.cat([wide, moderate, special])


def _assert_same_bits(ours, theirs, what: str):
    if ours.dtype.is_floating_point:
        both_nan = torch.isnan(ours.float()) & torch.isnan(theirs.float())
        width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[ours.element_size()]
        differ = (ours.view(width) != theirs.view(width)) & ~both_nan
    else:
        differ = ours != theirs
    count = int(differ.sum())
    if count:
        index = int(differ.nonzero()[0])
        raise AssertionError(f"{what}: {count} of {ours.numel()} results differ from Triton's; first at {index}: "
                             f"tritium {ours[index].item()!r}, Triton {theirs[index].item()!r}")


def _grid(n):
    return ((n + BLOCK - 1) // BLOCK,)


@pytest.mark.parametrize("op", ["exp", "exp2", "log", "log2", "erf", "sqrt", "sqrt_rn", "rsqrt", "sigmoid", "sin",
                                "cos", "floor", "ceil", "abs"])
def test_unary_math_gives_tritons_bits(modules, op):
    x = _inputs(1)
    results = []
    for module in modules:
        out = torch.empty_like(x)
        module.unary[_grid(N)](x, out, N, OP=op, BLOCK=BLOCK)
        results.append(out)
    torch.cuda.synchronize()
    _assert_same_bits(*results, op)


_SPECIAL = [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1.0, -1.0, 1e-45, -1e-45]


def _special_pairs(seed: int, n: int):
    """Values drawn from zeros of both signs, NaN, infinities and denormals: the cases where min and
    max implementations differ."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    table = torch.tensor(_SPECIAL, device="cuda")
    return table[torch.randint(0, len(_SPECIAL), (n,), device="cuda", generator=generator)]


@pytest.mark.parametrize("op", ["div", "div_rn", "fdiv", "fma", "maximum", "minimum", "maximum_nan", "minimum_nan",
                                "mul_add"])
def test_binary_math_gives_tritons_bits(modules, op):
    x, y, z = _inputs(2), _inputs(3), _inputs(4)
    if op.startswith(("max", "min")):  # half the pairs from the special values
        x[: N // 2], y[: N // 2] = _special_pairs(7, N // 2), _special_pairs(8, N // 2)
    results = []
    for module in modules:
        out = torch.empty_like(x)
        module.binary[_grid(N)](x, y, z, out, N, OP=op, BLOCK=BLOCK)
        results.append(out)
    torch.cuda.synchronize()
    _assert_same_bits(*results, op)


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("stride", [4096, 4097])  # 16-byte accesses (four live registers at the warp levels), or not
def test_row_extrema_give_tritons_bits_and_the_interpreters(modules, op, stride):
    # max and min are order-free on the GPU (ties of zeros and NaNs included), so every reduction
    # order gives the same bits: Triton's, and the interpreter's but for a NaN's payload
    rows, width = 256, 4096
    x = _special_pairs(9, rows * stride).reshape(rows, stride)  # rows 128 on: NaN in nearly every one
    x[: rows // 2] = _inputs(10)[: rows // 2 * stride].reshape(rows // 2, stride)  # random bits, moderate values
    x[: rows // 4] = torch.where(torch.rand(rows // 4, stride, device="cuda") < 0.1, 0.0, x[: rows // 4].nan_to_num(
        0.0, float("inf"), -float("inf")))  # NaN-free, with zeros of both signs and repeated values
    x[: rows // 8] = -x[: rows // 8]
    x[-8:] = float("nan")
    x[-16:-8] = torch.where(torch.rand(8, stride, device="cuda") < 0.5, 0.0, -0.0)
    results = []
    for module in modules:
        out = torch.full((rows,), 7.0, device="cuda")
        index = torch.full((rows,), -1, device="cuda", dtype=torch.int32)
        module.row_extremum[(rows,)](x, out, index, stride, OP=op, N=width, num_warps=8)
        results.append(index if op.startswith("arg") else out)
    torch.cuda.synchronize()
    ours = results[0]
    if op.startswith("arg"):
        # With a NaN in the row, Triton's argmax is whichever NaN-free comparison its tree order ends
        # with; tritium's is the first NaN's index, numpy's answer, on every backend
        clean = ~torch.isnan(x[:, :width]).any(dim=1)
        assert int(clean.sum()) >= rows // 4
        results = [r[clean] for r in results]
    _assert_same_bits(*results, f"{op} over rows of {width} (stride {stride})")
    expected = torch.full((rows,), 7.0)
    expected_index = torch.full((rows,), -1, dtype=torch.int32)
    modules[0].row_extremum[(rows,)](x.cpu(), expected, expected_index, stride, OP=op, N=width, num_warps=8)
    _assert_same_bits(ours.cpu(), expected_index if op.startswith("arg") else expected,
                      f"{op} over rows of {width} (stride {stride}), the GPU against the CPU backend")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float8_e5m2", "float8_e4m3fn"])
@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
def test_downcasts_give_tritons_bits(modules, dtype, rounding):
    if rounding == "rtz" and dtype != "float16":
        pytest.skip("Triton rounds toward zero only for fp32 -> fp16")
    x = _inputs(5)
    results = []
    for module in modules:
        out = torch.empty(N, device="cuda", dtype=getattr(torch, dtype))
        module.cast[_grid(N)](x, out, N, ROUNDING=rounding, BLOCK=BLOCK)
        results.append(out)
    torch.cuda.synchronize()
    _assert_same_bits(*results, f"fp32 -> {dtype} ({rounding})")


@pytest.mark.parametrize("source, target", [("float32", "int32"), ("float32", "int8"), ("float32", "uint32"),
                                            ("int32", "float32"), ("int64", "float32"), ("float16", "float32"),
                                            ("bfloat16", "float32"), ("float64", "float32")])
def test_conversions_give_tritons_bits(modules, source, target):
    x = _inputs(6)
    if source.startswith("int"):
        x = (x.nan_to_num(0.0, 0.0, 0.0).clamp(-2e9, 2e9)).to(getattr(torch, source))
    else:
        x = x.to(getattr(torch, source))
    if target.startswith(("int", "uint")):  # out of range is undefined in both: compare the defined part
        x = x.nan_to_num(0.0, 0.0, 0.0).clamp(-100.0 if target != "uint32" else 0.0, 100.0)
    results = []
    for module in modules:
        out = torch.empty(N, device="cuda", dtype=getattr(torch, target))
        module.convert[_grid(N)](x, out, N, BLOCK=BLOCK)
        results.append(out)
    torch.cuda.synchronize()
    _assert_same_bits(*results, f"{source} -> {target}")


@pytest.mark.parametrize("kind", ["rand", "randn", "randint"])
def test_philox_gives_tritons_bits(modules, kind):
    results = []
    for module in modules:
        out = torch.empty(N, device="cuda")
        out_int = torch.empty(N, device="cuda", dtype=torch.int32)
        module.philox[_grid(N)](out, out_int, 1234, N, KIND=kind, BLOCK=BLOCK)
        results.append(out_int if kind == "randint" else out)
    torch.cuda.synchronize()
    _assert_same_bits(*results, kind)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
