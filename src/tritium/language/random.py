"""``tl.random``: Triton's counter-based random numbers (Philox-4x32-10).

The same seed and offsets give the same bits as Triton on a GPU: ``randint4x(seed, offset)`` is
Philox-4x32 with counter ``(offset_lo, offset_hi, 0, 0)`` (``offset_hi`` is 0 for 32-bit
offsets) and key ``(seed_lo, seed_hi)`` of the seed widened to 64 bits (sign-extended, as
``seed.to(tl.uint64)`` does). ``rand`` maps the first word to [0, 1) the way Triton's
``uint_to_uniform_float`` does; ``randn`` applies Box-Muller to the first two words. The rounds
run as one ``philox`` IR operation. ``randn``'s log/sqrt/cos are the interpreter's (fp64 rounded
once), which may differ from a GPU's approximate fp32 functions in the last bit.
"""
from __future__ import annotations

from ..compiler.ir import types as T
from .core import builtin, tensor, unwrap, _semantic

N_ROUNDS_DEFAULT = 10  # Philox-4x32-10


def _rounds(n_rounds) -> int:
    value = unwrap(n_rounds)
    if isinstance(value, tensor) or not isinstance(value, int):
        raise TypeError(f"n_rounds must be a constexpr integer, got {value!r}")
    return value


@builtin
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS_DEFAULT):
    """``n_rounds`` rounds of Philox on the counter (c0, c1, c2, c3) with key (k0, k1).

    All six must be uint32 (Philox-4x32) or all uint64 (Philox-4x64); returns four blocks.
    """
    return tuple(_semantic().philox(c0, c1, c2, c3, k0, k1, _rounds(n_rounds)))


@builtin
def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT):
    """Philox with the key taken from the integer ``seed``: 32-bit counters use (seed_lo, seed_hi),
    64-bit counters use (seed, 0). Counters are reinterpreted as unsigned."""
    sem = _semantic()
    seed = sem.to_tensor(seed)
    if not seed.dtype.is_int() or seed.type.is_block():
        raise TypeError(f"the seed must be an integer scalar, got {seed.type}")
    seed = sem.cast(seed, T.uint64)
    counters = [sem.to_tensor(c) for c in (c0, c1, c2, c3)]
    bits = counters[0].dtype.primitive_bitwidth
    if bits == 32:
        unsigned = T.uint32
        key_lo = sem.cast(sem.bitwise("and", seed, 0xFFFFFFFF), T.uint32)
        key_hi = sem.cast(sem.bitwise("and", sem.shift("shr", seed, 32), 0xFFFFFFFF), T.uint32)
    elif bits == 64:
        unsigned = T.uint64
        key_lo, key_hi = seed, sem.constant(0, T.uint64)
    else:
        raise TypeError(f"philox counters must be 32- or 64-bit integers, got {counters[0].dtype}")
    for c in counters:
        if not c.dtype.is_int() or c.dtype.primitive_bitwidth != bits:
            raise TypeError(f"philox counters must all be {bits}-bit integers, got {c.dtype} and {counters[0].dtype}")
    counters = [sem.cast(c, unsigned, bitcast=True) for c in counters]
    return tuple(sem.philox(*counters, key_lo, key_hi, _rounds(n_rounds)))


@builtin
def randint4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for a scalar ``seed`` and a block of integer ``offset``s;
    the fastest way to get several streams."""
    sem = _semantic()
    offset = sem.to_tensor(offset)
    if not offset.dtype.is_int():
        raise TypeError(f"random offsets must be integers, got {offset.dtype}")
    low = sem.cast(offset, T.uint32)
    zero = sem.constant(0, T.uint32)
    high = sem.cast(sem.shift("shr", offset, 32), T.uint32) if offset.dtype.primitive_bitwidth > 32 else zero
    return philox(seed, low, high, zero, zero, n_rounds)


@builtin
def randint(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of random uint32 for a scalar ``seed`` and a block of ``offset``s."""
    return randint4x(seed, offset, n_rounds)[0]


@builtin
def uint_to_uniform_float(x):
    """A random 32- (or 64-) bit integer to an fp32 in [0, 1): the integer's magnitude, folded so
    that negative values map like positive ones, times the largest scale that keeps 1.0 out."""
    sem = _semantic()
    x = sem.to_tensor(x)
    if x.dtype in (T.uint32, T.int32):
        x = sem.cast(x, T.int32, bitcast=True)
        scale = 4.6566127342e-10
    elif x.dtype in (T.uint64, T.int64):
        x = sem.cast(x, T.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    else:
        raise TypeError(f"uint_to_uniform_float needs a 32- or 64-bit integer, got {x.dtype}")
    x = sem.where(sem.compare("lt", x, 0), sem.invert(x), x)  # ~x == -x - 1, without overflowing at INT_MIN
    return sem.mul(x, scale)


@builtin
def rand(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of random fp32 uniformly distributed in [0, 1)."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@builtin
def rand4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of random fp32 in [0, 1)."""
    return tuple(uint_to_uniform_float(r) for r in randint4x(seed, offset, n_rounds))


@builtin
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniforms in [0, 1) to two independent standard normals."""
    sem = _semantic()
    u1 = sem.minmax("maximum", 1.0e-7, u1)
    theta = sem.mul(6.283185307179586, u2)
    radius = sem.math("sqrt", sem.mul(-2.0, sem.math("log", u1)))
    return sem.mul(radius, sem.math("cos", theta)), sem.mul(radius, sem.math("sin", theta))


@builtin
def randn(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of random fp32 from the standard normal distribution."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))[0]


@builtin
def randn4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of random fp32 from the standard normal distribution."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
