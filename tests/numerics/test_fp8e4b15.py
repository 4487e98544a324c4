"""tl.float8e4b15 against what real Triton gave on a Hopper GPU (tests/data/fp8e4b15_gpu.npz, written
by benchmarks/gpu/fp8e4b15_reference.py): every code's value, the conversion of every fp16 bit
pattern and of a set of fp32 inputs (midpoints between codes, their neighbours, specials, a random
sample), bit for bit, on every backend; a dot of two fp8e4b15 tiles within fp32 accumulation of the
fp64 product; and the operations Triton refuses on the type refused with a message."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError

GPU = np.load(Path(__file__).resolve().parents[1] / "data" / "fp8e4b15_gpu.npz")
BLOCK = 1024


@triton.jit
def _decode(x_ptr, f32_ptr, f16_ptr, i32_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(f32_ptr + i, x.to(tl.float32))
    tl.store(f16_ptr + i, x.to(tl.float16))
    tl.store(i32_ptr + i, x.to(tl.int32))


@triton.jit
def _encode(x_ptr, out_ptr, n, ROUND: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m)
    tl.store(out_ptr + i, x.to(tl.float8e4b15, fp_downcast_rounding=ROUND), mask=m)


def _codes(n: int) -> torch.Tensor:
    return torch.full((n,), 0xAA, dtype=torch.uint8)


def test_every_code_decodes_as_on_the_gpu(backend):
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    f32, f16, i32 = torch.empty(256), torch.empty(256, dtype=torch.float16), torch.empty(256, dtype=torch.int32)
    _decode[(1,)](triton.reinterpret(codes, tl.float8e4b15), f32, f16, i32, N=256)
    assert np.array_equal(f32.numpy().view(np.uint32), GPU["decode_f32"].view(np.uint32))
    assert np.array_equal(f16.numpy().view(np.uint16), GPU["decode_f16"].view(np.uint16))
    assert np.array_equal(i32.numpy(), GPU["decode_i32"])


@pytest.mark.parametrize("rounding", [None, "rtz"])
def test_every_fp16_converts_as_on_the_gpu(backend, rounding):
    """The GPU rounds to nearest with ties away from zero and clips to 1.75 whatever rounding is asked."""
    x = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(torch.float16)
    out = _codes(x.numel())
    _encode[(triton.cdiv(x.numel(), BLOCK),)](x, triton.reinterpret(out, tl.float8e4b15), x.numel(), ROUND=rounding,
                                              BLOCK=BLOCK)
    wrong = np.nonzero(out.numpy() != GPU["enc_f16"])[0]
    assert wrong.size == 0, [(hex(int(x.view(torch.int16)[i]) & 0xFFFF), hex(out[i]), hex(GPU["enc_f16"][i]))
                             for i in wrong[:5]]


@pytest.mark.parametrize("rounding", [None, "rtz"])
def test_fp32_converts_as_on_the_gpu(backend, rounding):
    """Midpoints between codes and their fp32 neighbours, NaNs of both signs (+1.75 from fp32),
    infinities and values past 1.75 (clipped), subnormals, a random sample over 2^-30..2^12."""
    x = torch.from_numpy(GPU["in_f32"])
    out = _codes(x.numel())
    _encode[(triton.cdiv(x.numel(), BLOCK),)](x, triton.reinterpret(out, tl.float8e4b15), x.numel(), ROUND=rounding,
                                              BLOCK=BLOCK)
    wrong = np.nonzero(out.numpy() != GPU["enc_f32"])[0]
    assert wrong.size == 0, [(float(x[i]), hex(out[i]), hex(GPU["enc_f32"][i])) for i in wrong[:5]]


def test_the_reference_is_what_the_notes_say():
    notes = json.loads(str(GPU["notes"]))
    assert notes["enc_f16_rtz_same_as_rtne"] and notes["enc_f32_rtz_same_as_rtne"]
    for refused in ("enc_bf16_rtne", "enc_f64_rtne", "enc_i32_rtne", "pairs_add", "pairs_mul", "pairs_lt"):
        assert refused in notes  # Triton did not compile these: tritium refuses them too (below)
    dt = tl.float8e4b15
    facts = notes["dtype"]
    assert (str(dt), repr(dt), dt.primitive_bitwidth, dt.fp_mantissa_width, dt.exponent_bias, dt.is_fp8(),
            dt.is_fp8e4b15()) == (facts["str"], facts["repr"], facts["bits"], facts["mantissa"], facts["bias"],
                                  facts["is_fp8"], facts["is_fp8e4b15"])


@triton.jit
def _dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b))


def test_dot_of_fp8e4b15_tiles(backend):
    """Products of fp8e4b15 values are exact in fp32; 32 of them summed in fp32: within 32 * 2^-24 of
    the sum of |products| from the fp64 product (the GPU's result is within the same bound)."""
    a, b = GPU["dot_a"], GPU["dot_b"]
    c = torch.empty((32, 32))
    _dot[(1,)](triton.reinterpret(torch.from_numpy(a), tl.float8e4b15),
               triton.reinterpret(torch.from_numpy(b), tl.float8e4b15), c, N=32)
    values = GPU["decode_f32"].astype(np.float64)
    exact, scale = values[a] @ values[b], np.abs(values[a]) @ np.abs(values[b])
    bound = 32 * 2.0 ** -24 * scale
    assert np.all(np.abs(c.numpy() - exact) <= bound)
    assert np.all(np.abs(GPU["dot_c"] - exact) <= bound)


@triton.jit
def _select_and_fill(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i, mask=i < N - 2, other=0.5)
    y = tl.where(i % 3 == 0, x, -1.8)  # a number becomes a code: -1.8 rounds to -1.75
    y = tl.where(i % 5 == 0, tl.full((N,), 1e-30, tl.float8e4b15), y)
    tl.store(out_ptr + i, y)


def test_select_load_other_and_constants(backend):
    codes = torch.arange(16, dtype=torch.int32).to(torch.uint8) + 0x70
    out = _codes(16)
    _select_and_fill[(1,)](triton.reinterpret(codes, tl.float8e4b15), triton.reinterpret(out, tl.float8e4b15), N=16)
    i = np.arange(16)
    loaded = np.where(i < 14, codes.numpy(), 0x70)  # 0.5 is code 0x70
    expected = np.where(i % 3 == 0, loaded, 0xFE)
    expected = np.where(i % 5 == 0, 0x00, expected)
    assert out.numpy().tolist() == expected.tolist()


@triton.jit
def _add(x_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(x_ptr + i, x + x)


@triton.jit
def _less(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, tl.load(x_ptr + i) < 1.0)


@triton.jit
def _reduced(x_ptr, out_ptr, N: tl.constexpr, KIND: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    if KIND == "sum":
        tl.store(out_ptr, tl.sum(x, 0).to(tl.float32))
    elif KIND == "argmax":
        tl.store(out_ptr, tl.argmax(x, 0).to(tl.float32))
    else:
        tl.store(out_ptr + tl.arange(0, N), tl.cumsum(x, 0).to(tl.float32))


@triton.jit
def _from(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, tl.load(x_ptr + i).to(tl.float8e4b15))


def test_what_triton_refuses_on_fp8e4b15_is_a_compile_error_at_the_line(backend):
    raw = _codes(16)
    codes = triton.reinterpret(raw, tl.float8e4b15)
    with pytest.raises(CompilationError, match="fp8e4b15 has no arithmetic") as e:
        _add[(1,)](codes, N=16)
    assert "x + x" in str(e.value)
    with pytest.raises(CompilationError, match="fp8e4b15 has no arithmetic"):
        _less[(1,)](codes, torch.empty(16, dtype=torch.bool), N=16)
    for kind in ("sum", "argmax", "cumsum"):
        with pytest.raises(CompilationError, match="fp8e4b15 has no arithmetic"):
            _reduced[(1,)](codes, torch.empty(16), N=16, KIND=kind)
    for source in (torch.bfloat16, torch.float64, torch.int32):
        with pytest.raises(CompilationError, match="from fp16 and fp32 only") as e:
            _from[(1,)](torch.ones(16, dtype=source), codes, N=16)
        assert ".to(tl.float8e4b15)" in str(e.value)
    assert raw.numpy().tolist() == [0xAA] * 16  # nothing ran


@triton.jit
def _printed(x_ptr):
    tl.device_print("v", tl.load(x_ptr + tl.arange(0, 2)))


def test_device_print_shows_values_not_codes(backend, capfd):
    if backend == "cuda":
        pytest.skip("the GPU prints through printf; its format is checked in test_device_print.py")
    _printed[(1,)](triton.reinterpret(torch.tensor([0x70, 0xF8], dtype=torch.uint8), tl.float8e4b15))
    out = capfd.readouterr().out
    assert "v 0.500000" in out and "v -1.000000" in out


def _value_by_definition(code: int) -> float:
    """An fp8e4b15 code's value from the format alone: 1 sign, 4 exponent and 3 mantissa bits,
    exponent bias 15, subnormals at exponent 0, and no infinity or NaN (every code a number)."""
    sign = -1.0 if code & 0x80 else 1.0
    exponent, mantissa = (code >> 3) & 0xF, code & 0x7
    if exponent == 0:
        return sign * 2.0 ** (1 - 15) * (mantissa / 8)
    return sign * 2.0 ** (exponent - 15) * (1 + mantissa / 8)


def test_every_code_decodes_to_the_value_the_format_defines(backend):
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    f32, f16, i32 = torch.empty(256), torch.empty(256, dtype=torch.float16), torch.empty(256, dtype=torch.int32)
    _decode[(1,)](triton.reinterpret(codes, tl.float8e4b15), f32, f16, i32, N=256)
    expected = np.array([_value_by_definition(c) for c in range(256)])
    assert np.array_equal(f32.numpy().astype(np.float64), expected)
    assert np.array_equal(np.signbit(f32.numpy()), np.arange(256) >= 128)  # 0x80 is -0.0
    assert np.array_equal(f16.numpy().astype(np.float64), expected)  # every value is an fp16 value


def test_dot_of_exactly_representable_fp8e4b15_values_equals_numpy_fp64(backend):
    """Codes with exponents 11..15 (magnitudes 1/16..1.875, 4 significant bits): every product and
    every partial sum of 32 of them fits fp32's 24 bits, so the dot must equal the fp64 product."""
    rs = np.random.RandomState(3)
    def codes():
        return (rs.randint(0, 2, (32, 32)) << 7 | rs.randint(11, 16, (32, 32)) << 3 | rs.randint(0, 8, (32, 32)))
    a, b = codes().astype(np.uint8), codes().astype(np.uint8)
    c = torch.empty((32, 32))
    _dot[(1,)](triton.reinterpret(torch.from_numpy(a), tl.float8e4b15),
               triton.reinterpret(torch.from_numpy(b), tl.float8e4b15), c, N=32)
    values = np.array([_value_by_definition(v) for v in range(256)])
    assert np.array_equal(c.numpy().astype(np.float64), values[a] @ values[b])


@triton.jit
def _abs(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, tl.abs(tl.load(x_ptr + i)))


def test_abs_clears_the_sign_of_every_code(backend):
    """Triton computes tl.abs of fp8e4b15 on the bits (the format has no arithmetic)."""
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    out = _codes(256)
    _abs[(1,)](triton.reinterpret(codes, tl.float8e4b15), triton.reinterpret(out, tl.float8e4b15), N=256)
    assert out.numpy().tolist() == [c & 0x7F for c in range(256)]
    values = np.array([_value_by_definition(v) for v in range(256)])
    assert np.array_equal(values[out.numpy()], np.abs(values))


@triton.jit
def _matmul_loop(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BK)
    acc = tl.zeros((M, N), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc=acc, max_num_imprecise_acc=32)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def test_triton_testing_helpers_hand_kernels_fp8e4b15_codes(backend):
    """Triton's test suite builds fp8 inputs with numpy_random (int8 codes) and to_triton, which
    reinterprets them as the named float8 type: a kernel must see fp8e4b15 values, not int8 integers."""
    from tritium._internal_testing import numpy_random, to_numpy, to_triton
    A, B = numpy_random((32, 64), dtype_str="float8e4b15"), numpy_random((64, 32), dtype_str="float8e4b15")
    a, b = to_triton(A, dst_type="float8e4b15"), to_triton(B, dst_type="float8e4b15")
    assert isinstance(a, triton.TensorWrapper) and a.dtype == tl.float8e4b15 and a.base.dtype == torch.int8
    assert np.array_equal(to_numpy(a), A)
    c = torch.empty((32, 32))
    _matmul_loop[(1,)](a, b, c, M=32, N=32, K=64, BK=32)
    values = np.array([_value_by_definition(v) for v in range(256)])
    exact = values[A.view(np.uint8)] @ values[B.view(np.uint8)]
    assert np.allclose(c.numpy(), exact, rtol=2e-6, atol=0)
