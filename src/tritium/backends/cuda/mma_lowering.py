"""``dot`` on the tensor cores, emitted: the operands into their tiles (or read from registers), then
``mma.sync`` fed by ``ldmatrix``, or Hopper's wgmma (``wgmma.py``), over the plan ``mma.py`` makes and
through the index arithmetic it defines (which tests/backends/cuda/test_cuda_mma.py models on ints).
"""
from __future__ import annotations

from llvmlite import ir

from ..llvm import casts
from ..llvm import scalar as lanes
from ..llvm.types import F32, I32
from . import layouts as L
from .lowered import Lowered, as_ir
from .mma import (SPLIT_PRODUCTS, UNROLLED_STEPS, Instruction, Plan, a_address, a_in_registers, a_offset, b_address,
                  b_offset, packed_a)


def lower_dot(cg, op, plan: Plan) -> None:
    b = cg.b
    a, bm, acc = op.operand("a"), op.operand("b"), op.operand("accumulator")
    work = lanes.accumulate_type(op)
    layout_c = plan.layout
    acc_regs = [casts.cast(b, x, acc.type.scalar, work) if acc.type.scalar != work else x
                for x in cg.regs(acc, layout_c)]

    # an operand a load copied into its tile (async_copy.py) is there once the copies have landed;
    # wgmma reads an A in its operand layout from registers (attention's P); the others are stored
    # from registers, into their regions
    a_registers = cg.regs(a, cg.layout_of(a)) if a_in_registers(plan, cg.layout_of(a)) else None
    copied = {name for name in ("a", "b") if op.operand(name).id in cg.async_tiles}
    pointers = {name: cg.operand_pointer(op, name) for name in ("a", "b")}
    in_registers = {"a"} if a_registers is not None else set()
    stored = [(name, value, offset, columns) for name, value, offset, columns in
              (("a", a, a_offset, True), ("b", bm, b_offset, plan.b_trans)) if name not in copied | in_registers]
    parts = [(_operand_parts(cg, plan, value), offset, columns, pointers[name])
             for name, value, offset, columns in stored]
    from_ring = cg.reads_ring(op)  # async_wait has waited for the copies, and synchronized
    if copied and not from_ring:
        cg.wait_for_copies()
    elif not copied:
        cg.reserve(plan.smem_bytes)
    if not from_ring:
        if copied and plan.wgmma:
            cg.async_proxy_fence()
        cg.barrier()
    if parts:
        for part in range(plan.parts):
            for (values, layout), offset, columns, pointer in parts:
                _store(cg, plan, layout, values[part], offset, columns, part, pointer)
        if plan.wgmma:
            cg.async_proxy_fence()
        cg.barrier()
    if plan.wgmma:
        from . import wgmma

        values = wgmma.multiply(cg, plan, acc_regs, pointers, wait=id(op) not in cg.asynchronous_dots,
                                a_registers=a_registers)
        _finish(cg, op, plan, values, copied and not from_ring)
        return

    lane, warp = Lowered(cg.entry, cg.lane), Lowered(cg.entry, cg.warp)
    products = SPLIT_PRODUCTS if plan.parts == 2 else ((0, 0),)
    if a_registers is not None:  # each M tile's fragments per K step, packed once before the steps
        from_registers = {(group, kstep): packed_a(b, a_registers, group[1] * (plan.k // 2) + 8 * kstep)
                          for group in plan.a_groups() for kstep in range(plan.k_steps)}

    def step(kstep, accumulators):
        if a_registers is not None:
            a_frags = {(group, 0): from_registers[(group, kstep)] for group in plan.a_groups()}
        else:
            a_frags = {(group, part): _ldmatrix(cg, a_address(plan, lane, warp, group, kstep, part), 4, False,
                                                pointers["a"])
                       for group in plan.a_groups() for part in range(plan.parts)}
        b_frags = {}
        for group in plan.b_groups():
            ib, jn, count = group
            for part in range(plan.parts):
                words = _ldmatrix(cg, b_address(plan, lane, warp, group, kstep, part), 2 * count,
                                  plan.b_trans, pointers["b"])
                for j in range(count):
                    b_frags[((ib, jn + j), part)] = words[2 * j:2 * j + 2]
        following = list(accumulators)
        for tile in plan.tiles():
            ib, im, jn = tile
            first = plan.c_register(tile)
            c = following[first:first + 4]
            for pa, pb in products:
                c = _mma(cg, plan.instruction, a_frags[((ib, im), pa)], b_frags[((ib, jn), pb)], c)
            following[first:first + 4] = c
        return following

    if plan.k_steps <= UNROLLED_STEPS or a_registers is not None:
        values = acc_regs
        for kstep in range(plan.k_steps):
            values = step(kstep, values)
    else:
        values = cg.loop(ir.Constant(I32, 0), ir.Constant(I32, plan.k_steps), 1, acc_regs,
                         lambda i, carried: step(Lowered(cg.b, i, late=True), carried))
    _finish(cg, op, plan, values, copied and not from_ring)


def _finish(cg, op, plan: Plan, values: list, reused: bool) -> None:
    """The result in its type and layout; ``reused``: the next copies into these tiles (the next
    iteration's) wait for every warp's reads (into a ring: the next async_wait's barrier does)."""
    if reused:
        cg.barrier()
    result = op.results[0]
    work = lanes.accumulate_type(op)
    out_type = result.type.scalar
    values = [casts.cast(cg.b, x, work, out_type) if out_type != work else x for x in values]
    cg.dist[result.id] = (plan.layout, values)


def _operand_parts(cg, plan: Plan, value):
    """The registers ``value`` is stored from, per part (tf32: truncated; tf32x3: the high parts and
    the remainders), and their layout."""
    b = cg.b
    layout = cg.some_layout(value)
    regs = cg.regs(value, layout)
    if plan.instruction.kind != "tf32":
        return [regs], layout
    high = [lanes.truncate_tf32(b, x) for x in regs]
    if plan.parts == 1:
        return [high], layout
    return [high, [lanes.truncate_tf32(b, b.fsub(x, h)) for x, h in zip(regs, high)]], layout


def _contiguous_run(layout: L.Layout, dim: int, item: int) -> int:
    """How many leading registers of ``layout`` are consecutive along ``dim`` (up to 16 bytes)."""
    run = 1
    for bit in layout.reg_bits:
        if bit != (dim, run) or 2 * run * item > 16:
            break
        run *= 2
    return run


def _store(cg, plan: Plan, layout: L.Layout, values: list, offset_of, columns_contiguous: bool, part: int,
           pointer_at) -> None:
    """Each thread writes its registers of an operand where ``offset_of`` puts them (contiguous along
    the operand's last dimension, or along its rows), a run of registers consecutive in shared memory
    as one vector store (replicas write the same)."""
    b = cg.b
    rank = layout.rank
    run = _contiguous_run(layout, rank - 1 if columns_contiguous else rank - 2, plan.item)
    for start in range(0, layout.num_regs, run):
        index = [Lowered(b, i) for i in cg.element_index(layout, start)]
        batch, row, col = index if plan.batched else [0] + index
        pointer = pointer_at(as_ir(offset_of(plan, batch, row, col, part)))
        group = values[start:start + run]
        if run == 1:
            b.store(group[0], pointer, align=plan.item)
            continue
        vector = ir.Constant(ir.VectorType(group[0].type, run), None)
        for i, x in enumerate(group):
            vector = b.insert_element(vector, x, ir.Constant(I32, i))
        b.store(vector, pointer, align=run * plan.item)


def _ldmatrix(cg, address, count: int, trans: bool, pointer_at) -> list:
    """``ldmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16``: the thread's 32-bit words of
    ``count`` 8 x 16-byte blocks whose rows the lanes address."""
    name = f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.b16.p3"
    call = cg.intrinsic(name, ir.LiteralStructType([I32] * count), [pointer_at(as_ir(address))])
    return [cg.b.extract_value(call, i) for i in range(count)]


_HALF2 = ir.VectorType(ir.HalfType(), 2)


def _mma(cg, instruction: Instruction, a_words: list, b_words: list, c: list) -> list:
    """One ``mma.sync``: D = A B + C for one 16 x 8 tile; returns d0..d3."""
    b = cg.b
    if instruction.kind == "fp16":
        a_words = [b.bitcast(w, _HALF2) for w in a_words]
        b_words = [b.bitcast(w, _HALF2) for w in b_words]
    out = ir.LiteralStructType([I32 if instruction.integer else F32] * 4)
    call = cg.intrinsic(instruction.intrinsic, out, list(a_words) + list(b_words) + list(c))
    return [b.extract_value(call, i) for i in range(4)]
