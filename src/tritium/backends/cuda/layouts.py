"""Layouts: which element of a block each thread of a program holds, in which of its registers.

A program runs on ``32 * num_warps`` threads. A layout of a block of shape ``(s0, ..., s{n-1})``
(powers of two) is linear over bits: the index of the element a thread holds in register ``r`` is,
along each dimension, the sum of

- the contributions of the set bits of ``r`` (``reg_bits[i]`` for bit ``i`` of the register number),
- the contributions of the set bits of the lane id (``lane_bits``, 5 of them) and of the warp id
  (``warp_bits``, log2(num_warps) of them).

A contribution is ``(dim, weight)``, a power of two along one dimension, or None for a lane or warp
bit that *replicates* (threads that differ only in it hold the same elements). The contributions of
one layout are distinct powers of two per dimension, so the sums never carry: every element is held
by exactly one register of one thread, up to replication. Shape ops (expand_dims, broadcast,
permute, reshape, a reduction's slice) are rewrites of these tables (docs/cuda-backend.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Optional

from ...compiler.ir.encodings import Distributed

Bit = Optional[tuple[int, int]]  # (dim, weight) or None
WARP_SIZE = 32
LANE_BITS = 5


def log2(n: int) -> int:
    assert n > 0 and n & (n - 1) == 0, n
    return n.bit_length() - 1


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    reg_bits: tuple[tuple[int, int], ...]
    lane_bits: tuple[Bit, ...]
    warp_bits: tuple[Bit, ...]
    # where the layout comes from ("blocked", "slice", "mma", ...): printed in the IR's encoding, never
    # compared (two layouts with the same bits are the same layout)
    kind: str = field(default="blocked", compare=False)

    def encoding(self) -> Distributed:
        """This layout as the IR's encoding of a block value (compiler/ir/encodings.py)."""
        return Distributed(self.kind, self.shape, self.reg_bits, self.lane_bits, self.warp_bits)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_regs(self) -> int:
        return 1 << len(self.reg_bits)

    @cached_property
    def offsets(self) -> tuple[tuple[int, ...], ...]:
        """Per register, its compile-time index offset along each dimension."""
        result = []
        for r in range(self.num_regs):
            index = [0] * self.rank
            for i, (dim, weight) in enumerate(self.reg_bits):
                if r >> i & 1:
                    index[dim] += weight
            result.append(tuple(index))
        return tuple(result)

    @cached_property
    def register_of(self) -> dict:
        """Index offset -> register number."""
        return {offset: r for r, offset in enumerate(self.offsets)}

    @property
    def replicated(self) -> bool:
        return any(b is None for b in self.lane_bits + self.warp_bits)

    def replica_masks(self) -> tuple[int, int]:
        """(lane mask, warp mask) of the bits that replicate: a thread with any of them set holds
        copies of what the thread without them holds."""
        lanes = sum(1 << i for i, b in enumerate(self.lane_bits) if b is None)
        warps = sum(1 << i for i, b in enumerate(self.warp_bits) if b is None)
        return lanes, warps

    def __str__(self) -> str:
        def bits(bs):
            return "[" + ", ".join("-" if b is None else f"{b[0]}:{b[1]}" for b in bs) + "]"

        return (f"layout<{'x'.join(map(str, self.shape))} regs={bits(self.reg_bits)} lanes={bits(self.lane_bits)} "
                f"warps={bits(self.warp_bits)}>")


def blocked(shape: tuple[int, ...], num_warps: int, order: Optional[tuple[int, ...]] = None, vec: int = 1) -> Layout:
    """The blocked layout: ``vec`` consecutive elements per thread along ``order[0]`` (the fastest
    dimension), then the 32 lanes of a warp along the fastest dimensions, the warps along the
    slowest ones (so a reduction along a fast dimension stays inside a warp), and what is left over
    as more registers per thread. Lanes or warps past the block's size replicate it."""
    rank = len(shape)
    if order is None:
        order = tuple(reversed(range(rank)))
    covered = [1] * rank
    regs: list[tuple[int, int]] = []
    if rank:
        fast = order[0]
        vec = max(1, min(vec, shape[fast]))
        while covered[fast] < vec:
            regs.append((fast, covered[fast]))
            covered[fast] *= 2

    def take(dims) -> Bit:
        for d in dims:
            if covered[d] < shape[d]:
                bit = (d, covered[d])
                covered[d] *= 2
                return bit
        return None

    lanes = tuple(take(order) for _ in range(LANE_BITS))
    warps = tuple(take(tuple(reversed(order))) for _ in range(log2(num_warps)))
    for d in order:
        while covered[d] < shape[d]:
            regs.append((d, covered[d]))
            covered[d] *= 2
    return Layout(tuple(shape), tuple(regs), lanes, warps)


def scalar_layout(num_warps: int) -> Layout:
    return Layout((), (), (None,) * LANE_BITS, (None,) * log2(num_warps), "scalar")


def default_layout(shape: tuple[int, ...], num_warps: int) -> Layout:
    """The layout of a value nothing else decides: blocked, 4 elements per thread along the last
    dimension where it has as many."""
    return blocked(tuple(shape), num_warps, vec=4 if shape and shape[-1] >= 4 else 1)


def access_layout(pointer, mask, axis: dict, num_warps: int) -> Layout:
    """The blocked layout of a load or store through the block of pointers ``pointer`` (a Value):
    the most contiguous dimension fastest, up to 16 bytes per thread along it where the axis
    analysis (``axis``: value -> its facts) proves them contiguous and aligned, and ``mask`` (a
    Value or None) constant over them."""
    from ..llvm.types import item_size

    shape = tuple(pointer.type.shape)
    info = axis.get(pointer)
    size = item_size(pointer.type.scalar.element_ty)
    if info is None:
        return default_layout(shape, num_warps)
    rank = len(shape)
    order = tuple(sorted(range(rank), key=lambda d: (-info.contiguity[d], -d)))
    fast = order[0]
    vec = min(info.contiguity[fast], max(1, 16 // size), shape[fast])
    alignment = info.divisibility[fast]
    while vec > 1 and alignment % (vec * size):
        vec //= 2
    if mask is not None:
        mask_info = axis.get(mask)
        constancy = mask_info.constancy[fast] if mask_info is not None else 1
        vec = min(vec, constancy)
    return blocked(shape, num_warps, order, max(vec, 1))


def from_encoding(encoding) -> Optional[Layout]:
    """The layout an IR encoding (``Distributed``) writes out, or None for any other encoding."""
    if not isinstance(encoding, Distributed):
        return None
    return Layout(encoding.shape, encoding.reg_bits, encoding.lane_bits, encoding.warp_bits, encoding.kind)


# rewrites ----------------------------------------------------------------------------------------
def map_bits(layout: Layout, shape: tuple[int, ...], bit_map: Callable[[int, int], Bit], kind: str = "") -> Layout:
    """The layout of a block of ``shape`` whose element at index ``f(i)`` is what ``layout`` puts at
    ``i``, where ``f`` maps each bit contribution by ``bit_map`` (None: the bit vanishes). Register bits
    that vanish merge registers: the caller must not need them apart."""
    regs = tuple(m for m in (bit_map(*b) for b in layout.reg_bits) if m is not None)
    lanes = tuple(None if b is None else bit_map(*b) for b in layout.lane_bits)
    warps = tuple(None if b is None else bit_map(*b) for b in layout.warp_bits)
    return Layout(tuple(shape), regs, lanes, warps, kind or layout.kind)


def sliced(layout: Layout, axis: int) -> Layout:
    """The layout of a reduction's result along ``axis``."""
    shape = layout.shape[:axis] + layout.shape[axis + 1:]
    return map_bits(layout, shape, lambda d, w: None if d == axis else (d - (d > axis), w), "slice")


def expand_dims(layout: Layout, axis: int) -> Layout:
    shape = layout.shape[:axis] + (1,) + layout.shape[axis:]
    return map_bits(layout, shape, lambda d, w: (d + (d >= axis), w))


def permuted(layout: Layout, order: tuple[int, ...]) -> Layout:
    """The layout of ``permute(x, order)`` (result dim i is source dim order[i])."""
    inverse = {source: i for i, source in enumerate(order)}
    shape = tuple(layout.shape[o] for o in order)
    return map_bits(layout, shape, lambda d, w: (inverse[d], w))


# index maps between a result's elements and an operand's -------------------------------------------
def broadcast_source(shape: tuple[int, ...]) -> Callable[[int, int], Bit]:
    """For broadcast from ``shape``: a result bit -> the operand bit it reads (None along a
    broadcast dimension of size 1)."""
    return lambda d, w: None if shape[d] == 1 else (d, w)


def reshape_source(result_shape: tuple[int, ...], source_shape: tuple[int, ...]) -> Callable[[int, int], Bit]:
    """For reshape (row-major): a result bit -> the operand bit holding the same flat-index bit."""
    def flat_bit(shape, d, w) -> int:
        stride = 1
        for n in shape[d + 1:]:
            stride *= n
        return log2(stride * w)

    positions = {}
    stride = 1
    for d in reversed(range(len(source_shape))):
        for k in range(log2(source_shape[d])):
            positions[log2(stride) + k] = (d, 1 << k)
        stride *= source_shape[d]
    return lambda d, w: positions[flat_bit(result_shape, d, w)]


def permute_source(order: tuple[int, ...]) -> Callable[[int, int], Bit]:
    """For permute(x, order): result dim i is source dim order[i]."""
    return lambda d, w: (order[d], w)


def source_layout(result: Layout, source_shape: tuple[int, ...], bit_map) -> Layout:
    """The view of the source's elements that ``result``'s threads need, as a layout of the source
    shape: register bits that map nowhere (a broadcast dimension) drop out."""
    return map_bits(result, source_shape, bit_map)


def same_threads(a: Layout, b: Layout) -> bool:
    """True when every thread holds, in ``b``, only elements it holds in ``a`` (so converting from
    ``a`` to ``b`` renames registers): the lane and warp bits agree and ``b``'s register offsets are
    among ``a``'s."""
    if a.shape != b.shape or a.lane_bits != b.lane_bits or a.warp_bits != b.warp_bits:
        return False
    have = a.register_of
    return all(offset in have for offset in b.offsets)
