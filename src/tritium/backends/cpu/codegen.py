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

from llvmlite import ir

from ...compiler.analysis.accesses import argument_accesses
from ...compiler.analysis.axis_info import analyze_axis_info
from ...compiler.analysis.provenance import pointer_provenance
from ...compiler.ir import types as T
from ...compiler.ir.ops import Function, Operation
from ..llvm import math
from ..llvm import scalar as lanes
from ..llvm.types import F32, F64, I32, I64, I8, PTR, VOID, register_type
from ..llvm.lowering import Lowering, UnsupportedOp  # noqa: F401  (UnsupportedOp: raised by the rules)
from ..reports import ASSERT as ERROR_ASSERT
from . import placement
from .checks import Checks
from .control_flow import ControlFlow
from .cross_lane import CrossLane
from .debug_checks import DebugChecks
from .lanes import Lanes
from .memory import Memory
from .values import HEADER_SLOTS, LIVE_TENSORS_SYMBOL, PRINT_SYMBOL, SCRATCH_SYMBOL, SPIN_CHECK_SLOT, Buffer, _shape, expect, row_major_strides


def makes_raw_pointers(fn) -> bool:
    """Whether ``fn`` turns integers into pointers (a table of ``data_ptr()`` values, say)."""
    return any(op.opcode == "int_to_ptr" for op in fn.walk())


class Codegen(Lanes, Checks, Memory, ControlFlow, CrossLane, DebugChecks, Lowering):
    """One kernel's LLVM module: the placement stage first (``placement.py``), then the IR walked once
    (``backends/llvm/lowering.py``) with the rules of this folder's mixins. ``debug``: the variant
    debug-mode launches run, with debug mode's checks (``debug_checks.py``)."""

    def __init__(self, fn: Function, target_triple: str, data_layout: str = "", checks: bool = True,
                 hardware_ldexp: bool = False, debug: bool = False):
        Lowering.__init__(self, fn)
        self.checks = checks or debug  # bounds checks before every access (TRITIUM_BOUNDS_CHECKS=0: none)
        self.debug = debug
        self._cold = 0  # inside code that rarely runs (Codegen.cold)
        self._loop_options: dict = {}
        self._boxes: dict = {}  # mask value id -> its MaskInfo when it is a box mask, else None
        self._everywhere: dict = {}  # value id -> the same in every program and loop iteration
        self._box_reads_unmasked = False  # a store's loads under its own mask (Memory._store_fused)
        self.module = ir.Module(name=fn.name)
        if hardware_ldexp:
            math.use_hardware_ldexp(self.module)
        self.module.triple = target_triple
        if data_layout:
            self.module.data_layout = data_layout
        self.axis = analyze_axis_info(fn, trust_hints=False)  # a false hint cannot misplace a lane here
        # argument index of each pointer argument; value id -> position of the pointer argument it derives from
        self.pointer_args, self.provenance = pointer_provenance(fn)
        # a pointer made from an integer may point into any live tensor of the process (checks.py)
        self.raw_pointers = makes_raw_pointers(fn)
        # where each block value lives (placement.py): written on the values, read by the rules
        self.uses = placement.place(fn, self.rules, debug=debug)
        # positions of the pointer arguments some store or atomic may write (every one of them when
        # a write cannot be traced to one)
        _, writes = argument_accesses(fn)
        self.written = tuple(i for i, arg in enumerate(self.pointer_args) if arg in writes)

    def live_tensors(self):
        """The process's table of live tensors (values.LIVE_TENSORS_SYMBOL), declared once."""
        cell = self.module.globals.get(LIVE_TENSORS_SYMBOL)
        if cell is None:
            cell = ir.GlobalVariable(self.module, ir.ArrayType(I64, 2), LIVE_TENSORS_SYMBOL)
        return cell

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
        if self.debug:
            self.load_shadows(lambda n: argument(HEADER_SLOTS + n))
        self.lower_region(fn.body)
        if not b.block.is_terminated:
            b.ret(ir.Constant(I32, 0))
        self.alloca_builder.branch(body)
        self._build_grid(program)
        # the object says how much scratch memory its programs need, so that a launcher loading it
        # from the disk cache knows without generating the module again
        scratch = ir.GlobalVariable(self.module, I64, SCRATCH_SYMBOL)
        scratch.initializer = ir.Constant(I64, self.scratch_bytes)
        scratch.global_constant = True
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

    def lower_lanes(self, op: Operation) -> None:
        """An elementwise op: computed at once for scalars; for blocks lazy (evaluated where it is read),
        or held in a buffer when the placement says so."""
        if self.debug:
            self.check_lanes(op)
        if all(not isinstance(r.type, T.block_type) for r in op.results):
            args = [self.scalars[o.id] for o in op.operands]
            result = lanes.lower_op(self.b, op, args)
            for r, v in zip(op.results, result if isinstance(result, list) else [result]):
                self.scalars[r.id] = v
        elif op.results[0].encoding == placement.BUFFER:
            self.materialize_op(op)

    def lower_assume(self, op: Operation) -> None:
        """Nothing: this backend plans its accesses from the analysis without hints or assumptions."""

    # reports ---------------------------------------------------------------------------------------
    def lower_assert(self, op: Operation) -> None:
        if op.attrs.get("debug_only") and not self.debug:
            return
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
                    self.loop_nest(buffer.shape, lambda idx, copy=copy, buffer=buffer:
                                   self.store_buffer(copy, idx, self.load_buffer(buffer, idx)))
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
