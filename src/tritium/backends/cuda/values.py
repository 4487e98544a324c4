"""The bottom of the CUDA code generator: what its mixins share without importing one another or
``codegen.py`` -- the address spaces, the shapes of IR values, the sizes of LLVM types, the cache hints
of loads and stores, and the shape arithmetic of layouts' bits.
"""
from __future__ import annotations

from llvmlite import ir

from ...compiler.ir import types as T
from ...compiler.ir.ops import Operation, Value
from ..llvm.types import item_size

GLOBAL = 1
SHARED = 3
GLOBAL_PTR = ir.PointerType(addrspace=GLOBAL)
SHARED_PTR = ir.PointerType(addrspace=SHARED)
SMEM_SYMBOL = "tritium_shared"


def _shape(ty) -> tuple[int, ...]:
    return tuple(ty.shape) if isinstance(ty, T.block_type) else ()


def _is_block(v: Value) -> bool:
    return isinstance(v.type, T.block_type)


def _byte_size(ty) -> int:
    """The bytes of an LLVM number or vector-of-numbers type; 0 for anything else (pointers)."""
    if isinstance(ty, ir.VectorType):
        return ty.count * _byte_size(ty.element)
    if isinstance(ty, ir.IntType):
        return ty.width // 8 if ty.width % 8 == 0 else 0
    if isinstance(ty, ir.HalfType):
        return 2
    if isinstance(ty, ir.FloatType):
        return 4
    if isinstance(ty, ir.DoubleType):
        return 8
    return 0


def _words(ty) -> int:
    """How many 32-bit registers a predicated access of ``ty`` moves: 1, 2 or 4; 0 where it is
    not 4, 8 or 16 bytes of numbers."""
    size = _byte_size(ty)
    return size // 4 if size in (4, 8, 16) else 0


# The PTX cache operators of tl.load's and tl.store's cache_modifier, and the L1 eviction priorities of
# their eviction_policy. PTX writes a cache operator and an eviction priority in different forms of
# the instruction, never both: an access given both keeps its cache operator.
LOAD_CACHE_OPERATORS = {".ca": ".ca", ".cg": ".cg", ".cv": ".cv", ".cs": ".cs", ".lu": ".lu"}
STORE_CACHE_OPERATORS = {".wb": ".wb", ".cg": ".cg", ".cs": ".cs", ".wt": ".wt"}
EVICTION_PRIORITIES = {"evict_first": ".L1::evict_first", "evict_last": ".L1::evict_last",
                       "evict_normal": ".L1::evict_normal", "evict_unchanged": ".L1::evict_unchanged",
                       "no_allocate": ".L1::no_allocate"}


def cache_hints(op: Operation, operators: dict) -> str:
    """The qualifiers of a load's or store's PTX instruction for its cache_modifier and
    eviction_policy ("" for neither)."""
    operator = operators.get(op.attrs.get("cache_modifier") or "", "")
    return operator or EVICTION_PRIORITIES.get(op.attrs.get("eviction_policy") or "", "")


def _shared_sizes(dtypes) -> list:
    """The bytes one value of each dtype takes in shared memory (pointers as 64-bit integers, booleans
    as bytes)."""
    return [8 if isinstance(d, T.pointer_type) else (1 if d.is_bool() else item_size(d)) for d in dtypes]


def _combine_tree(sets: list, levels: int, merge):
    """The halving tree over ``sets`` (a power of two of them, ``levels`` levels), lowest bit of the
    position first: what a group's members combine to, in the interpreter's order."""
    for j in range(levels):
        step = 1 << j
        for position in range(0, len(sets), step * 2):
            sets[position] = merge(sets[position], sets[position + step])
    return sets[0]


def _row_major_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _map_offset(offset, bit_map, rank: int) -> tuple[int, ...]:
    out = [0] * rank
    for d, x in enumerate(offset):
        k = 0
        while x:
            if x & 1:
                mapped = bit_map(d, 1 << k)
                if mapped is not None:
                    out[mapped[0]] += mapped[1]
            x >>= 1
            k += 1
    return tuple(out)
