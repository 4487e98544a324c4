"""Block values lane by lane: evaluating a lazy value at an index, buffers on the stack or in scratch
memory, the loops over a block (vectorizable nests, runs, cold tails), and the rules of the ops that
only name lanes (constants, program ids, shape ops that re-index).
"""
from __future__ import annotations

from typing import Optional
import contextlib

from llvmlite import ir

from ...compiler.ir import types as T
from ...compiler.ir.ops import Operation, Value
from ..llvm import scalar as lanes
from ..llvm.types import I1, I32, I64, I8, PTR, constant, item_size, memory_type
from ..reports import RECORD_SLOTS as ERROR_RECORD_SLOTS
from .values import STACK_BYTES, Buffer, _shape, expect, row_major_strides


class Lanes:
    def value_at(self, v: Value, idx: tuple) -> ir.Value:
        """The lane ``idx`` (one i64 per dimension) of ``v``, in its register type."""
        if not isinstance(v.type, T.block_type):
            return self.scalars[v.id]
        buffer = self.buffers.get(v.id)
        if buffer is not None:
            return self.load_buffer(buffer, idx)
        advanced = self.advanced.get(v.id)
        if advanced is not None:  # a carried pointer block: its initial value plus an element offset
            init, offset = advanced
            size = item_size(v.type.scalar.element_ty)
            return self.b.gep(self.value_at(init, idx), [self.b.mul(offset, ir.Constant(I64, size))],
                              source_etype=I8)
        key = (v.id, tuple(id(i) for i in idx))
        cached = self.memo.get(key)
        if cached is not None:  # this lane, already computed (or read) in this loop body
            return cached
        result = self._read_deferred(v, idx) if v.id in self.deferred else self._evaluate(v, idx)
        self.memo[key] = result
        return result

    def _evaluate(self, v: Value, idx: tuple) -> ir.Value:
        op = v.owner
        if op is None:
            raise AssertionError(f"block region argument {v} has no buffer")
        b = self.b
        shape = _shape(v.type)
        opcode = op.opcode
        if opcode == "arange":
            return b.add(b.trunc(idx[0], I32), ir.Constant(I32, op.attrs["start"]))
        if opcode == "splat":
            return self.value_at(op.operands[0], ())
        if opcode == "constant":
            return constant(v.type.scalar, op.attrs["value"])
        if opcode == "broadcast":
            source = _shape(op.operands[0].type)
            mapped = tuple(ir.Constant(I64, 0) if s == 1 and n != 1 else i for i, s, n in zip(idx, source, shape))
            return self.value_at(op.operands[0], mapped)
        if opcode == "reshape":
            return self.value_at(op.operands[0], self._reshaped_index(idx, shape, _shape(op.operands[0].type)))
        if opcode == "permute":
            order = op.attrs["order"]
            source = [None] * len(order)
            for i, o in enumerate(order):
                source[o] = idx[i]
            return self.value_at(op.operands[0], tuple(source))
        if opcode == "hint":
            return self.value_at(op.operands[0], idx)
        if opcode == "flip":
            axis = op.attrs["axis"]
            flipped = list(idx)
            flipped[axis] = b.sub(ir.Constant(I64, shape[axis] - 1), idx[axis])
            return self.value_at(op.operands[0], tuple(flipped))
        if opcode == "join":
            inner = idx[:-1]
            left = self.value_at(op.operands[0], inner)
            right = self.value_at(op.operands[1], inner)
            return b.select(b.icmp_unsigned("==", idx[-1], ir.Constant(I64, 0)), left, right)
        if opcode == "split":
            which = op.results.index(v)
            return self.value_at(op.operands[0], tuple(idx) + (ir.Constant(I64, which),))
        if opcode == "cat":
            axis = op.attrs["axis"]
            n = _shape(op.operands[0].type)[axis]
            first = b.icmp_unsigned("<", idx[axis], ir.Constant(I64, n))
            left_idx = list(idx)
            left_idx[axis] = b.select(first, idx[axis], ir.Constant(I64, 0))
            right_idx = list(idx)
            right_idx[axis] = b.select(first, ir.Constant(I64, 0), b.sub(idx[axis], ir.Constant(I64, n)))
            return b.select(first, self.value_at(op.operands[0], tuple(left_idx)),
                            self.value_at(op.operands[1], tuple(right_idx)))
        if opcode in lanes.LOWER:
            args = [self.value_at(o, idx) for o in op.operands]
            result = lanes.lower_op(b, op, args)
            if isinstance(result, list):
                return result[op.results.index(v)]
            return result
        raise AssertionError(f"the {opcode} op's result has no buffer")

    def _reshaped_index(self, idx, shape, source):
        b = self.b
        if len(shape) == 0:
            return tuple(ir.Constant(I64, 0) for _ in source)
        squeezed = [i for i, n in zip(idx, shape) if n != 1]
        if [n for n in shape if n != 1] == [n for n in source if n != 1]:
            it = iter(squeezed)
            return tuple(next(it) if n != 1 else ir.Constant(I64, 0) for n in source)
        linear = self.linear(idx, row_major_strides(shape))
        result = []
        for n, stride in zip(source, row_major_strides(source)):
            if n == 1:
                result.append(ir.Constant(I64, 0))
            else:
                result.append(b.and_(b.lshr(linear, ir.Constant(I64, stride.bit_length() - 1)), ir.Constant(I64, n - 1)))
        return tuple(result)

    def linear(self, idx, strides) -> ir.Value:
        b = self.b
        total = None
        for i, s in zip(idx, strides):
            if isinstance(i, ir.Constant) and i.constant == 0:
                continue
            term = i if s == 1 else b.mul(i, ir.Constant(I64, s))
            total = term if total is None else b.add(total, term)
        return total if total is not None else ir.Constant(I64, 0)

    # buffers -------------------------------------------------------------------------------------
    def alloca(self, dtype, count: int) -> ir.Value:
        """A buffer of ``count`` elements: on the stack while the program's buffers stay under
        STACK_BYTES, then in the thread's scratch memory (after its error record), so that large
        blocks cannot overflow a thread's stack."""
        ty = memory_type(dtype)
        nbytes = -(-max(1, count) * max(1, item_size(dtype)) // 64) * 64
        if self.stack_bytes + nbytes > STACK_BYTES:
            offset = ERROR_RECORD_SLOTS * 8 + self.scratch_bytes
            self.scratch_bytes += nbytes
            return self.alloca_builder.gep(self.error, [ir.Constant(I64, offset)], source_etype=I8)
        self.stack_bytes += nbytes
        pointer = self.alloca_builder.alloca(ir.ArrayType(ty, max(1, count)))
        pointer.align = 64
        pointer.type = PTR  # llvmlite types allocas as typed pointers; the module uses opaque ones
        return pointer

    def scalar_slot(self, ty) -> ir.Value:
        slot = self.alloca_builder.alloca(ty)
        slot.type = PTR
        return slot

    def new_buffer(self, dtype, shape) -> Buffer:
        count = 1
        for n in shape:
            count *= n
        return Buffer(self.alloca(dtype, count), dtype, tuple(shape), row_major_strides(shape))

    def element_pointer(self, buffer: Buffer, idx) -> ir.Value:
        return self.b.gep(buffer.pointer, [self.linear(idx, buffer.strides)], source_etype=memory_type(buffer.dtype))

    def load_buffer(self, buffer: Buffer, idx) -> ir.Value:
        b = self.b
        value = b.load(self.element_pointer(buffer, idx), typ=memory_type(buffer.dtype))
        return b.trunc(value, I1) if buffer.dtype.is_bool() and not buffer.dtype.is_ptr() else value

    def store_buffer(self, buffer: Buffer, idx, value) -> None:
        b = self.b
        if buffer.dtype.is_bool() and not buffer.dtype.is_ptr():
            value = b.zext(value, I8)
        b.store(value, self.element_pointer(buffer, idx))

    def materialize(self, v: Value) -> Buffer:
        """``v`` in a buffer (written now when it is lazy)."""
        buffer = self.buffers.get(v.id)
        if buffer is not None:
            return buffer
        buffer = self.new_buffer(v.type.scalar, _shape(v.type))
        self.fill(buffer, v)
        self.buffers[v.id] = buffer
        return buffer

    def fill(self, buffer: Buffer, v: Value) -> None:
        """Writes every lane of ``v`` into ``buffer`` (of ``v``'s shape)."""
        self.loop_nest(buffer.shape, lambda idx: self.store_buffer(buffer, idx, self.value_at(v, idx)))

    def materialize_op(self, op: Operation) -> None:
        for r in op.results:
            self.materialize(r)

    # loops ---------------------------------------------------------------------------------------
    def counted_loop(self, count, body) -> None:
        """``for i in range(count): body(i)`` with i an i64 (count: a Python int >= 1 or an i64)."""
        b = self.b
        if isinstance(count, int):
            if count == 1:
                body(ir.Constant(I64, 0))
                return
            count = ir.Constant(I64, count)
        pre = b.block
        loop = self.function.append_basic_block("loop")
        after = self.function.append_basic_block("loop_end")
        b.branch(loop)
        b.position_at_end(loop)
        i = b.phi(I64)
        i.add_incoming(ir.Constant(I64, 0), pre)
        saved = dict(self.memo)
        body(i)
        self.memo = saved
        following = b.add(i, ir.Constant(I64, 1))
        i.add_incoming(following, b.block)
        latch = b.cbranch(b.icmp_signed("<", following, count), loop, after)
        if self._cold:
            latch.set_metadata("llvm.loop", self._loop_metadata("llvm.loop.unroll.disable", "llvm.loop.vectorize.enable"))
        elif isinstance(count, ir.Constant) and count.constant >= 16 and self._is_innermost(loop):
            # Kept a loop for the vectorizer: fully unrolled first, LLVM would vectorize the loop
            # around it instead, with gathers across rows.
            latch.set_metadata("llvm.loop", self._loop_metadata("llvm.loop.unroll.disable"))
        b.position_at_end(after)

    @contextlib.contextmanager
    def cold(self, really: bool = True):
        """Code emitted inside runs rarely (the masked tail of a box-masked access, a check's slow
        path): its loops are kept scalar, which spares LLVM the time of vectorizing them (a third of
        a kernel's compile time) and the object their code."""
        self._cold += bool(really)
        try:
            yield
        finally:
            self._cold -= bool(really)

    def _is_innermost(self, header) -> bool:
        """True when no loop was opened inside the loop whose header block is ``header``."""
        blocks = self.function.blocks
        start = blocks.index(header)
        return not any(block.name.startswith("loop") and block is not header for block in blocks[start + 1:]
                       if not block.name.startswith("loop_end"))

    def _loop_metadata(self, *disabled: str):
        """A distinct loop ID (it refers to itself) whose options turn off ``disabled``
        (``llvm.loop.unroll.disable``, or ``llvm.loop.vectorize.enable`` set to false)."""
        options = []
        for name in disabled:
            option = self._loop_options.get(name)
            if option is None:
                fields = [ir.MetaDataString(self.module, name)]
                if name.endswith(".enable"):
                    fields.append(ir.Constant(I1, 0))
                option = self._loop_options[name] = self.module.add_metadata(fields)
            options.append(option)
        node = self.module.add_metadata([options[0]] + options)
        node.operands = (node, *options)
        return node

    def loop_nest(self, shape, body, prefix=()) -> None:
        """``body(idx)`` for every index of ``shape`` in row-major order."""
        if len(prefix) == len(shape):
            body(tuple(prefix))
            return
        self.counted_loop(shape[len(prefix)], lambda i: self.loop_nest(shape, body, prefix + (i,)))

    def run_nest(self, shape, run: int, at_run, body) -> None:
        """As ``loop_nest``, the last dimension cut into runs of ``run`` lanes: ``at_run(idx of the run's
        first lane)`` is called once per run and returns a state; ``body(idx, state, j)`` for each
        lane j of the run."""
        if not shape:
            state = at_run(())
            body((), state, ir.Constant(I64, 0))
            return
        outer = shape[:-1]
        count = shape[-1] // run

        def per_outer(prefix):
            def per_run(k):
                start = k if run == 1 else self.b.mul(k, ir.Constant(I64, run))
                state = at_run(prefix + (start,))

                def per_lane(j):
                    lane = start if run == 1 else self.b.add(start, j)
                    body(prefix + (lane,), state, j)

                self.counted_loop(run, per_lane)

            self.counted_loop(count, per_run)

        self.loop_nest(outer, per_outer)

    # control -------------------------------------------------------------------------------------
    def fail(self, code: int, lane, address, extra=None) -> None:
        """Writes the error record and returns 1 from the program (the current block ends)."""
        b = self.b
        fields = [ir.Constant(I64, code), ir.Constant(I64, self.op_index[id(self.current)])]
        fields += [b.sext(p, I64) for p in self.pids]
        fields += [lane if lane.type == I64 else b.sext(lane, I64), address,
                   extra if extra is not None else ir.Constant(I64, 0)]
        for n, value in enumerate(fields):
            b.store(value, b.gep(self.error, [ir.Constant(I64, n)], source_etype=I64))
        b.ret(ir.Constant(I32, 1))

    def if_then(self, condition, emit, rare: Optional[bool] = None) -> None:
        """Runs ``emit()`` only where ``condition`` (an i1) holds; the builder continues after.
        ``rare``: the condition seldom holds (default: when called inside ``cold``)."""
        b = self.b
        then = self.function.append_basic_block("then")
        after = self.function.append_basic_block("after")
        branch = b.cbranch(condition, then, after)
        if rare or (rare is None and self._cold):
            expect(branch, False)
        b.position_at_end(then)
        saved = dict(self.memo)
        emit()
        self.memo = saved
        if not b.block.is_terminated:
            b.branch(after)
        b.position_at_end(after)

    def flag(self, initial: bool) -> ir.Value:
        slot = self.scalar_slot(I1)
        self.b.store(ir.Constant(I1, int(initial)), slot)
        return slot

    # values ------------------------------------------------------------------------------------------
    def lower_constant(self, op: Operation) -> None:
        r = op.results[0]
        if not isinstance(r.type, T.block_type):
            self.scalars[r.id] = constant(r.type, op.attrs["value"])

    def lower_program_id(self, op: Operation) -> None:
        self.scalars[op.results[0].id] = self.pids[op.attrs["axis"]]

    def lower_num_programs(self, op: Operation) -> None:
        self.scalars[op.results[0].id] = self.nprogs[op.attrs["axis"]]

    def lower_special_register(self, op: Operation) -> None:
        """globaltimer: clock_gettime(CLOCK_REALTIME) in ns; smid: sched_getcpu(), the core running the
        program (the IR spec's host values; both from the C library the process has loaded)."""
        b = self.b
        if op.attrs["name"] == "smid":
            getcpu = self.module.globals.get("sched_getcpu") or ir.Function(
                self.module, ir.FunctionType(I32, []), "sched_getcpu")
            core = b.call(getcpu, [])
            self.scalars[op.results[0].id] = b.select(b.icmp_signed("<", core, ir.Constant(I32, 0)),
                                                      ir.Constant(I32, 0), core)
            return
        gettime = self.module.globals.get("clock_gettime") or ir.Function(
            self.module, ir.FunctionType(I32, [I32, PTR]), "clock_gettime")
        timespec = self.alloca(T.int64, 2)
        b.call(gettime, [ir.Constant(I32, 0), timespec])  # CLOCK_REALTIME
        seconds = b.load(timespec, typ=I64)
        nanoseconds = b.load(b.gep(timespec, [ir.Constant(I32, 1)], source_etype=I64), typ=I64)
        self.scalars[op.results[0].id] = b.add(b.mul(seconds, ir.Constant(I64, 10**9)), nanoseconds)

    def lower_hint(self, op: Operation) -> None:
        r = op.results[0]
        if not isinstance(r.type, T.block_type):
            self.scalars[r.id] = self.scalars[op.operands[0].id]

    def _lazy(self, op: Operation) -> None:
        r = op.results[0]
        if op.opcode == "split" and not isinstance(r.type, T.block_type):  # (2,) split into two scalars
            for i, result in enumerate(op.results):
                self.scalars[result.id] = self.value_at(op.operands[0], (ir.Constant(I64, i),))
            return
        if not isinstance(r.type, T.block_type):  # reshape to (): the one lane
            self.scalars[r.id] = self.value_at(op.operands[0], tuple(ir.Constant(I64, 0) for _ in _shape(op.operands[0].type)))

    lower_arange = lower_splat = lower_broadcast = lower_permute = lower_join = lower_split = lower_cat = lower_flip = _lazy

    def lower_reshape(self, op: Operation) -> None:
        self._lazy(op)
