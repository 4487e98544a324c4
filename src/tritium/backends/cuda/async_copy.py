"""Loads that feed a tensor-core dot straight into its shared-memory tile: ``cp.async``.

The layouts pass (``assign.py``) gives such a load the dot operand's tile encoding
(``#cuda.nvmma<swizzle=W>``) where it can: the load's only reader is the operand of an fp16/bf16
``mma.sync`` dot, the tile is swizzled, each thread's access is 16-byte runs along the tile's
contiguous dimension with one mask bit per run, and ``other`` is absent or zero. Its lowering here
copies each run with ``cp.async.cg.shared.global`` (16 bytes; a run whose mask is off copies
nothing and zero-fills: ``src_size`` 0) to where ``mma.a_offset`` / ``b_offset`` put the run's
first element: no registers hold the operand on its way, and the copy runs while the thread goes
on. The dot waits for its copies (``cp.async.wait_all``, then a barrier) before ``ldmatrix`` reads
the tile, and ends with a barrier so that the next copies into it (the next iteration's) wait for
every warp's reads.

Such tiles live in regions of their own at the start of shared memory, one per dot
(``tile_regions``), 1024-byte aligned; the scratch memory other ops share starts after them
(``SharedMemory.smem_pointer``), so nothing between a copy and its dot can overwrite the tile.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from ...compiler.ir.encodings import SharedTile
from ...compiler.ir.ops import Function, Operation
from ..llvm.types import I32, VOID
from . import mma

COPY_BYTES = 16


def async_operands(fn: Function) -> dict:
    """Value id of each load the layouts pass gave a tile encoding -> (its dot, "a" or "b", the
    encoding); read before the code generator clears the encodings it writes again."""
    found = {}
    for op in fn.walk():
        if op.opcode != "dot":
            continue
        for name in ("a", "b"):
            operand = op.operand(name)
            if isinstance(operand.encoding, SharedTile):
                found[operand.id] = (op, name, operand.encoding)
    return found


class AsyncCopies:
    """The code generator's side (mixed into ``Codegen``): the tile regions and the copies."""

    def tile_regions(self, operands: dict) -> int:
        """Lays out one region per dot with an asynchronously loaded operand (``self.tile_base``:
        id(dot) -> its byte offset; ``self.async_tiles``: the operands); returns their bytes."""
        self.async_tiles = operands
        self.tile_base: dict[int, int] = {}
        offset = 0
        for dot, _, _ in operands.values():
            if id(dot) in self.tile_base:
                continue
            plan = self.dot_plan(dot, self.assigned_layout(dot.results[0]))
            self.tile_base[id(dot)] = offset
            offset += -(-plan.smem_bytes // mma.TILE_ALIGN) * mma.TILE_ALIGN
        return offset

    def tile_pointer(self, byte_offset: ir.Value) -> ir.Value:
        """A byte of the tile regions (which the scratch memory of ``smem_pointer`` follows)."""
        return self.b.gep(self.smem, [byte_offset], source_etype=ir.IntType(8))

    def operand_pointer(self, dot: Operation):
        """The function from a byte offset in ``dot``'s operand memory (``mma.Plan``'s) to a shared
        pointer: its own tile region where it has one, else the scratch memory."""
        base = self.tile_base.get(id(dot)) if self.async_tiles else None
        if base is None:
            return self.smem_pointer
        return lambda offset: self.tile_pointer(self.b.add(offset, ir.Constant(I32, base)))

    def lower_async_copy(self, op: Operation) -> None:
        """The load ``op`` as 16-byte ``cp.async`` copies into its dot's operand tile."""
        b = self.b
        result = op.results[0]
        dot, name, encoding = self.async_tiles[result.id]
        plan = self.dot_plan(dot, self.assigned_layout(dot.results[0]))
        pointer, mask = op.operand("pointer"), op.operand("mask")
        layout = self.access_layout(pointer, mask)
        run = COPY_BYTES // plan.item
        pointers = self.regs(pointer, layout)
        masks = self.regs(mask, layout) if mask is not None else None
        offset_of = mma.a_offset if name == "a" else mma.b_offset
        tile = self.operand_pointer(dot)
        for start in range(0, layout.num_regs, run):
            row, col = (mma.Lowered(b, i) for i in self.element_index(layout, start))
            destination = tile(mma._ir(offset_of(plan, 0, row, col)))
            source = self.global_pointer(pointers[start])
            size = ir.Constant(I32, COPY_BYTES)
            if masks is not None:
                size = b.select(masks[start], size, ir.Constant(I32, 0))
            self.intrinsic("llvm.nvvm.cp.async.cg.shared.global.16.s", VOID, [destination, source, size])
        self.intrinsic("llvm.nvvm.cp.async.commit.group", VOID, [])
        result.encoding = encoding

    def wait_for_copies(self) -> None:
        """Every copy this thread issued has landed (``cp.async.wait_all``); the caller's barrier then
        makes every thread's visible."""
        self.intrinsic("llvm.nvvm.cp.async.wait.all", VOID, [])


def copy_run(layout, shape, item: int) -> Optional[int]:
    """Elements per thread-run of ``layout`` along the last dimension of ``shape`` (its leading
    register bits), when that run is one 16-byte copy; else None."""
    last = len(shape) - 1
    run = 1
    for dim, weight in layout.reg_bits:
        if dim != last or weight != run:
            break
        run *= 2
    return run if run * item == COPY_BYTES else None

