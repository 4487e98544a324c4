"""tl.random: Philox-4x32-10 and the numbers Triton derives from it.

Oracles: Philox written here from the paper (Salmon, Moraes, Dror, Shaw, "Parallel random
numbers: as easy as 1, 2, 3", SC 2011) in plain Python integers, checked against Random123's
published known-answer vectors; values recorded from Triton 3.6 on an H200 (bit-exact for
randint/rand, within 4 ulp for randn, whose log/sqrt/cos are the GPU's approximations); and for
randn, the normal distribution (mean and standard deviation of 2**16 samples within 5 standard
errors).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError

MASK32 = 0xFFFFFFFF
MASK64 = 0xFFFFFFFFFFFFFFFF


def philox_4x32(counter, key, rounds=10):
    """Philox-4x32-R: the round function and key schedule of the paper, on Python ints."""
    r0, l0, r1, l1 = counter
    k0, k1 = key
    for _ in range(rounds):
        p0, p1 = 0xD2511F53 * r0, 0xCD9E8D57 * r1  # 64-bit products, split into hi and lo words
        r0, l0, r1, l1 = ((p1 >> 32) ^ l0 ^ k0) & MASK32, p1 & MASK32, ((p0 >> 32) ^ l1 ^ k1) & MASK32, p0 & MASK32
        k0, k1 = (k0 + 0x9E3779B9) & MASK32, (k1 + 0xBB67AE85) & MASK32  # Weyl sequence
    return r0, l0, r1, l1


def philox_4x64(counter, key, rounds=10):
    r0, l0, r1, l1 = counter
    k0, k1 = key
    for _ in range(rounds):
        p0, p1 = 0xD2E7470EE14C6C93 * r0, 0xCA5A826395121157 * r1
        r0, l0, r1, l1 = ((p1 >> 64) ^ l0 ^ k0) & MASK64, p1 & MASK64, ((p0 >> 64) ^ l1 ^ k1) & MASK64, p0 & MASK64
        k0, k1 = (k0 + 0x9E3779B97F4A7C15) & MASK64, (k1 + 0xBB67AE8584CAA73B) & MASK64
    return r0, l0, r1, l1


def triton_randint4x(seed: int, offset: int, rounds=10, offset_bits=32):
    """Triton's randint4x: counter (offset lo, offset hi, 0, 0), where offset hi is 0 for 32-bit
    offsets; key = the seed sign-extended to 64 bits, (lo, hi)."""
    seed &= MASK64
    offset &= MASK64 if offset_bits == 64 else MASK32
    return philox_4x32((offset & MASK32, offset >> 32, 0, 0), (seed & MASK32, seed >> 32), rounds)


def uniform_from_uint32(words: np.ndarray) -> np.ndarray:
    """Triton's uint_to_uniform_float for 32-bit words, in numpy: fold the int32 view, scale in fp32."""
    x = words.astype(np.uint32).view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


def test_reference_philox_matches_random123_known_answers():
    # Random123's kat_vectors for philox4x32-10 and philox4x64-10
    assert philox_4x32((0, 0, 0, 0), (0, 0)) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
    assert philox_4x32((MASK32,) * 4, (MASK32,) * 2) == (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)
    assert philox_4x32((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0)) == (
        0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)
    assert philox_4x64((0, 0, 0, 0), (0, 0)) == (
        0x16554D9ECA36314C, 0xDB20FE9D672D0FDC, 0xD7E772CEE186176B, 0x7E68B68AEC7BA23B)


# ------------------------------------------------------------------------------------------------
# philox_impl / philox
# ------------------------------------------------------------------------------------------------
@triton.jit
def _philox_impl_kernel(c_ptr, k_ptr, out_ptr, N: tl.constexpr, ROUNDS: tl.constexpr):
    r = tl.arange(0, N)
    c0 = tl.load(c_ptr + r * 4)
    c1 = tl.load(c_ptr + r * 4 + 1)
    c2 = tl.load(c_ptr + r * 4 + 2)
    c3 = tl.load(c_ptr + r * 4 + 3)
    k0 = tl.load(k_ptr)
    k1 = tl.load(k_ptr + 1)
    o0, o1, o2, o3 = tl.philox_impl(c0, c1, c2, c3, k0, k1, ROUNDS)
    tl.store(out_ptr + r * 4, o0)
    tl.store(out_ptr + r * 4 + 1, o1)
    tl.store(out_ptr + r * 4 + 2, o2)
    tl.store(out_ptr + r * 4 + 3, o3)


@pytest.mark.parametrize("rounds", [10, 7, 0])
def test_philox_impl_equals_the_reference(rounds):
    counters = [(0, 0, 0, 0), (MASK32,) * 4, (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (1, 2, 3, 4)]
    key = (0xA4093822, 0x299F31D0)
    c = np.array(counters, dtype=np.uint32)
    k = np.array(key, dtype=np.uint32)
    out = np.zeros_like(c)
    _philox_impl_kernel[(1,)](c, k, out, N=4, ROUNDS=rounds)
    expected = [philox_4x32(cc, key, rounds) for cc in counters]
    assert out.tolist() == [list(e) for e in expected]


@triton.jit
def _philox64_kernel(out_ptr, seed, N: tl.constexpr):
    r = tl.arange(0, N)
    c = r.to(tl.uint64) + 12345678901234
    z = c * 0
    a, b, cc, d = tl.philox(seed, c, z, z, z)
    tl.store(out_ptr + r * 4, a)
    tl.store(out_ptr + r * 4 + 1, b)
    tl.store(out_ptr + r * 4 + 2, cc)
    tl.store(out_ptr + r * 4 + 3, d)


def test_philox_with_64_bit_counters_is_philox_4x64_keyed_by_the_seed():
    out = np.zeros((8, 4), dtype=np.uint64)
    _philox64_kernel[(1,)](out, 987654321, N=8)
    for i in range(8):
        assert tuple(int(v) for v in out[i]) == philox_4x64((12345678901234 + i, 0, 0, 0), (987654321, 0))
    # the first and last words of lanes 0..2, as Triton 3.6 gave them on an H200
    assert [int(v) for v in out[:3, 0]] == [0x780FB3BADD7AD414, 0x19469FEE6C6865EC, 0x7589E9CA62C9F30B]
    assert [int(v) for v in out[:3, 3]] == [0xB23C44F134C713FC, 0xB43F96F5DDFED6CF, 0x0746D0EA350DF58F]


# ------------------------------------------------------------------------------------------------
# randint4x / randint: seeds of every width, 32- and 64-bit offsets
# ------------------------------------------------------------------------------------------------
@triton.jit
def _randint4x_kernel(out_ptr, seed, base, N: tl.constexpr, WIDE: tl.constexpr):
    r = tl.arange(0, N)
    if WIDE:
        offsets = base + r.to(tl.int64)
    else:
        offsets = base + r
    a, b, c, d = tl.randint4x(seed, offsets)
    tl.store(out_ptr + r, a)
    tl.store(out_ptr + N + r, b)
    tl.store(out_ptr + 2 * N + r, c)
    tl.store(out_ptr + 3 * N + r, d)


@pytest.mark.parametrize("seed, base, wide", [
    (0, 0, False), (42, 0, False), (-1, 5, False), (2**31 - 1, -300, False), (2**40 + 5, 0, False),
    (-12345, 1000, False), (3_000_000_000, 17, False), (42, 2**33 + 7, True), (7, -(2**35) - 3, True),
])
def test_randint4x_equals_philox_of_offset_and_seed(seed, base, wide):
    n = 64
    out = np.zeros(4 * n, dtype=np.uint32)
    _randint4x_kernel[(1,)](out, seed, base, N=n, WIDE=wide)
    got = out.reshape(4, n)
    for lane in range(n):
        expected = triton_randint4x(seed, base + lane, offset_bits=64 if wide else 32)
        assert tuple(int(v) for v in got[:, lane]) == expected, f"lane {lane}"


GPU_RANDINT4X = {  # Triton 3.6 on an H200: lanes 0..3 of each of the four words
    (42, 0, False): [
        [0x9CEAF053, 0xFCDB2127, 0xD36C0225, 0xBAC70475], [0x77F5493B, 0x53BA6CFD, 0xA8875DCB, 0xABAF0DAB],
        [0x12BF50AD, 0x838F5A6E, 0x9A4D6D99, 0x961E5543], [0x5742B3D7, 0x744E06FB, 0xC609A559, 0x610E67F7]],
    (42, 2**33 + 7, True): [
        [0xF2B2EF68, 0x59A3F645, 0x6D632565, 0xA840D9BA], [0x4726B4BF, 0xE4F5CC37, 0xFF177B7E, 0xD2538D58],
        [0x6E89E23C, 0x2F523C5C, 0xC3E73D51, 0x0922DB1C], [0x90A21DE7, 0x3EF71C33, 0xF43A99AD, 0xFEA75840]],
    (7, -(2**35) - 3, True): [
        [0x4B55902C, 0x1E572DC3, 0xB8DAF064, 0x37C620FB], [0xF9E85FD0, 0x81757C0F, 0x909DB56D, 0x37CB16D8],
        [0x0C22D28A, 0xF3879BE2, 0x76E2A07E, 0x9BE87FAC], [0x0F5DE158, 0x2634862F, 0x7ED86B4D, 0x90B54335]],
    (3_000_000_000, 17, False): [
        [0x7DCBDFCB, 0x1D9FB1C9, 0x06A18E08, 0x0F7B121A], [0x6A8EB018, 0xD0AED81C, 0x8DCB6463, 0x69B6E10E],
        [0x7A3952D8, 0x69058742, 0xDA4864AF, 0xA6FCA00C], [0xCD9D13D5, 0xA90652AA, 0x3A7A7542, 0xF139A2E0]],
}


@pytest.mark.parametrize("args", list(GPU_RANDINT4X))
def test_randint4x_is_bit_identical_to_triton_on_a_gpu(args):
    seed, base, wide = args
    out = np.zeros(4 * 4, dtype=np.uint32)
    _randint4x_kernel[(1,)](out, seed, base, N=4, WIDE=wide)
    assert out.reshape(4, 4).tolist() == GPU_RANDINT4X[args]


@triton.jit
def _randint_kernel(out_ptr, seed, N: tl.constexpr, ROUNDS: tl.constexpr):
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(out_ptr + offsets, tl.randint(seed, offsets, ROUNDS))


@pytest.mark.parametrize("rounds", [10, 6])
def test_randint_is_the_first_word_and_programs_use_their_own_offsets(rounds):
    n, programs = 32, 5
    out = np.zeros(n * programs, dtype=np.uint32)
    _randint_kernel[(programs,)](out, 2024, N=n, ROUNDS=rounds)
    assert [int(v) for v in out] == [triton_randint4x(2024, i, rounds)[0] for i in range(n * programs)]


# ------------------------------------------------------------------------------------------------
# rand / randn / rand4x / randn4x
# ------------------------------------------------------------------------------------------------
@triton.jit
def _rand_randn_kernel(u_ptr, z_ptr, seed, N: tl.constexpr):
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(u_ptr + offsets, tl.rand(seed, offsets))
    tl.store(z_ptr + offsets, tl.randn(seed, offsets))


def _rand_randn(seed, n=2**16, block=1024):
    u = torch.zeros(n)
    z = torch.zeros(n)
    _rand_randn_kernel[(n // block,)](u, z, seed, N=block)
    return u.numpy(), z.numpy()


def test_rand_is_the_uniform_conversion_of_randint_and_lies_in_0_1():
    u, _ = _rand_randn(1234)
    words = np.array([triton_randint4x(1234, i)[0] for i in range(4096)], dtype=np.uint64)
    assert np.array_equal(u[:4096].view(np.uint32), uniform_from_uint32(words).view(np.uint32))
    assert u.min() >= 0.0 and u.max() < 1.0
    # uniform: mean 1/2, variance 1/12 (standard errors 0.0011 and 0.0003 for 2**16 samples)
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / u.size)
    assert abs(u.var() - 1 / 12) < 0.002
    # Triton 3.6 on an H200 gave exactly these (lanes 0..2 of programs 0 and 1)
    gpu = [float.fromhex(h) for h in ("0x1.0485980000000p-2", "0x1.8444860000000p-1", "0x1.fe4e440000000p-2",
                                      "0x1.02f9880000000p-1", "0x1.6cc5240000000p-1", "0x1.242d420000000p-1")]
    assert u[[0, 1, 2, 1024, 1025, 1026]].tolist() == gpu


@triton.jit
def _uniform_kernel(x_ptr, out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(out_ptr + r, tl.random.uint_to_uniform_float(tl.load(x_ptr + r)))


def test_uint_to_uniform_float_keeps_the_extremes_below_one():
    words = np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x12345678, 0xDEADBEEF, 2**31 + 1], dtype=np.uint32)
    out = np.zeros(8, dtype=np.float32)
    _uniform_kernel[(1,)](words, out, N=8)
    assert np.array_equal(out.view(np.uint32), uniform_from_uint32(words).view(np.uint32))
    assert out.max() < 1.0 and out[2] == out[3] == np.float32(0.99999994)  # +-2**31 fold to the top value
    assert out[0] == out[4] == 0.0


def test_randn_is_standard_normal_box_muller():
    _, z = _rand_randn(1234)
    n = z.size
    assert abs(z.mean()) < 5 / math.sqrt(n)
    assert abs(z.std() - 1) < 5 / math.sqrt(2 * n)
    # about 68.3% within one standard deviation, 95.4% within two
    assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.01
    assert abs(np.mean(np.abs(z) < 2) - 0.9545) < 0.005
    # Box-Muller on the first two words, in fp64: agrees to fp32 rounding of log/sqrt/cos
    words = np.array([triton_randint4x(1234, i)[:2] for i in range(512)], dtype=np.uint64)
    u1 = np.maximum(1e-7, uniform_from_uint32(words[:, 0]).astype(np.float64))
    u2 = uniform_from_uint32(words[:, 1]).astype(np.float64)
    expected = np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)
    np.testing.assert_allclose(z[:512], expected, rtol=2e-5, atol=2e-6)
    # Triton 3.6 on an H200 (its log, sqrt and cos are approximations): within 4 ulp
    gpu = np.array([float.fromhex(h) for h in (
        "-0x1.c4d7460000000p-2", "0x1.e518c00000000p-4", "0x1.2868f00000000p+0", "-0x1.859dd00000000p-3",
        "0x1.f733680000000p-1", "-0x1.112ad40000000p+0")], dtype=np.float32)
    np.testing.assert_array_max_ulp(z[:6], gpu, maxulp=4)


@triton.jit
def _four_kernel(u_ptr, z_ptr, seed, N: tl.constexpr):
    r = tl.arange(0, N)
    u1, u2, u3, u4 = tl.rand4x(seed, r)
    n1, n2, n3, n4 = tl.randn4x(seed, r)
    tl.store(u_ptr + r, u1)
    tl.store(u_ptr + N + r, u2)
    tl.store(u_ptr + 2 * N + r, u3)
    tl.store(u_ptr + 3 * N + r, u4)
    tl.store(z_ptr + r, n1)
    tl.store(z_ptr + N + r, n2)
    tl.store(z_ptr + 2 * N + r, n3)
    tl.store(z_ptr + 3 * N + r, n4)


def test_rand4x_and_randn4x_use_all_four_words():
    n = 64
    u = np.zeros(4 * n, dtype=np.float32)
    z = np.zeros(4 * n, dtype=np.float32)
    _four_kernel[(1,)](u, z, 99, N=n)
    words = np.array([triton_randint4x(99, i) for i in range(n)], dtype=np.uint64).T  # (4, n)
    expected_u = np.stack([uniform_from_uint32(w) for w in words])
    assert np.array_equal(u.reshape(4, n).view(np.uint32), expected_u.view(np.uint32))
    uu = np.maximum(1e-7, expected_u.astype(np.float64))
    radius = np.sqrt(-2 * np.log(uu[[0, 2]]))
    theta = 2 * np.pi * expected_u.astype(np.float64)[[1, 3]]
    expected_z = np.stack([radius[0] * np.cos(theta[0]), radius[0] * np.sin(theta[0]),
                           radius[1] * np.cos(theta[1]), radius[1] * np.sin(theta[1])])
    np.testing.assert_allclose(z.reshape(4, n), expected_z, rtol=2e-5, atol=2e-6)


# ------------------------------------------------------------------------------------------------
# the names, the IR, and the errors
# ------------------------------------------------------------------------------------------------
def test_tl_random_module_has_the_same_functions():
    for name in ("rand", "randn", "randint", "randint4x", "rand4x", "randn4x", "philox", "philox_impl",
                 "uint_to_uniform_float", "pair_uniform_to_normal"):
        assert getattr(tl.random, name) is getattr(tl, name)
    assert tl.random.N_ROUNDS_DEFAULT == 10


def test_the_rounds_are_one_ir_operation():
    text = _randint_kernel.ir("*u32,i32", N=64, ROUNDS=10)
    assert text.count(" philox ") == 1 and "n_rounds=10" in text
    assert len(text.splitlines()) < 30


@triton.jit
def _float_seed_kernel(out_ptr, seed, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(out_ptr + r, tl.rand(seed, r))


@triton.jit
def _float_offset_kernel(out_ptr, seed, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(out_ptr + r, tl.rand(seed, r.to(tl.float32)))


def test_a_float_seed_or_float_offsets_are_compile_errors():
    out = torch.zeros(8)
    with pytest.raises(CompilationError, match="seed must be an integer"):
        _float_seed_kernel[(1,)](out, 1.5, N=8)
    with pytest.raises(CompilationError, match="offsets must be integers"):
        _float_offset_kernel[(1,)](out, 3, N=8)
