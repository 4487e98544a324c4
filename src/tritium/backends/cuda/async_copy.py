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

A loop the pipeliner rewrote (``pipeline.py``) copies with ``async_copy`` ops into a ring: its dot's
region repeated once per stage, the slot a copy fills or the dot reads (``shared_slot``) chosen at
run time; ``async_wait`` waits for the groups and synchronizes, so such a dot neither waits nor ends
with a barrier itself.

The rings are live from a loop's first copy (in its prologue) to the ``async_wait {pending=0}`` after
it. Where every tile region is a ring, the scratch memory starts at 0, over the rings, as Triton reuses
its pipeline's buffers (an epilogue's layout conversion): the first copy waits for every thread's
scratch uses before it (a barrier), and a scratch use while a ring is live raises ``RingsInUse``, on
which the backend lowers the kernel again with the scratch after the rings.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from ...compiler.ir.encodings import SharedTile
from ...compiler.ir.ops import Function, Operation
from ..llvm.lowering import LowerAgain
from ..llvm.types import I32, VOID
from . import mma
from .lowered import Lowered, as_ir

COPY_BYTES = 16


class RingsInUse(LowerAgain):
    """The scratch memory, laid over the rings, was used while one is live: lower with it apart."""


def async_operands(fn: Function) -> tuple[dict, list]:
    """Value id of each dot operand that is copied into the dot's tile: a load the layouts pass gave
    a tile encoding, or a ring slot (``shared_slot``) -> (a dot reading it, "a" or "b", the encoding);
    and the dots that read such operands, in program order. Read before the code generator clears the
    encodings it writes again."""
    found, dots = {}, []
    for op in fn.walk():
        if op.opcode != "dot":
            continue
        for name in ("a", "b"):
            operand = op.operand(name)
            if isinstance(operand.encoding, SharedTile):
                found[operand.id] = (op, name, operand.encoding)
                if not dots or dots[-1] is not op:
                    dots.append(op)
    return found, dots


def _ring_loops(fn: Function) -> dict:
    """Ring -> the ids of the ``for`` loops around its ``shared_slot`` ops, innermost first."""
    found: dict = {}

    def walk(region, chain: tuple) -> None:
        for op in region.ops:
            if op.opcode == "shared_slot":
                found.setdefault(op.attrs["ring"], chain)
            inner = (id(op),) + chain if op.opcode == "for" else chain
            for nested in op.regions:
                walk(nested, inner)

    walk(fn.body, ())
    return found


def _slot_op(dot: Operation, name: str) -> Optional[Operation]:
    """The ``shared_slot`` dot ``dot``'s operand ``name`` is read from, or None."""
    owner = dot.operand(name).owner
    return owner if owner is not None and owner.opcode == "shared_slot" else None


class AsyncCopies:
    """The code generator's side (mixed into ``Codegen``): the tile regions and the copies."""

    def tile_regions(self, operands: dict, dots: list) -> int:
        """Lays out the operand tiles of ``dots`` (those with an asynchronously loaded operand), one
        region per operand, 1024-byte aligned (``self.tile_base``: (id(dot), "a" or "b") -> the byte
        offset that ``mma.a_offset`` / ``b_offset``'s offsets are added to), a ring of them for an
        operand read from ring slots (``self.rings``: ring -> (a dot reading it, the operand);
        ``self.slot_bytes``: (id(dot), operand) -> the bytes of one slot); ``self.async_tiles``: the
        copied operands. Dots that read one copied value (a Q two loops multiply by) share its region.
        The dot's other operand, stored from registers, gets a region of its own too, unless the
        instructions read it from registers (``mma.a_in_registers``). The other regions come first; the rings of a pipelined loop follow,
        over those of the loops before it unless one loop holds the other (the rings are live from a
        loop's prologue to the wait after it, which synchronizes). Returns their bytes."""
        self.async_tiles = operands
        self.tile_base: dict[tuple, int] = {}
        self.slot_bytes: dict[tuple, int] = {}
        self.rings: dict[int, tuple] = {}
        self.async_readers = False  # a ring is read by wgmma, through the async proxy
        self.rings_live = False  # between a pipelined loop's first copy and its final wait
        self.all_rings = True  # every region is a ring
        loops = _ring_loops(self.fn)  # ring -> its loop and the loops around it
        regions: dict[int, tuple] = {}  # a copied value's id -> (its region's start, its slot's bytes)
        fixed: list = []  # (key, base, bytes, value) of the regions that are not rings
        rings: list = []  # (key, base, slot bytes, value, ring, stages)
        for dot in dots:
            plan = self.dot_plan(dot, self.assigned_layout(dot.results[0]))
            for name, size, base in (("a", plan.a_bytes, plan.a_base()), ("b", plan.b_bytes, plan.b_base())):
                value = dot.operand(name)
                if name == "a" and mma.a_in_registers(plan, self.assigned_layout(value)):
                    continue  # the instructions read it from registers
                size = -(-plan.parts * size // mma.TILE_ALIGN) * mma.TILE_ALIGN
                slot = _slot_op(dot, name)
                if slot is None:
                    fixed.append(((id(dot), name), base, size, value))
                    continue
                self.rings.setdefault(slot.attrs["ring"], (dot, name))
                self.async_readers = self.async_readers or plan.wgmma
                rings.append(((id(dot), name), base, size, value, slot.attrs["ring"], slot.attrs["stages"]))
        offset = 0
        for key, base, size, value in fixed:
            self.all_rings = False
            if value.id in regions:  # read by an earlier dot too, in the same tile layout (assign.py)
                self.tile_base[key] = regions[value.id][0] - base
                continue
            self.tile_base[key] = offset - base
            if value.id in operands:
                regions[value.id] = (offset, 0)
            offset += size
        end = offset
        placed: dict = {}  # a loop's id -> (the loops around it, its rings' start, their end)
        for key, base, size, value, ring, stages in rings:
            if value.id not in regions:
                chain = loops.get(ring, ())
                loop = chain[0] if chain else None
                if loop not in placed:
                    start = max([offset] + [last for other, (around, _, last) in placed.items()
                                            if other in chain or loop in around])
                    placed[loop] = (chain, start, start)
                around, start, last = placed[loop]
                regions[value.id] = (last, size)
                placed[loop] = (around, start, last + size * stages)
                end = max(end, last + size * stages)
            start, slot_bytes = regions[value.id]
            self.tile_base[key] = start - base
            self.slot_bytes[key] = slot_bytes
        return end

    def tile_encoding(self, v) -> Optional[SharedTile]:
        """The tile a load copies ``v`` into, or a ring slot holds it in (``assign.Choices``'s question,
        answered from what the layouts pass wrote before the encodings were cleared)."""
        found = self.async_tiles.get(v.id)
        return found[2] if found is not None else None

    def tile_pointer(self, byte_offset: ir.Value) -> ir.Value:
        """A byte of the tile regions (which the scratch memory of ``smem_pointer`` follows)."""
        return self.b.gep(self.smem, [byte_offset], source_etype=ir.IntType(8))

    def operand_pointer(self, dot: Operation, name: str, slot: Optional[ir.Value] = None):
        """The function from a byte offset of ``dot``'s operand ``name`` (``mma.a_offset`` /
        ``b_offset``'s) to a shared pointer: into its own tile region where it has one (in a ring: of
        the slot it is read from, or ``slot``), else into the scratch memory."""
        key = (id(dot), name)
        base = self.tile_base.get(key) if self.async_tiles else None
        if base is None:
            return self.smem_pointer
        start = ir.Constant(I32, base)
        if key in self.slot_bytes:
            if slot is None:
                slot = self.scalar(_slot_op(dot, name).operand("slot"))
            start = self.b.add(start, self.b.mul(slot, ir.Constant(I32, self.slot_bytes[key])))
        return lambda offset: self.tile_pointer(self.b.add(offset, start))

    def reads_ring(self, dot: Operation) -> bool:
        """``dot`` reads an operand from ring slots: ``async_wait`` has waited for its copies, and for
        the copies issued before them (an operand copied once before the loop)."""
        return (id(dot), "a") in self.slot_bytes or (id(dot), "b") in self.slot_bytes

    def copy_into_tile(self, op: Operation) -> None:
        """The load ``op`` as 16-byte ``cp.async`` copies into its dot's operand tile, one group."""
        result = op.results[0]
        dot, name, encoding = self.async_tiles[result.id]
        self._copy_runs(dot, name, op.operand("pointer"), op.operand("mask"), self.operand_pointer(dot, name))
        self.intrinsic("llvm.nvvm.cp.async.commit.group", VOID, [])
        result.encoding = encoding

    def _copy_runs(self, dot: Operation, name: str, pointer, mask, tile) -> None:
        b = self.b
        plan = self.dot_plan(dot, self.assigned_layout(dot.results[0]))
        layout = self.access_layout(pointer, mask)
        run = COPY_BYTES // plan.item
        pointers = self.regs(pointer, layout)
        masks = self.regs(mask, layout) if mask is not None else None
        offset_of = mma.a_offset if name == "a" else mma.b_offset
        for start in range(0, layout.num_regs, run):
            row, col = (Lowered(b, i) for i in self.element_index(layout, start))
            destination = tile(as_ir(offset_of(plan, 0, row, col)))
            source = self.global_pointer(pointers[start])
            size = ir.Constant(I32, COPY_BYTES)
            if masks is not None:
                size = b.select(masks[start], size, ir.Constant(I32, 0))
            self.intrinsic("llvm.nvvm.cp.async.cg.shared.global.16.s", VOID, [destination, source, size])

    def async_proxy_fence(self) -> None:
        """This thread's writes to shared memory (``cp.async``, ``st.shared``) made visible to the async
        proxy wgmma reads through; the barrier that follows publishes every thread's."""
        self.intrinsic("llvm.nvvm.fence.proxy.async.shared_cta", VOID, [])

    def wait_for_copies(self) -> None:
        """Every copy this thread issued has landed (``cp.async.wait_all``); the caller's barrier then
        makes every thread's visible."""
        self.intrinsic("llvm.nvvm.cp.async.wait.all", VOID, [])

    # the pipeliner's ops ------------------------------------------------------------------------------
    def scratch_used(self) -> None:
        """Called at every use of the scratch memory (``SharedMemory.smem_pointer``)."""
        if self.share_rings and self.rings_live:
            raise RingsInUse()

    def lower_async_copy(self, op: Operation) -> None:
        if self.share_rings and not self.rings_live:
            # every thread's uses of the scratch memory under the rings are done, those before in the
            # code and, where the loop sits in another, those of the enclosing loop's last iteration
            self.barrier()
            self.rings_live = True
        dot, name = self.rings[op.attrs["ring"]]
        tile = self.operand_pointer(dot, name, self.scalar(op.operand("slot")))
        self._copy_runs(dot, name, op.operand("pointer"), op.operand("mask"), tile)

    def lower_async_commit(self, op: Operation) -> None:
        self.intrinsic("llvm.nvvm.cp.async.commit.group", VOID, [])

    def lower_async_wait(self, op: Operation) -> None:
        self.intrinsic("llvm.nvvm.cp.async.wait.group", VOID, [ir.Constant(I32, op.attrs["pending"])])
        if self.async_readers:
            self.async_proxy_fence()
        self.barrier()
        if op.attrs["pending"] == 0:
            self.rings_live = False

    def lower_shared_slot(self, op: Operation) -> None:
        """No code: the dot reads the slot (``operand_pointer``)."""
        result = op.results[0]
        result.encoding = self.async_tiles[result.id][2]


def copy_run(layout, shape, item: int, dim: Optional[int] = None) -> Optional[int]:
    """Elements per thread-run of ``layout`` along dimension ``dim`` of ``shape`` (the last by
    default; its leading register bits), when that run is one 16-byte copy; else None."""
    along = len(shape) - 1 if dim is None else dim
    run = 1
    for bit_dim, weight in layout.reg_bits:
        if bit_dim != along or weight != run:
            break
        run *= 2
    return run if run * item == COPY_BYTES else None

