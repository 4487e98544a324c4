"""``dot`` on Hopper's warpgroup instructions: ``wgmma.mma_async`` (sm_90a), fp16/bf16 inputs, fp32
accumulators (docs/tensor-cores.md, "wgmma lowering").

A warpgroup is four consecutive warps; warp w of a group owns 16 rows of each 64-row block. The
warpgroups of a program stack along M (the block's M must hold 64 rows per warpgroup), and each
multiplies its 64-row blocks by the whole N, one ``m64nNk16`` per 64 rows and 16-wide K step, with
both operands read by the tensor cores from the dot's swizzled shared tiles (``mma.nvmma_offset``)
through 64-bit *matrix descriptors*: A (M x K, K contiguous) K-major, B (K x N, N contiguous)
N-major (``imm-trans-b = 1``), or, where its load has K contiguous (attention's K^T), stored N x K and
K-major as A (``imm-trans-b = 0``). The accumulator fragment is mma.sync's 16 x 8 one repeated along N
(``d[4j + 2h + e]`` at row ``g + 8h``, column ``8j + 2t + e`` of the thread with lane ``4g + t``), so
the result's layout is ``mma.Plan.layout`` with the warp bits ``warp_bits`` gives.

The dot is synchronous: ``wgmma.fence``, the instructions (inline PTX, as LLVM has no intrinsic for
them; each ties its accumulators in and out), ``commit_group``, ``wait_group 0``, then an empty asm
taking every accumulator as a tied operand, so that no read of one can come before the wait.
Operands written through the generic proxy (``cp.async``, ``st.shared``) are fenced for the async
proxy wgmma reads through (``fence.proxy.async``) before the barrier that publishes them.

Descriptor fields (PTX ISA, "Matrix Descriptor Format"): start address >> 4 (bits 0-13), leading
byte offset >> 4 (16-29), stride byte offset >> 4 (32-45), base offset 0 (the tiles are 1024-byte
aligned), swizzle mode (62-63: 1 = 128 B, 2 = 64 B, 3 = 32 B). K-major A: the stride is 8 rows
(``8 W``), the leading offset unused (1); a K step moves the start 32 bytes within a W-byte column
block, ``R W`` past it. N-major B: the leading offset is one column block (``K W``), the stride 8
rows of K (``8 W``); a K step moves the start 16 rows (``16 W``).
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from ..llvm.types import F32, I32, I64, VOID
from . import mma
from .lowered import Lowered, as_ir

SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}
WARPGROUP = 4  # warps
ROWS = 64  # rows of one instruction
MAX_N = 256


def fits(kind: str, m: int, n: int, num_warps: int, a_swizzle: int, b_swizzle: int) -> bool:
    """A dot of ``kind`` inputs and an M x N result takes wgmma: 16-bit inputs, whole warpgroups each
    with 64-row blocks of its own, an N one instruction covers, swizzled tiles for both operands."""
    if kind not in ("fp16", "bf16") or num_warps % WARPGROUP or not (a_swizzle and b_swizzle):
        return False
    groups = num_warps // WARPGROUP
    return m % (ROWS * groups) == 0 and n % 8 == 0 and 8 <= n <= MAX_N


def warp_bits(num_warps: int) -> tuple:
    """Per warp-id bit, its (dim, weight) over (batch, row, col): the warps of a group 16 rows apart,
    the groups 64 rows apart."""
    return tuple((1, 16 << i) for i in range(mma.L.log2(num_warps)))


def descriptor_bits(start: int, leading: int, stride: int, swizzle: int) -> int:
    """The 64-bit descriptor of a tile at byte ``start`` of the shared window (ints: the model)."""
    return ((start >> 4) & 0x3FFF) | (leading >> 4) << 16 | (stride >> 4) << 32 | SWIZZLE_MODE[swizzle] << 62


def a_layout(plan: mma.Plan) -> tuple[int, int]:
    """(leading, stride) byte offsets of A's descriptors: K-major."""
    return 16, 8 * plan.a_swizzle


def b_layout(plan: mma.Plan) -> tuple[int, int]:
    """(leading, stride) byte offsets of B's descriptors: N-major, column blocks of K rows; or, stored
    N x K (``plan.b_kmajor``), K-major as A."""
    if plan.b_kmajor:
        return 16, 8 * plan.b_swizzle
    return plan.k * plan.b_swizzle, 8 * plan.b_swizzle


def imm_trans_b(plan: mma.Plan) -> int:
    """The instruction's imm-trans-b: 1 where B is N-major, 0 where it is K-major."""
    return 0 if plan.b_kmajor else 1


def a_start(plan: mma.Plan, group, repeat: int, step: int):
    """The byte offset of the first element A's descriptor addresses for warpgroup ``group`` (int or
    Lowered), its 64-row block ``repeat`` and K step ``step``."""
    groups = plan.num_warps // WARPGROUP
    row = group * ROWS + repeat * ROWS * groups
    return mma.a_offset(plan, 0, row, step * plan.instruction.k)


def b_start(plan: mma.Plan, step: int):
    return mma.b_offset(plan, 0, step * plan.instruction.k, 0)


def _descriptor(b: ir.IRBuilder, address: ir.Value, leading: int, stride: int, swizzle: int) -> ir.Value:
    start = b.zext(b.and_(b.lshr(address, ir.Constant(I32, 4)), ir.Constant(I32, 0x3FFF)), I64)
    return b.or_(start, ir.Constant(I64, descriptor_bits(0, leading, stride, swizzle)))


def multiply(cg, plan: mma.Plan, acc: list, pointers: dict, wait: bool = True,
             a_registers: Optional[list] = None) -> list:
    """The accumulators (``plan.layout``'s registers) after D = A B + D over the whole K, the operands
    in their tiles (``pointers``: "a" or "b" -> the function from a byte offset to a shared pointer)
    and visible to the async proxy, or A in registers (``a_registers``: ``mma.operand_layout``'s);
    ``wait=False``: issued and committed only (an asynchronous dot: a ``dot_wait`` waits for them)."""
    b = cg.b
    group = Lowered(cg.entry, cg.warp) >> 2
    _, repeats, columns = plan.repeats
    count = 4 * columns  # accumulators of one instruction: N / 2
    inputs = "f16" if plan.instruction.kind == "fp16" else "bf16"
    outs = ", ".join(f"${i}" for i in range(count))
    # operands: the outputs $0.., the accumulators tied to them, then A (a descriptor, or four
    # registers), B's descriptor and scale-d
    a_count = 1 if a_registers is None else 4
    scale_at = 2 * count + a_count + 1
    if a_registers is None:
        a_text, a_constraints, a_types = f"${2 * count}, ", "l", [I64]
    else:
        a_text = "{" + ", ".join(f"${2 * count + i}" for i in range(4)) + "}, "
        a_constraints, a_types = "r,r,r,r", [I32] * 4
    trans_a = "0, " if a_registers is None else ""  # imm-trans-a: the RS form has none
    text = (f"{{ .reg .pred p; setp.ne.b32 p, ${scale_at}, 0; wgmma.mma_async.sync.aligned.m{ROWS}n{plan.n}k16."
            f"f32.{inputs}.{inputs} {{{outs}}}, {a_text}${scale_at - 1}, p, 1, 1, {trans_a}{imm_trans_b(plan)}; }}")
    tied = ",".join(str(i) for i in range(count))
    constraints = ",".join(["=f"] * count) + "," + tied + f",{a_constraints},l,r"
    result = ir.LiteralStructType([F32] * count)
    instruction = ir.FunctionType(result, [F32] * count + a_types + [I64, I32])
    if a_registers is not None:  # packed before the fence: A's registers must not change after it
        a_words = {(repeat, step): mma.packed_a(b, a_registers, repeat * (plan.k // 2) + 8 * step)
                   for repeat in range(repeats) for step in range(plan.k_steps)}

    def address(name: str, offset) -> ir.Value:
        return b.ptrtoint(pointers[name](as_ir(offset)), I32)

    values = list(acc)
    scale = ir.Constant(I32, 1)
    cg.intrinsic("llvm.nvvm.wgmma.fence.sync.aligned", VOID, [])
    for step in range(plan.k_steps):
        desc_b = _descriptor(b, address("b", b_start(plan, step)), *b_layout(plan), plan.b_swizzle)
        for repeat in range(repeats):
            if a_registers is None:
                a_operands = [_descriptor(b, address("a", a_start(plan, group, repeat, step)), *a_layout(plan),
                                          plan.a_swizzle)]
            else:
                a_operands = a_words[(repeat, step)]
            first = count * repeat
            call = b.asm(instruction, text, constraints, values[first:first + count] + a_operands + [desc_b, scale],
                         side_effect=True)
            values[first:first + count] = [b.extract_value(call, i) for i in range(count)]
    cg.intrinsic("llvm.nvvm.wgmma.commit_group.sync.aligned", VOID, [])
    return wait_for(cg, values, 0, count) if wait else values


def wait_for(cg, values: list, pending: int, chunk: int = 128) -> list:
    """``values``, a dot's accumulators, once at most ``pending`` of this warpgroup's committed wgmma
    groups still run: the wait, then an empty asm per ``chunk`` registers that takes them as tied
    operands, so that no read of one can come before the wait."""
    b = cg.b
    cg.intrinsic("llvm.nvvm.wgmma.wait_group.sync.aligned", VOID, [ir.Constant(I64, pending)])
    values = list(values)
    for first in range(0, len(values), chunk):
        part = values[first:first + chunk]
        result = ir.LiteralStructType([v.type for v in part])
        constraints = ",".join(["=f"] * len(part)) + "," + ",".join(str(i) for i in range(len(part)))
        call = b.asm(ir.FunctionType(result, [v.type for v in part]), "// wgmma accumulators after the wait",
                     constraints, part, side_effect=True)
        values[first:first + chunk] = [b.extract_value(call, i) for i in range(len(part))]
    return values


class WarpgroupWaits:
    """The code generator's rule for ``dot_wait`` (mixed into ``Codegen``)."""

    def lower_dot_wait(self, op) -> None:
        value = op.operands[0]
        layout = self.layout_of(value)
        self.dist[op.results[0].id] = (layout, wait_for(self, self.regs(value, layout), op.attrs["pending"]))
