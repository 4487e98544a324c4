"""``tl.dot_scaled``: the matrix product of two blocks in the OCP microscaling (MX) formats.

An operand is a block of elements in one of the formats ``e2m1`` (FP4: two codes a byte, the first
element in the low four bits, packed along K unless ``*_k_pack=False`` packs them along M or N),
``e4m3``, ``e5m2`` (fp8: uint8 codes or the fp8 type), ``bf16`` or ``fp16``, with an optional
scale block of E8M0 codes (uint8: 2^(code - 127), 255 is NaN), one per 32 consecutive elements
along K: ``[M, K // 32]`` for the left operand, ``[N, K // 32]`` for the right one (not
transposed); NVFP4's scales, fp8 e4m3 values, cover 16 elements each. Operands may be 3-D (a batch
of products), their scales too. As Triton does on GPUs without microscaling instructions, each
operand is decoded, multiplied by its scales and rounded to bf16 (exact for the fp4 and fp8 formats
unless the scaled value leaves bf16's range; fp16 when either operand is fp16, which keeps its
precision), and the two are multiplied with ``tl.dot`` (fp32 accumulation). A NaN
scale gives NaN, with ``fast_math`` too. It is built from other tl operations, so every backend
runs it.
"""
from __future__ import annotations

from ..compiler.ir import types as T
from . import standard as tl
from .core import builtin, tensor, unwrap

FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")
GROUP = 32  # elements along K that share one scale


def _fp4_values(codes):
    """fp32 values of FP4 E2M1 codes (an int32 block): 0, 0.5, 1, 1.5, 2, 3, 4, 6 and negatives."""
    exponent = (codes >> 1) & 3
    mantissa = (codes & 1).to(T.float32)
    normal = (mantissa + 2.0) * ((exponent + 125) << 23).to(T.float32, bitcast=True)  # (2 + m) * 2^(e - 2)
    magnitude = tl.where(exponent == 0, mantissa * 0.5, normal)
    return tl.where(((codes >> 3) & 1) == 1, -magnitude, magnitude)


def _unpacked(x, pack_dim: int):
    """Two FP4 codes a byte along ``pack_dim`` (-1 or -2) as int32 codes, twice as long there."""
    byte = x.to(T.uint8, bitcast=True).to(T.int32) if x.dtype != T.uint8 else x.to(T.int32)
    low, high = byte & 15, (byte >> 4) & 15
    pair = tl.join(low, high)  # [..., R, C, 2]: element 2i is the low half
    *batch, rows, cols = x.shape
    if pack_dim == -1:
        return tl.reshape(pair, (*batch, rows, cols * 2))
    lead = tuple(range(len(batch)))
    n = len(batch)
    return tl.reshape(tl.permute(pair, (*lead, n, n + 2, n + 1)), (*batch, rows * 2, cols))


def _swap_last(x):
    """``x`` with its last two dimensions swapped (a 2-D transpose, or per batch)."""
    n = len(x.shape)
    return tl.permute(x, (*range(n - 2), n - 1, n - 2))


def _values(x, fmt: str, pack_dim: int):
    """fp32 values of an operand (K along the last dimension after the caller's transposes)."""
    if fmt == "e2m1":
        if not (x.dtype.is_int() and x.dtype.primitive_bitwidth == 8):
            raise TypeError(f"an e2m1 operand is packed into uint8 (two codes a byte), got {x.dtype}")
        return _fp4_values(_unpacked(x, pack_dim))
    if fmt in ("e4m3", "e5m2"):
        fp8 = T.float8e4nv if fmt == "e4m3" else T.float8e5
        if x.dtype != fp8:
            if x.dtype.primitive_bitwidth != 8:
                raise TypeError(f"an {fmt} operand holds 8-bit codes (uint8 or {fp8}), got {x.dtype}")
            x = x.to(fp8, bitcast=True)
        return x.to(T.float32)
    want = T.bfloat16 if fmt == "bf16" else T.float16
    if x.dtype != want:
        raise TypeError(f"a {fmt} operand must be {want}, got {x.dtype}")
    return x.to(T.float32)


def _scaled(values, scale, where: str, compute):
    """``values`` ([..., R, K]) times their scales, one for each group of K // scale columns along K
    (32 for E8M0 codes; NVFP4's fp8 e4m3 scales cover 16), rounded to ``compute`` (bf16 or fp16)."""
    if scale is None:
        return values.to(compute)
    *batch, rows, k = values.shape
    nvfp4 = scale.dtype == T.float8e4nv  # NVFP4's scales: fp8 e4m3 values, one per 16 elements
    size = 16 if nvfp4 else GROUP
    if k % size or list(scale.shape) != [*batch, rows, k // size]:
        raise ValueError(f"{where}_scale must have shape {[*batch, rows, k // size]} (one "
                         f"{'fp8 e4m3' if nvfp4 else 'E8M0'} scale per {size} elements along K), got "
                         f"{list(scale.shape)}")
    groups = k // size
    if nvfp4:
        factor = scale.to(T.float32)
    else:
        codes = scale.to(T.uint8, bitcast=True).to(T.int32) if scale.dtype != T.uint8 else scale.to(T.int32)
        factor = (codes << 23).to(T.float32, bitcast=True)  # 2^(code - 127) for codes 1..254
        factor = tl.where(codes == 0, 2.0 ** -127, factor)
        factor = tl.where(codes == 255, float("nan"), factor)
    spread = tl.broadcast_to(tl.reshape(factor, (*batch, rows, groups, 1)), (*batch, rows, groups, size))
    return (values * tl.reshape(spread, (*batch, rows, k))).to(compute)


def _check_format(fmt, where: str) -> str:
    fmt = unwrap(fmt)
    if fmt not in FORMATS:
        raise ValueError(f"{where}_format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return fmt


@builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False, lhs_k_pack=True,
               rhs_k_pack=True, out_dtype=T.float32):
    """``lhs @ rhs`` of two microscaled blocks (see the module's notes), accumulated into ``acc``."""
    lhs_format, rhs_format = _check_format(lhs_format, "lhs"), _check_format(rhs_format, "rhs")
    if unwrap(out_dtype) != T.float32:
        raise ValueError("tl.dot_scaled computes in fp32 only: out_dtype must be tl.float32")
    lhs_scale, rhs_scale, acc = unwrap(lhs_scale), unwrap(rhs_scale), unwrap(acc)
    for name, x in (("lhs", lhs), ("rhs", rhs)):
        if not isinstance(x, tensor) or len(x.shape) not in (2, 3):
            raise ValueError(f"tl.dot_scaled's {name} must be a 2-D block (or 3-D, batched)")
    # bf16 holds every scaled fp4/fp8 value exactly (in range); an fp16 operand keeps its precision:
    # both sides are then fp16, as Triton's interpreter computes them
    compute = T.float16 if "fp16" in (lhs_format, rhs_format) else T.bfloat16
    a = _scaled(_values(lhs, lhs_format, -1 if unwrap(lhs_k_pack) else -2), lhs_scale, "lhs", compute)
    # the right operand as [..., N, K] (its scales' layout), then back
    b = _scaled(_values(_swap_last(rhs), rhs_format, -1 if unwrap(rhs_k_pack) else -2), rhs_scale, "rhs", compute)
    b = _swap_last(b)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"tl.dot_scaled: lhs has K = {a.shape[-1]} elements, rhs {b.shape[-2]}")
    return tl.dot(a, b, acc, out_dtype=T.float32)
