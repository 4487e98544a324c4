"""libdevice's integer functions that are exact bit arithmetic: ``brev``, ``ffs``, ``mulhi``,
``mul24``, ``hadd``, ``rhadd``, ``sad`` and ``byte_perm``, with libdevice's signatures (those of
Triton's ``extra.cuda.libdevice``), each written with tl operations. Their results are exact, so
every backend gives the bits libdevice gives; they are part of ``tl.extra.libdevice``."""
from __future__ import annotations

from ...compiler.ir import types as T
from ..core import _semantic, builtin


def _typed(name: str, args, accepted: list[tuple[str, ...]]):
    """The arguments as tensors, checked against libdevice's signatures for ``name`` (promoted to a
    common type first where none matches, as libdevice functions are)."""
    sem = _semantic()
    return sem, sem.libdevice_arguments(name, args, accepted)[0]


@builtin
def brev(arg0):
    """The bits of a 32- or 64-bit integer in reverse order."""
    sem, (x,) = _typed("brev", [arg0], [("int32",), ("int64",)])
    bits = x.dtype.primitive_bitwidth
    unsigned = T.uint32 if bits == 32 else T.uint64
    u = sem.cast(x, unsigned, bitcast=True)
    shift = 1
    while shift < bits:  # swap neighbouring runs of `shift` bits: 1, 2, 4, ... bits/2
        run = (1 << shift) - 1
        mask = 0
        for start in range(0, bits, 2 * shift):
            mask |= run << start  # the low run of each pair
        low = sem.bitwise("and", u, mask)
        high = sem.bitwise("and", sem.shift("shr", u, shift), mask)
        u = sem.bitwise("or", sem.shift("shl", low, shift), high)
        shift *= 2
    return sem.cast(u, x.dtype, bitcast=True)


@builtin
def ffs(arg0):
    """The 1-based position of the least significant set bit (int32), 0 for 0."""
    from . import libdevice

    sem, (x,) = _typed("ffs", [arg0], [("int32",), ("int64",)])
    lowest = sem.bitwise("and", x, sem.neg(x))
    position = sem.sub(libdevice.popc(sem.sub(lowest, 1)), -1)
    return sem.where(sem.compare("eq", x, 0), 0, position)


@builtin
def mulhi(arg0, arg1):
    """The high half of the full product of two 32- or 64-bit integers."""
    sem, (x, y) = _typed("mulhi", [arg0, arg1], [("int32", "int32"), ("uint32", "uint32"), ("int64", "int64"),
                                                 ("uint64", "uint64")])
    return sem._emit("umulhi", [x, y], x.type)


@builtin
def mul24(arg0, arg1):
    """The low 32 bits of the product of the low 24 bits of each argument (sign-extended for int32)."""
    sem, (x, y) = _typed("mul24", [arg0, arg1], [("int32", "int32"), ("uint32", "uint32")])
    if x.dtype.is_int_signed():
        x, y = (sem.shift("shr", sem.shift("shl", v, 8), 8) for v in (x, y))
    else:
        x, y = (sem.bitwise("and", v, 0xFFFFFF) for v in (x, y))
    wide = T.int64 if x.dtype.is_int_signed() else T.uint64
    return sem.cast(sem.mul(sem.cast(x, wide), sem.cast(y, wide)), x.dtype)


def _halving(name: str, arg0, arg1, round_up: bool):
    sem, (x, y) = _typed(name, [arg0, arg1], [("int32", "int32"), ("uint32", "uint32")])
    wide = T.int64 if x.dtype.is_int_signed() else T.uint64
    total = sem.add(sem.cast(x, wide), sem.cast(y, wide))
    if round_up:
        total = sem.add(total, 1)
    return sem.cast(sem.shift("shr", total, 1), x.dtype)


@builtin
def hadd(arg0, arg1):
    """``(x + y) >> 1`` without overflow: the average, rounded down."""
    return _halving("hadd", arg0, arg1, False)


@builtin
def rhadd(arg0, arg1):
    """``(x + y + 1) >> 1`` without overflow: the average, rounded up."""
    return _halving("rhadd", arg0, arg1, True)


@builtin
def sad(arg0, arg1, arg2):
    """``|x - y| + z``, the difference taken without overflow, the sum modulo 2**32."""
    sem, (x, y, z) = _typed("sad", [arg0, arg1, arg2], [("int32", "int32", "uint32"), ("uint32", "uint32", "uint32")])
    wide = T.int64 if x.dtype.is_int_signed() else T.uint64
    a, b = sem.cast(x, wide), sem.cast(y, wide)
    difference = sem.where(sem.compare("gt", a, b), sem.sub(a, b), sem.sub(b, a))
    total = sem.add(sem.cast(difference, T.uint32), sem.cast(z, T.uint32))
    return sem.cast(total, x.dtype, bitcast=True)


@builtin
def byte_perm(arg0, arg1, arg2):
    """Byte ``n`` of the result is byte ``selector[4n+2:4n]`` of the eight bytes of ``y:x`` (x's low
    byte is byte 0)."""
    sem, (x, y, s) = _typed("byte_perm", [arg0, arg1, arg2], [("int32", "int32", "int32")])
    source = sem.bitwise("or", sem.shift("shl", sem.cast(sem.cast(y, T.uint32, bitcast=True), T.uint64), 32),
                         sem.cast(sem.cast(x, T.uint32, bitcast=True), T.uint64))
    selector = sem.cast(s, T.uint32, bitcast=True)
    result = None
    for n in range(4):
        which = sem.cast(sem.bitwise("and", sem.shift("shr", selector, 4 * n), 7), T.uint64)
        byte = sem.bitwise("and", sem.shift("shr", source, sem.mul(which, 8)), 0xFF)
        byte = sem.shift("shl", sem.cast(byte, T.uint32), 8 * n)
        result = byte if result is None else sem.bitwise("or", result, byte)
    return sem.cast(result, T.int32, bitcast=True)


NAMES = ("brev", "ffs", "mulhi", "mul24", "hadd", "rhadd", "sad", "byte_perm")
