"""The native CPU backend against the interpreter, the executable definition of the IR.

Each kernel runs on both backends on the same inputs; where the IR spec fixes every bit (integer
arithmetic and its edge cases, casts with their rounding and saturation, reductions in the spec's
fixed tree, scans, sorts, atomics) the outputs must be equal bit for bit; dot products, whose
summation order differs, within the rounding of K fp32 additions. Errors (out-of-bounds accesses,
device_assert) must be the interpreter's: the same class, the kernel's line, program and lane,
and nothing written. The rest of the suite's kernels run on this backend too (``make test``).
"""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.errors import DeviceAssertionError, OutOfBoundsError
from tritium.backends import registry


def _both(kernel, grid, make_args, **meta):
    """(interpreter outputs, cpu outputs): ``make_args()`` builds fresh numpy arguments each time."""
    results = []
    for name in ("interpreter", "cpu"):
        import os

        os.environ["TRITIUM_BACKEND"] = name
        try:
            args = make_args()
            kernel[grid](*args, **meta)
            results.append([a.copy() for a in args if isinstance(a, np.ndarray)])
            if name == "interpreter":
                arrays = len(results[0])
                assert arrays, "a differential test needs an output array"
        finally:
            os.environ.pop("TRITIUM_BACKEND", None)
    return results


def _assert_same_bits(reference, compiled):
    for r, c in zip(reference, compiled):
        assert r.dtype == c.dtype and r.shape == c.shape
        rb = r.view(np.uint8).reshape(-1)
        cb = c.view(np.uint8).reshape(-1)
        bad = np.flatnonzero(rb != cb)
        assert bad.size == 0, f"{bad.size} bytes differ; first at byte {bad[0]}: {r.reshape(-1)[:8]} vs {c.reshape(-1)[:8]}"


# integer edge cases ------------------------------------------------------------------------------
@triton.jit
def _int_ops(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    a = tl.load(a_ptr + i)
    b = tl.load(b_ptr + i)
    tl.store(out_ptr + 0 * N + i, a // b)
    tl.store(out_ptr + 1 * N + i, a % b)
    tl.store(out_ptr + 2 * N + i, a << (b & 63))
    tl.store(out_ptr + 3 * N + i, a >> (b & 63))
    tl.store(out_ptr + 4 * N + i, tl.maximum(a, b) - tl.minimum(a, b))
    tl.store(out_ptr + 5 * N + i, tl.umulhi(a, b))
    tl.store(out_ptr + 6 * N + i, -a + (a ^ b) * 3)
    tl.store(out_ptr + 7 * N + i, tl.abs(a))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64])
def test_integer_ops_and_their_edge_cases_match_the_interpreter_bit_for_bit(dtype):
    n = 256
    info = np.iinfo(dtype)

    def make():
        rng = np.random.default_rng(1)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        a[:4] = [info.min, info.min, 7, 0]
        b[:4] = [-1 if info.min < 0 else 1, 0, 0, 0]
        b[4:12] = [0, 1, 31, 32, 33, 63, 64, 200 if info.max > 200 else 5]
        return [a, b, np.zeros(8 * n, dtype=dtype)]

    reference, compiled = _both(_int_ops, (1,), make, N=n)
    _assert_same_bits(reference, compiled)


# casts ---------------------------------------------------------------------------------------------
@triton.jit
def _cast_kernel(x_ptr, out_ptr, N: tl.constexpr, TARGET: tl.constexpr, ROUNDING: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(out_ptr + i, x.to(TARGET, fp_downcast_rounding=ROUNDING))


_FLOAT_TARGETS = [(tl.float16, np.float16), (tl.bfloat16, "bfloat16"), (tl.float8e4nv, "float8_e4m3fn"),
                  (tl.float8e5, "float8_e5m2")]


def _numpy_dtype(spec):
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, spec)) if isinstance(spec, str) else np.dtype(spec)


@pytest.mark.parametrize("source", [np.float32, np.float64])
@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
@pytest.mark.parametrize("target", _FLOAT_TARGETS, ids=lambda t: str(t[0]))
def test_float_narrowing_rounds_and_saturates_as_the_interpreter(source, rounding, target):
    n = 4096
    rng = np.random.default_rng(2)
    width = 32 if source == np.float32 else 64
    bits = rng.integers(0, 2 ** width, n, dtype=np.uint64).astype(f"uint{width}")
    x = bits.view(source).copy()
    x[: n // 2] = (rng.standard_normal(n // 2) * rng.choice([1e-8, 1e-3, 1, 300, 6e4], n // 2)).astype(source)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 57344.0 * 1.5]
    tl_target, np_target = target
    out_dtype = _numpy_dtype(np_target)
    reference, compiled = _both(_cast_kernel, (1,), lambda: [x.copy(), np.zeros(n, dtype=out_dtype)], N=n,
                                TARGET=tl_target, ROUNDING=rounding)
    _assert_same_bits(reference, compiled)


@triton.jit
def _to_int_kernel(x_ptr, out_ptr, N: tl.constexpr, TARGET: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, tl.load(x_ptr + i).to(TARGET))


@pytest.mark.parametrize("target,np_target", [(tl.int8, np.int8), (tl.int32, np.int32), (tl.uint32, np.uint32),
                                              (tl.int64, np.int64), (tl.float32, np.float32)])
@pytest.mark.parametrize("source", [np.float32, np.float16, np.int64, np.uint8])
def test_conversions_to_ints_saturate_and_from_ints_round_as_the_interpreter(target, np_target, source):
    n = 1024
    rng = np.random.default_rng(3)
    if np.dtype(source).kind == "f":
        x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 12, n)).astype(source)
        x[:5] = [np.nan, np.inf, -np.inf, -0.0, 2.0**31]
    else:
        info = np.iinfo(source)
        x = rng.integers(info.min, info.max, n, dtype=source, endpoint=True)
    reference, compiled = _both(_to_int_kernel, (1,), lambda: [x.copy(), np.zeros(n, dtype=np_target)], N=n,
                                TARGET=target)
    _assert_same_bits(reference, compiled)


# reductions, scans, sorts -----------------------------------------------------------------------------
@triton.jit
def _reductions(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)[:, None]
    c = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + r * N + c)
    tl.store(out_ptr + tl.arange(0, N), tl.sum(x, axis=0))
    tl.store(out_ptr + N + tl.arange(0, M), tl.sum(x, axis=1))
    tl.store(out_ptr + N + M + tl.arange(0, N), tl.max(x, axis=0))
    tl.store(out_ptr + 2 * N + M + tl.arange(0, M), tl.min(x, axis=1))
    tl.store(out_ptr + 2 * N + 2 * M + tl.arange(0, N), tl.argmax(x, axis=0).to(tl.float32))
    tl.store(out_ptr + 3 * N + 2 * M + tl.arange(0, M), tl.argmin(x, axis=1).to(tl.float32))
    tl.store(out_ptr + 3 * N + 3 * M + tl.arange(0, M), tl.cumsum(tl.sum(x * x, axis=1), axis=0))
    tl.store(out_ptr + 3 * N + 4 * M + tl.arange(0, N), tl.sort(tl.sum(x, axis=0), descending=True))


def test_reductions_scans_and_sorts_follow_the_interpreter_tree_bit_for_bit():
    m, n = 16, 64
    rng = np.random.default_rng(4)
    x = rng.standard_normal((m, n)).astype(np.float32) * 100
    x[3, 5] = x[3, 9] = x.max() + 1  # ties: the first index wins
    x[7, 7] = -0.0
    reference, compiled = _both(_reductions, (1,), lambda: [x.copy(), np.zeros(4 * n + 5 * m, np.float32)],
                                M=m, N=n)
    _assert_same_bits(reference, compiled)


@triton.jit
def _combine(a, b):
    return a * 2 + b


@triton.jit
def _custom_reduce_scan(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(out_ptr + i, tl.associative_scan(x, 0, _combine))
    tl.store(out_ptr + N, tl.reduce(x, 0, _combine))


def test_custom_combine_reduce_and_scan_match_the_interpreter():
    n = 32
    x = (np.arange(n) % 7 - 3).astype(np.int32)
    reference, compiled = _both(_custom_reduce_scan, (1,), lambda: [x.copy(), np.zeros(n + 1, np.int32)], N=n)
    _assert_same_bits(reference, compiled)


# control flow, loops with carried blocks -----------------------------------------------------------------
@triton.jit
def _loops(x_ptr, out_ptr, n, K: tl.constexpr, B: tl.constexpr):
    pid = tl.program_id(0)
    i = tl.arange(0, B)
    acc = tl.zeros((B,), tl.float32)
    other = tl.full((B,), 1.0, tl.float32)
    for k in range(0, K):
        x = tl.load(x_ptr + k * B + i, mask=i < n, other=0.0)
        acc, other = other * 0.5 + x, acc  # a swap: both read before either is written
    count = 0
    total = tl.sum(acc, axis=0)
    while total > 1.0 and count < 50:
        total = total * 0.5
        count += 1
    if pid % 2 == 0:
        y = acc + total
    else:
        y = other - count
    tl.store(out_ptr + pid * B + i, y, mask=i < n)


def test_loops_carry_blocks_and_scalars_and_branches_yield_blocks_as_the_interpreter():
    b, k = 64, 5
    x = np.random.default_rng(5).standard_normal(k * b).astype(np.float32)
    reference, compiled = _both(_loops, (4,), lambda: [x.copy(), np.zeros(4 * b, np.float32), 50], K=k, B=b)
    _assert_same_bits(reference, compiled)


# dot ----------------------------------------------------------------------------------------------------
@triton.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    c = tl.dot(a, b, input_precision=PRECISION)
    tl.store(c_ptr + rm * N + rn, c.to(c_ptr.dtype.element_ty))


@pytest.mark.parametrize("dtype,precision", [(np.float32, "ieee"), (np.float32, "tf32"), (np.float16, "ieee"),
                                             (np.int8, "ieee")])
@pytest.mark.parametrize("shape", [(16, 16, 32), (32, 64, 32), (64, 32, 128)])
def test_dot_agrees_with_the_interpreter_within_the_rounding_of_its_sums(dtype, precision, shape):
    m, n, k = shape
    rng = np.random.default_rng(6)
    if dtype == np.int8:
        a, b = rng.integers(-128, 127, (m, k), dtype=np.int8), rng.integers(-128, 127, (k, n), dtype=np.int8)
        out = np.int32
    else:
        a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
        out = np.float32
    reference, compiled = _both(_dot_kernel, (1,), lambda: [a.copy(), b.copy(), np.zeros((m, n), out)], M=m, N=n,
                                K=k, PRECISION=precision)
    ref, got = reference[2], compiled[2]
    if dtype == np.int8:
        assert np.array_equal(ref, got)
    else:
        # K fp32 roundings of partial sums bounded by sum |a||b|: k * 2**-24 of it, with room for the order
        bound = k * 2.0**-23 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
        assert np.all(np.abs(ref.astype(np.float64) - got) <= bound + 1e-30)


@triton.jit
def _dot_loop_kernel(a_ptr, b_ptr, c_ptr, M, N, K, OTHER: tl.constexpr, PRECISION: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=OTHER)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=OTHER)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("dtype,precision", [(np.float32, "tf32"), (np.float32, "ieee"), (np.float16, "ieee"),
                                             ("bfloat16", "ieee")])
def test_a_dot_loop_over_masked_tiles_agrees_with_the_interpreter(dtype, precision):
    """The tiles are loaded in the form the dot reads (converted, tf32-truncated), their masked lanes
    holding ``other`` converted the same way, and the accumulator is added to in place: every tile
    shape here has tails in M, N and K, and ``other`` is not 0, so a lane that missed the conversion
    would show."""
    import ml_dtypes

    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    m, n, k, bm, bn, bk, other = 40, 50, 70, 32, 32, 32, 0.5
    rng = np.random.default_rng(8)
    a = rng.standard_normal((m, k)).astype(np_dtype)
    b = rng.standard_normal((k, n)).astype(np_dtype)
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    reference, compiled = _both(_dot_loop_kernel, grid, lambda: [a.copy(), b.copy(), np.zeros((m, n), np.float32), m, n, k],
                                OTHER=other, PRECISION=precision, BM=bm, BN=bn, BK=bk)
    ref, got = reference[2].astype(np.float64), compiled[2].astype(np.float64)
    # the padded K lanes multiply `other` by the rows' and columns' own padding: bound the sums with them
    kp = triton.cdiv(k, bk) * bk
    a_pad = np.full((m, kp), other)
    a_pad[:, :k] = a.astype(np.float64)
    b_pad = np.full((kp, n), other)
    b_pad[:k, :] = b.astype(np.float64)
    bound = kp * 2.0**-23 * (np.abs(a_pad) @ np.abs(b_pad))
    assert np.all(np.abs(ref - got) <= bound), np.max(np.abs(ref - got) - bound)
    # the interpreter sums each tile's exact products in fp64 and rounds once per tile into the fp32
    # accumulator; tf32 truncation moves each input by less than 2^-10 of itself, so each product by
    # less than 2^-9 (plus 2^-20) of |a||b|
    exact = a_pad @ b_pad
    per_product = (2.0**-9 + 2.0**-20) if precision == "tf32" else 0.0
    magnitude = np.abs(a_pad) @ np.abs(b_pad)
    assert np.all(np.abs(ref - exact) <= (per_product + (kp // bk) * 2.0**-24) * magnitude)


# atomics -------------------------------------------------------------------------------------------------
@triton.jit
def _atomics(counter_ptr, fmax_ptr, slots_ptr, x_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + tl.program_id(0) * N + i)
    tl.atomic_add(counter_ptr + i % 4, 1)
    tl.atomic_max(fmax_ptr + i % 8, x)
    tl.atomic_cas(slots_ptr + tl.program_id(0), 0, tl.program_id(0) + 1)


def test_atomics_accumulate_over_programs_and_threads():
    n, programs = 64, 300
    x = np.random.default_rng(7).standard_normal(programs * n).astype(np.float32)
    x[5] = np.nan
    reference, compiled = _both(_atomics, (programs,), lambda: [np.zeros(4, np.int32), np.full(8, -np.inf, np.float32),
                                                                np.zeros(programs, np.int32), x.copy()], N=n)
    _assert_same_bits(reference, compiled)
    assert compiled[0].tolist() == [programs * n // 4] * 4


# errors ---------------------------------------------------------------------------------------------------
@triton.jit
def _unmasked_copy(x_ptr, y_ptr, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y_ptr + i, tl.load(x_ptr + i) + 1)


def test_an_out_of_bounds_load_names_the_line_program_lane_and_offset_and_writes_nothing(monkeypatch):
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    x = np.arange(100, dtype=np.float32)
    y = np.full(100, -1.0, dtype=np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        _unmasked_copy[(4,)](x, y, 100, B=32)
    message = str(info.value)
    assert "test_cpu_backend.py" in message and "tl.load(x_ptr + i)" in message
    assert "program (3, 0, 0), lane 4 touches element offset 100 of 'x_ptr', a tensor of 100 elements" in message
    assert "; 28 lanes of this program are out of bounds" in message  # offsets 100..127
    assert info.value.program_id == (3, 0, 0) and info.value.offset == 100 and info.value.tensor == "x_ptr"
    assert np.all(y[96:] == -1.0), "the failing program wrote nothing"
    monkeypatch.setenv("TRITIUM_BACKEND", "interpreter")
    with pytest.raises(OutOfBoundsError) as on_the_interpreter:
        _unmasked_copy[(4,)](x, y, 100, B=32)
    assert str(on_the_interpreter.value).splitlines()[0] == message.splitlines()[0], "the interpreter's words"


@triton.jit
def _scaled_softmax_rows(x_ptr, w_ptr, y_ptr, n_cols, w_cols, BLOCK: tl.constexpr):
    """Rows narrower than the block, as a softmax over a hidden size of 768 writes them: the mask
    leaves the same last lanes out in every program, and those lanes' exp sees -inf."""
    row = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row + cols, mask=cols < n_cols, other=-float("inf"))
    w = tl.load(w_ptr + cols, mask=cols < w_cols, other=0.0)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row + cols, e / tl.sum(e, axis=0) * w, mask=cols < n_cols)


def test_rows_narrower_than_their_block_match_the_interpreter_and_numpy():
    rows, cols = 24, 300
    x = np.random.default_rng(11).standard_normal((rows, cols)).astype(np.float32)
    w = np.random.default_rng(12).standard_normal(cols).astype(np.float32)
    reference, compiled = _both(_scaled_softmax_rows, (rows,), lambda: [x.copy(), w.copy(), np.full((rows, cols), 7.0,
                                                                        np.float32), cols, cols], BLOCK=512)
    _assert_same_bits(reference, compiled)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(compiled[2], e / e.sum(axis=1, keepdims=True) * w, rtol=1e-5, atol=1e-7)


def test_a_mask_wider_than_its_tensor_is_caught_at_its_first_bad_lane(monkeypatch):
    """The last lanes of a narrow row are outside their tensor in every program; only the active
    ones are checked (by the first and the last active lane): a mask one lane too wide fails at
    that lane, with the count of bad lanes, on both backends alike."""
    rows, cols = 4, 300
    x = np.random.default_rng(13).standard_normal((rows, cols)).astype(np.float32)
    y = np.full((rows, cols), 7.0, np.float32)
    messages = []
    for name in ("cpu", "interpreter"):
        monkeypatch.setenv("TRITIUM_BACKEND", name)
        _scaled_softmax_rows[(rows,)](x, np.ones(cols, np.float32), y, cols, cols, BLOCK=512)  # in bounds
        with pytest.raises(OutOfBoundsError) as info:
            _scaled_softmax_rows[(rows,)](x, np.ones(cols - 3, np.float32), y, cols, cols, BLOCK=512)
        assert info.value.offset == cols - 3 and info.value.tensor == "w_ptr" and info.value.program_id == (0, 0, 0)
        messages.append(str(info.value).splitlines()[0])
    assert "; 3 lanes of this program are out of bounds" in messages[0]
    assert messages[0] == messages[1], "the interpreter's words"


@triton.jit
def _copy_from_behind(x_ptr, y_ptr, shift, start, BLOCK: tl.constexpr):
    """Lanes from ``start`` on read ``shift`` elements behind themselves: the run's first lanes lie
    before the tensor, and only the mask keeps them out."""
    cols = tl.arange(0, BLOCK)
    active = cols >= start
    tl.store(y_ptr + cols, tl.load(x_ptr + cols - shift, mask=active, other=0.0), mask=active)


def test_a_run_starting_before_its_tensor_is_checked_at_its_first_active_lane(monkeypatch):
    x = np.arange(1, 65, dtype=np.float32)
    messages = []
    for name in ("cpu", "interpreter"):
        monkeypatch.setenv("TRITIUM_BACKEND", name)
        y = np.full(64, -1.0, np.float32)
        _copy_from_behind[(1,)](x, y, 3, 3, BLOCK=64)  # lanes 3.. read x[0..60]: in bounds
        np.testing.assert_array_equal(y, np.concatenate([np.full(3, -1.0, np.float32), x[:61]]))
        with pytest.raises(OutOfBoundsError) as info:
            _copy_from_behind[(1,)](x, y, 3, 1, BLOCK=64)  # lanes 1 and 2 read offsets -2 and -1
        assert info.value.offset == -2 and info.value.tensor == "x_ptr"
        messages.append(str(info.value).splitlines()[0])
    assert "; 2 lanes of this program are out of bounds" in messages[0]
    assert messages[0] == messages[1], "the interpreter's words"


def test_repeated_launches_through_the_direct_launcher_are_still_bounds_checked(monkeypatch):
    """Repeated launches with torch tensors take the direct launcher (no generic argument checks):
    the bounds it passes are each launch's own, so a tensor too small is still caught."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    x = torch.arange(128, dtype=torch.float32)
    for _ in range(3):
        y = torch.full((128,), -1.0)
        _unmasked_copy[(4,)](x, y, 128, B=32)
        assert torch.equal(y, x + 1)
    assert any(direct is not None for _, direct in _unmasked_copy._fast.values())
    small, y = torch.arange(100, dtype=torch.float32), torch.full((128,), -1.0)
    with pytest.raises(OutOfBoundsError, match="element offset 100 of 'x_ptr', a tensor of 100 elements"):
        _unmasked_copy[(4,)](small, y, 128, B=32)
    transposed = torch.arange(256, dtype=torch.float32).reshape(16, 16).t()  # not contiguous: 256 elements
    y = torch.full((128,), -1.0)
    _unmasked_copy[(4,)](transposed, y, 128, B=32)
    assert torch.equal(y, torch.arange(128, dtype=torch.float32) + 1)  # the first 128 elements in memory


@triton.jit
def _asserting(x_ptr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.device_assert(x >= 0, "x must be non-negative")


def test_device_assert_reports_the_program_and_lane(monkeypatch):
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    x = np.zeros(16, np.float32)
    x[11] = -1
    with pytest.raises(DeviceAssertionError, match=r"program \(0, 0, 0\), lane 11: x must be non-negative"):
        _asserting[(1,)](x, B=16)


# the launch -----------------------------------------------------------------------------------------------
@triton.jit
def _scale(x_ptr, y_ptr, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    m = i < n
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) * 3.0, mask=m)


def test_threads_split_the_grid_and_every_program_runs_once(monkeypatch):
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    n = (1 << 20) + 17
    x = np.random.default_rng(8).standard_normal(n).astype(np.float32)
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("TRITIUM_NUM_THREADS", threads)
        y = np.zeros(n, np.float32)
        _scale[(triton.cdiv(n, 256),)](x, y, n, B=256)
        assert np.array_equal(y, x * np.float32(3.0))


def test_the_loop_is_vectorized_and_the_object_is_cached_on_disk(monkeypatch):
    from tritium.backends.cpu import CPUBackend

    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    compiled = _scale.warmup(np.zeros(4, np.float32), np.zeros(4, np.float32), 4, B=1024, grid=(1,))
    assembly = compiled.asm["asm"]
    assert "vmulps" in assembly and ("%ymm" in assembly or "%zmm" in assembly)
    assert registry.get("cpu").wait_for_optimized_code(timeout=120)  # stored once the optimized code is in
    calls = []
    original = CPUBackend.compile
    monkeypatch.setattr(CPUBackend, "compile", lambda self, *a: calls.append(1) or original(self, *a))
    fresh = triton.jit(_scale.fn)
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    fresh[(1,)](x, y, 8, B=1024)
    assert calls == [] and np.array_equal(y, 3 * x), "the object came from the disk cache"


@triton.jit
def _row_softmax(x_ptr, y_ptr, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    x = tl.load(x_ptr + i)
    e = tl.exp(x - tl.max(x, 0))
    tl.store(y_ptr + i, e / tl.sum(e, 0))


def test_blocks_larger_than_a_thread_stack_live_in_scratch_memory(monkeypatch):
    """Four 4 MiB buffers per program, two programs on two threads: more than a thread's stack."""
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.setenv("TRITIUM_NUM_THREADS", "2")
    b = 1 << 20
    x = np.random.default_rng(9).standard_normal(2 * b).astype(np.float32)
    y = np.zeros_like(x)
    _row_softmax[(2,)](x, y, B=b)
    rows = x.reshape(2, b).astype(np.float64)
    ref = np.exp(rows - rows.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    assert np.abs(y.reshape(2, b) - ref).max() < 1e-9


@triton.jit
def _constancy_gather(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    o = tl.max_constancy(tl.multiple_of((i // 4) * 16, 16), 4)
    tl.store(out_ptr + i, tl.load(x_ptr + 64 + o))


def test_a_kernel_on_which_llvm_asserts_compiles_without_vectorizing(monkeypatch):
    """LLVM 22's loop vectorizer stops the process with a failed assertion on this loop (its two cost
    models disagree); the compilation runs in a child process and is retried without vectorization."""
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    x = np.arange(512, dtype=np.float32)
    out = np.zeros(16, np.float32)
    _constancy_gather[(1,)](x, out, N=16)
    assert out.tolist() == (64 + (np.arange(16) // 4) * 16).astype(np.float32).tolist()


def test_an_unexpected_exception_inside_a_backend_is_an_internal_error_naming_the_op(monkeypatch):
    from tritium.backends.interpreter import executor
    from tritium.errors import InternalError

    def broken(ex, op, args, active):
        raise ValueError("simulated bug")

    monkeypatch.setitem(executor._EXEC, "mul", broken)
    monkeypatch.setenv("TRITIUM_BACKEND", "interpreter")
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(InternalError) as info:
        _scale[(1,)](x, np.zeros(8, np.float32), 8, B=8)
    message = str(info.value)
    assert "internal error in the interpreter while handling the mul op of kernel '_scale'" in message
    assert "ValueError: simulated bug" in message and "bug in tritium" in message
    assert "i = tl.program_id(0) * B + tl.arange(0, B)" in message  # the first mul: its line, with a caret
    assert isinstance(info.value.__cause__, ValueError)


@triton.jit
def _histogram_kernel(x_ptr, out_ptr, N: tl.constexpr, BINS: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(tl.load(x_ptr + tl.arange(0, N)), BINS))


def test_an_op_the_cpu_backend_cannot_lower_runs_on_the_interpreter_with_a_note(monkeypatch):
    from tritium.backends import registry
    from tritium.backends.cpu import codegen
    from tritium.errors import NotLoweredError

    def refuse(self, op):
        raise codegen.UnsupportedOp("the histogram op")

    monkeypatch.setitem(codegen.Codegen.rules, "histogram", refuse)
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)
    monkeypatch.setenv("TRITIUM_INTERPRETER_FIRST", "0")  # compiled at once (tier 0: test_interpreter_tier.py)
    x = (np.arange(64) % 8).astype(np.int32)
    out = np.zeros(8, np.int32)
    registry.register("cpu", "tritium.backends.cpu:CPUBackend", first=True)  # the default backend here
    try:
        with pytest.warns(RuntimeWarning, match=r"cannot compile the histogram op .*\n(.*\n)*note: kernel "
                                                r"'_histogram_kernel' runs on the interpreter instead"):
            compiled = _histogram_kernel[(1,)](x, out, N=64, BINS=8)
    finally:
        registry.reset()
    assert compiled.backend == "interpreter" and out.tolist() == [8] * 8
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")  # asked for by name: an error at the op's line
    with pytest.raises(NotLoweredError, match="tl.histogram"):
        triton.jit(_histogram_kernel.fn)[(1,)](x, out, N=64, BINS=8)


def test_unchecked_code_is_a_target_of_its_own_and_computes_the_same(monkeypatch):
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.setenv("TRITIUM_BOUNDS_CHECKS", "0")
    x = np.random.default_rng(10).standard_normal(1000).astype(np.float32)
    y = np.zeros_like(x)
    compiled = triton.jit(_scale.fn)[(4,)](x, y, 1000, B=256)
    assert compiled.target.arch.endswith("-unchecked")
    assert np.array_equal(y, x * np.float32(3.0))
    monkeypatch.setenv("TRITIUM_BOUNDS_CHECKS", "1")
    assert not triton.jit(_scale.fn)[(4,)](x, y, 1000, B=256).target.arch.endswith("-unchecked")


def test_a_thread_count_that_is_not_a_number_is_refused(monkeypatch):
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.setenv("TRITIUM_NUM_THREADS", "many")
    x = np.zeros(1 << 20, np.float32)
    from tritium.errors import SettingError

    with pytest.raises(SettingError, match="TRITIUM_NUM_THREADS=.many.: give a number of threads"):
        _scale[(1 << 12,)](x, np.zeros_like(x), 1 << 20, B=256)


# values used twice inside one store's computation ----------------------------------------------------
@triton.jit
def _reused_in_one_store(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    t = x * 0.5 + 1.0  # used twice below, like x: neither needs a buffer
    tl.store(out_ptr + offs, x * t - t * t * x, mask=m)


@pytest.mark.parametrize("distance", [None, 0, 1, 40, -3])
def test_a_load_used_twice_by_one_store_reads_memory_as_it_was_before_the_store(distance):
    # x is read lane by lane inside the store's loop; where the store writes what a later lane reads
    # (out `distance` elements after x in one array), every lane must still see memory as it was
    # before the store. One program: across programs such a kernel races (on a GPU too)
    n = 1000
    start = np.random.default_rng(7).standard_normal(n + 64).astype(np.float32)

    results = {}
    for name in ("interpreter", "cpu"):
        import os

        memory = start.copy()
        out = np.zeros(n, np.float32) if distance is None else memory[8 + distance:8 + distance + n]
        os.environ["TRITIUM_BACKEND"] = name
        try:
            _reused_in_one_store[(1,)](memory[8:8 + n], out, n, BLOCK=1024)
        finally:
            os.environ.pop("TRITIUM_BACKEND", None)
        results[name] = [memory, out.copy()]
    _assert_same_bits(results["interpreter"], results["cpu"])
    x = start[8:8 + n].astype(np.float64)
    t = x * 0.5 + 1.0
    np.testing.assert_allclose(results["cpu"][1], x * t - t * t * x, rtol=1e-5, atol=1e-6)


def test_a_load_used_twice_by_one_store_is_read_in_the_stores_loop(monkeypatch):
    # one pass over memory for x * x (no buffer filled first), as for a load used once
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    llir = _reused_in_one_store.stages("*fp32:16,*fp32:16,i32:16", BLOCK=1024)["llir"]
    assert '"store_fused' in llir


def test_a_process_whose_first_compiled_kernel_prints(tmp_path):
    """The print callback's symbol must exist before the first kernel that calls it is checked for
    undefined symbols (it was registered only after a first compile)."""
    import subprocess
    import sys

    script = (
        "import numpy as np, tritium as triton, tritium.language as tl\n"
        "@triton.jit\n"
        "def k(X, B: tl.constexpr):\n"
        "    tl.device_print('x: ', tl.load(X + tl.arange(0, B)))\n"
        "k[(1,)](np.arange(4, dtype=np.float32), B=4)\n"
    )
    path = tmp_path / "first_print.py"
    path.write_text(script)
    env = {**__import__("os").environ, "TRITIUM_BACKEND": "cpu", "TRITIUM_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [f"pid (0, 0, 0) idx ({i}) x: {i}.000000" for i in range(4)]


@triton.jit
def _long_but_finite(out_ptr, n):
    pid = tl.program_id(0)
    x = pid * 0 + n
    while x > 0:  # n iterations, each changing x: never taken for endless
        x -= 1
    tl.store(out_ptr + pid, x + 7)


def test_a_while_loop_that_repeats_itself_is_a_deadlock_error_not_a_hang(monkeypatch):
    from helpers_kernel_checks import spin_unless_even  # odd programs never leave their loop
    from tritium.errors import DeadlockError

    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.setenv("TRITIUM_SPIN_CHECK_AFTER", "5")
    out = np.zeros(6, np.int32)
    with pytest.raises(DeadlockError, match=r"program \(1, 0, 0\)") as info:
        spin_unless_even[(6,)](out)
    assert "never ends" in str(info.value) and "while x != 0" in str(info.value)
    assert info.value.program_id == (1, 0, 0)
    out = np.zeros(3, np.int32)
    _long_but_finite[(3,)](out, 100_000)
    assert out.tolist() == [7, 7, 7]


@triton.jit
def _locked_sum(lock_ptr, total_ptr, x_ptr):
    pid = tl.program_id(0)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(total_ptr, tl.load(total_ptr) + tl.load(x_ptr + pid))
    tl.atomic_xchg(lock_ptr, 0)


def test_kernels_whose_programs_wait_on_each_other_go_to_the_interpreter_unless_cpu_is_named(monkeypatch):
    """The interpreter runs them in program order and reports a spin no program can release; by
    name, the CPU backend runs them in program order on one thread. Both sum in program order."""
    x = np.arange(1, 41, dtype=np.float32)
    for requested, expected in ((None, "interpreter"), ("cpu", "cpu")):
        if requested is None:
            monkeypatch.delenv("TRITIUM_BACKEND", raising=False)
        else:
            monkeypatch.setenv("TRITIUM_BACKEND", requested)
        lock, total = np.zeros(1, np.int32), np.zeros(1, np.float32)
        compiled = _locked_sum.warmup(lock, total, x, grid=(40,))
        assert compiled.backend == expected
        _locked_sum[(40,)](lock, total, x)
        assert total[0] == x.sum() and lock[0] == 0
    monkeypatch.delenv("TRITIUM_BACKEND", raising=False)
    assert _scale.warmup(x, x, 40, B=64, grid=(1,)).backend == "cpu", "other kernels stay on the CPU backend"


# tiers: quick code first, the optimized code when it is ready ------------------------------------------
def test_the_first_launch_runs_quick_code_and_the_optimized_code_replaces_it(monkeypatch):
    from tritium.backends.llvm import host

    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    quick = []
    original = host.compile_quick
    monkeypatch.setattr(host, "compile_quick", lambda llir: quick.append(original(llir)) or quick[-1])
    kernel = triton.jit(_scale.fn)
    n = 5000
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    compiled = kernel[(triton.cdiv(n, 256),)](x, y, n, B=256)
    assert len(quick) == 1 and quick[0] is not None
    assert np.array_equal(y, x * np.float32(3.0))  # the quick code's result
    assert registry.get("cpu").wait_for_optimized_code(timeout=120)
    executable = compiled.executable
    assert not executable.quick and executable.asm["obj"] != quick[0]
    y[:] = 0
    kernel[(triton.cdiv(n, 256),)](x, y, n, B=256)
    assert np.array_equal(y, x * np.float32(3.0))  # the optimized code's: the same bits


def test_without_the_quick_tier_the_first_compilation_is_the_optimized_one(monkeypatch):
    from tritium.backends.llvm import host

    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.setenv("TRITIUM_QUICK_COMPILE", "0")
    monkeypatch.setattr(host, "compile_quick", lambda llir: pytest.fail("compiled quick code"))
    y = np.zeros(8, np.float32)
    compiled = triton.jit(_scale.fn)[(1,)](np.ones(8, np.float32), y, 8, B=1024)
    assert not compiled.executable.quick and np.array_equal(y, np.full(8, 3.0, np.float32))


def _scale_by_four(x_ptr, y_ptr, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    m = i < n
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) * 4.0, mask=m)


def test_the_optimized_code_takes_over_the_chunks_of_a_running_launch(monkeypatch, tmp_path):
    """Code installed while worker threads run a launch of the quick code takes the remaining chunks
    (the threads read the grid function before each chunk), and every program still runs exactly
    once. To tell the two apart, the code installed is another kernel's (same parameters, x * 4 for
    x * 3). On a machine whose cores the launch keeps busy, the installing thread may only get to
    run after the launch: such a try says nothing and is made again."""
    import threading
    import time

    from tritium.backends.cpu import tiers, workers
    from tritium.backends.llvm import host

    if not workers.available():
        pytest.skip("the native worker pool is Linux-only")
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.setenv("TRITIUM_NUM_THREADS", "2")
    held = []
    monkeypatch.setattr(tiers, "defer", lambda executable, llir: held.append((executable, llir)))
    monkeypatch.setattr(tiers, "request", lambda executable: None)
    small = np.ones(256, np.float32)
    triton.jit(_scale_by_four)[(1,)](small, np.zeros_like(small), 256, B=256)
    replacement = host.compile_to_object(held.pop()[1])
    n = 1 << 24
    x = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    for attempt in range(5):
        # a new kernel and an empty disk cache each try (the installed object is stored as the
        # kernel's optimized code): quick code again
        monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / str(attempt)))
        kernel = triton.jit(_scale.fn)
        kernel[(1,)](small, np.zeros_like(small), 256, B=256)  # compiles the quick code; its optimization is held
        executable, _ = held.pop()
        state = workers.pool(2).state
        installed = []

        def install_during_the_launch():
            deadline = time.monotonic() + 60
            # the job is ours and its first chunks are taken
            while not (state[workers._GRID_CELL] == executable._grid_cell_address and state[workers._NEXT] >= 2) \
                    and time.monotonic() < deadline:
                time.sleep(0.0001)
            executable.install_optimized(replacement)
            installed.append(int(state[workers._NEXT]))

        y = np.zeros(n, np.float32)
        installer = threading.Thread(target=install_during_the_launch)
        installer.start()
        kernel[(triton.cdiv(n, 256),)](x, y, n, B=256)
        installer.join()
        by_three, by_four = y == x * np.float32(3.0), y == x * np.float32(4.0)
        assert np.all(by_three | by_four), "every program ran once, with one code or the other"
        # 2 threads x 8 chunks each; a chunk runs with one code (where x != 0, the two tell apart)
        chunks = [four[nonzero] for four, nonzero in zip(np.split(by_four, 16), np.split(x != 0, 16))]
        assert all(chunk.all() or not chunk.any() for chunk in chunks)
        assert not chunks[0].any(), "the first chunk ran the quick code"
        if installed[0] < 16:  # installed while chunks were left
            assert by_four.any(), "the chunks taken after the installation ran the installed code"
            return
    pytest.fail("the installing thread never ran during a launch")


def test_a_kernel_launched_once_on_a_few_lanes_is_optimized_only_when_launched_again(monkeypatch):
    from tritium.backends.cpu import tiers

    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    requested = []
    original = tiers.request
    monkeypatch.setattr(tiers, "request", lambda executable: requested.append(executable.token) or original(executable))
    kernel = triton.jit(_scale.fn)
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    executable = kernel[(1,)](x, y, 8, B=1024).executable
    assert requested == [] and executable.quick, "one small launch: no full compilation yet"
    kernel[(1,)](x, y, 8, B=1024)
    assert requested == [executable.token], "the second launch asks for it"
    assert registry.get("cpu").wait_for_optimized_code(timeout=120) and not executable.quick
    assert np.array_equal(y, 3 * x)


def test_a_failed_full_compilation_keeps_the_quick_code_with_a_warning(monkeypatch):
    """LLVM failing on the background compilation: the kernel keeps running its quick code (still
    right), a warning names it, and the optimizer thread goes on to optimize the next kernel."""
    from tritium.backends.llvm import host

    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    original = host.compile_to_object

    def failing(llvm_ir, background=False):
        if background and "_scale" in llvm_ir:
            raise RuntimeError("LLVM failed on this kernel (simulated)")
        return original(llvm_ir, background)

    monkeypatch.setattr(host, "compile_to_object", failing)
    kernel = triton.jit(_scale.fn)
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    with pytest.warns(RuntimeWarning, match=r"kernel '_scale' keeps its quick, unoptimized code.*simulated"):
        executable = kernel[(1,)](x, y, 64, B=64).executable
        assert registry.get("cpu").wait_for_optimized_code(timeout=120)
    assert executable.quick
    y[:] = 0
    kernel[(1,)](x, y, 64, B=64)
    assert np.array_equal(y, 3 * x)
    other = triton.jit(_row_softmax.fn)[(1,)](np.ones(8, np.float32), np.zeros(8, np.float32), B=8).executable
    assert registry.get("cpu").wait_for_optimized_code(timeout=120) and not other.quick


# blocks carried by loops, and the grid loop's program ids ----------------------------------------------
@triton.jit
def _carried_blocks(x_ptr, out_ptr, n_iter, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    acc = tl.zeros((B,), tl.float32)  # reads only its own lane: updated in place
    shadow = tl.zeros((B,), tl.float32)  # reads acc as the iteration found it
    a = x
    b = x * 0.5  # a, b = b, a + b: each reads the other
    rev = x  # reads the other lanes of its own block
    for i in range(n_iter):
        shadow = acc * 2.0 + shadow
        acc = acc + x
        a, b = b, a + b
        rev = tl.flip(rev, 0) + 1.0
    tl.store(out_ptr + r, acc)
    tl.store(out_ptr + B + r, shadow)
    tl.store(out_ptr + 2 * B + r, a)
    tl.store(out_ptr + 3 * B + r, b)
    tl.store(out_ptr + 4 * B + r, rev)


def test_blocks_carried_by_a_loop_read_the_values_the_iteration_began_with(backend):
    """Every value a loop iteration yields is computed from the carried values as the iteration found
    them, whether it is written into its carried block in place (an accumulator) or not (a value
    another yield reads, values that swap, a block that reads other lanes of itself): numpy oracle."""
    B, n_iter = 64, 5
    x = np.random.default_rng(11).standard_normal(B).astype(np.float32)
    out = np.zeros(5 * B, np.float32)
    _carried_blocks[(1,)](x, out, n_iter, B=B)
    acc, shadow, a, b, rev = np.zeros(B, np.float32), np.zeros(B, np.float32), x, x * np.float32(0.5), x
    for _ in range(n_iter):
        shadow, acc = acc * np.float32(2.0) + shadow, acc + x
        a, b = b, a + b
        rev = rev[::-1] + np.float32(1.0)
    for name, got, want in zip(("acc", "shadow", "a", "b", "rev"), out.reshape(5, B), (acc, shadow, a, b, rev)):
        np.testing.assert_array_equal(got, want, err_msg=name)


@triton.jit
def _program_ids(out_ptr, B: tl.constexpr):
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    linear = (z * tl.num_programs(1) + y) * tl.num_programs(0) + x
    r = tl.arange(0, B)
    tl.store(out_ptr + linear * B + r, x * 10000 + y * 100 + z + r * 0)


def test_each_program_of_a_three_dimensional_grid_gets_its_ids_on_worker_threads(backend, monkeypatch):
    """A grid split in chunks over 2 threads (555 programs: chunks of 34 start inside an x row and
    cross y and z): each program runs once with its own (x, y, z)."""
    monkeypatch.setenv("TRITIUM_NUM_THREADS", "2")
    gx, gy, gz, B = 37, 5, 3, 256  # 142k lanes of work: the worker threads' share
    out = np.full(gx * gy * gz * B, -1, np.int32)
    _program_ids[(gx, gy, gz)](out, B=B)
    z, y, x = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
    want = np.repeat((x * 10000 + y * 100 + z).reshape(-1), B).astype(np.int32)
    np.testing.assert_array_equal(out, want)


# rows read where they lie in memory --------------------------------------------------------------------
@triton.jit
def _mirror_rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    col = tl.arange(0, BLOCK)
    valid = col < n
    x = tl.load(x_ptr + row * n + col, mask=valid, other=0.0)  # a row read by every lane of the store
    tl.store(y_ptr + row * n + col, x + tl.flip(x, 0) * 0.5 + tl.max(x, axis=0), mask=valid)


@triton.jit
def _mirror_in_place(x_ptr, BLOCK: tl.constexpr):
    col = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + col)
    tl.store(x_ptr + col, x + tl.flip(x, 0) * 0.5 + tl.max(x, axis=0))


def _mirrored(rows: np.ndarray, block: int) -> np.ndarray:
    padded = np.zeros((rows.shape[0], block), np.float32)
    padded[:, :rows.shape[1]] = rows
    want = padded + padded[:, ::-1] * np.float32(0.5) + padded.max(axis=1, keepdims=True)
    return want[:, :rows.shape[1]]


@pytest.mark.parametrize("n", [256, 200])
def test_a_row_read_where_it_lies_is_the_row_as_it_was_before_the_store(backend, n):
    """A loaded row of consecutive elements from a tensor the kernel never writes is read where it
    lies (no copy) when every lane is active: each program still sees its row as loaded (numpy
    oracle), full rows and rows with a masked tail, over many programs."""
    rows = np.random.default_rng(5).standard_normal((64, n)).astype(np.float32)
    x = rows.copy()
    y = np.zeros_like(x)
    _mirror_rows[(64,)](x, y, n, BLOCK=256)
    np.testing.assert_array_equal(y, _mirrored(rows, 256))
    np.testing.assert_array_equal(x, rows)


@pytest.mark.parametrize("shift", [0, 3, -5])
def test_a_row_read_where_it_lies_is_copied_when_the_output_overlaps_it(backend, shift):
    """Two arguments that are views of one array (the output `shift` elements after the input; 0:
    the same array): the store writes lanes that later lanes of the row still read, so the row is
    read as it was before the store only if it was copied first (checked at run time)."""
    n = 256
    memory = np.random.default_rng(6).standard_normal(n + 16).astype(np.float32)
    row = memory[8:8 + n].copy()
    _mirror_rows[(1,)](memory[8:8 + n], memory[8 + shift:8 + shift + n], n, BLOCK=n)
    np.testing.assert_array_equal(memory[8 + shift:8 + shift + n], _mirrored(row[None], n)[0])


def test_a_row_of_a_tensor_the_kernel_writes_is_copied_before_it_is_read(backend):
    """The kernel stores into the tensor it loads the row from (one argument): the row is copied."""
    n = 256
    x = np.random.default_rng(8).standard_normal(n).astype(np.float32)
    row = x.copy()
    _mirror_in_place[(1,)](x, BLOCK=n)
    np.testing.assert_array_equal(x, _mirrored(row[None], n)[0])


def test_with_checks_compiled_out_a_row_reaching_a_written_tensor_is_still_copied(monkeypatch):
    """Without bounds checks a row may stray past its own view (the caller's mistake); the overlap
    test compares the bytes the row reads, not its view's, so a row that reaches into the output is
    still read as it was before the store."""
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.setenv("TRITIUM_BOUNDS_CHECKS", "0")
    n = 256
    memory = np.arange(n + 44, dtype=np.float32)
    row = memory[:n].copy()
    mirror = triton.jit(_mirror_rows.fn)  # compiled afresh: the setting is read when a kernel first compiles
    mirror[(1,)](memory[0:1], memory[8:8 + n], n, BLOCK=n)  # x: a one-element view; the row reads 256
    np.testing.assert_array_equal(memory[8:8 + n], _mirrored(row[None], n)[0])
