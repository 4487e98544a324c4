"""The tile IR of one kernel as an LLVM module for the host CPU.

Placement (docs/cpu-backend.md): a block value is never one LLVM vector. Each block value is
either *lazy* -- an expression of its operands evaluated lane by lane inside the loop of the op
that consumes it (index arithmetic, splats, broadcasts, elementwise chains) -- or held in a
*buffer*: a 64-byte aligned stack array, row-major (or a strided view of one), written where the
value is defined. Loads, reductions, scans, dot, atomics, loop-carried and ``if`` results are
buffers; a lazy value used twice that is not index arithmetic becomes one too, so it is computed
once, unless every use is in the value one store writes: then each lane computes it once in the
store's loop, and a load among such values is read there too (one pass over memory). Every loop over a block is a plain counted loop over its dimensions, the last innermost;
LLVM's loop vectorizer turns it into native-width vector code.

Memory accesses: the axis analysis's contiguity of a pointer block along its last dimension
splits that dimension into runs; the pointer of a run's first lane is computed once and the run
is accessed at consecutive addresses (vector loads and stores). Before touching memory, a check
loop computes, over all active lanes, whether any points outside its tensor (or is misaligned)
and whether every lane is active: a bad lane records an error (op, program, lane, address) and
stops the program; an all-active block runs the access without masks.

The module has two functions: ``program`` (one program of the grid) and ``grid`` (programs
``[first, last)`` in linear order, x fastest, the first failing one stopping the range).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Optional

import llvmlite.ir as ir

from ...compiler.analysis.accesses import argument_accesses
from ...compiler.analysis.axis_info import analyze_axis_info
from ...compiler.analysis.masks import classify_mask
from ...compiler.analysis.provenance import pointer_provenance
from ...compiler.ir import types as T
from ...compiler.ir.spec import PURE, SPEC
from ...compiler.ir.ops import Function, Operation, Region, Value
from ..llvm import atomics
from ..llvm import combine as combining
from ..llvm import math
from ..llvm import scalar as lanes
from ..llvm.types import F32, F64, I1, I32, I64, I8, PTR, VOID, constant, item_size, memory_type, register_type
# the error record's codes and size (backends/reports.py)
from ..reports import ASSERT as ERROR_ASSERT
from ..reports import ENDLESS_LOOP as ERROR_ENDLESS_LOOP
from ..reports import GATHER_INDEX as ERROR_GATHER_INDEX
from ..reports import HISTOGRAM_VALUE as ERROR_HISTOGRAM_VALUE
from ..reports import OUT_OF_BOUNDS as ERROR_OUT_OF_BOUNDS
from ..reports import RECORD_SLOTS as ERROR_RECORD_SLOTS

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

_CHEAP = frozenset({"arange", "splat", "broadcast", "reshape", "permute", "hint", "constant", "flip", "join",
                    "split", "cat"})
_LAZY = frozenset(lanes.LOWER) | frozenset({"arange", "splat", "broadcast", "reshape", "permute", "hint", "flip",
                                            "join", "split", "cat", "constant"})


class UnsupportedOp(Exception):
    """An op this backend cannot lower (yet); the compiler turns it into a CompilationError at its line."""


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


class Codegen:
    def __init__(self, fn: Function, target_triple: str, data_layout: str = "", checks: bool = True,
                 hardware_ldexp: bool = False):
        self.fn = fn
        self.checks = checks  # bounds checks before every access (TRITIUM_BOUNDS_CHECKS=0: none)
        self._cold = 0  # inside code that rarely runs (Codegen.cold)
        self._loop_options: dict = {}
        self._boxes: dict = {}  # mask value id -> its MaskInfo when it is a box mask, else None
        self._everywhere: dict = {}  # value id -> the same in every program and loop iteration
        self.module = ir.Module(name=fn.name)
        if hardware_ldexp:
            math.use_hardware_ldexp(self.module)
        self.module.triple = target_triple
        if data_layout:
            self.module.data_layout = data_layout
        self.axis = analyze_axis_info(fn, trust_hints=False)  # a false hint cannot misplace a lane here
        self.ops: list[Operation] = []  # op index -> op, for error records
        self.op_index: dict[int, int] = {}
        self.uses: dict[int, int] = {}
        # argument index of each pointer argument; value id -> position of the pointer argument it derives from
        self.pointer_args, self.provenance = pointer_provenance(fn)
        self._count_uses(fn.body, depth=0, defined_depth={})
        self.deferrable: set[int] = set()  # loads read inside the loop of the store they feed
        self.lane_local: set[int] = set()  # values computed lane by lane where the store that uses them is
        self.fused_into: dict[int, list] = {}  # id(store op) -> the load results it reads
        self._find_fusable_loads(fn.body)
        self.packed_loads: dict[int, tuple] = {}  # load result id -> (type, tf32) its buffer holds (dot.py)
        self._find_packed_loads(fn.body)
        # positions of the pointer arguments some store or atomic may write (every one of them when
        # a write cannot be traced to one)
        _, writes = argument_accesses(fn)
        self.written = tuple(i for i, arg in enumerate(self.pointer_args) if arg in writes)

    # analysis ------------------------------------------------------------------------------------
    def _count_uses(self, region: Region, depth: int, defined_depth: dict) -> None:
        for arg in region.args:
            defined_depth[arg.id] = depth
        for op in region.ops:
            for operand in op.operands:
                weight = 1 if defined_depth.get(operand.id, 0) == depth else 2  # used inside a loop/branch: twice
                self.uses[operand.id] = self.uses.get(operand.id, 0) + weight
            for inner in op.regions:
                self._count_uses(inner, depth + 1, defined_depth)
            for r in op.results:
                defined_depth[r.id] = depth

    def _find_fusable_loads(self, region: Region) -> None:
        """Loads that a store can read in its own loop: block loads all of whose uses are in the
        stored value's computation (``_lane_chain``), with nothing between the load and the store
        that writes memory or synchronizes (the store's check decides at run time whether the bytes
        may overlap); and the values of those computations, which need no buffer."""
        from ...compiler.ir.spec import has_effects

        pending: list[Operation] = []
        for op in region.ops:
            for inner in op.regions:
                self._find_fusable_loads(inner)
            if op.opcode == "load":
                result = op.results[0]
                if isinstance(result.type, T.block_type) and not op.attrs.get("volatile", False):
                    pending.append(op)
                continue
            if op.opcode == "store" and isinstance(op.operands[0].type, T.block_type):
                reached = self._lane_chain(op.operand("value"))
                self.lane_local |= reached
                fused = [load.results[0] for load in pending if load.results[0].id in reached]
                for v in fused:
                    self.deferrable.add(v.id)
                if fused:
                    self.fused_into[id(op)] = fused
                pending = []
                continue
            if has_effects(op):
                pending = []

    def _find_packed_loads(self, region: Region) -> None:
        """Block loads whose only reader is a ``dot`` that would convert them on a copy (fp16, bf16,
        fp8 or int8 widened, fp32 truncated to tf32): the load writes its buffer converted, and the
        dot uses it as it is (one pass over the tile instead of two)."""
        from . import dot

        for op in region.ops:
            for inner in op.regions:
                self._find_packed_loads(inner)
            if op.opcode != "dot":
                continue
            for name in ("a", "b"):
                operand = op.operand(name)
                load = operand.owner
                if load is None or load.opcode != "load" or self.uses.get(operand.id) != 1 or \
                        load.attrs.get("volatile", False) or operand.id in self.deferrable:
                    continue
                form = dot.packed_form(op, operand.type.scalar)
                if form is not None:
                    self.packed_loads[operand.id] = form

    def _lane_chain(self, value: Value) -> set[int]:
        """Ids of the values the stored ``value`` is computed from through lazily evaluated
        elementwise ops, every use of which is inside that computation (``value`` itself included):
        a lane of each is computed once, where that lane of ``value`` is, so none needs a buffer and
        a load among them can be read inside the store's loop (``x * x`` reads ``x`` once per lane)."""
        if self.uses.get(value.id, 0) != 1:  # also used elsewhere: computed (and buffered) where it is defined
            return set()
        operands: dict[int, list[int]] = {}  # id of a value in the computation -> its op's block operands
        stack = [value]
        seen = {value.id}
        while stack:
            v = stack.pop()
            op = v.owner
            if op is None or op.opcode not in lanes.LOWER or op.opcode == "philox":
                continue
            operands[v.id] = [o.id for o in op.operands if isinstance(o.type, T.block_type)]
            for operand in op.operands:
                if isinstance(operand.type, T.block_type) and operand.id not in seen:
                    seen.add(operand.id)
                    if operand.owner is not None and operand.owner.opcode != "load":
                        stack.append(operand)
        inside = {value.id}
        grown = True
        while grown:  # add the values all of whose uses are by values inside
            grown = False
            counts: dict[int, int] = {}
            for vid in inside:
                for operand in operands.get(vid, ()):
                    counts[operand] = counts.get(operand, 0) + 1
            for vid, count in counts.items():
                if vid not in inside and count == self.uses.get(vid, 0):
                    inside.add(vid)
                    grown = True
        return inside

    # module --------------------------------------------------------------------------------------
    def build(self) -> ir.Module:
        fn = self.fn
        program_ty = ir.FunctionType(I32, [PTR, I32, I32, I32, I32, I32, I32, PTR])
        program = ir.Function(self.module, program_ty, f"{fn.name}_program")
        program.linkage = "internal"
        program.attributes.add("alwaysinline")
        self.function = program
        args_block, *pid_and_grid, error = program.args
        self.pids = pid_and_grid[:3]
        self.nprogs = pid_and_grid[3:]
        self.error = error
        entry = program.append_basic_block("entry")
        self.alloca_builder = ir.IRBuilder(entry)
        body = program.append_basic_block("body")
        self.b = ir.IRBuilder(body)
        self.scalars: dict[int, ir.Value] = {}
        self.stack_bytes = 0
        self.scratch_bytes = 0
        self.buffers: dict[int, Buffer] = {}
        self.advanced: dict[int, tuple] = {}  # carried pointer blocks: value id -> (initial Value, i64 offset)
        self.deferred: dict[int, tuple] = {}  # loads read inside their store's loop: id -> (op, every, extent)
        self.unmasked_reads = False
        self.bounds: list[tuple[ir.Value, ir.Value]] = []
        self.memo: dict = {}
        b = self.b
        # The argument block never changes during a launch: its loads are marked invariant, so that
        # LLVM hoists them out of the grid's loop over programs instead of reading (and spilling)
        # every argument again for each program.
        invariant = self.module.add_metadata([])

        def argument(index):
            load = b.load(b.gep(args_block, [ir.Constant(I64, index)], source_etype=I64), typ=I64)
            load.set_metadata("invariant.load", invariant)
            return load

        slot = HEADER_SLOTS
        for i, a in enumerate(fn.args):
            self.scalars[a.id] = self._unpack_argument(argument(slot), a.type)
            slot += 1
        self.kernel_token = argument(3)
        self.spin_check_after = argument(SPIN_CHECK_SLOT)
        for _ in self.pointer_args:
            self.bounds.append((argument(slot), argument(slot + 1)))
            slot += 2
        self.lower_region(fn.body)
        if not b.block.is_terminated:
            b.ret(ir.Constant(I32, 0))
        self.alloca_builder.branch(body)
        self._build_grid(program)
        return self.module

    def _unpack_argument(self, raw, ty):
        b = self.b
        if isinstance(ty, T.pointer_type):
            return b.inttoptr(raw, PTR)
        target = register_type(ty)
        if target == F64:
            return b.bitcast(raw, F64)
        if target == F32:
            return b.bitcast(b.trunc(raw, I32), F32)
        return b.trunc(raw, target) if target.width < 64 else raw

    def _build_grid(self, program) -> None:
        """``tritium_grid(args, first, last, error)``: the programs [first, last) in linear order (x
        fastest). The program id of ``first`` is computed once; each next one by a step of x that
        carries into y and z, not by a division per program (20-40 cycles each, a tenth of the
        time of a program that streams 1024 elements)."""
        ty = ir.FunctionType(I32, [PTR, I64, I64, PTR])
        grid = ir.Function(self.module, ty, "tritium_grid")
        args_block, first, last, error = grid.args
        entry = grid.append_basic_block("entry")
        start = grid.append_basic_block("start")
        loop = grid.append_basic_block("loop")
        failed = grid.append_basic_block("failed")
        latch = grid.append_basic_block("latch")
        done = grid.append_basic_block("done")
        b = ir.IRBuilder(entry)
        dims = [b.load(b.gep(args_block, [ir.Constant(I64, d)], source_etype=I64), typ=I64) for d in range(3)]
        b.cbranch(b.icmp_signed("<", first, last), start, done)
        b.position_at_end(start)
        rest = b.udiv(first, dims[0])
        first_pid = [b.urem(first, dims[0]), b.urem(rest, dims[1]), b.udiv(rest, dims[1])]
        b.branch(loop)
        b.position_at_end(loop)
        linear = b.phi(I64)
        linear.add_incoming(first, start)
        pid = []
        for value in first_pid:
            phi = b.phi(I64)
            phi.add_incoming(value, start)
            pid.append(phi)
        narrow = [b.trunc(v, I32) for v in pid] + [b.trunc(v, I32) for v in dims]
        status = b.call(program, [args_block, *narrow, error])
        expect(b.cbranch(b.icmp_signed("!=", status, ir.Constant(I32, 0)), failed, latch), False)
        b.position_at_end(latch)
        following = b.add(linear, ir.Constant(I64, 1))
        linear.add_incoming(following, latch)
        one, zero = ir.Constant(I64, 1), ir.Constant(I64, 0)
        carry = None
        for axis in range(3):  # x + 1, carried into y, then z
            stepped = b.add(pid[axis], one if carry is None else b.zext(carry, I64))
            if axis == 2:
                pid[axis].add_incoming(stepped, latch)
                break
            carry = b.icmp_unsigned("==", stepped, dims[axis])
            pid[axis].add_incoming(b.select(carry, zero, stepped), latch)
        b.cbranch(b.icmp_signed("<", following, last), loop, done)
        b.position_at_end(failed)
        b.ret(status)
        b.position_at_end(done)
        b.ret(ir.Constant(I32, 0))

    # regions -------------------------------------------------------------------------------------
    def lower_region(self, region: Region) -> list:
        """Lowers the ops of ``region`` (its arguments already bound); returns the values of its
        terminator's operands (as Values: the caller reads them)."""
        for op in region.ops:
            if op.opcode in ("yield", "condition"):
                return op
            self.current = op
            self.op_index.setdefault(id(op), len(self.ops))
            if len(self.ops) == self.op_index[id(op)]:
                self.ops.append(op)
            self.lower_op(op)
        return None

    def lower_op(self, op: Operation) -> None:
        handler = getattr(self, f"lower_{op.opcode}", None)
        if handler is not None:
            handler(op)
            return
        if op.opcode in lanes.LOWER:
            if all(not isinstance(r.type, T.block_type) for r in op.results):
                self._lower_scalar(op)
                return
            if self._needs_buffer(op):
                self.materialize_op(op)
            return  # lazy
        raise UnsupportedOp(f"the {op.opcode} op")

    def _lower_scalar(self, op: Operation) -> None:
        args = [self.scalars[o.id] for o in op.operands]
        result = lanes.lower_op(self.b, op, args)
        for r, v in zip(op.results, result if isinstance(result, list) else [result]):
            self.scalars[r.id] = v

    def _needs_buffer(self, op: Operation) -> bool:
        if op.opcode in _CHEAP or op.results[0].id in self.lane_local:
            return False
        result = op.results[0]
        scalar = result.type.scalar
        index_like = not scalar.is_floating() and op.opcode not in ("libdevice",)
        if index_like and op.opcode not in ("floordiv", "mod", "umulhi"):
            return False
        return self.uses.get(result.id, 0) >= 2

    # lanes of block values -----------------------------------------------------------------------
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

    # memory access -------------------------------------------------------------------------------
    def _run_length(self, pointer: Value) -> int:
        shape = _shape(pointer.type)
        if not shape:
            return 1
        info = self.axis.get(pointer)
        if info is None:
            return 1
        run = info.contiguity[-1]
        return run if run > 1 and shape[-1] % run == 0 else 1

    def _one_tensor(self, pointer: Value) -> bool:
        """Whether the tensor ``pointer`` points into is known (provenance), so its valid bytes are
        one range."""
        source = self.provenance.get(pointer.id)
        return source is not None and source >= 0

    def _in_bounds(self, pointer_value: Value, address, size: int):
        """i1: the access of ``size`` bytes at ``address`` (i64) lies inside the tensor the pointer
        came from (any pointer argument when that is not known) and is aligned."""
        b = self.b
        ranges = [self.bounds[self.provenance[pointer_value.id]]] if self._one_tensor(pointer_value) else self.bounds
        inside = ir.Constant(I1, 0)
        for low, high in ranges:
            ok = b.and_(b.icmp_unsigned(">=", address, low),
                        b.icmp_unsigned("<=", b.add(address, ir.Constant(I64, size)), high))
            inside = b.or_(inside, ok)
        if size > 1:
            aligned = b.icmp_unsigned("==", b.and_(address, ir.Constant(I64, size - 1)), ir.Constant(I64, 0))
            inside = b.and_(inside, aligned)
        return inside

    def check_access(self, pointer: Value, mask: Optional[Value], dtype, extent=None) -> Optional[ir.Value]:
        """The check before an access; returns an i1 pointer-flag 'every lane is active' (None: no
        mask). A contiguous run whose first and last lanes are inside the tensor is inside it whatever
        its mask; only a run that is not is checked lane by lane (its active lanes). A bad lane fails
        the program with its record. ``extent``: two i64 slots that receive the lowest address and
        the end of the bytes the access may touch (whole runs, masked lanes included)."""
        b = self.b
        shape = _shape(pointer.type)
        size = item_size(dtype)
        run = self._run_length(pointer)
        bad = self.flag(False)

        def widen(first, end):
            if extent is None:
                return
            low, high = extent
            current_low, current_high = b.load(low), b.load(high)
            b.store(b.select(b.icmp_unsigned("<", first, current_low), first, current_low), low)
            b.store(b.select(b.icmp_unsigned(">", end, current_high), end, current_high), high)

        def lane_is_bad(idx):
            address = b.ptrtoint(self.value_at(pointer, idx), I64)
            wrong = b.not_(self._in_bounds(pointer, address, size))
            return b.and_(wrong, self.value_at(mask, idx)) if mask is not None else wrong

        def in_run(idx, j):
            """The index of lane ``j`` of the run that starts at ``idx``."""
            return idx[:-1] + (b.add(idx[-1], j),)

        def run_is_inside(idx):
            first = b.ptrtoint(self.value_at(pointer, idx), I64)
            last = b.add(first, ir.Constant(I64, (run - 1) * size))
            return first, last, b.and_(self._in_bounds(pointer, first, size), self._in_bounds(pointer, last, size))

        # Every run's ends are checked in a loop without branches (which LLVM vectorizes); only
        # when some run is not wholly inside are such runs' active lanes checked one by one.
        outside = self.flag(False)

        def at_run(idx):
            first, last, ok = run_is_inside(idx)
            widen(first, b.add(last, ir.Constant(I64, size)))
            if self.checks:
                b.store(b.or_(b.load(outside), b.not_(ok)), outside)

        def lanes_of_outside_run(idx):
            def lanes_of_run():
                def lane(j):
                    b.store(b.or_(b.load(bad), lane_is_bad(in_run(idx, j))), bad)

                self.counted_loop(run, lane)

            self.if_then(b.not_(run_is_inside(idx)[2]), lanes_of_run)

        def ends_of_active_lanes(idx):
            # The active lanes of a run lie between its first and its last active lane, whose
            # addresses bound all of theirs: when both are inside the tensor (one byte range) and
            # aligned, so is every active lane (same alignment: they are size bytes apart). A loop
            # of minimum and maximum, which LLVM vectorizes, instead of a check per lane.
            # (lane numbers as i32: 16 to a vector register, not 8)
            first_slot, last_slot = self.scalar_slot(I32), self.scalar_slot(I32)
            b.store(ir.Constant(I32, run), first_slot)
            b.store(ir.Constant(I32, -1), last_slot)

            def lane(j):
                active = self.value_at(mask, in_run(idx, j))
                j32 = b.trunc(j, I32)
                low, high = b.select(active, j32, ir.Constant(I32, run)), b.select(active, j32, ir.Constant(I32, -1))
                first, last = b.load(first_slot), b.load(last_slot)  # min and max reductions
                b.store(b.select(b.icmp_signed("<", low, first), low, first), first_slot)
                b.store(b.select(b.icmp_signed(">", high, last), high, last), last_slot)

            self.counted_loop(run, lane)
            first, last = b.sext(b.load(first_slot), I64), b.sext(b.load(last_slot), I64)
            some = b.icmp_signed(">=", last, ir.Constant(I64, 0))
            ends_inside = ir.Constant(I1, 1)
            for j in (b.select(some, first, ir.Constant(I64, 0)), b.select(some, last, ir.Constant(I64, 0))):
                address = b.ptrtoint(self.value_at(pointer, in_run(idx, j)), I64)
                ends_inside = b.and_(ends_inside, self._in_bounds(pointer, address, size))
            b.store(b.or_(b.load(bad), b.and_(some, b.not_(ends_inside))), bad)

        def lane(idx):
            if self.checks:
                b.store(b.or_(b.load(bad), lane_is_bad(idx)), bad)
            if extent is not None:
                address = b.ptrtoint(self.value_at(pointer, idx), I64)
                widen(address, b.add(address, ir.Constant(I64, size)))

        if extent is not None:
            b.store(ir.Constant(I64, -1), extent[0])
            b.store(ir.Constant(I64, 0), extent[1])
        if run > 1 and (self.checks or extent is not None):
            self._runs_only(shape, run, at_run)
            if self.checks and mask is None:
                b.store(b.load(outside), bad)
            elif self.checks and self._one_tensor(pointer):
                # not rare: a row narrower than its block (a weight of 768 under a block of 1024)
                # has its last lanes outside in every program
                self.if_then(b.load(outside), lambda: self._runs_only(shape, run, ends_of_active_lanes), rare=False)
            elif self.checks:
                with self.cold():
                    self.if_then(b.load(outside), lambda: self._runs_only(shape, run, lanes_of_outside_run))
        elif run == 1 and (self.checks or extent is not None):
            self.loop_nest(shape, lane)
        every = None
        if mask is not None:
            every = self.flag(True)
            full = self._box_is_full(mask)
            if full is not None:
                b.store(full, every)
            else:
                self.loop_nest(_shape(mask.type),
                               lambda idx: b.store(b.and_(b.load(every), self.value_at(mask, idx)), every))
        if self.checks:
            with self.cold():
                self.if_then(b.load(bad), lambda: self._report_bad_lane(pointer, mask, size, shape))
        return every

    def _box_is_full(self, mask: Value) -> Optional[ir.Value]:
        """i1: every lane of ``mask`` is on, computed from its ends when the mask is a box
        (``compiler/analysis/masks.py``): a comparison of an index that runs through consecutive
        values along one dimension holds on a prefix or a suffix of it, so it holds everywhere when it
        holds at both ends. None when the mask is not a recognised box."""
        box = self._box(mask)
        if box is None:
            return None
        b = self.b
        full = ir.Constant(I1, 1)
        for bound in box.bounds:
            shape = _shape(bound.test.type)
            ends = [0] if bound.index_dim is None else [0, shape[bound.index_dim] - 1]
            for end in ends:
                idx = tuple(ir.Constant(I64, end if d == bound.index_dim else 0) for d in range(len(shape)))
                full = b.and_(full, self.value_at(bound.test, idx))
        return full

    def _runs_only(self, shape, run, at_run) -> None:
        outer = shape[:-1]
        count = shape[-1] // run

        def per_outer(prefix):
            self.counted_loop(count, lambda k: at_run(prefix + (self.b.mul(k, ir.Constant(I64, run)),)))

        self.loop_nest(outer, per_outer)

    def _report_bad_lane(self, pointer: Value, mask, size: int, shape) -> None:
        """Counts the bad lanes, then finds the first in order and fails with it and the count (the
        slow path of the check)."""
        b = self.b
        strides = row_major_strides(shape)
        count = self.scalar_slot(I64)
        b.store(ir.Constant(I64, 0), count)

        def is_bad(idx):
            address = b.ptrtoint(self.value_at(pointer, idx), I64)
            wrong = b.not_(self._in_bounds(pointer, address, size))
            return address, (b.and_(wrong, self.value_at(mask, idx)) if mask is not None else wrong)

        def tally(idx):
            b.store(b.add(b.load(count), b.zext(is_bad(idx)[1], I64)), count)

        def lane(idx):
            address, wrong = is_bad(idx)
            self.if_then(wrong, lambda: self.fail(ERROR_OUT_OF_BOUNDS, self.linear(idx, strides), address,
                                                  b.load(count)))

        self.loop_nest(shape, tally)
        self.loop_nest(shape, lane)
        b.ret(ir.Constant(I32, 1))  # not reached: some lane was bad

    def access_nest(self, pointer: Value, every, mask: Optional[Value], body) -> None:
        """Runs ``body(idx, address)`` for each active lane: versioned on ``every`` (all lanes active:
        no mask), the contiguous runs of the pointer at consecutive addresses."""
        b = self.b
        shape = _shape(pointer.type)
        run = self._run_length(pointer)

        def emit(masked: bool):
            def at_run(idx):
                return self.value_at(pointer, idx) if run > 1 else None

            def lane(idx, base, j):
                if run > 1:
                    address = b.gep(base, [b.mul(j, ir.Constant(I64, 1))], source_etype=self._element_type)
                else:
                    address = self.value_at(pointer, idx)
                if masked:
                    self.if_then(self.value_at(mask, idx), lambda: body(idx, address, True), rare=False)
                else:
                    body(idx, address, False)

            self.run_nest(shape, run, at_run, lane)

        if mask is None:
            emit(False)
            return
        full = self.function.append_basic_block("full")
        partial = self.function.append_basic_block("partial")
        after = self.function.append_basic_block("accessed")
        branch = b.cbranch(b.load(every), full, partial)
        if self._is_tail(mask):
            expect(branch, True)
        for block, masked in ((full, False), (partial, True)):
            b.position_at_end(block)
            saved = dict(self.memo)
            with self.cold(masked and self._is_tail(mask)):
                emit(masked)
            self.memo = saved
            b.branch(after)
        b.position_at_end(after)

    def _all_tails(self, masks) -> bool:
        return all(m is None or self._is_tail(m) for m in masks)

    def _is_tail(self, mask: Value) -> bool:
        """True when ``mask`` is a box that leaves lanes out only at the edge of the launch or of a
        loop (``offs < n`` with ``offs`` from the program id): a block whose mask is not full is then
        rare. A box with a bound whose index is the same in every program and loop iteration
        (``cols < n_cols`` over a row) is partial in every block or in none: where it is partial (a
        row width that is not the block size) its masked path is the common one."""
        box = self._box(mask)
        return box is not None and not any(self._same_everywhere(bound.index) for bound in box.bounds)

    def _same_everywhere(self, value: Value) -> bool:
        """Whether ``value`` is computed by pure operations from constants, aranges and the kernel's
        arguments only: the same in every program and every loop iteration."""
        known = self._everywhere.get(value.id)
        if known is None:
            op = value.owner
            if op is None:
                known = any(value is argument for argument in self.fn.args)
            else:
                known = (op.opcode != "program_id" and PURE in SPEC[op.opcode].traits
                         and all(self._same_everywhere(operand) for operand in op.operands))
            self._everywhere[value.id] = known
        return known

    def _box(self, mask: Value):
        """``mask`` as a box (``classify_mask``) whose comparisons are all known, else None; worked
        out once per mask."""
        if mask.id not in self._boxes:
            box = classify_mask(mask, self.axis)
            self._boxes[mask.id] = box if box is not None and all(b.test is not None for b in box.bounds) else None
        return self._boxes[mask.id]

    def lower_load(self, op: Operation) -> None:
        b = self.b
        pointer, mask, other = op.operand("pointer"), op.operand("mask"), op.operand("other")
        result = op.results[0]
        dtype = result.type.scalar
        self._element_type = memory_type(dtype)
        volatile = op.attrs.get("volatile", False)
        if result.id in self.deferrable:
            self._defer_load(op)
            return
        every = self.check_access(pointer, mask, dtype)
        if not isinstance(result.type, T.block_type):
            address = self.value_at(pointer, ())
            if mask is None:
                self.scalars[result.id] = self._read(address, dtype, volatile)
                return
            slot = self.scalar_slot(register_type(dtype))
            fallback = self.value_at(other, ()) if other is not None else constant(dtype, 0)
            b.store(fallback, slot)
            self.if_then(self.value_at(mask, ()), lambda: b.store(self._read(address, dtype, volatile), slot))
            self.scalars[result.id] = b.load(slot)
            return
        form = self.packed_loads.get(result.id)
        if form is None:
            stored_type, convert = dtype, (lambda x: x)
        else:  # read by a dot alone: held in the form its product reads (backends/cpu/dot.py)
            from . import dot

            stored_type = form[0]
            convert = lambda x: dot.pack(b, x, dtype, *form)  # noqa: E731
        if form is None and self._reads_in_place(op):
            self._load_in_place(op, every)
            return
        buffer = self.new_buffer(stored_type, _shape(result.type))
        self._read_into(buffer, op, every, convert)
        self.buffers[result.id] = buffer

    def _read_into(self, buffer: Buffer, op: Operation, every, convert=lambda x: x) -> None:
        """Fills ``buffer`` with the block load ``op`` (checked, ``every`` its all-lanes-active
        flag): the lanes its mask leaves inactive read ``other`` (0 without it), the others memory,
        each lane through ``convert``."""
        b = self.b
        pointer, mask, other = op.operand("pointer"), op.operand("mask"), op.operand("other")
        dtype = op.results[0].type.scalar
        volatile = op.attrs.get("volatile", False)
        if mask is not None:
            fill_value = (lambda idx: self.value_at(other, idx)) if other is not None else (lambda idx: constant(dtype, 0))
            b_every = b.load(every)
            with self.cold(self._is_tail(mask)):
                self.if_then(b.not_(b_every), lambda: self.loop_nest(buffer.shape, lambda idx: self.store_buffer(
                    buffer, idx, convert(fill_value(idx)))))
        self._element_type = memory_type(dtype)
        self.access_nest(pointer, every, mask, lambda idx, address, masked: self.store_buffer(
            buffer, idx, convert(self._read(address, dtype, volatile))))

    def _reads_in_place(self, op: Operation) -> bool:
        """Whether the block load ``op`` may be read where it lies instead of copied into a buffer:
        one row of consecutive addresses (its lanes in the buffer's order), from a tensor that no
        store or atomic of the kernel writes (not in ``self.written``: so no program of the launch can
        change it while the value is live), not volatile, not a bool (held as i1)."""
        pointer = op.operand("pointer")
        shape = _shape(pointer.type)
        dtype = op.results[0].type.scalar
        return (len(shape) == 1 and self._run_length(pointer) == shape[0] and not op.attrs.get("volatile", False)
                and not dtype.is_bool() and self._one_tensor(pointer) and self.provenance[pointer.id] not in self.written)

    def _load_in_place(self, op: Operation, every) -> None:
        """The loaded block's buffer is the tensor's memory itself when every lane is active and the
        row's bytes are outside every tensor the kernel writes (two arguments may be views of one
        array: compared at run time, a few instructions per program); else a buffer filled as
        ``lower_load`` does. A row kernel (softmax, layer norm) then reads its row where it lies
        instead of copying 4 KB before reading it again."""
        b = self.b
        pointer = op.operand("pointer")
        result = op.results[0]
        dtype = result.type.scalar
        shape = _shape(result.type)
        where = self.value_at(pointer, (ir.Constant(I64, 0),))
        # the bytes the row reads (not its tensor's: with the checks compiled out a stray row is
        # still copied when a write may reach it)
        low = b.ptrtoint(where, I64)
        high = b.add(low, ir.Constant(I64, shape[0] * item_size(dtype)))
        apart = b.load(every) if every is not None else ir.Constant(I1, 1)
        for w in self.written:
            w_low, w_high = self.bounds[w]
            apart = b.and_(apart, b.or_(b.icmp_unsigned("<=", w_high, low), b.icmp_unsigned("<=", high, w_low)))
        # The row's lines asked for at once: its first reader (a reduction's tree) takes eight
        # strides through the row, which from DRAM keeps fewer lines in flight than a copy did.
        row_bytes = min(shape[0] * item_size(dtype), PREFETCH_BYTES)
        self.counted_loop(-(-row_bytes // 64), lambda k: lanes.intrinsic(
            b, "llvm.prefetch.p0", VOID, [b.gep(where, [b.mul(k, ir.Constant(I64, 64))], source_etype=I8),
                                          ir.Constant(I32, 0), ir.Constant(I32, 3), ir.Constant(I32, 1)]))
        if isinstance(apart, ir.Constant):
            self.buffers[result.id] = Buffer(where, dtype, shape, row_major_strides(shape))
            return
        copy = self.new_buffer(dtype, shape)
        mask = op.operand("mask")
        with self.cold(mask is None or self._is_tail(mask)):
            self.if_then(b.not_(apart), lambda: self._read_into(copy, op, every))
        self.buffers[result.id] = Buffer(b.select(apart, where, copy.pointer), dtype, shape, row_major_strides(shape))

    def _defer_load(self, op: Operation) -> None:
        """A load read by one store chain: checked now, read lane by lane inside the store's loop."""
        pointer, mask = op.operand("pointer"), op.operand("mask")
        extent = (self.scalar_slot(I64), self.scalar_slot(I64))
        every = self.check_access(pointer, mask, op.results[0].type.scalar, extent)
        self.deferred[op.results[0].id] = (op, every, extent)

    def _read_deferred(self, v: Value, idx) -> ir.Value:
        """Lane ``idx`` of a deferred load, read from memory now (under its mask, unless the store's
        loop is the unmasked version)."""
        op, _, _ = self.deferred[v.id]
        b = self.b
        dtype = v.type.scalar
        pointer, mask, other = op.operand("pointer"), op.operand("mask"), op.operand("other")
        address = self.value_at(pointer, idx)
        if mask is None or self.unmasked_reads:
            return self._read(address, dtype)
        slot = self.scalar_slot(register_type(dtype))
        b.store(self.value_at(other, idx) if other is not None else constant(dtype, 0), slot)
        self.if_then(self.value_at(mask, idx), lambda: b.store(self._read(address, dtype), slot), rare=False)
        return b.load(slot)

    def _read(self, address, dtype, volatile=False):
        value = self.b.load(address, typ=memory_type(dtype))
        value.align = item_size(dtype)
        if volatile:
            value.volatile = True if hasattr(value, "volatile") else None
        if dtype.is_bool() and not dtype.is_ptr():
            return self.b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
        return value

    def _write(self, address, value, dtype):
        if dtype.is_bool() and not dtype.is_ptr():
            value = self.b.zext(value, I8)
        store = self.b.store(value, address)
        store.align = item_size(dtype)

    def lower_store(self, op: Operation) -> None:
        pointer, value, mask = op.operand("pointer"), op.operand("value"), op.operand("mask")
        dtype = pointer.type.scalar.element_ty
        self._element_type = memory_type(dtype)
        fused = [v for v in self.fused_into.get(id(op), ()) if v.id in self.deferred]
        extent = (self.scalar_slot(I64), self.scalar_slot(I64)) if fused else None
        every = self.check_access(pointer, mask, dtype, extent)
        if not isinstance(pointer.type, T.block_type):
            address = self.value_at(pointer, ())
            if mask is None:
                self._write(address, self.value_at(value, ()), dtype)
            else:
                self.if_then(self.value_at(mask, ()), lambda: self._write(address, self.value_at(value, ()), dtype))
            return

        def write(idx, address, masked):
            self._write(address, self.value_at(value, idx), dtype)

        if not fused:
            self._element_type = memory_type(dtype)
            self.access_nest(pointer, every, mask, write)
            return
        self._store_fused(op, fused, every, extent, write)

    def _store_fused(self, op, fused, every, extent, write) -> None:
        """A store whose value reads loads in its own loop, one pass over memory. When a load's bytes
        may overlap the store's (other than lane for lane at the same pointer), the loads are read
        into buffers first, so every lane reads memory as it was before the store."""
        b = self.b
        pointer, mask = op.operand("pointer"), op.operand("mask")
        low, high = b.load(extent[0]), b.load(extent[1])
        apart = ir.Constant(I1, 1)
        every_all = b.load(every) if every is not None else ir.Constant(I1, 1)
        for v in fused:
            load, load_every, load_extent = self.deferred[v.id]
            if load_every is not None:
                every_all = b.and_(every_all, b.load(load_every))
            if load.operand("pointer") is pointer:
                continue  # lane i reads and then writes its own address
            load_low, load_high = b.load(load_extent[0]), b.load(load_extent[1])
            disjoint = b.or_(b.icmp_unsigned("<=", load_high, low), b.icmp_unsigned("<=", high, load_low))
            apart = b.and_(apart, disjoint)
        one_pass = self.function.append_basic_block("store_fused")
        staged = self.function.append_basic_block("store_staged")
        done = self.function.append_basic_block("stored")
        # (staged is the common path of a kernel called in place, its output a view of an input:
        # the weights then mislead LLVM's layout, never the results)
        expect(b.cbranch(apart, one_pass, staged), True)
        # one pass: unmasked when the store and every load are fully active
        b.position_at_end(one_pass)
        self._element_type = memory_type(pointer.type.scalar.element_ty)
        saved = dict(self.memo)
        unmasked = self.function.append_basic_block("store_unmasked")
        masked = self.function.append_basic_block("store_masked")
        masks = [mask] + [self.deferred[v.id][0].operand("mask") for v in fused]
        branch = b.cbranch(every_all, unmasked, masked)
        if self._all_tails(masks):
            expect(branch, True)
        b.position_at_end(unmasked)
        self.unmasked_reads = True
        self.access_nest(pointer, None, None, write)
        self.unmasked_reads = False
        self.memo = dict(saved)
        b.branch(done)
        b.position_at_end(masked)
        with self.cold(self._all_tails(masks)):
            self.access_nest(pointer, every, mask, write)
        self.memo = dict(saved)
        b.branch(done)
        # staged (the store may overwrite what a load reads): the loads into buffers, then the store
        b.position_at_end(staged)
        with self.cold():
            for v in fused:
                buffer = self.new_buffer(v.type.scalar, _shape(v.type))
                self.fill(buffer, v)
                self.buffers[v.id] = buffer
            self.access_nest(pointer, every, mask, write)
        for v in fused:
            del self.buffers[v.id]
        self.memo = dict(saved)
        b.branch(done)
        b.position_at_end(done)

    # atomics -----------------------------------------------------------------------------------------
    def _atomic(self, op: Operation, apply) -> None:
        """Per active lane in lane order: ``apply(address, lane idx) -> old value``."""
        b = self.b
        pointer, mask = op.operand("pointer"), op.operand("mask")
        result = op.results[0]
        dtype = pointer.type.scalar.element_ty
        self._element_type = memory_type(dtype)
        self.check_access(pointer, mask, dtype)
        shape = _shape(pointer.type)
        buffer = self.new_buffer(dtype, shape) if shape else None
        slot = None if shape else self.scalar_slot(register_type(dtype))
        if slot is not None:
            b.store(constant(dtype, 0), slot)

        def lane(idx):
            address = self.value_at(pointer, idx)

            def run():
                old = apply(address, idx)
                if buffer is not None:
                    self.store_buffer(buffer, idx, old)
                else:
                    b.store(old, slot)

            if buffer is not None and mask is not None:
                self.store_buffer(buffer, idx, constant(dtype, 0))
            if mask is None:
                run()
            else:
                self.if_then(self.value_at(mask, idx), run, rare=False)

        self.loop_nest(shape, lane)
        if buffer is not None:
            self.buffers[result.id] = buffer
        else:
            self.scalars[result.id] = b.load(slot)

    def lower_atomic_rmw(self, op: Operation) -> None:
        kind = op.attrs["kind"]
        dtype = op.operand("pointer").type.scalar.element_ty
        ordering = atomics.ordering_of(op)
        value = op.operand("value")
        if dtype.is_bool() and not dtype.is_ptr():
            raise UnsupportedOp("atomics on int1")
        self._atomic(op, lambda address, idx: atomics.rmw(self.b, self.function, kind, dtype, address,
                                                          self.value_at(value, idx), ordering))

    def lower_atomic_cas(self, op: Operation) -> None:
        dtype = op.operand("pointer").type.scalar.element_ty
        ordering = atomics.ordering_of(op)
        self._atomic(op, lambda address, idx: atomics.cas(self.b, dtype, address,
                                                          self.value_at(op.operand("compare"), idx),
                                                          self.value_at(op.operand("value"), idx), ordering))

    def lower_barrier(self, op: Operation) -> None:
        pass  # one program runs on one thread: its accesses are already in order

    # values ------------------------------------------------------------------------------------------
    def lower_constant(self, op: Operation) -> None:
        r = op.results[0]
        if not isinstance(r.type, T.block_type):
            self.scalars[r.id] = constant(r.type, op.attrs["value"])

    def lower_program_id(self, op: Operation) -> None:
        self.scalars[op.results[0].id] = self.pids[op.attrs["axis"]]

    def lower_num_programs(self, op: Operation) -> None:
        self.scalars[op.results[0].id] = self.nprogs[op.attrs["axis"]]

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

    # control flow ------------------------------------------------------------------------------------
    def _bind(self, value: Value, lowered) -> None:
        if isinstance(lowered, Buffer):
            self.buffers[value.id] = lowered
        else:
            self.scalars[value.id] = lowered

    def _carried_slots(self, values):
        """For each carried value: a Buffer (blocks) or None (scalars, carried in phis)."""
        return [self.new_buffer(v.type.scalar, _shape(v.type)) if isinstance(v.type, T.block_type) else None
                for v in values]

    def _copy_into(self, slots, values) -> None:
        """Writes block ``values`` into their ``slots`` buffers as if all were read before any is
        written: lazy values (which may read a slot) are staged in temporaries first; values in
        buffers other than the slots are copied directly."""
        slot_pointers = {id(slot.pointer) for slot in slots if slot is not None}
        reads = [self._slot_reads(v, slot_pointers) if slot is not None and v.id not in self.buffers else None
                 for slot, v in zip(slots, values)]
        staged, in_place = [], []
        for position, (slot, v) in enumerate(zip(slots, values)):
            if slot is None:
                continue
            source = self.buffers.get(v.id)
            if source is not None and source.pointer is slot.pointer and source.strides == slot.strides:
                continue
            if source is not None and id(source.pointer) not in slot_pointers:
                staged.append((slot, source))
                continue
            found = reads[position]
            if found is not None and found[1] and found[0] <= {id(slot.pointer)} and not any(
                    other is not None and id(slot.pointer) in other[0]
                    for i, other in enumerate(reads) if i != position):
                # a lane of v reads only the same lane of its own slot, and no other value reads that
                # slot: v is computed straight into it (a loop-carried accumulator, acc += x)
                in_place.append((slot, v))
                continue
            temp = self.new_buffer(v.type.scalar, slot.shape)
            self.fill(temp, v)
            staged.append((slot, temp))
        for slot, v in in_place:
            self.fill(slot, v)
        for slot, temp in staged:
            self.loop_nest(slot.shape, lambda idx, slot=slot, temp=temp: self.store_buffer(
                slot, idx, self.load_buffer(temp, idx)))

    def _slot_reads(self, v: Value, slot_pointers: set) -> Optional[tuple[set, bool]]:
        """For a lazy block ``v`` about to be written into a carried value's buffer: (the ids of the
        pointers of the buffers among ``slot_pointers`` it reads, whether each such read is of the
        lane being computed: elementwise ops all the way down), or None when it reads something this
        cannot follow (a load fused into a store's loop)."""
        found, same_lane = set(), True
        stack, seen = [(v, True)], set()
        while stack:
            u, lane = stack.pop()
            if not isinstance(u.type, T.block_type) or (u.id, lane) in seen:
                continue
            seen.add((u.id, lane))
            buffer = self.buffers.get(u.id)
            if buffer is not None:
                if id(buffer.pointer) in slot_pointers:
                    found.add(id(buffer.pointer))
                    same_lane = same_lane and lane
                continue
            if u.id in self.advanced:
                stack.append((self.advanced[u.id][0], lane))
                continue
            op = u.owner
            if op is None or u.id in self.deferred:
                return None
            keeps_lane = op.opcode in lanes.LOWER or op.opcode == "hint"
            stack.extend((o, lane and keeps_lane) for o in op.operands)
        return found, same_lane

    def lower_if(self, op: Operation) -> None:
        b = self.b
        condition = self.scalars[op.operands[0].id]
        slots = self._carried_slots(op.results)
        then_bb = self.function.append_basic_block("if_then")
        else_bb = self.function.append_basic_block("if_else")
        after = self.function.append_basic_block("if_end")
        b.cbranch(condition, then_bb, else_bb)
        incoming = []
        for block, region in ((then_bb, op.regions[0]), (else_bb, op.regions[1] if len(op.regions) > 1 else None)):
            b.position_at_end(block)
            saved = dict(self.memo)
            values = []
            if region is not None:
                terminator = self.lower_region(region)
                values = list(terminator.operands) if terminator is not None else []
            if values:
                self._copy_into(slots, values)
            scalars = [self.value_at(v, ()) if s is None else None for s, v in zip(slots, values)]
            self.memo = saved
            if not b.block.is_terminated:
                incoming.append((b.block, scalars))
                b.branch(after)
        b.position_at_end(after)
        for i, r in enumerate(op.results):
            if slots[i] is not None:
                self.buffers[r.id] = slots[i]
            else:
                phi = b.phi(register_type(r.type))
                for block, scalars in incoming:
                    phi.add_incoming(scalars[i], block)
                self.scalars[r.id] = phi

    def _advanced_pointers(self, carried, yields) -> dict:
        """Positions of carried pointer blocks that each iteration advances by a scalar (``p += s``):
        position -> the scalar offset Value. Such a block is carried as one i64 element offset from its
        initial value instead of a buffer of pointers."""
        found = {}
        for i, (arg, y) in enumerate(zip(carried, yields)):
            if not (isinstance(arg.type, T.block_type) and isinstance(arg.type.scalar, T.pointer_type)):
                continue
            op = y.owner
            if op is None or op.opcode != "addptr" or op.operands[0] is not arg:
                continue
            offset = op.operands[1].owner
            if offset is not None and offset.opcode == "splat":
                found[i] = offset.operands[0]
        return found

    def _enter_loop(self, slots, args, inits, pre, advanced=()) -> list:
        """At a loop header: binds each carried region argument (a phi for scalars and, for pointer
        blocks in ``advanced``, an i64 element offset from the initial value; its buffer for other
        blocks) and returns the phis, None where the value lives in a buffer."""
        b = self.b
        phis = []
        for i, (slot, arg, init) in enumerate(zip(slots, args, inits)):
            if i in advanced:
                phi = b.phi(I64)
                phi.add_incoming(ir.Constant(I64, 0), pre)
                self.advanced[arg.id] = (init, phi)
            elif slot is None:
                phi = b.phi(register_type(arg.type))
                phi.add_incoming(self.scalars[init.id], pre)
                self.scalars[arg.id] = phi
            else:
                phi = None
                self.buffers[arg.id] = slot
            phis.append(phi)
        return phis

    def lower_for(self, op: Operation) -> None:
        b = self.b
        lower, upper, step = (self.scalars[v.id] for v in op.operands[:3])
        inits = op.operands[3:]
        body = op.regions[0]
        carried = body.args[1:]
        terminator_op = body.terminator
        advanced = self._advanced_pointers(carried, terminator_op.operands if terminator_op is not None else [])
        slots = [None if i in advanced else slot for i, slot in enumerate(self._carried_slots(carried))]
        self._copy_into(slots, inits)
        counter_ty = op.operands[0].type
        signed = counter_ty.is_int_signed()
        pre = b.block
        header = self.function.append_basic_block("for_header")
        body_bb = self.function.append_basic_block("for_body")
        exit_bb = self.function.append_basic_block("for_end")
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(lower.type)
        iv.add_incoming(lower, pre)
        phis = self._enter_loop(slots, carried, inits, pre, advanced)
        zero = ir.Constant(step.type, 0)
        cmp = b.icmp_signed if signed else b.icmp_unsigned
        going_up = b.icmp_signed(">", step, zero) if signed else ir.Constant(I1, 1)
        keep = b.select(going_up, cmp("<", iv, upper), cmp(">", iv, upper))
        b.cbranch(keep, body_bb, exit_bb)
        b.position_at_end(body_bb)
        self.scalars[body.args[0].id] = iv
        saved = dict(self.memo)
        terminator = self.lower_region(body)
        yields = list(terminator.operands) if terminator is not None else []
        self._copy_into(slots, yields)
        scalar_next = []
        for i, (slot, v) in enumerate(zip(slots, yields)):
            if i in advanced:
                amount = self.scalars[advanced[i].id]
                source = advanced[i].type
                if amount.type.width < 64:
                    amount = b.sext(amount, I64) if source.is_int_signed() else b.zext(amount, I64)
                scalar_next.append(b.add(phis[i], amount))
            else:
                scalar_next.append(self.value_at(v, ()) if slot is None else None)
        self.memo = saved
        following = b.add(iv, step)
        latch = b.block
        iv.add_incoming(following, latch)
        for phi, value in zip(phis, scalar_next):
            if phi is not None:
                phi.add_incoming(value, latch)
        b.branch(header)
        b.position_at_end(exit_bb)
        for i, (r, slot, phi) in enumerate(zip(op.results, slots, phis)):
            if i in advanced:
                self.advanced[r.id] = (inits[i], phi)
            elif slot is not None:
                self.buffers[r.id] = slot
            else:
                self.scalars[r.id] = phi

    def lower_while(self, op: Operation) -> None:
        b = self.b
        before, after = op.regions
        inits = op.operands
        slots = self._carried_slots(before.args)
        self._copy_into(slots, inits)
        pre = b.block
        header = self.function.append_basic_block("while_before")
        after_bb = self.function.append_basic_block("while_after")
        exit_bb = self.function.append_basic_block("while_end")
        b.branch(header)
        b.position_at_end(header)
        phis = self._enter_loop(slots, before.args, inits, pre)
        watched = self.checks and self._watches_for_repeats(op, slots)
        if watched:
            count = b.phi(I64)
            count.add_incoming(ir.Constant(I64, 0), pre)
        saved = dict(self.memo)
        condition_op = self.lower_region(before)
        condition = self.value_at(condition_op.operands[0], ())
        passed = condition_op.operands[1:]
        pass_slots = self._carried_slots(passed)
        self._copy_into(pass_slots, passed)
        passed_scalars = [self.value_at(v, ()) if s is None else None for s, v in zip(pass_slots, passed)]
        self.memo = saved
        b.cbranch(condition, after_bb, exit_bb)
        b.position_at_end(after_bb)
        for arg, slot, value in zip(after.args, pass_slots, passed_scalars):
            self._bind(arg, slot if slot is not None else value)
        saved = dict(self.memo)
        terminator = self.lower_region(after)
        yields = list(terminator.operands) if terminator is not None else []
        self._copy_into(slots, yields)
        scalar_next = [self.value_at(v, ()) if s is None else None for s, v in zip(slots, yields)]
        self.memo = saved
        if watched:
            self.current = op  # the error names the while loop's line
            self._fail_if_repeated(count, phis, scalar_next)
        latch = b.block
        for phi, value in zip(phis, scalar_next):
            if phi is not None:
                phi.add_incoming(value, latch)
        if watched:
            count.add_incoming(b.add(count, ir.Constant(I64, 1)), latch)
        b.branch(header)
        b.position_at_end(exit_bb)
        for r, slot, value in zip(op.results, pass_slots, passed_scalars):
            self._bind(r, slot if slot is not None else value)

    def _watches_for_repeats(self, op: Operation, slots) -> bool:
        """A ``while`` loop that carries scalars only and touches no memory: if one iteration leaves
        every carried value as it was, every later one does too, and the loop never ends (a GPU would
        hang; the interpreter raises DeadlockError, and so does this backend). Loops that read or
        write memory are not watched: their next iteration may differ."""
        from ...compiler.ir.spec import has_effects

        if any(slot is not None for slot in slots):
            return False
        return not any(has_effects(inner) for region in op.regions for inner in region.ops)

    def _fail_if_repeated(self, count, before, after) -> None:
        """From iteration ``spin_check_after`` on: the program fails (``ENDLESS_LOOP``) when the
        carried values ``after`` this iteration are those ``before`` it, bit for bit."""
        b = self.b
        same = b.icmp_unsigned(">=", count, self.spin_check_after)
        for old, new in zip(before, after):
            if isinstance(old.type, (ir.FloatType, ir.DoubleType, ir.HalfType)):
                width = ir.IntType(64 if isinstance(old.type, ir.DoubleType) else
                                   32 if isinstance(old.type, ir.FloatType) else 16)
                old, new = b.bitcast(old, width), b.bitcast(new, width)
            elif isinstance(old.type, ir.PointerType):
                old, new = b.ptrtoint(old, I64), b.ptrtoint(new, I64)
            same = b.and_(same, b.icmp_unsigned("==", old, new))
        with self.cold():
            self.if_then(same, lambda: self.fail(ERROR_ENDLESS_LOOP, ir.Constant(I64, 0), count))

    # cross-lane ops ----------------------------------------------------------------------------------
    def _scratch_copy(self, v: Value) -> Buffer:
        buffer = self.new_buffer(v.type.scalar, _shape(v.type))
        self.fill(buffer, v)
        return buffer

    def _combiner(self, op: Operation, dtypes):
        """(lhs lanes, rhs lanes) -> combined lanes, for a reduce or scan's kind."""
        custom = None
        if op.attrs["kind"] == "custom":
            region = op.regions[0]

            def combine_region(left, right):
                for arg, value in zip(region.args, list(left) + list(right)):
                    self.scalars[arg.id] = value
                saved = dict(self.memo)
                terminator = self.lower_region(region)
                result = [self.value_at(v, ()) for v in terminator.operands]
                self.memo = saved
                return result

            custom = combine_region
        try:
            return combining.combiner(self.b, op.attrs["kind"], dtypes, custom)
        except combining.UnknownKind as error:
            raise UnsupportedOp(str(error)) from None

    def lower_reduce(self, op: Operation) -> None:
        """The interpreter's halving tree (lane i meets lane i + n/2, then i + n/4, ...), computed in
        stages of up to ``REDUCE_FAN_IN`` leaves: a stage's loop runs over the lanes it keeps and meets,
        in the tree's order, the leaves each of them stands for (the first log2(fan-in) levels of the
        tree at once). The first stage reads the operands where they are (a lazy operand is computed
        there, lane by lane), so no copy of the block is made; each stage writes a buffer 1/fan-in the
        size of the last."""
        b = self.b
        axis = op.attrs["axis"]
        kind = op.attrs["kind"]
        inputs = list(op.operands)
        shape = _shape(inputs[0].type)
        dtypes = [v.type.scalar for v in inputs]
        readers = [lambda idx, v=v: self.value_at(v, idx) for v in inputs]
        if kind in ("argmax", "argmin"):
            readers.append(lambda idx: b.trunc(idx[axis], I32))
            dtypes.append(T.int32)
        combine = self._combiner(op, dtypes)
        size = shape[axis]
        stage = None
        while stage is None or size > 1:
            fan_in = min(REDUCE_FAN_IN, size)
            size //= fan_in
            stage_shape = shape[:axis] + (size,) + shape[axis + 1:]
            stage = [self.new_buffer(dtype, stage_shape) for dtype in dtypes]

            def lane(idx, stage=stage, fan_in=fan_in, size=size, readers=readers):
                leaves = []
                for leaf in range(fan_in):
                    at = list(idx)
                    at[axis] = b.add(idx[axis], ir.Constant(I64, leaf * size)) if leaf else idx[axis]
                    leaves.append([read(tuple(at)) for read in readers])
                while len(leaves) > 1:
                    half = len(leaves) // 2
                    leaves = [combine(leaves[i], leaves[i + half]) for i in range(half)]
                for buffer, value in zip(stage, leaves[0]):
                    self.store_buffer(buffer, idx, value)

            self.loop_nest(stage_shape, lane)
            readers = [lambda idx, buffer=buffer: self.load_buffer(buffer, idx) for buffer in stage]
        outputs = stage[-1:] if kind in ("argmax", "argmin") else stage
        for r, s in zip(op.results, outputs):
            if isinstance(r.type, T.block_type):
                strides = s.strides[:axis] + s.strides[axis + 1:]
                self.buffers[r.id] = Buffer(s.pointer, s.dtype, _shape(r.type), strides)
            else:
                self.scalars[r.id] = self.load_buffer(s, tuple(ir.Constant(I64, 0) for _ in shape))

    def lower_scan(self, op: Operation) -> None:
        b = self.b
        axis = op.attrs["axis"]
        reverse = op.attrs.get("reverse", False)
        inputs = list(op.operands)
        shape = _shape(inputs[0].type)
        dtypes = [v.type.scalar for v in inputs]
        out = [self._scratch_copy(v) for v in inputs]
        combine = self._combiner(op, dtypes)
        n = shape[axis]
        outer, inner = shape[:axis], shape[axis + 1:]

        def along(prefix):
            def step(k):
                position = b.sub(ir.Constant(I64, n - 1), b.add(k, ir.Constant(I64, 1))) if reverse else b.add(
                    k, ir.Constant(I64, 1))
                previous = b.add(position, ir.Constant(I64, 1)) if reverse else b.sub(position, ir.Constant(I64, 1))

                def lane(suffix):
                    here = prefix + (position,) + suffix
                    before = prefix + (previous,) + suffix
                    left = [self.load_buffer(s, before) for s in out]
                    right = [self.load_buffer(s, here) for s in out]
                    for s, value in zip(out, combine(left, right)):
                        self.store_buffer(s, here, value)

                self.loop_nest(inner, lane)

            if n > 1:
                self.counted_loop(n - 1, step)

        self.loop_nest(outer, along)
        for r, s in zip(op.results, out):
            self.buffers[r.id] = s

    def lower_dot(self, op: Operation) -> None:
        from . import dot

        dot.lower_dot(self, op)

    def lower_philox(self, op: Operation) -> None:
        if not isinstance(op.results[0].type, T.block_type):
            self._lower_scalar(op)
            return
        buffers = [self.new_buffer(r.type.scalar, _shape(r.type)) for r in op.results]

        def lane(idx):
            values = lanes.lower_op(self.b, op, [self.value_at(o, idx) for o in op.operands])
            for buffer, value in zip(buffers, values):
                self.store_buffer(buffer, idx, value)

        self.loop_nest(buffers[0].shape, lane)
        for r, buffer in zip(op.results, buffers):
            self.buffers[r.id] = buffer

    def lower_histogram(self, op: Operation) -> None:
        b = self.b
        value, mask = op.operand("value"), op.operand("mask")
        result = op.results[0]
        bins = op.attrs["num_bins"]
        buffer = self.new_buffer(result.type.scalar, (bins,))
        rty = register_type(result.type.scalar)
        self.loop_nest((bins,), lambda idx: self.store_buffer(buffer, idx, ir.Constant(rty, 0)))
        source = value.type.scalar
        shape = _shape(value.type)

        def lane(idx):
            v = self.value_at(value, idx)
            wide = b.sext(v, I64) if source.is_int_signed() and v.type.width < 64 else (
                b.zext(v, I64) if v.type.width < 64 else v)
            inside = b.icmp_unsigned("<", wide, ir.Constant(I64, bins))
            if source.is_int_signed():
                inside = b.and_(inside, b.icmp_signed(">=", wide, ir.Constant(I64, 0)))
            active = self.value_at(mask, idx) if mask is not None else ir.Constant(I1, 1)
            # an active lane outside the bins is an error of the kernel (a GPU counts it in bin value & (bins - 1))
            self.if_then(b.and_(active, b.not_(inside)), lambda: self.fail(
                ERROR_HISTOGRAM_VALUE, self.linear(idx, row_major_strides(shape)), wide, ir.Constant(I64, bins)))
            inside = b.and_(inside, active)

            def count():
                slot = b.gep(buffer.pointer, [wide], source_etype=memory_type(result.type.scalar))
                b.store(b.add(b.load(slot, typ=rty), ir.Constant(rty, 1)), slot)

            self.if_then(inside, count)

        self.loop_nest(shape, lane)
        self.buffers[result.id] = buffer

    def lower_gather(self, op: Operation) -> None:
        b = self.b
        source, index = op.operand("source"), op.operand("index")
        axis = op.attrs["axis"]
        result = op.results[0]
        src = self.materialize(source)
        extent = _shape(source.type)[axis]
        shape = _shape(result.type)
        strides = row_major_strides(shape)
        ity = index.type.scalar
        buffer = self.new_buffer(result.type.scalar, shape)

        def lane(idx):
            i = self.value_at(index, idx)
            wide = b.sext(i, I64) if ity.is_int_signed() and i.type.width < 64 else (
                b.zext(i, I64) if i.type.width < 64 else i)
            outside = b.icmp_unsigned(">=", wide, ir.Constant(I64, extent))
            self.if_then(outside, lambda: self.fail(ERROR_GATHER_INDEX, self.linear(idx, strides), wide,
                                                     ir.Constant(I64, extent)))
            at = list(idx)
            at[axis] = wide
            self.store_buffer(buffer, idx, self.load_buffer(src, tuple(at)))

        self.loop_nest(shape, lane)
        self.buffers[result.id] = buffer

    def lower_sort(self, op: Operation) -> None:
        b = self.b
        value = op.operands[0]
        dtype = value.type.scalar
        shape = _shape(value.type)
        n = shape[-1]
        descending = bool(op.attrs["descending"])
        current = self._scratch_copy(value)
        stages = n.bit_length() - 1
        for stage in range(1, stages + 1):
            for step in range(stage - 1, -1, -1):
                bit = 1 << step
                following = self.new_buffer(dtype, shape)

                def lane(idx, bit=bit, stage=stage, following=following, current=current):
                    position = idx[-1]
                    partner_pos = b.xor(position, ir.Constant(I64, bit))
                    own = self.load_buffer(current, idx)
                    partner = self.load_buffer(current, idx[:-1] + (partner_pos,))
                    if stage == stages:
                        desc = ir.Constant(I1, int(descending))
                    else:
                        desc = b.trunc(b.lshr(position, ir.Constant(I64, stage)), I1)
                    is_right = b.icmp_unsigned("!=", b.and_(position, ir.Constant(I64, bit)), ir.Constant(I64, 0))
                    greater = lanes.greater(self.b, own, partner, dtype)
                    take = b.xor(greater, b.xor(desc, is_right))
                    self.store_buffer(following, idx, b.select(take, partner, own))

                self.loop_nest(shape, lane)
                current = following
        self.buffers[op.results[0].id] = current

    # reporting -----------------------------------------------------------------------------------
    def lower_assert(self, op: Operation) -> None:
        b = self.b
        condition = op.operands[0]
        shape = _shape(condition.type)
        strides = row_major_strides(shape)

        def lane(idx):
            holds = self.value_at(condition, idx)
            self.if_then(b.not_(holds), lambda: self.fail(ERROR_ASSERT, self.linear(idx, strides), ir.Constant(I64, 0)))

        self.loop_nest(shape, lane)

    def lower_print(self, op: Operation) -> None:
        b = self.b
        pointers = self.alloca(T.int64, max(1, len(op.operands)))
        for n, v in enumerate(op.operands):
            if isinstance(v.type, T.block_type):
                buffer = self.materialize(v)
                if buffer.strides != row_major_strides(buffer.shape):
                    copy = self.new_buffer(v.type.scalar, buffer.shape)
                    self.loop_nest(buffer.shape, lambda idx: self.store_buffer(copy, idx, self.load_buffer(buffer, idx)))
                    buffer = copy
                pointer = buffer.pointer
            else:
                slot = self.alloca(v.type.scalar if not isinstance(v.type, T.pointer_type) else T.int64, 1)
                value = self.scalars[v.id]
                if isinstance(v.type, T.pointer_type):
                    value = b.ptrtoint(value, I64)
                elif v.type.is_bool():
                    value = b.zext(value, I8)
                b.store(value, slot)
                pointer = slot
            b.store(pointer, b.gep(pointers, [ir.Constant(I64, n)], source_etype=PTR))
        hook = self.module.globals.get(PRINT_SYMBOL)
        if hook is None:
            hook = ir.Function(self.module, ir.FunctionType(VOID, [I64, I64, I32, I32, I32, PTR]), PRINT_SYMBOL)
        b.call(hook, [self.kernel_token, ir.Constant(I64, self.op_index[id(op)]), *self.pids, pointers])
