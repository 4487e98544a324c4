"""``dot`` on the tensor cores: ``mma.sync`` on sm_80 and later.

Instructions (``INSTRUCTIONS``): fp16 and bf16 inputs with fp32 accumulators
(``mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32``), fp32 inputs with
``input_precision`` tf32 (``m16n8k8 .tf32``: inputs truncated to tf32 first, as the IR spec says;
tf32x3 is three of them on the tf32 parts and remainders), int8 / uint8 inputs with i32 accumulators
(``m16n8k32 .s8`` / ``.u8``, wrapping). Everything else stays on the FMA path (``dot.py``).

**Tiles and warps.** The result is cut into 16 x 8 tiles, one mma's D each. Warp-id bits take, one
at a time, the batch dimension, then M or N (the one with more tiles left per warp; M on a tie);
a warp bit with nothing left to split replicates. What a warp has past its share repeats as more
registers, at a stride of the warp grid. The result's layout (``Plan.layout``) is the mma's
accumulator fragment (the thread with lane ``4 g + t`` holds c0, c1 at row g, columns 2t, 2t + 1,
and c2, c3 at row g + 8) repeated so:

    register bits 0, 1 -> (col, 1), (row, 8); lane bits -> (col, 2), (col, 4), (row, 1), (row, 2), (row, 4);
    warp bits -> the warp grid; further register bits -> the repeats along N, then M, then the batch.

**Operands** go to shared memory in their input type (fp32 truncated to tf32): A as M x K; B as
K x N (read with ``ldmatrix.trans``) for 16-bit inputs, as N x K for 32- and 8-bit ones. A tile
whose contiguous dimension is a multiple of 32 bytes (and the other of 8 rows) takes Hopper's
swizzled layout (``nvmma_offset``: docs/tensor-cores.md, "Shared tiles"), which wgmma descriptors
and TMA read too: 16-byte unit u of row r of a W-byte column block lands at unit u ^ (r's phase),
so the eight rows one ``ldmatrix`` block reads fall in distinct banks; each tile starts on a
1024-byte boundary. A smaller tile pads each row to an odd number of 16-byte units instead. In rows contiguous along K every fragment register of these instructions
is one 32-bit word: for the thread with lane ``4 g + t``, word t of row g (or g + 8) of an 8-row,
16-byte block, which is what ``ldmatrix`` without .trans hands each lane; one instruction's K is 32
bytes of input. A's four registers are the blocks (rows 0-7, bytes 0-15), (rows 8-15, bytes 0-15),
(rows 0-7, bytes 16-31), (rows 8-15, bytes 16-31) of its 16-row tile; B's two are bytes 0-15 and
16-31 of its 8 rows of N; .trans gives a 16-bit B stored K x N the same words (b0, b1 at k = 2t,
2t + 1, column g).

The index arithmetic (where an operand element is stored, the row address each lane hands
``ldmatrix``, a warp's tiles) is plain Python on ints, run again on ``Lowered`` values that emit it
as LLVM IR; tests/backends/cuda/test_cuda_mma.py runs the same functions on ints to model the whole product.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from llvmlite import ir

from ...compiler.ir.encodings import SharedTile
from ..llvm import scalar as lanes
from ..llvm.types import I32
from . import layouts as L

MIN_CAPABILITY = 80
UNROLLED_STEPS = 16  # k-steps unrolled; more go round a loop


@dataclass(frozen=True)
class Instruction:
    """One mma.sync shape and types, as the LLVM NVPTX intrinsic that emits it."""

    kind: str
    intrinsic: str
    k: int  # K of one instruction
    item: int  # bytes of one input element
    trans_b: bool  # B stored K x N and read with ldmatrix.trans (16-bit inputs), else stored N x K
    integer: bool


INSTRUCTIONS = {
    # mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
    "fp16": Instruction("fp16", "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", 16, 2, True, False),
    # mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
    "bf16": Instruction("bf16", "llvm.nvvm.mma.m16n8k16.row.col.bf16", 16, 2, True, False),
    # mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
    "tf32": Instruction("tf32", "llvm.nvvm.mma.m16n8k8.row.col.tf32", 8, 4, False, False),
    # mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 (and .u8)
    "int8": Instruction("int8", "llvm.nvvm.mma.m16n8k32.row.col.s8", 32, 1, False, True),
    "uint8": Instruction("uint8", "llvm.nvvm.mma.m16n8k32.row.col.u8", 32, 1, False, True),
}

# tf32x3: the products of (A part, B part), 0 the tf32 high part, 1 the remainder; small ones first
SPLIT_PRODUCTS = ((0, 1), (1, 0), (0, 0))


def instruction_kind(a_dtype, work, precision: str, capability: int) -> Optional[str]:
    """The key of ``INSTRUCTIONS`` a dot of ``a_dtype`` inputs accumulating in ``work`` takes, or
    None (the FMA path)."""
    if capability < MIN_CAPABILITY:
        return None
    if work.is_fp32():
        if a_dtype.is_fp16():
            return "fp16"
        if a_dtype.is_bf16():
            return "bf16"
        if a_dtype.is_fp32() and precision in ("tf32", "tf32x3"):
            return "tf32"
        return None
    if a_dtype.is_int() and a_dtype.primitive_bitwidth == 8 and work.is_int() and work.primitive_bitwidth == 32:
        return "int8" if a_dtype.is_int_signed() else "uint8"
    return None


# the plan: tiles, warps, shared memory --------------------------------------------------------------
def padded_row(nbytes: int) -> int:
    """The stride of an operand row of ``nbytes`` (a multiple of 16) in shared memory: an odd number
    of 16-byte units, so eight consecutive rows start in the eight distinct 16-byte bank groups."""
    return nbytes if nbytes // 16 % 2 else nbytes + 16


TILE_ALIGN = 1024  # a swizzled tile's start: its XOR pattern repeats every 8 x W <= 1024 bytes


def swizzle_width(contiguous_bytes: int, rows: int) -> int:
    """The swizzle W (128, 64 or 32 bytes) of a tile whose contiguous dimension holds
    ``contiguous_bytes`` and whose other dimension ``rows``; 0 when it takes padded rows instead."""
    if rows % 8:
        return 0
    for width in (128, 64, 32):
        if contiguous_bytes % width == 0:
            return width
    return 0


def nvmma_offset(row, col, rows: int, width: int, item: int):
    """The byte offset of element (``row``, ``col``) (``col`` along the contiguous dimension) in a
    swizzled tile of ``rows`` rows: column blocks of ``width`` bytes, each holding every row, with
    16-byte unit u of a row at u ^ ((offset >> 7) & (width / 16 - 1)). Ints or Lowered values."""
    # Written as a sum of a row part and a column part (the XOR only touches the unit bits, which
    # the row part leaves zero): the rows of a warp's tiles further down share their lanes' phase,
    # so their addresses differ from the first tile's by constants (immediate offsets in the code).
    shift = L.log2(width // item)  # elements per column block: a power of two
    within = (col & ((width // item) - 1)) * item  # the byte in the row of its column block
    phase = (row >> L.log2(128 // width)) & (width // 16 - 1)  # bits 7.. of row * width
    return (col >> shift) * (rows * width) + row * width + (((within >> 4) ^ phase) << 4) + (within & 15)


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


DIM_UNIT = (1, 16, 8)  # one tile's extent along (batch, M, N)


def warp_grid(batch: int, tiles_m: int, tiles_n: int, num_warps: int, rows_only: bool = False) -> tuple:
    """Per warp-id bit, its (dim, weight) over (batch, row, col) of the result, or None (replicates);
    ``rows_only``: no bit takes N (each warp holds whole rows)."""
    split = [1, 1, 1]
    bits = []
    for _ in range(L.log2(num_warps)):
        if split[0] < batch:
            dim = 0
        elif split[1] < tiles_m and (rows_only or tiles_m // split[1] >= tiles_n // split[2]):
            dim = 1
        elif split[2] < tiles_n and not rows_only:
            dim = 2
        elif split[1] < tiles_m:
            dim = 1
        else:
            bits.append(None)
            continue
        bits.append((dim, DIM_UNIT[dim] * split[dim]))
        split[dim] *= 2
    return tuple(bits)


@dataclass(frozen=True)
class Plan:
    """How one dot runs on the tensor cores: the result (batch x M x N; batch 1 for a 2-D dot), its
    warp grid, the repeats per thread and where the operands lie in shared memory."""

    instruction: Instruction
    batched: bool
    batch: int
    m: int
    n: int
    k: int
    num_warps: int
    parts: int  # 2 for tf32x3 (high parts and remainders), else 1
    warp_bits: tuple
    a_swizzle: int = 0  # W of A's swizzled tile (``swizzle_width``), 0: padded rows
    b_swizzle: int = 0
    # Hopper's wgmma (``wgmma.py``): each warpgroup (4 warps, stacked along M) multiplies 64 rows at a
    # time straight from the swizzled tiles; its accumulator fragment is this layout's
    wgmma: bool = False
    # a 16-bit B stored N x K (K contiguous, "K-major", as a load of K^T with K contiguous in memory
    # copies it) and read with ldmatrix without .trans; instructions that store B N x K anyway ignore it
    b_kmajor: bool = False

    @property
    def b_trans(self) -> bool:
        """B is stored K x N (N contiguous) and read with ldmatrix.trans; else stored N x K."""
        return self.instruction.trans_b and not self.b_kmajor

    @property
    def item(self) -> int:
        return self.instruction.item

    def warps_along(self, dim: int) -> int:
        return 1 << sum(1 for bit in self.warp_bits if bit is not None and bit[0] == dim)

    @property
    def repeats(self) -> tuple[int, int, int]:
        """Tiles per thread along (batch, M, N)."""
        extents = (self.batch, self.m // 16, self.n // 8)
        return tuple(extent // self.warps_along(d) for d, extent in enumerate(extents))

    @property
    def k_steps(self) -> int:
        return self.k // self.instruction.k

    # shared memory: per part, A's batch of tiles, then B's (``a_base``, ``b_base``)
    @property
    def a_row(self) -> int:
        return padded_row(self.k * self.item)

    @property
    def a_tile(self) -> int:
        """The bytes of one A tile (of a batch), 1024-aligned when swizzled."""
        if self.a_swizzle:
            return _round_up(self.m * self.k * self.item, TILE_ALIGN)
        return self.m * self.a_row

    @property
    def a_bytes(self) -> int:
        return self.batch * self.a_tile

    @property
    def b_rows(self) -> int:
        """B's rows in shared memory: K (stored K x N) or N (stored N x K)."""
        return self.k if self.b_trans else self.n

    @property
    def b_row(self) -> int:
        return padded_row((self.n if self.b_trans else self.k) * self.item)

    @property
    def b_tile(self) -> int:
        if self.b_swizzle:
            return _round_up(self.n * self.k * self.item, TILE_ALIGN)
        return self.b_rows * self.b_row

    @property
    def b_bytes(self) -> int:
        return self.batch * self.b_tile

    def a_base(self, part: int = 0) -> int:
        return part * self.a_bytes

    def b_base(self, part: int = 0) -> int:
        return _round_up(self.parts * self.a_bytes, TILE_ALIGN if self.b_swizzle else 16) + part * self.b_bytes

    @property
    def smem_bytes(self) -> int:
        return self.b_base(self.parts)

    # the result
    @property
    def layout(self) -> L.Layout:
        rb, rm, rn = self.repeats
        wb, wm, wn = (self.warps_along(d) for d in range(3))
        regs = [(2, 1), (1, 8)]
        regs += [(2, 8 * wn << i) for i in range(L.log2(rn))]
        regs += [(1, 16 * wm << i) for i in range(L.log2(rm))]
        regs += [(0, wb << i) for i in range(L.log2(rb))]
        lane_bits = ((2, 2), (2, 4), (1, 1), (1, 2), (1, 4))
        kind = "wgmma" if self.wgmma else "mma"
        full = L.Layout((self.batch, self.m, self.n), tuple(regs), lane_bits, self.warp_bits, kind)
        if self.batched:
            return full
        return L.map_bits(full, (self.m, self.n), lambda d, w: (d - 1, w))

    def tiles(self):
        """The thread's tiles (batch repeat, M repeat, N repeat), in register order."""
        rb, rm, rn = self.repeats
        return [(ib, im, jn) for ib in range(rb) for im in range(rm) for jn in range(rn)]

    def c_register(self, tile) -> int:
        """The first of a tile's four accumulator registers (c0..c3) in ``layout``."""
        ib, im, jn = tile
        _, rm, rn = self.repeats
        return 4 * (jn + rn * (im + rm * ib))

    def a_groups(self):
        """The A fragments a thread loads per k-step: (batch repeat, M repeat), one ldmatrix.x4 each."""
        rb, rm, _ = self.repeats
        return [(ib, im) for ib in range(rb) for im in range(rm)]

    def b_groups(self):
        """The B fragments per k-step: (batch repeat, first N repeat, count); an ldmatrix.x4 loads
        two N repeats' fragments (count 2), an .x2 the one a thread has when it has only one."""
        rb, _, rn = self.repeats
        step = 2 if rn >= 2 else 1
        return [(ib, jn, step) for ib in range(rb) for jn in range(0, rn, step)]


def plan_for(shape_c, k: int, kind: str, num_warps: int, split: bool = False, wgmma: bool = False,
             b_kmajor: bool = False, rows_only: bool = False) -> Optional[Plan]:
    """The plan of a dot with result shape ``shape_c`` (2-D or batched 3-D) and inner size ``k``,
    or None where the block is smaller than one tile (M < 16 or N < 8). ``wgmma``: Hopper's
    instructions are allowed; the plan takes them where they fit (``wgmma.fits``). ``b_kmajor``: a
    16-bit B is stored N x K (``Plan.b_kmajor``). ``rows_only``: mma.sync's warps split M alone
    (``warp_grid``), as wgmma's warpgroups do."""
    from . import wgmma as hopper

    batched = len(shape_c) == 3
    batch, m, n = shape_c if batched else (1,) + tuple(shape_c)
    instruction = INSTRUCTIONS[kind]
    if m < 16 or n < 8 or k < instruction.k:
        return None
    b_kmajor = b_kmajor and instruction.trans_b
    b_contiguous, b_rows = (n, k) if instruction.trans_b and not b_kmajor else (k, n)
    swizzles = swizzle_width(k * instruction.item, m), swizzle_width(b_contiguous * instruction.item, b_rows)
    if wgmma and not batched and not split and hopper.fits(kind, m, n, num_warps, *swizzles):
        return Plan(instruction, False, 1, m, n, k, num_warps, 1, hopper.warp_bits(num_warps), *swizzles, True,
                    b_kmajor)
    bits = warp_grid(batch, m // 16, n // 8, num_warps, rows_only)
    return Plan(instruction, batched, batch, m, n, k, num_warps, 2 if split else 1, bits, *swizzles,
                b_kmajor=b_kmajor)


# A from registers ----------------------------------------------------------------------------------------
def operand_layout(plan: Plan) -> L.Layout:
    """The layout of an M x K A that the instructions take from registers: per 16-row tile and 16-wide
    K step four 32-bit registers holding a0..a7 at (row g + 8 h, column 2 t + e + 8 q), mma.sync's A
    fragment and wgmma's; it is the accumulator's layout with N read as K, so the fp16 cast of one
    dot's result (attention's P) is where the next dot reads it, with no data movement. Meaningful
    where the warps split M alone."""
    return replace(plan, n=plan.k).layout


def a_in_registers(plan: Optional[Plan], layout: Optional[L.Layout]) -> bool:
    """The dot reads its A from registers (``layout``: A's): 16-bit inputs in ``operand_layout``, the
    warps splitting M alone (wgmma's warpgroups always do)."""
    if plan is None or layout is None or plan.batched or plan.parts != 1:
        return False
    if plan.instruction.kind not in ("fp16", "bf16") or plan.warps_along(2) != 1:
        return False
    return layout == operand_layout(plan)


def packed_a(b: ir.IRBuilder, values: list, first: int) -> list:
    """The four 32-bit A registers of one 16-wide K step: the 16-bit elements ``first`` .. ``first +
    7`` of ``operand_layout``'s registers (held in i16), paired low half first."""
    words = []
    for i in range(first, first + 8, 2):
        low = b.zext(values[i], I32)
        high = b.shl(b.zext(values[i + 1], I32), ir.Constant(I32, 16))
        words.append(b.or_(low, high))
    return words


# index arithmetic, on ints (the model) or on Lowered values (the code) -----------------------------------
def a_offset(plan: Plan, batch, row, col, part: int = 0):
    """The byte offset in shared memory of A[batch, row, col] (col along K)."""
    if plan.a_swizzle:
        return plan.a_base(part) + batch * plan.a_tile + nvmma_offset(row, col, plan.m, plan.a_swizzle, plan.item)
    return plan.a_base(part) + (batch * plan.m + row) * plan.a_row + col * plan.item


def b_offset(plan: Plan, batch, row, col, part: int = 0):
    """The byte offset in shared memory of B[batch, row, col] (row along K)."""
    stored_row, stored_col = (row, col) if plan.b_trans else (col, row)
    if plan.b_swizzle:
        return (plan.b_base(part) + batch * plan.b_tile
                + nvmma_offset(stored_row, stored_col, plan.b_rows, plan.b_swizzle, plan.item))
    return plan.b_base(part) + (batch * plan.b_rows + stored_row) * plan.b_row + stored_col * plan.item


def warp_origin(plan: Plan, warp) -> list:
    """The (batch, row, col) of the warp's first tile."""
    origin = [0, 0, 0]
    for i, bit in enumerate(plan.warp_bits):
        if bit is not None:
            dim, weight = bit
            origin[dim] = origin[dim] + ((warp >> i) & 1) * weight
    return origin


def tile_origin(plan: Plan, warp, ib: int = 0, im: int = 0, jn: int = 0) -> list:
    """The (batch, row, col) of the warp's tile (ib, im, jn): repeats step by the warp grid."""
    b0, m0, n0 = warp_origin(plan, warp)
    return [b0 + ib * plan.warps_along(0), m0 + im * 16 * plan.warps_along(1), n0 + jn * 8 * plan.warps_along(2)]


def a_address(plan: Plan, lane, warp, group, kstep, part: int = 0):
    """The row address ``lane`` hands ldmatrix.x4 for A fragment ``group`` at k-step ``kstep``: lanes
    8j..8j+7 give the rows of block j = (rows 0-7 | 8-15) + 16 * (bytes 0-15 | 16-31)."""
    ib, im = group
    batch, row, _ = tile_origin(plan, warp, ib, im, 0)
    col = kstep * plan.instruction.k + (lane >> 4) * (16 // plan.item)
    return a_offset(plan, batch, row + (lane & 15), col, part)


def b_address(plan: Plan, lane, warp, group, kstep, part: int = 0):
    """The row address ``lane`` hands ldmatrix for B group (ib, jn, count) at k-step ``kstep``.

    K x N storage (.trans): block j holds k rows 8 (j & 1) .. + 7 of N repeat jn + (j >> 1); lanes
    16-31 of an .x2 repeat lanes 0-15. N x K storage: block j holds the 8 rows of N repeat
    jn + (j >> 1), bytes 16 (j & 1) .. + 15 of K."""
    ib, jn, count = group
    batch, _, col = tile_origin(plan, warp, ib, 0, jn)
    second = (lane >> 4) * (8 * plan.warps_along(2)) if count == 2 else 0
    k0 = kstep * plan.instruction.k
    if plan.b_trans:
        return b_offset(plan, batch, k0 + (lane & 15), col + second, part)
    return b_offset(plan, batch, k0 + ((lane >> 3) & 1) * (16 // plan.item), col + (lane & 7) + second, part)


def plan_of(op, num_warps: int, capability: int, layout: Optional[L.Layout] = None,
            wgmma: bool = False, b_kmajor: Optional[bool] = None, rows_only: bool = False) -> Optional[Plan]:
    """The tensor-core plan of ``op`` (a dot) for ``num_warps`` warps on ``capability``, or None (the
    FMA path). ``layout``: the result's layout where the layouts pass chose it (``assign.py``): the
    warp grid is read back from it. ``wgmma``: Hopper's wgmma allowed (on sm_90). ``b_kmajor``: B
    stored N x K (``Plan.b_kmajor``); None: as B's tile encoding says (``#cuda.nvmma<..., transposed>``),
    else not. ``rows_only``: the warps split M alone (``plan_for``)."""
    a = op.operand("a")
    precision = op.attrs.get("input_precision", "ieee")
    work = lanes.accumulate_type(op)
    kind = instruction_kind(a.type.scalar, work, precision, capability)
    if kind is None:
        return None
    split = kind == "tf32" and precision == "tf32x3"
    if b_kmajor is None:
        encoding = op.operand("b").encoding
        b_kmajor = isinstance(encoding, SharedTile) and encoding.transposed
    plan = plan_for(tuple(op.results[0].type.shape), a.type.shape[-1], kind, num_warps, split,
                    wgmma and capability == 90, b_kmajor, rows_only)
    if plan is None or layout is None:
        return plan
    warp_bits = layout.warp_bits if plan.batched else tuple(None if bit is None else (bit[0] + 1, bit[1])
                                                            for bit in layout.warp_bits)
    plan = replace(plan, warp_bits=warp_bits)
    if plan.layout != layout:
        raise AssertionError(f"the dot's result was given {layout}, which is not a tensor-core tiling of it")
    return plan
