"""``dot``: on the tensor cores (``mma.py``: ``mma.sync`` for fp16, bf16, tf32 / tf32x3 and int8
inputs on sm_80 and later, blocks of at least 16 x 8), else without them, here.

Without tensor cores (fp32 with ``ieee`` precision, fp64, fp8, smaller blocks, older GPUs): both
operands through shared memory (converted to the accumulate type on the way, tf32 inputs truncated
as the IR spec says), then per k an outer product of the thread's rows of A and columns of B into
its accumulator registers, with fused multiply-adds. The products follow the CPU backend's rules
(``backends/cpu/dot.py``): fp16/bf16/fp8 widened exactly, ``tf32`` drops the low 13 mantissa bits,
``tf32x3`` adds the three products of the tf32 parts and remainders, int8 accumulates in i32.
Summation is sequential in k, so results agree with the interpreter (which sums in fp64) within K
fp32 roundings; the tensor cores multiply exactly too and add in fp32 in their own order (each
chunk of products aligned and truncated), within about the same bound.
"""
from __future__ import annotations

from llvmlite import ir

from ..llvm import casts
from ..llvm import scalar as lanes
from ..llvm.types import I32, item_size
from . import mma_lowering


def lower_dot(cg, op) -> None:
    """The result in the layout the layouts pass gave it (``assign.py``): the tensor cores' plan reads
    its warp grid from it; the FMA path accumulates in it."""
    result = op.results[0]
    assigned = cg.assigned_layout(result)
    plan = cg.dot_plan(op, assigned)
    if plan is not None:
        mma_lowering.lower_dot(cg, op, plan)
        return
    b = cg.b
    a, bm, acc = op.operand("a"), op.operand("b"), op.operand("accumulator")
    precision = op.attrs.get("input_precision", "ieee")
    work = lanes.accumulate_type(op)
    shape_a, shape_b, shape_c = tuple(a.type.shape), tuple(bm.type.shape), tuple(result.type.shape)
    batched = len(shape_c) == 3
    k_len = shape_a[-1]
    split = precision == "tf32x3" and work.is_fp32()
    parts = ("high", "low") if split else (None,)
    size = item_size(work)

    numel_a = 1
    for n in shape_a:
        numel_a *= n
    numel_b = 1
    for n in shape_b:
        numel_b *= n
    region = {}  # (operand, part) -> byte offset
    offset = 0
    for name, numel in (("a", numel_a), ("b", numel_b)):
        for part in parts:
            region[(name, part)] = offset
            offset += (numel * size + 15) // 16 * 16
    cg.reserve(offset)

    layout_c = assigned or cg.dot_result_layout(op)
    acc_regs = [casts.cast(b, x, acc.type.scalar, work) if acc.type.scalar != work else x
                for x in cg.regs(acc, layout_c)]

    def converted(value):
        layout = cg.some_layout(value)
        source = value.type.scalar
        regs = cg.regs(value, layout)
        out = {}
        for part in parts:
            values = []
            for x in regs:
                x = casts.cast(b, x, source, work) if source != work else x
                if work.is_fp32() and precision in ("tf32", "tf32x3"):
                    high = lanes.truncate_tf32(b, x)
                    x = high if part in (None, "high") else lanes.truncate_tf32(b, b.fsub(x, high))
                values.append(x)
            out[part] = values
        return layout, out

    layout_a, parts_a = converted(a)
    layout_b, parts_b = converted(bm)
    cg.barrier()
    for part in parts:
        cg.write_block(layout_a, parts_a[part], work, region[("a", part)])
        cg.write_block(layout_b, parts_b[part], work, region[("b", part)])
    cg.barrier()

    # the thread's distinct rows and columns of the result
    row_dim, col_dim = len(shape_c) - 2, len(shape_c) - 1
    rows, cols = {}, {}
    for r, o in enumerate(layout_c.offsets):
        index = cg.element_index(layout_c, r)
        batch = index[0] if batched else None
        rows.setdefault((o[0] if batched else 0, o[row_dim]), (batch, index[row_dim]))
        cols.setdefault((o[0] if batched else 0, o[col_dim]), (batch, index[col_dim]))

    def element(name, part, batch, i, j, shape):
        index = [batch, i, j] if batched else [i, j]
        return cg.smem_load(cg.linear_index(index, shape), work, region[(name, part)])

    products = [("high", "high"), ("high", "low"), ("low", "high")] if split else [(None, None)]

    def step(k, accumulators):
        a_values = {(key, part): element("a", part, batch, i, k, shape_a)
                    for key, (batch, i) in rows.items() for part in parts}
        b_values = {(key, part): element("b", part, batch, k, j, shape_b)
                    for key, (batch, j) in cols.items() for part in parts}
        following = []
        for total, o in zip(accumulators, layout_c.offsets):
            row_key = (o[0] if batched else 0, o[row_dim])
            col_key = (o[0] if batched else 0, o[col_dim])
            for pa, pb in products:
                x, y = a_values[(row_key, pa)], b_values[(col_key, pb)]
                if work.is_floating():
                    total = cg.intrinsic("llvm.fma.f32" if work.is_fp32() else "llvm.fma.f64", x.type, [x, y, total])
                else:
                    if x.type != total.type:
                        x, y = b.sext(x, total.type), b.sext(y, total.type)
                    total = b.add(total, b.mul(x, y))
            following.append(total)
        return following

    phis = cg.loop(ir.Constant(I32, 0), ir.Constant(I32, k_len), 1, acc_regs, step)
    out_type = result.type.scalar
    values = [casts.cast(b, x, work, out_type) if out_type != work else x for x in phis]
    cg.dist[result.id] = (layout_c, values)

