"""``dot``: the operands packed into contiguous buffers in the type products are computed in, then
an i-k-j loop nest whose innermost loop (over the columns of the result) LLVM vectorizes.

Products and sums follow the IR spec: float inputs are multiplied and accumulated in fp32 (fp64
when the accumulator is fp64), with fused multiply-adds; fp16/bf16/fp8 inputs are widened exactly
on the copy; ``input_precision=tf32`` drops the low 13 mantissa bits of each input on the copy, and
``tf32x3`` adds the three products of the tf32 parts and remainders; int8 inputs accumulate in
i32, wrapping. The summation order differs from the interpreter's (which sums fp32 products in
fp64), so results agree within the rounding of K fp32 additions, not bit for bit.
"""
from __future__ import annotations

from llvmlite import ir

from ..llvm import casts
from ..llvm import scalar as lanes
from ..llvm.types import F32, F64, I32, I64
from .placement import held_form
from .values import row_major_strides


def lower_dot(cg, op) -> None:
    b = cg.b
    a, bm, acc = op.operand("a"), op.operand("b"), op.operand("accumulator")
    result = op.results[0]
    precision = op.attrs.get("input_precision", "ieee")
    work = lanes.accumulate_type(op)
    shape_a, shape_b = tuple(a.type.shape), tuple(bm.type.shape)
    shape_c = tuple(result.type.shape)
    batched = len(shape_c) == 3
    m, k, n = shape_a[-2], shape_a[-1], shape_b[-1]

    def packed(value, shape, part=None):
        """``value`` in the accumulate type; part: None (as is), 'high' (tf32) or 'low' (remainder)."""
        existing = cg.buffers.get(value.id)
        if existing is not None and held_form(value.encoding) == (work, part == "high"):
            return existing  # loaded in this form (a packed placement: placement.py)
        if part is None and value.type.scalar == work and existing is not None:
            return existing
        buffer = cg.new_buffer(work, shape)
        source = value.type.scalar

        def lane(idx):
            x = cg.value_at(value, idx)
            if part == "low" and work.is_fp32():
                x = casts.cast(b, x, source, work) if source != work else x
                x = lanes.truncate_tf32(b, b.fsub(x, lanes.truncate_tf32(b, x)))
            else:
                x = pack(b, x, source, work, part == "high" and work.is_fp32())
            cg.store_buffer(buffer, idx, x)

        cg.loop_nest(shape, lane)
        return buffer

    out = _accumulator_in_place(cg, acc, work, shape_c)
    if out is None:
        out = cg.new_buffer(work, shape_c)
        cg.loop_nest(shape_c, lambda idx: cg.store_buffer(out, idx, _converted(b, cg.value_at(acc, idx), acc.type.scalar,
                                                                                 work)))
    if precision == "tf32x3" and work.is_fp32():
        pairs = [(packed(a, shape_a, "high"), packed(bm, shape_b, "high")),
                 (packed(a, shape_a, "high"), packed(bm, shape_b, "low")),
                 (packed(a, shape_a, "low"), packed(bm, shape_b, "high"))]
    elif precision == "tf32" and work.is_fp32():
        pairs = [(packed(a, shape_a, "high"), packed(bm, shape_b, "high"))]
    else:
        pairs = [(packed(a, shape_a), packed(bm, shape_b))]
    floating = work.is_floating()
    fma_name = "llvm.fma.f32" if work.is_fp32() else "llvm.fma.f64"

    def product(batch):
        if work.is_fp32() and n % _WIDTH == 0:
            _register_blocked(cg, pairs, out, batch, m, k, n)
            return

        def row(i):
            def inner(kk):
                for pa, pb in pairs:
                    left = cg.load_buffer(pa, batch + (i, kk))

                    def column(j, left=left, pb=pb):
                        at = batch + (i, j)
                        right = cg.load_buffer(pb, batch + (kk, j))
                        total = cg.load_buffer(out, at)
                        if floating:
                            value = _call(cg, fma_name, F32 if work.is_fp32() else F64, [left, right, total])
                        else:
                            value = b.add(total, b.mul(left, right))
                        cg.store_buffer(out, at, value)

                    cg.counted_loop(n, column)

            cg.counted_loop(k, inner)

        cg.counted_loop(m, row)

    if batched:
        cg.counted_loop(shape_c[0], lambda z: product((z,)))
    else:
        product(())
    target = result.type.scalar
    if target == work:
        cg.buffers[result.id] = out
        return
    final = cg.new_buffer(target, shape_c)
    cg.loop_nest(shape_c, lambda idx: cg.store_buffer(final, idx, casts.cast(b, cg.load_buffer(out, idx), work, target)))
    cg.buffers[result.id] = final


def packed_form(op, source):
    """(type, tf32) the ``dot`` ``op`` reads an operand of type ``source`` in, when that differs
    from ``source`` and a load can write it so (see ``pack``); None when the operand is read as it is
    or through more than one copy (tf32x3 reads two parts of each input)."""
    work = lanes.accumulate_type(op)
    precision = op.attrs.get("input_precision", "ieee")
    if precision == "tf32x3" and work.is_fp32():
        return None
    tf32 = precision == "tf32" and work.is_fp32()
    if source == work and not tf32:
        return None
    return work, tf32


def pack(b, x, source, work, tf32: bool):
    """A lane of type ``source`` in the form a dot reads it: converted to ``work`` exactly (widening)
    and, for tf32, its low 13 mantissa bits dropped."""
    x = casts.cast(b, x, source, work) if source != work else x
    return lanes.truncate_tf32(b, x) if tf32 else x


def _accumulator_in_place(cg, acc, work, shape):
    """The buffer of a loop-carried accumulator the dot may add into directly (no copy in, none
    out): a region argument (its buffer is the loop's own slot, aliased by nothing else) in the
    accumulate type, read by this dot alone. None otherwise."""
    buffer = cg.buffers.get(acc.id)
    if acc.owner is not None or buffer is None or acc.type.scalar != work or cg.uses.get(acc.id) != 1:
        return None
    return buffer if tuple(buffer.shape) == shape and buffer.strides == row_major_strides(shape) else None


def _vector_width() -> int:
    """fp32 lanes of one vector register of the host: 16 with AVX-512, else 8 (AVX2)."""
    from ..llvm.host import wide_vectors

    return 16 if wide_vectors() else 8


_WIDTH = _vector_width()
# Rows of the result held in registers at a time (fewer when m has no such factor), two vectors
# each: 8 x 32 accumulators in 16 of AVX-512's 32 registers, 4 x 16 in 8 of AVX2's 16.
_ROWS = 8 if _WIDTH == 16 else 4
_VECTORS = 2


def _call(cg, name, ty, args):
    fn = cg.module.globals.get(name)
    if fn is None:
        fn = ir.Function(cg.module, ir.FunctionType(ty, [a.type for a in args]), name)
    return cg.b.call(fn, args)


def _register_blocked(cg, pairs, out, batch, m, k, n) -> None:
    """out[batch] += sum over pairs of A @ B, fp32, as a register-blocked micro-kernel: for each
    block of ROWS x (VECTORS * WIDTH) results, the accumulators stay in vector registers over the
    whole k loop; each step loads VECTORS vectors of a row of B and broadcasts ROWS elements of A."""
    b = cg.b
    vector = ir.VectorType(F32, _WIDTH)
    rows = next(r for r in (_ROWS, 4, 2, 1) if m % r == 0)
    vectors = _VECTORS if n % (_VECTORS * _WIDTH) == 0 else 1
    fma = f"llvm.fma.v{_WIDTH}f32"

    def address(buffer, i, j):
        return b.gep(buffer.pointer, [cg.linear(batch + (i, j), buffer.strides)], source_etype=F32)

    def splat(x):
        one = b.insert_element(ir.Constant(vector, None), x, ir.Constant(I32, 0))
        return b.shuffle_vector(one, ir.Constant(vector, None), ir.Constant(ir.VectorType(I32, _WIDTH), [0] * _WIDTH))

    def block(i0, j0):
        slots = []
        for r in range(rows):
            for c in range(vectors):
                slot = cg.scalar_slot(vector)
                start = b.load(address(out, b.add(i0, ir.Constant(I64, r)), b.add(j0, ir.Constant(I64, c * _WIDTH))),
                               typ=vector)
                start.align = 4
                b.store(start, slot)
                slots.append(slot)

        def step(kk):
            for pa, pb in pairs:
                columns = []
                for c in range(vectors):
                    value = b.load(address(pb, kk, b.add(j0, ir.Constant(I64, c * _WIDTH))), typ=vector)
                    value.align = 4
                    columns.append(value)
                for r in range(rows):
                    left = b.load(address(pa, b.add(i0, ir.Constant(I64, r)), kk), typ=F32)
                    broadcast = splat(left)
                    for c in range(vectors):
                        slot = slots[r * vectors + c]
                        b.store(_call(cg, fma, vector, [broadcast, columns[c], b.load(slot, typ=vector)]), slot)

        cg.counted_loop(k, step)
        for r in range(rows):
            for c in range(vectors):
                target = address(out, b.add(i0, ir.Constant(I64, r)), b.add(j0, ir.Constant(I64, c * _WIDTH)))
                store = b.store(b.load(slots[r * vectors + c], typ=vector), target)
                store.align = 4

    cg.counted_loop(m // rows, lambda bi: cg.counted_loop(
        n // (vectors * _WIDTH), lambda bj: block(b.mul(bi, ir.Constant(I64, rows)),
                                                  b.mul(bj, ir.Constant(I64, vectors * _WIDTH)))))


def _converted(b, x, source, target):
    return x if source == target else casts.cast(b, x, source, target)


