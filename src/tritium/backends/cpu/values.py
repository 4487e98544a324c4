"""The CPU backend's bottom layer: the layout of the argument block, how much of a program's
blocks live on its stack, the ``Buffer`` a block value is kept in, and small helpers every rule uses.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ...compiler.ir import types as T

# Bytes of block buffers a program keeps on its thread's stack; the rest go to scratch memory the
# launcher allocates per thread after the error record (Codegen.scratch_bytes of it, 64-byte aligned).
STACK_BYTES = 256 * 1024
# Leaves one stage of a reduction meets per lane it keeps (Codegen.lower_reduce): each stage is one
# pass, and its loop body holds this many copies of the leaf's computation.
REDUCE_FAN_IN = 8

# args block: [grid x, grid y, grid z, kernel token (for prints), the iteration from which a while loop is watched
# for repeating itself (TRITIUM_SPIN_CHECK_AFTER), then per run-time argument one slot, then per pointer argument
# its [low, high) byte range]
HEADER_SLOTS = 5
SPIN_CHECK_SLOT = 4
# The function a print op calls: (kernel token, op index, pid x, y, z, pointers to each operand's lanes).
PRINT_SYMBOL = "tritium_cpu_print"
# The object's constant holding the bytes of scratch memory a program needs (Codegen.scratch_bytes).
SCRATCH_SYMBOL = "tritium_scratch_bytes"
# Two words of the process, [address of a table, its count]: the live tensors' [low, high) byte ranges
# (sorted by address) during a launch of a kernel that makes pointers from integers (int_to_ptr).
LIVE_TENSORS_SYMBOL = "tritium_cpu_live_tensors"



def _shape(ty) -> tuple[int, ...]:
    return tuple(ty.shape) if isinstance(ty, T.block_type) else ()


# A row read in place is prefetched up to this many bytes (a core's L1 data cache is 32-48 KB).
PREFETCH_BYTES = 16384


# The weights of a branch whose outcome is all but certain (a masked tail, a failed check): they
# keep the rare side's loops from looking as hot as the common side's to LLVM's register allocator
# and code placement (else constants of a scalar tail loop stay in registers through the vector
# loop, at the price of register copies on every iteration).
_LIKELY, _UNLIKELY = 2000, 1


def expect(branch, outcome: bool):
    """Marks the conditional ``branch`` as almost always taking its ``outcome`` side."""
    branch.set_weights([_LIKELY, _UNLIKELY] if outcome else [_UNLIKELY, _LIKELY])
    return branch


def row_major_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


@dataclass
class Buffer:
    """A block value in memory: ``pointer`` to its elements (memory type of ``dtype``), ``strides``
    in elements per dimension (a view of another buffer may have any strides)."""

    pointer: ir.Value
    dtype: object
    shape: tuple
    strides: tuple
