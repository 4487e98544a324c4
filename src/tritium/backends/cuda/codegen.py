"""The tile IR of one kernel as an LLVM module for NVPTX: one program is one thread block.

Values (docs/cuda-backend.md): a scalar is one LLVM value every thread computes; a block value is
either *materialized* -- a layout (``layouts.Layout``) and the registers this thread holds in it --
or *recomputed*: index arithmetic (``arange``, splats, constants, broadcasts, reshapes, permutes
and elementwise chains of them) evaluated by each consumer in the layout it needs. ``regs(v, L)``
gives the registers of ``v`` in layout ``L``: a recomputed value is evaluated there, a materialized
one renamed when every thread already holds what ``L`` asks for, else moved through shared memory.

One lane of every elementwise op comes from ``backends/llvm/scalar.py`` (the CPU backend's code),
except the math Triton lowers to approximate instructions or libdevice (``math.py`` here).
"""
from __future__ import annotations

from typing import Optional

import llvmlite.ir as ir

from ...compiler.analysis.axis_info import analyze_axis_info
from ...compiler.analysis.effects import spins_on_memory
from ...compiler.analysis.provenance import pointer_provenance
from ...compiler.ir import types as T
from ...compiler.ir.ops import Function, Operation, Region, Value
from ...errors import CompilationError
from ..llvm import atomics, casts
from ..llvm import combine as combining
from ..llvm import scalar as lanes
from ..llvm.lowering import Lowering, UnsupportedOp  # noqa: F401  (UnsupportedOp: raised by the rules)
from ..llvm.types import F32, F64, I1, I8, I32, I64, PTR, VOID, constant, item_size, memory_type, register_type
from .. import reports
from . import inline_asm as asm
from . import layouts as L
from . import math as gpu_math

GLOBAL = 1
SHARED = 3
GLOBAL_PTR = ir.PointerType(addrspace=GLOBAL)
SHARED_PTR = ir.PointerType(addrspace=SHARED)
SMEM_SYMBOL = "tritium_shared"


def _shape(ty) -> tuple[int, ...]:
    return tuple(ty.shape) if isinstance(ty, T.block_type) else ()


def _is_block(v: Value) -> bool:
    return isinstance(v.type, T.block_type)


def _byte_size(ty) -> int:
    """The bytes of an LLVM number or vector-of-numbers type; 0 for anything else (pointers)."""
    if isinstance(ty, ir.VectorType):
        return ty.count * _byte_size(ty.element)
    if isinstance(ty, ir.IntType):
        return ty.width // 8 if ty.width % 8 == 0 else 0
    if isinstance(ty, ir.HalfType):
        return 2
    if isinstance(ty, ir.FloatType):
        return 4
    if isinstance(ty, ir.DoubleType):
        return 8
    return 0


def _words(ty) -> int:
    """How many 32-bit registers a predicated access of ``ty`` moves: 1, 2 or 4; 0 where it is
    not 4, 8 or 16 bytes of numbers."""
    size = _byte_size(ty)
    return size // 4 if size in (4, 8, 16) else 0


# The PTX cache operators of tl.load's and tl.store's cache_modifier, and the L1 eviction priorities of
# their eviction_policy. PTX writes a cache operator and an eviction priority in different forms of
# the instruction, never both: an access given both keeps its cache operator.
LOAD_CACHE_OPERATORS = {".ca": ".ca", ".cg": ".cg", ".cv": ".cv", ".cs": ".cs", ".lu": ".lu"}
STORE_CACHE_OPERATORS = {".wb": ".wb", ".cg": ".cg", ".cs": ".cs", ".wt": ".wt"}
EVICTION_PRIORITIES = {"evict_first": ".L1::evict_first", "evict_last": ".L1::evict_last",
                       "evict_normal": ".L1::evict_normal", "evict_unchanged": ".L1::evict_unchanged",
                       "no_allocate": ".L1::no_allocate"}


def cache_hints(op: Operation, operators: dict) -> str:
    """The qualifiers of a load's or store's PTX instruction for its cache_modifier and
    eviction_policy ("" for neither)."""
    operator = operators.get(op.attrs.get("cache_modifier") or "", "")
    return operator or EVICTION_PRIORITIES.get(op.attrs.get("eviction_policy") or "", "")


def _repeat(plans) -> list:
    """Each inline-asm operand plan once per register it takes."""
    return [plan for plan in plans for _ in range(plan.registers)]


def _shared_sizes(dtypes) -> list:
    """The bytes one value of each dtype takes in shared memory (pointers as 64-bit integers, booleans
    as bytes)."""
    return [8 if isinstance(d, T.pointer_type) else (1 if d.is_bool() else item_size(d)) for d in dtypes]


def _combine_tree(sets: list, levels: int, merge):
    """The halving tree over ``sets`` (a power of two of them, ``levels`` levels), lowest bit of the
    position first: what a group's members combine to, in the interpreter's order."""
    for j in range(levels):
        step = 1 << j
        for position in range(0, len(sets), step * 2):
            sets[position] = merge(sets[position], sets[position + step])
    return sets[0]


def _row_major_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _map_offset(offset, bit_map, rank: int) -> tuple[int, ...]:
    out = [0] * rank
    for d, x in enumerate(offset):
        k = 0
        while x:
            if x & 1:
                mapped = bit_map(d, 1 << k)
                if mapped is not None:
                    out[mapped[0]] += mapped[1]
            x >>= 1
            k += 1
    return tuple(out)


class Codegen(Lowering):
    """One kernel's LLVM module for NVPTX: the kernel function, then the IR walked once
    (``backends/llvm/lowering.py``) with the rules here."""

    # The elementwise opcodes: one lane each from backends/llvm/scalar.py's rules, (b, op, args), or
    # from math.py's, (codegen, op, args), which take their place (lane_op calls either)
    lane_rules = {**lanes.LOWER, **gpu_math.LOWER}

    def __init__(self, fn: Function, num_warps: int = 4, enable_fp_fusion: bool = True, checks: bool = False,
                 capability: int = 90):
        Lowering.__init__(self, fn)
        self.capability = capability  # the target's compute capability (80: sm_80): which instructions exist
        # Debug mode's bounds checks: each pointer argument's [low, high) byte range comes as two more
        # parameters, and an access outside it is recorded (reports.OUT_OF_BOUNDS) and skipped.
        self.checks = checks
        self.pointer_args, self.provenance = pointer_provenance(fn)
        self.num_warps = num_warps
        self.threads = 32 * num_warps
        self.enable_fp_fusion = enable_fp_fusion
        self.module = ir.Module(name=fn.name)
        self.module.triple = "nvptx64-nvidia-cuda"
        self.axis = analyze_axis_info(fn)  # hints trusted, as Triton does (the interpreter reports false ones)
        self.scalars: dict[int, ir.Value] = {}
        self.dist: dict[int, tuple] = {}  # value id -> (Layout, registers)
        self.scopes: list[dict] = [{}]
        self.smem_bytes = 0
        self._thread_index: dict = {}
        # Kernels that can fail at run time (an assert, a gather index, a histogram value) take one more
        # parameter: the error record (backends/reports.py) the launcher reads after the launch.
        self.reports = checks or any(op.opcode in ("assert", "gather", "histogram") for op in fn.walk())
        # inside a spin wait (a while loop whose condition depends on memory it reads) every load is
        # an acquiring atomic one: LLVM would hoist a plain load out of the loop, which then never
        # ends, and what the loop waited for orders the loads after it
        self.spinning = 0

    # setup -----------------------------------------------------------------------------------------
    def param_type(self, ty) -> ir.Type:
        if isinstance(ty, T.pointer_type):
            return GLOBAL_PTR
        reg = register_type(ty)
        return I32 if reg == I1 else reg

    def build(self) -> ir.Module:
        fn = self.fn
        params = [self.param_type(a.type) for a in fn.args]
        params += [I64] * (2 * len(self.pointer_args) if self.checks else 0)
        params += [GLOBAL_PTR] if self.reports else []
        kernel_ty = ir.FunctionType(VOID, params)
        kernel = ir.Function(self.module, kernel_ty, fn.name)
        kernel.calling_convention = "ptx_kernel"
        # .reqntid: the program's thread count, as Triton's PTX states it, so ptxas keeps to the
        # registers that many threads can have (64 each at 1024 threads) instead of failing the launch
        self.module.add_named_metadata("nvvm.annotations", [kernel, "reqntidx",
                                                            ir.Constant(I32, 32 * self.num_warps)])
        self.function = kernel
        entry = kernel.append_basic_block("entry")
        body = kernel.append_basic_block("body")
        self.entry = ir.IRBuilder(entry)
        self.b = ir.IRBuilder(body)
        e = self.entry
        self.tid = self._sreg(e, "tid.x")
        self.lane = e.and_(self.tid, ir.Constant(I32, 31))
        self.warp = e.lshr(self.tid, ir.Constant(I32, 5))
        self.record = e.addrspacecast(kernel.args[-1], PTR) if self.reports else None
        first_bound = len(fn.args)
        self.bounds = [(kernel.args[first_bound + 2 * k], kernel.args[first_bound + 2 * k + 1])
                       for k in range(len(self.pointer_args))] if self.checks else []
        for a, raw in zip(fn.args, kernel.args):
            if isinstance(a.type, T.pointer_type):
                self.scalars[a.id] = e.addrspacecast(raw, PTR)
            elif register_type(a.type) == I1:
                self.scalars[a.id] = e.trunc(raw, I1)
            else:
                self.scalars[a.id] = raw
        self.smem = ir.GlobalVariable(self.module, ir.ArrayType(I8, 0), SMEM_SYMBOL, addrspace=SHARED)
        self.smem.linkage = "external"
        self.smem.align = 16
        self.smem.type = SHARED_PTR  # opaque, as LLVM's IR has it: llvmlite would type it [0 x i8]*
        self.lower_region(fn.body)
        if not self.b.block.is_terminated:
            self.b.ret_void()
        self.entry.branch(body)
        return self.module

    def _sreg(self, b, name: str) -> ir.Value:
        intrinsic = f"llvm.nvvm.read.ptx.sreg.{name}"
        fn = self.module.globals.get(intrinsic)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(I32, []), intrinsic)
        return b.call(fn, [])

    def intrinsic(self, name: str, ret, args):
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, [a.type for a in args]), name)
        return self.b.call(fn, args)

    def barrier(self) -> None:
        """``barrier.sync 0``: every thread of the program waits for the others, and their shared-memory
        writes before it are seen after it. Not the ``.aligned`` form (``bar.sync``), which requires the
        threads of each warp to arrive together: after a masked access's branch they may not."""
        self.intrinsic("llvm.nvvm.barrier.cta.sync.all", VOID, [ir.Constant(I32, 0)])

    # layouts --------------------------------------------------------------------------------------
    def default_layout(self, shape) -> L.Layout:
        return L.blocked(tuple(shape), self.num_warps, vec=4 if shape and shape[-1] >= 4 else 1)

    def thread_index(self, layout: L.Layout, dim: int) -> ir.Value:
        """This thread's index along ``dim`` in ``layout``, without the register offsets (i32)."""
        key = (layout.lane_bits, layout.warp_bits, dim)
        found = self._thread_index.get(key)
        if found is not None:
            return found
        e = self.entry
        total = ir.Constant(I32, 0)
        for source, bits in ((self.lane, layout.lane_bits), (self.warp, layout.warp_bits)):
            for i, bit in enumerate(bits):
                if bit is None or bit[0] != dim:
                    continue
                set_ = e.and_(e.lshr(source, ir.Constant(I32, i)), ir.Constant(I32, 1))
                total = e.or_(total, e.shl(set_, ir.Constant(I32, L.log2(bit[1]))))
        self._thread_index[key] = total
        return total

    def element_index(self, layout: L.Layout, r: int) -> list:
        """Register ``r``'s index along each dimension (i32)."""
        offsets = layout.offsets[r]
        return [self.b.or_(self.thread_index(layout, d), ir.Constant(I32, offsets[d])) if offsets[d]
                else self.thread_index(layout, d) for d in range(layout.rank)]

    def owner(self, layout: L.Layout) -> Optional[ir.Value]:
        """True in the one thread of each replicated group that writes (None: no replication)."""
        lanes_mask, warps_mask = layout.replica_masks()
        if not lanes_mask and not warps_mask:
            return None
        e = self.entry
        bits = e.or_(e.and_(self.lane, ir.Constant(I32, lanes_mask)),
                     e.shl(e.and_(self.warp, ir.Constant(I32, warps_mask)), ir.Constant(I32, 5)))
        return e.icmp_unsigned("==", bits, ir.Constant(I32, 0))

    def access_layout(self, pointer: Value, mask: Optional[Value]) -> L.Layout:
        """The blocked layout of a load or store: the most contiguous dimension fastest, up to 16
        bytes per thread along it where the axis analysis proves them contiguous and aligned."""
        shape = _shape(pointer.type)
        info = self.axis.get(pointer)
        dtype = pointer.type.scalar.element_ty
        size = item_size(dtype)
        if info is None:
            return self.default_layout(shape)
        rank = len(shape)
        order = tuple(sorted(range(rank), key=lambda d: (-info.contiguity[d], -d)))
        fast = order[0]
        vec = min(info.contiguity[fast], max(1, 16 // size), shape[fast])
        alignment = info.divisibility[fast]
        while vec > 1 and alignment % (vec * size):
            vec //= 2
        if mask is not None:
            mask_info = self.axis.get(mask)
            constancy = mask_info.constancy[fast] if mask_info is not None else 1
            vec = min(vec, constancy)
        return L.blocked(shape, self.num_warps, order, max(vec, 1))

    # scopes ---------------------------------------------------------------------------------------
    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        self.scopes.pop()

    def regs(self, v: Value, layout: L.Layout) -> list:
        """The registers of block value ``v`` in ``layout`` (a scalar: that value in every register)."""
        if not _is_block(v):
            return [self.scalar(v)] * layout.num_regs
        key = (v.id, layout)
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        result = self._regs(v, layout)
        self.scopes[-1][key] = result
        return result

    def layout_of(self, v: Value) -> Optional[L.Layout]:
        found = self.dist.get(v.id)
        return found[0] if found is not None else None

    def some_layout(self, v: Value) -> L.Layout:
        return self.layout_of(v) or self.default_layout(_shape(v.type))

    def _regs(self, v: Value, layout: L.Layout) -> list:
        found = self.dist.get(v.id)
        if found is not None:
            own, values = found
            if own == layout:
                return values
            if L.same_threads(own, layout):
                return [values[own.register_of[o]] for o in layout.offsets]
            return self.convert(own, values, layout, v.type.scalar)
        op = v.owner
        if op is None:
            raise AssertionError(f"block value {v} was never lowered")
        return self.recompute(op, v, layout)

    def recompute(self, op: Operation, v: Value, layout: L.Layout) -> list:
        b = self.b
        n = layout.num_regs
        opcode = op.opcode
        if opcode == "arange":
            base = self.thread_index(layout, 0)
            start = op.attrs["start"]
            return [b.add(b.or_(base, ir.Constant(I32, o[0])) if o[0] else base, ir.Constant(I32, start))
                    if start else (b.or_(base, ir.Constant(I32, o[0])) if o[0] else base) for o in layout.offsets]
        if opcode == "constant":
            return [constant(v.type.scalar, op.attrs["value"])] * n
        if opcode == "splat":
            return [self.scalar(op.operands[0])] * n
        if opcode == "hint":
            return self.regs(op.operands[0], layout)
        if opcode in ("broadcast", "reshape", "permute"):
            source = op.operands[0]
            source_shape = _shape(source.type)
            if opcode == "broadcast":
                bit_map = L.broadcast_source(source_shape)
            elif opcode == "reshape":
                bit_map = L.reshape_source(layout.shape, source_shape)
            else:
                bit_map = L.permute_source(tuple(op.attrs["order"]))
            view = L.source_layout(layout, source_shape, bit_map)
            values = self.regs(source, view)
            return [values[view.register_of[_map_offset(o, bit_map, len(source_shape))]] for o in layout.offsets]
        if opcode == "join":
            rank = layout.rank
            view = L.map_bits(layout, layout.shape[:-1], lambda d, w: None if d == rank - 1 else (d, w))
            lhs, rhs = self.regs(op.operands[0], view), self.regs(op.operands[1], view)
            last = self.thread_index(layout, rank - 1)
            out = []
            for o in layout.offsets:
                k = view.register_of[o[:-1]]
                if o[-1]:
                    out.append(rhs[k])
                elif any(bit is not None and bit[0] == rank - 1 for bit in layout.lane_bits + layout.warp_bits):
                    out.append(b.select(b.icmp_unsigned("!=", last, ir.Constant(I32, 0)), rhs[k], lhs[k]))
                else:
                    out.append(lhs[k])
            return out
        if opcode in self.lane_rules:
            operands = [self.regs(o, layout) if _is_block(o) else [self.scalar(o)] * n for o in op.operands]
            results = [self.lane_op(op, [ops[r] for ops in operands]) for r in range(n)]
            index = op.results.index(v)
            return [r[index] if isinstance(r, list) else r for r in results]
        raise AssertionError(f"{opcode} is not recomputed")

    def scalar(self, v: Value) -> ir.Value:
        return self.scalars[v.id]

    def lane_op(self, op: Operation, args: list):
        """One lane of elementwise ``op`` on operand lanes ``args``: by math.py's rule (given the code
        generator) where it has one, else by scalar.py's (given the builder)."""
        if op.opcode in gpu_math.LOWER:
            return gpu_math.LOWER[op.opcode](self, op, args)
        return lanes.lower_op(self.b, op, args)

    # shared memory ----------------------------------------------------------------------------------
    def smem_pointer(self, byte_offset: ir.Value) -> ir.Value:
        return self.b.gep(self.smem, [byte_offset], source_etype=I8)

    def reserve(self, nbytes: int) -> None:
        self.smem_bytes = max(self.smem_bytes, (nbytes + 15) // 16 * 16)

    def smem_store(self, element_index: ir.Value, value: ir.Value, dtype, base_bytes: int = 0) -> None:
        b = self.b
        if value.type == I1:
            value = b.zext(value, I8)
        size = item_size(dtype) if not dtype.is_bool() else 1
        offset = b.add(b.mul(element_index, ir.Constant(I32, size)), ir.Constant(I32, base_bytes))
        b.store(value, self.smem_pointer(offset), align=size)

    def smem_load(self, element_index: ir.Value, dtype, base_bytes: int = 0) -> ir.Value:
        b = self.b
        mem = memory_type(dtype)
        size = item_size(dtype) if not dtype.is_bool() else 1
        offset = b.add(b.mul(element_index, ir.Constant(I32, size)), ir.Constant(I32, base_bytes))
        value = b.load(self.smem_pointer(offset), typ=mem, align=size)
        if register_type(dtype) == I1:
            value = b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
        return value

    def linear_index(self, index: list, shape) -> ir.Value:
        b = self.b
        total = None
        for i, stride in zip(index, _row_major_strides(shape)):
            term = b.mul(i, ir.Constant(I32, stride)) if stride != 1 else i
            total = term if total is None else b.add(total, term)
        return total if total is not None else ir.Constant(I32, 0)

    def write_block(self, layout: L.Layout, values: list, dtype, base_bytes: int = 0) -> None:
        """Each thread writes its registers at their row-major positions (replicas write the same)."""
        for r, value in enumerate(values):
            self.smem_store(self.linear_index(self.element_index(layout, r), layout.shape), value, dtype, base_bytes)

    def convert(self, source: L.Layout, values: list, target: L.Layout, dtype) -> list:
        """``values`` (in ``source``) in ``target`` layout, through shared memory."""
        numel = 1
        for n in source.shape:
            numel *= n
        self.reserve(numel * item_size(dtype))
        self.barrier()
        self.write_block(source, values, dtype)
        self.barrier()
        return [self.smem_load(self.linear_index(self.element_index(target, r), target.shape), dtype)
                for r in range(target.num_regs)]

    # elementwise ops and views ----------------------------------------------------------------------
    def lower_lanes(self, op: Operation) -> None:
        """An elementwise op: a scalar computed at once; a block materialized in the layout of its first
        materialized operand, or left to be recomputed by its consumers where none is."""
        if not any(_is_block(r) for r in op.results):
            result = self.lane_op(op, [self.scalar(o) for o in op.operands])
            for r, value in zip(op.results, result if isinstance(result, list) else [result]):
                self.scalars[r.id] = value
            return
        blocks = [o for o in op.operands if _is_block(o)]
        layout = next((self.layout_of(o) for o in blocks if self.layout_of(o) is not None), None)
        if layout is None:
            return  # recomputed by its consumers
        self.materialize(op, layout)

    def materialize(self, op: Operation, layout: L.Layout) -> None:
        for r in op.results:
            self.dist[r.id] = (layout, self.recompute(op, r, layout))

    def lower_arange(self, op: Operation) -> None:
        pass  # recomputed by its consumers

    def lower_constant(self, op: Operation) -> None:
        if not _is_block(op.results[0]):
            self.scalars[op.results[0].id] = constant(op.results[0].type, op.attrs["value"])

    def lower_splat(self, op: Operation) -> None:
        pass  # recomputed by its consumers

    def lower_hint(self, op: Operation) -> None:
        source = op.operands[0]
        if not _is_block(source):
            self.scalars[op.results[0].id] = self.scalar(source)
        elif source.id in self.dist:
            self.dist[op.results[0].id] = self.dist[source.id]

    def lower_broadcast(self, op: Operation) -> None:
        pass  # recomputed by its consumers: a view of the operand's registers where they agree

    def lower_permute(self, op: Operation) -> None:
        pass

    def lower_join(self, op: Operation) -> None:
        pass

    def lower_reshape(self, op: Operation) -> None:
        result, source = op.results[0], op.operands[0]
        if not _is_block(result):  # reshape to (): the one element
            self.scalars[result.id] = self.regs(source, self.some_layout(source))[0]

    def lower_split(self, op: Operation) -> None:
        source = op.operands[0]
        shape = _shape(op.results[0].type)
        layout = self.default_layout(shape) if shape else None
        rank = len(shape)
        if layout is None:  # a block of two elements into two scalars
            pair = L.Layout((2,), ((0, 1),), (None,) * 5, (None,) * L.log2(self.num_warps))
            values = self.regs(source, pair)
            self.scalars[op.results[0].id], self.scalars[op.results[1].id] = values
            return
        wide = L.Layout(shape + (2,), ((rank, 1),) + layout.reg_bits, layout.lane_bits, layout.warp_bits)
        values = self.regs(source, wide)
        for half, r in enumerate(op.results):
            self.dist[r.id] = (layout, [values[wide.register_of[o + (half,)]] for o in layout.offsets])

    def lower_program_id(self, op: Operation) -> None:
        self.scalars[op.results[0].id] = self._sreg(self.entry, "ctaid." + "xyz"[op.attrs["axis"]])

    def lower_num_programs(self, op: Operation) -> None:
        self.scalars[op.results[0].id] = self._sreg(self.entry, "nctaid." + "xyz"[op.attrs["axis"]])

    def lower_barrier(self, op: Operation) -> None:
        self.barrier()

    # memory ---------------------------------------------------------------------------------------
    def global_pointer(self, p: ir.Value) -> ir.Value:
        return self.b.addrspacecast(p, GLOBAL_PTR)

    def _vector_groups(self, layout: L.Layout):
        """Runs of registers that are consecutive along the fastest dimension (the layout's first
        register bits): (first register, length)."""
        if not layout.reg_bits:
            return [(0, 1)]
        fast = layout.reg_bits[0][0]
        vec = 1
        for dim, weight in layout.reg_bits:
            if dim == fast and weight == vec:
                vec *= 2
            else:
                break
        return [(r, vec) for r in range(0, layout.num_regs, vec)]

    def _guarded(self, predicate: Optional[ir.Value], emit, default=None):
        """``emit()`` where ``predicate`` holds; the value it returns, or ``default`` elsewhere."""
        b = self.b
        if predicate is None:
            return emit()
        before = b.block
        then = self.function.append_basic_block("guarded")
        after = self.function.append_basic_block("guarded_end")
        b.cbranch(predicate, then, after)
        b.position_at_end(then)
        value = emit()
        end = b.block
        b.branch(after)
        b.position_at_end(after)
        if value is None:
            return None
        phi = b.phi(value.type)
        phi.add_incoming(value, end)
        phi.add_incoming(default, before)
        return phi

    def _predicated_load(self, predicate: Optional[ir.Value], p: ir.Value, ty, fallback: Optional[ir.Value],
                         hints: str = "") -> Optional[ir.Value]:
        """``ty`` (4, 8 or 16 bytes of numbers) read from ``p`` where ``predicate`` holds, else
        ``fallback``, as one predicated PTX load (``@p ld.global.v4.b32``), which is what Triton emits:
        no branch around the load, at which a warp's threads (whose masks differ) could part.
        ``hints``: the cache operator or eviction priority qualifiers (``.cg``, ``.L1::evict_last``);
        with no predicate the load is unconditional. None for other sizes (the caller branches)."""
        words = _words(ty)
        if not words:
            return None
        b = self.b
        target = "$0" if words == 1 else "{" + ", ".join(f"${i}" for i in range(words)) + "}"
        vector = f".v{words}" if words > 1 else ""
        returned = I32 if words == 1 else ir.LiteralStructType([I32] * words)
        if predicate is None:
            args = [b.ptrtoint(p, I64)]
            text = f"ld.global{hints}{vector}.b32 {target}, [${words}];"
            constraints = ["=r"] * words + ["l"]
        else:
            args = [predicate, b.ptrtoint(p, I64)] + self._as_words(fallback, words)
            text = " ".join(f"mov.b32 ${i}, ${words + 2 + i};" for i in range(words))
            text += f" @${words} ld.global{hints}{vector}.b32 {target}, [${words + 1}];"
            constraints = ["=&r"] * words + ["b", "l"] + ["r"] * words
        result = b.asm(ir.FunctionType(returned, [a.type for a in args]), text, ",".join(constraints), args,
                       side_effect=True)
        if words == 1:
            return b.bitcast(result, ty)
        vector = ir.Constant(ir.VectorType(I32, words), None)
        for i in range(words):
            vector = b.insert_element(vector, b.extract_value(result, i), ir.Constant(I32, i))
        return b.bitcast(vector, ty)

    def _as_words(self, value: ir.Value, words: int) -> list:
        """``value``'s bits as ``words`` 32-bit integers, lowest first."""
        b = self.b
        bits = b.bitcast(value, I32 if words == 1 else ir.VectorType(I32, words))
        return [bits] if words == 1 else [b.extract_element(bits, ir.Constant(I32, i)) for i in range(words)]

    def _predicated_store(self, predicate: Optional[ir.Value], p: ir.Value, value: ir.Value, hints: str = "") -> bool:
        """``value`` (4, 8 or 16 bytes of numbers) written to ``p`` where ``predicate`` holds (always
        when it is None), as one predicated PTX store with the qualifiers ``hints`` (see
        ``_predicated_load``); False, writing nothing, for other sizes."""
        words = _words(value.type)
        if not words:
            return False
        b = self.b
        parts = self._as_words(value, words)
        source = "$2" if words == 1 else "{" + ", ".join(f"${i + 2}" for i in range(words)) + "}"
        text = f"@$0 st.global{hints}{f'.v{words}' if words > 1 else ''}.b32 [$1], {source};"
        if predicate is None:
            predicate = ir.Constant(I1, 1)
        args = [predicate, b.ptrtoint(p, I64)] + parts
        b.asm(ir.FunctionType(VOID, [a.type for a in args]), text, ",".join(["b", "l"] + ["r"] * words), args,
              side_effect=True)
        return True

    def _and(self, a, c):
        if a is None:
            return c
        if c is None:
            return a
        return self.b.and_(a, c)

    def _group_vec(self, pointer: Value, layout: L.Layout, vec: int) -> int:
        """How many of a group's ``vec`` registers one vector access may cover."""
        info = self.axis.get(pointer)
        if info is None or vec == 1:
            return 1
        fast = layout.reg_bits[0][0]
        size = item_size(pointer.type.scalar.element_ty)
        n = min(vec, info.contiguity[fast], max(1, 16 // size))
        while n > 1 and info.divisibility[fast] % (n * size):
            n //= 2
        return n

    def _mask_vec(self, mask: Optional[Value], layout: L.Layout, vec: int) -> int:
        if mask is None or vec == 1:
            return vec
        info = self.axis.get(mask)
        if info is None:
            return 1
        return min(vec, info.constancy[layout.reg_bits[0][0]])

    def lower_load(self, op: Operation) -> None:
        b = self.b
        pointer, mask, other = op.operand("pointer"), op.operand("mask"), op.operand("other")
        result = op.results[0]
        dtype = result.type.scalar
        mem = memory_type(dtype)
        volatile = bool(op.attrs.get("volatile", False)) or self.spinning > 0
        if not _is_block(pointer):
            predicate = self.checked(pointer, self.scalar(pointer), ir.Constant(I32, 0),
                                     self.scalar(mask) if mask is not None else None)
            p = self.global_pointer(self.scalar(pointer))
            fallback = self.scalar(other) if other is not None else constant(dtype, 0)

            def read():
                return self._from_memory(self._read(p, mem, item_size(dtype), volatile), dtype)

            self.scalars[result.id] = self._guarded(predicate, read, fallback)
            return
        layout = self.access_layout(pointer, mask)
        pointers = self.regs(pointer, layout)
        masks = self.regs(mask, layout) if mask is not None else None
        others = self.regs(other, layout) if other is not None else None
        hints = cache_hints(op, LOAD_CACHE_OPERATORS)
        out = [None] * layout.num_regs
        for first, group in self._vector_groups(layout):
            vec = 1 if volatile or self.checks else self._mask_vec(mask, layout,
                                                                     self._group_vec(pointer, layout, group))
            for start in range(first, first + group, vec):
                predicate = self.checked(pointer, pointers[start], self.lane_number(layout, start),
                                         masks[start] if masks is not None else None)
                p = self.global_pointer(pointers[start])
                if vec == 1:
                    def read(p=p):
                        return self._from_memory(self._read(p, mem, item_size(dtype), volatile), dtype)

                    fallback = others[start] if others is not None else constant(dtype, 0)
                    value = None
                    if (predicate is not None or hints) and not volatile:
                        value = self._predicated_load(predicate, p, mem, self._to_memory(fallback, dtype), hints)
                    out[start] = self._guarded(predicate, read, fallback) if value is None else value
                    continue
                vector_ty = ir.VectorType(mem, vec)

                def read_vector(p=p, vector_ty=vector_ty):
                    return b.load(p, typ=vector_ty, align=vec * item_size(dtype))

                if others is not None:
                    fallback = self._vector_of([self._to_memory(others[start + i], dtype) for i in range(vec)], vector_ty)
                else:
                    fallback = ir.Constant(vector_ty, None) if predicate is None else self._vector_of(
                        [self._to_memory(constant(dtype, 0), dtype)] * vec, vector_ty)
                vector = None
                if (predicate is not None or hints) and not volatile:
                    vector = self._predicated_load(predicate, p, vector_ty, fallback, hints)
                if vector is None:
                    vector = self._guarded(predicate, read_vector, fallback)
                for i in range(vec):
                    out[start + i] = self._from_memory(b.extract_element(vector, ir.Constant(I32, i)), dtype)
        self.dist[result.id] = (layout, out)

    def _read(self, p, ty, align: int, volatile: bool):
        """A load; a volatile one is a relaxed atomic load, which the compiler may not hoist or merge
        (a spin wait must see other programs' writes), an acquiring one inside a spin wait."""
        if volatile:
            ordering = "acquire" if self.spinning else "monotonic"
            return self.b.load_atomic(p, f'syncscope("device") {ordering}', align, typ=ty)
        return self.b.load(p, typ=ty, align=align)

    def _vector_of(self, values, vector_ty):
        b = self.b
        vector = ir.Constant(vector_ty, None)
        for i, value in enumerate(values):
            vector = b.insert_element(vector, value, ir.Constant(I32, i))
        return vector

    def _from_memory(self, value, dtype):
        if register_type(dtype) == I1:
            return self.b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
        return value

    def _to_memory(self, value, dtype):
        if value.type == I1:
            return self.b.zext(value, I8)
        return value

    def lower_store(self, op: Operation) -> None:
        b = self.b
        pointer, value, mask = op.operand("pointer"), op.operand("value"), op.operand("mask")
        dtype = pointer.type.scalar.element_ty
        if not _is_block(pointer):
            predicate = self._and(self.first_thread(), self.scalar(mask) if mask is not None else None)
            predicate = self.checked(pointer, self.scalar(pointer), ir.Constant(I32, 0), predicate)
            p = self.global_pointer(self.scalar(pointer))
            v = self._to_memory(self.scalar(value), dtype)
            self._guarded(predicate, lambda: b.store(v, p, align=item_size(dtype)) and None)
            return
        layout = self.access_layout(pointer, mask)
        pointers = self.regs(pointer, layout)
        values = self.regs(value, layout) if _is_block(value) else [self.scalar(value)] * layout.num_regs
        masks = self.regs(mask, layout) if mask is not None else None
        owner = self.owner(layout)
        hints = cache_hints(op, STORE_CACHE_OPERATORS)
        for first, group in self._vector_groups(layout):
            vec = 1 if self.checks else self._mask_vec(mask, layout, self._group_vec(pointer, layout, group))
            for start in range(first, first + group, vec):
                predicate = self._and(owner, masks[start] if masks is not None else None)
                predicate = self.checked(pointer, pointers[start], self.lane_number(layout, start), predicate)
                p = self.global_pointer(pointers[start])
                if vec == 1:
                    v = self._to_memory(values[start], dtype)
                    if (predicate is None and not hints) or not self._predicated_store(predicate, p, v, hints):
                        self._guarded(predicate, lambda p=p, v=v: b.store(v, p, align=item_size(dtype)) and None)
                    continue
                vector_ty = ir.VectorType(memory_type(dtype), vec)
                vector = self._vector_of([self._to_memory(values[start + i], dtype) for i in range(vec)], vector_ty)
                if (predicate is None and not hints) or not self._predicated_store(predicate, p, vector, hints):
                    self._guarded(predicate,
                                  lambda p=p, vector=vector: b.store(vector, p, align=vec * item_size(dtype)) and None)

    def checked(self, pointer: Value, address: ir.Value, lane: ir.Value, active: Optional[ir.Value]):
        """Debug mode: whether ``address`` (of an element of ``pointer``) lies inside the tensor it
        derives from (any pointer argument's when that is not known); a bad active lane is recorded.
        Returns the predicate the access runs under (None: unconditionally)."""
        if not self.checks:
            return active
        b = self.b
        size = item_size(pointer.type.scalar.element_ty)
        at = b.ptrtoint(address, I64)
        end = b.add(at, ir.Constant(I64, size))
        source = self.provenance.get(pointer.id)
        ranges = [self.bounds[source]] if source is not None and source >= 0 else self.bounds
        inside = ir.Constant(I1, 0)
        for low, high in ranges:
            inside = b.or_(inside, b.and_(b.icmp_unsigned(">=", at, low), b.icmp_unsigned("<=", end, high)))
        aligned = b.icmp_unsigned("==", b.and_(at, ir.Constant(I64, size - 1)), ir.Constant(I64, 0))
        ok = b.and_(inside, aligned)
        bad = b.not_(ok) if active is None else b.and_(active, b.not_(ok))
        self.fail(bad, reports.OUT_OF_BOUNDS, lane, at, ir.Constant(I64, 0))
        return ok if active is None else b.and_(active, ok)

    def lane_number(self, layout: L.Layout, r: int) -> ir.Value:
        return self.linear_index(self.element_index(layout, r), layout.shape)

    def first_thread(self) -> ir.Value:
        return self.entry.icmp_unsigned("==", self.tid, ir.Constant(I32, 0))

    # atomics --------------------------------------------------------------------------------------
    _SCOPES = {"gpu": "device", "cta": "block", "sys": ""}

    def _atomic(self, op: Operation, apply) -> None:
        """``apply(address, operand) -> old value`` in the owning thread of each active element, where
        ``operand(v)`` gives that element of operand ``v``; the old values reach every thread (through
        shared memory when the layout replicates)."""
        pointer, mask = op.operand("pointer"), op.operand("mask")
        result = op.results[0]
        dtype = pointer.type.scalar.element_ty
        if not _is_block(pointer):
            predicate = self._and(self.first_thread(), self.scalar(mask) if mask is not None else None)
            predicate = self.checked(pointer, self.scalar(pointer), ir.Constant(I32, 0), predicate)
            old = self._guarded(predicate, lambda: apply(self.scalar(pointer), self.scalar), constant(dtype, 0))
            self.reserve(8)
            self.barrier()
            self._guarded(self.first_thread(), lambda: self.smem_store(ir.Constant(I32, 0), old, dtype) and None)
            self.barrier()
            self.scalars[result.id] = self.smem_load(ir.Constant(I32, 0), dtype)
            return
        layout = L.blocked(_shape(pointer.type), self.num_warps, None, 1)
        pointers = self.regs(pointer, layout)
        masks = self.regs(mask, layout) if mask is not None else None
        owner = self.owner(layout)
        hints = cache_hints(op, STORE_CACHE_OPERATORS)
        for v in op.operands[1:]:
            self.regs(v, layout)  # computed here, where every guarded block below sees them
        olds = []
        for r in range(layout.num_regs):
            predicate = self._and(owner, masks[r] if masks is not None else None)
            predicate = self.checked(pointer, pointers[r], self.lane_number(layout, r), predicate)

            def operand(v, r=r):
                return self.regs(v, layout)[r]

            olds.append(self._guarded(predicate, lambda r=r, operand=operand: apply(pointers[r], operand),
                                      constant(dtype, 0)))
        if owner is not None:
            numel = 1
            for n in layout.shape:
                numel *= n
            self.reserve(numel * item_size(dtype))
            self.barrier()
            for r, old in enumerate(olds):
                index = self.linear_index(self.element_index(layout, r), layout.shape)
                self._guarded(owner, lambda index=index, old=old: self.smem_store(index, old, dtype) and None)
            self.barrier()
            olds = [self.smem_load(self.linear_index(self.element_index(layout, r), layout.shape), dtype)
                    for r in range(layout.num_regs)]
        self.dist[result.id] = (layout, olds)

    def _ordering(self, op: Operation) -> str:
        return atomics.ordering_of(op, self._SCOPES[op.attrs.get("scope", "gpu")])

    def lower_atomic_rmw(self, op: Operation) -> None:
        kind = op.attrs["kind"]
        dtype = op.operand("pointer").type.scalar.element_ty
        ordering = self._ordering(op)
        value = op.operand("value")
        if dtype.is_bool() and not dtype.is_ptr():
            raise UnsupportedOp("atomics on int1")
        sem = op.attrs.get("sem", "acq_rel")
        scope = self._SCOPES[op.attrs.get("scope", "gpu")] or None

        def apply(address, operand):
            # NVPTX lowers every atomicrmw as relaxed (LLVM 22: its ordering is dropped), so the
            # ordering is fences around it: release before, acquire after (PTX fence.acq_rel)
            if sem in ("release", "acq_rel"):
                self.b.fence("release", scope)
            old = atomics.rmw(self.b, self.function, kind, dtype, self.global_pointer(address), operand(value),
                              ordering)
            if sem in ("acquire", "acq_rel"):
                self.b.fence("acquire", scope)
            return old

        self._atomic(op, apply)

    def lower_atomic_cas(self, op: Operation) -> None:
        dtype = op.operand("pointer").type.scalar.element_ty
        ordering = self._ordering(op)
        compare, value = op.operand("compare"), op.operand("value")
        self._atomic(op, lambda address, operand: atomics.cas(
            self.b, dtype, self.global_pointer(address), operand(compare), operand(value), ordering))

    # control flow ---------------------------------------------------------------------------------
    def _carried_layouts(self, values, yielded=(), uses=()) -> list:
        """The layout each carried value takes: its initial value's; where that is recomputed (a
        constant: ``tl.zeros``; a block of pointers), the layout a dot gives what the loop yields for
        it, if one does, so that a K loop's accumulator stays in the tensor cores' registers; else the
        layout of the first load or store through it in the loop (``uses[i]``: the pairs (name, region)
        under which the loop's regions see value ``i``), so that pointers advanced by each iteration
        are not converted; else the default."""
        out = []
        for i, v in enumerate(values):
            if not _is_block(v):
                out.append(None)
                continue
            layout = self.layout_of(v)
            if layout is None and i < len(yielded):
                layout = self.dot_layout(yielded[i])
            for name, region in (uses[i] if layout is None and i < len(uses) else ()):
                layout = self._access_layout_through(name, region)
                if layout is not None:
                    break
            if layout is None or layout.shape != _shape(v.type):
                layout = self.some_layout(v)
            out.append(layout)
        return out

    def _access_layout_through(self, pointer: Value, region: Region) -> Optional[L.Layout]:
        """The access layout of the first load or store in ``region`` whose pointer is ``pointer``."""
        if not isinstance(pointer.type, T.block_type) or not isinstance(pointer.type.scalar, T.pointer_type):
            return None
        for op in region.walk():
            if op.opcode in ("load", "store") and op.operand("pointer") is pointer:
                return self.access_layout(pointer, op.operand("mask"))
        return None

    def dot_layout(self, v: Value) -> Optional[L.Layout]:
        """The layout a dot gives ``v``, known before the dot is lowered: ``v`` is the dot's result or
        an elementwise op on it (``acc + tl.dot(a, b)``); None where no dot decides."""
        from . import dot

        op = v.owner
        if op is None:
            return None
        if op.opcode == "dot":
            return dot.result_layout(self, op)
        if op.opcode in self.lane_rules:
            for operand in op.operands:
                if _is_block(operand) and operand.owner is not None and operand.owner.opcode == "dot":
                    return dot.result_layout(self, operand.owner)
        return None

    def _carried_values(self, layouts, values) -> list:
        return [self.regs(v, lay) if lay is not None else [self.scalar(v)] for lay, v in zip(layouts, values)]

    def _phis(self, incoming, block) -> list:
        """A phi per register of each carried value, entered from ``block`` with ``incoming``."""
        out = []
        for values in incoming:
            phis = []
            for value in values:
                phi = self.b.phi(value.type)
                phi.add_incoming(value, block)
                phis.append(phi)
            out.append(phis)
        return out

    def _bind(self, v: Value, layout, values) -> None:
        if layout is None:
            self.scalars[v.id] = values[0]
        else:
            self.dist[v.id] = (layout, values)

    def lower_for(self, op: Operation) -> None:
        b = self.b
        lower, upper, step = (self.scalar(v) for v in op.operands[:3])
        inits = op.operands[3:]
        body = op.regions[0]
        layouts = self._carried_layouts(inits, body.terminator.operands if body.terminator is not None else (),
                                        [[(arg, body)] for arg in body.args[1:]])
        initial = self._carried_values(layouts, inits)
        signed = op.operands[0].type.is_int_signed()
        pre = b.block
        header = self.function.append_basic_block("for_header")
        body_bb = self.function.append_basic_block("for_body")
        exit_bb = self.function.append_basic_block("for_end")
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(lower.type)
        iv.add_incoming(lower, pre)
        phis = self._phis(initial, pre)
        zero = ir.Constant(step.type, 0)
        cmp = b.icmp_signed if signed else b.icmp_unsigned
        going_up = b.icmp_signed(">", step, zero) if signed else ir.Constant(I1, 1)
        keep = b.select(going_up, cmp("<", iv, upper), cmp(">", iv, upper))
        b.cbranch(keep, body_bb, exit_bb)
        b.position_at_end(body_bb)
        self.scalars[body.args[0].id] = iv
        for arg, lay, values in zip(body.args[1:], layouts, phis):
            self._bind(arg, lay, values)
        self.push()
        terminator = self.lower_region(body)
        yields = list(terminator.operands) if terminator is not None else []
        following_values = self._carried_values(layouts, yields)
        self.pop()
        following = b.add(iv, step)
        latch = b.block
        iv.add_incoming(following, latch)
        for group, values in zip(phis, following_values):
            for phi, value in zip(group, values):
                phi.add_incoming(value, latch)
        b.branch(header)
        b.position_at_end(exit_bb)
        for r, lay, values in zip(op.results, layouts, phis):
            self._bind(r, lay, values)

    def lower_while(self, op: Operation) -> None:
        spin = not op.attrs.get("bounded") and spins_on_memory(op)
        self.spinning += spin
        try:
            self._lower_while(op)
        finally:
            self.spinning -= spin

    def _lower_while(self, op: Operation) -> None:
        b = self.b
        before, after = op.regions
        inits = op.operands
        passed_on = before.terminator.operands[1:] if before.terminator is not None else ()
        layouts = self._carried_layouts(inits, (), [
            [(arg, before)] + [(name, after) for name, value in zip(after.args, passed_on) if value is arg]
            for arg in before.args])
        initial = self._carried_values(layouts, inits)
        pre = b.block
        header = self.function.append_basic_block("while_before")
        after_bb = self.function.append_basic_block("while_after")
        exit_bb = self.function.append_basic_block("while_end")
        b.branch(header)
        b.position_at_end(header)
        phis = self._phis(initial, pre)
        for arg, lay, values in zip(before.args, layouts, phis):
            self._bind(arg, lay, values)
        self.push()
        condition_op = self.lower_region(before)
        condition = self.scalar(condition_op.operands[0])
        passed = condition_op.operands[1:]
        pass_layouts = self._carried_layouts(passed)
        passed_values = self._carried_values(pass_layouts, passed)
        self.pop()
        b.cbranch(condition, after_bb, exit_bb)
        b.position_at_end(after_bb)
        for arg, lay, values in zip(after.args, pass_layouts, passed_values):
            self._bind(arg, lay, values)
        self.push()
        terminator = self.lower_region(after)
        yields = list(terminator.operands) if terminator is not None else []
        following_values = self._carried_values(layouts, yields)
        self.pop()
        latch = b.block
        for group, values in zip(phis, following_values):
            for phi, value in zip(group, values):
                phi.add_incoming(value, latch)
        b.branch(header)
        b.position_at_end(exit_bb)
        for r, lay, values in zip(op.results, pass_layouts, passed_values):
            self._bind(r, lay, values)

    def lower_if(self, op: Operation) -> None:
        b = self.b
        condition = self.scalar(op.operands[0])
        then_bb = self.function.append_basic_block("if_then")
        else_bb = self.function.append_basic_block("if_else")
        after = self.function.append_basic_block("if_end")
        b.cbranch(condition, then_bb, else_bb)
        layouts = None
        incoming = []
        for block, region in ((then_bb, op.regions[0]), (else_bb, op.regions[1] if len(op.regions) > 1 else None)):
            b.position_at_end(block)
            self.push()
            values = []
            if region is not None:
                terminator = self.lower_region(region)
                values = list(terminator.operands) if terminator is not None else []
            if layouts is None:
                layouts = self._carried_layouts(values) if values else [None] * len(op.results)
            lowered = self._carried_values(layouts, values) if values else []
            self.pop()
            if not b.block.is_terminated:
                incoming.append((b.block, lowered))
                b.branch(after)
        b.position_at_end(after)
        for i, r in enumerate(op.results):
            count = 1 if layouts[i] is None else layouts[i].num_regs
            merged = []
            for k in range(count):
                phi = b.phi(incoming[0][1][i][k].type)
                for block, lowered in incoming:
                    phi.add_incoming(lowered[i][k], block)
                merged.append(phi)
            self._bind(r, layouts[i], merged)

    # reductions -------------------------------------------------------------------------------------
    def _custom_combine(self, op: Operation):
        region = op.regions[0]

        def combine(left, right):
            for arg, value in zip(region.args, list(left) + list(right)):
                self.scalars[arg.id] = value
            self.push()
            terminator = self.lower_region(region)
            result = [self.scalar(v) for v in terminator.operands]
            self.pop()
            return result

        return combine

    def shuffle_xor(self, value: ir.Value, lane_mask: int) -> ir.Value:
        b = self.b
        ty = value.type
        if ty in (I64, F64):
            bits = value if ty == I64 else b.bitcast(value, I64)
            low = self.shuffle_xor(b.trunc(bits, I32), lane_mask)
            high = self.shuffle_xor(b.trunc(b.lshr(bits, ir.Constant(I64, 32)), I32), lane_mask)
            joined = b.or_(b.zext(low, I64), b.shl(b.zext(high, I64), ir.Constant(I64, 32)))
            return joined if ty == I64 else b.bitcast(joined, F64)
        if ty == F32:
            word = b.bitcast(value, I32)
        elif ty == I32:
            word = value
        elif isinstance(ty, ir.IntType):
            word = b.zext(value, I32)
        else:  # a pointer
            return b.inttoptr(self.shuffle_xor(b.ptrtoint(value, I64), lane_mask), ty)
        out = self.intrinsic("llvm.nvvm.shfl.sync.bfly.i32", I32,
                             [ir.Constant(I32, 0xFFFFFFFF), word, ir.Constant(I32, lane_mask), ir.Constant(I32, 31)])
        if ty == F32:
            return b.bitcast(out, F32)
        if ty == I32:
            return out
        return b.trunc(out, ty)

    def _exchange_warps(self, state: dict, dtypes, warp_bit: int) -> dict:
        """Each live register's values from the thread whose warp id differs in ``warp_bit``."""
        regions = self._publish(state, dtypes)
        return self._read_published(self.b.xor(self.tid, ir.Constant(I32, 32 << warp_bit)), state, dtypes, regions)

    def _publish(self, state: dict, dtypes) -> list:
        """Every thread writes its live registers' values to shared memory (one region per register
        and operand, indexed by thread); returns the regions' byte offsets."""
        sizes = _shared_sizes(dtypes)
        regions, offset = [], 0
        for _ in sorted(state):
            row = []
            for size in sizes:
                row.append(offset)
                offset += (self.threads * size + 15) // 16 * 16
            regions.append(row)
        self.reserve(offset)
        self.barrier()
        for slot, r in enumerate(sorted(state)):
            for k, value in enumerate(state[r]):
                self._smem_put(self.tid, value, dtypes[k], regions[slot][k])
        self.barrier()
        return regions

    def _read_published(self, thread: ir.Value, state: dict, dtypes, regions: list) -> dict:
        """The values ``thread`` published (``_publish``), per live register."""
        return {r: [self._smem_get(thread, value.type, dtypes[k], regions[slot][k]) for k, value in enumerate(state[r])]
                for slot, r in enumerate(sorted(state))}

    def _reduce_across_warps(self, state: dict, dtypes, warp_bits: list, combine) -> dict:
        """Consecutive levels of the halving tree along ``warp_bits`` (highest weight first) in one
        shared-memory round trip: every thread reads the values of the warps of its group by their
        position along the axis and combines them in the tree's order."""
        b = self.b
        regions = self._publish(state, dtypes)
        group_mask = sum(32 << bit for bit in warp_bits)
        base = b.and_(self.tid, ir.Constant(I32, ~group_mask & 0xFFFFFFFF))
        sets = [self._read_published(self._group_member(base, warp_bits, member), state, dtypes, regions)
                for member in range(1 << len(warp_bits))]
        return _combine_tree(sets, len(warp_bits), lambda x, y: {r: combine(x[r], y[r]) for r in state})

    def _reduce_across_warps_split(self, state: dict, dtypes, warp_bits: list, combine) -> dict:
        """``_reduce_across_warps`` with the work shared out: of a group's warps (same position off
        ``warp_bits``), each combines, in the tree's order, only some of the live registers (all their
        values at its lane, one per warp of the group) and writes the results once; after one more
        barrier every thread reads the results for its registers. A thread reads its group's size
        plus the live registers' count of values instead of their product."""
        b = self.b
        live = sorted(state)
        count, size = len(live), 1 << len(warp_bits)
        threads = self.threads
        sizes = _shared_sizes(dtypes)
        # per operand, a region of live registers x threads elements, then one of the results
        published, offset = [], 0
        for item in sizes:
            published.append(offset)
            offset += (count * threads * item + 15) // 16 * 16
        results = []
        for item in sizes:
            results.append(offset)
            offset += (count * threads * item + 15) // 16 * 16
        self.reserve(offset)
        self.barrier()
        for slot, r in enumerate(live):
            index = b.add(self.tid, ir.Constant(I32, slot * threads)) if slot else self.tid
            for k, value in enumerate(state[r]):
                self._smem_put(index, value, dtypes[k], published[k])
        self.barrier()
        group_mask = sum(32 << bit for bit in warp_bits)
        base = b.and_(self.tid, ir.Constant(I32, ~group_mask & 0xFFFFFFFF))
        position = ir.Constant(I32, 0)
        for j, bit in enumerate(warp_bits):
            own = b.and_(b.lshr(self.tid, ir.Constant(I32, 5 + bit - j)), ir.Constant(I32, 1 << j))
            position = b.or_(position, own)
        types = [value.type for value in state[live[0]]]
        for q in range(max(1, count // size)):
            slot = b.add(position, ir.Constant(I32, q * size)) if count >= size else \
                b.and_(position, ir.Constant(I32, count - 1))
            first = b.mul(slot, ir.Constant(I32, threads))
            sets = []
            for member in range(size):
                index = b.add(first, self._group_member(base, warp_bits, member))
                sets.append([self._smem_get(index, types[k], dtypes[k], published[k]) for k in range(len(dtypes))])
            index = b.add(first, base)
            for k, value in enumerate(_combine_tree(sets, len(warp_bits), combine)):
                self._smem_put(index, value, dtypes[k], results[k])
        self.barrier()
        return {r: [self._smem_get(b.add(base, ir.Constant(I32, slot * threads)) if slot else base, types[k],
                                   dtypes[k], results[k]) for k in range(len(dtypes))]
                for slot, r in enumerate(live)}

    def _group_member(self, base: ir.Value, warp_bits: list, member: int) -> ir.Value:
        """The thread at ``base``'s lane whose warp sits at position ``member`` of its group (bit
        ``j`` of ``member`` is warp bit ``warp_bits[j]``)."""
        offset = sum(32 << bit for j, bit in enumerate(warp_bits) if member >> j & 1)
        return self.b.or_(base, ir.Constant(I32, offset)) if offset else base

    def _smem_put(self, index, value, dtype, base_bytes: int) -> None:
        if isinstance(dtype, T.pointer_type):
            self.smem_store(index, self.b.ptrtoint(value, I64), T.int64, base_bytes)
        else:
            self.smem_store(index, value, dtype, base_bytes)

    def _smem_get(self, index, ty, dtype, base_bytes: int):
        if isinstance(dtype, T.pointer_type):
            return self.b.inttoptr(self.smem_load(index, T.int64, base_bytes), ty)
        return self.smem_load(index, dtype, base_bytes)

    def lower_reduce(self, op: Operation) -> None:
        """The interpreter's halving tree: at each level the elements whose index along the axis
        has the highest remaining bit set combine into their partners below, so both give the same
        bits. That bit is a register bit (in the thread), a warp bit (shared memory) or a lane bit
        (a butterfly shuffle); every thread ends with the results of its slice."""
        b = self.b
        axis = op.attrs["axis"]
        kind = op.attrs["kind"]
        inputs = list(op.operands)
        layout = self.some_layout(inputs[0])
        values = [self.regs(v, layout) for v in inputs]
        dtypes = [v.type.scalar for v in inputs]
        if kind in ("argmax", "argmin"):
            index = [self.element_index(layout, r)[axis] for r in range(layout.num_regs)]
            values.append(index)
            dtypes.append(T.int32)
        custom = self._custom_combine(op) if kind == "custom" else None
        combine = combining.combiner(b, kind, dtypes, custom, gpu_math.float_extremum)
        state = {r: [v[r] for v in values] for r in range(layout.num_regs)}
        bits = []
        for i, (dim, weight) in enumerate(layout.reg_bits):
            if dim == axis:
                bits.append((weight, "reg", i))
        for i, bit in enumerate(layout.lane_bits):
            if bit is not None and bit[0] == axis:
                bits.append((bit[1], "lane", i))
        for i, bit in enumerate(layout.warp_bits):
            if bit is not None and bit[0] == axis:
                bits.append((bit[1], "warp", i))
        levels = sorted(bits, reverse=True)
        k = 0
        while k < len(levels):
            weight, where, i = levels[k]
            if where == "reg":
                state = {r: combine(state[r], state[r | 1 << i]) for r in state if not r >> i & 1}
            elif where == "lane":
                ordered = kind not in combining.COMMUTATIVE  # else the same bits in either order
                right_side = b.icmp_unsigned("!=", b.and_(self.lane, ir.Constant(I32, 1 << i)),
                                             ir.Constant(I32, 0)) if ordered else None
                new = {}
                for r, mine in state.items():
                    other = [self.shuffle_xor(v, 1 << i) for v in mine]
                    if not ordered:
                        new[r] = combine(mine, other)
                        continue
                    left = [b.select(right_side, o, m) for m, o in zip(mine, other)]
                    right = [b.select(right_side, m, o) for m, o in zip(mine, other)]
                    new[r] = combine(left, right)
                state = new
            else:
                group = []
                while k < len(levels) and levels[k][1] == "warp":
                    group.append(levels[k][2])
                    k += 1
                across = self._reduce_across_warps_split if len(state) > 1 else self._reduce_across_warps
                state = across(state, dtypes, group, combine)
                continue
            k += 1
        outputs = [len(dtypes) - 1] if kind in ("argmax", "argmin") else list(range(len(op.results)))
        result_layout = L.sliced(layout, axis)
        live = sorted(state)
        for k, r in zip(outputs, op.results):
            if not _is_block(r):
                self.scalars[r.id] = state[live[0]][k]
            else:
                self.dist[r.id] = (result_layout, [state[q][k] for q in live])

    # scans: through shared memory, each line along the axis combined in order by one thread -------
    def loop(self, start: ir.Value, stop: ir.Value, step: int, carried: list, body) -> list:
        """A counted loop over i in [start, stop) by ``step`` (i32, same in every thread or not),
        carrying ``carried``: ``body(i, values) -> next values``. Returns the values after the loop."""
        b = self.b
        pre = b.block
        header = self.function.append_basic_block("loop")
        inner = self.function.append_basic_block("loop_body")
        done = self.function.append_basic_block("loop_end")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I32)
        i.add_incoming(start, pre)
        phis = []
        for value in carried:
            phi = b.phi(value.type)
            phi.add_incoming(value, pre)
            phis.append(phi)
        b.cbranch(b.icmp_signed("<", i, stop), inner, done)
        b.position_at_end(inner)
        following = body(i, list(phis))
        latch = b.block
        i.add_incoming(b.add(i, ir.Constant(I32, step)), latch)
        for phi, value in zip(phis, following):
            phi.add_incoming(value, latch)
        b.branch(header)
        b.position_at_end(done)
        return phis

    def counted_loop(self, start: ir.Value, stop: ir.Value, step: int, body) -> None:
        self.loop(start, stop, step, [], lambda i, _: body(i) or [])

    def lower_scan(self, op: Operation) -> None:
        b = self.b
        axis = op.attrs["axis"]
        reverse = bool(op.attrs.get("reverse", False))
        inputs = list(op.operands)
        layout = self.some_layout(inputs[0])
        shape = layout.shape
        dtypes = [v.type.scalar for v in inputs]
        numel = 1
        for n in shape:
            numel *= n
        bases = []
        total = 0
        for dtype in dtypes:
            bases.append(total)
            total += (numel * item_size(dtype) + 15) // 16 * 16
        self.reserve(total)
        self.barrier()
        for v, dtype, base in zip(inputs, dtypes, bases):
            self.write_block(layout, self.regs(v, layout), dtype, base)
        self.barrier()
        length = shape[axis]
        lines = numel // length
        stride = _row_major_strides(shape)[axis]
        custom = self._custom_combine(op) if op.attrs["kind"] == "custom" else None
        combine = combining.combiner(b, op.attrs["kind"], dtypes, custom, gpu_math.float_extremum)

        def line_body(line):
            # the first element of line ``line``: the line's index with the axis removed, spread back
            outer = b.udiv(line, ir.Constant(I32, stride))
            inner = b.urem(line, ir.Constant(I32, stride))
            first = b.add(b.mul(outer, ir.Constant(I32, stride * length)), inner)

            def position(k):
                step = (length - 1 - k) if reverse else k
                return b.add(first, ir.Constant(I32, step * stride)) if step else first

            carried = [self.smem_load(position(0), dtype, base) for dtype, base in zip(dtypes, bases)]

            def element(k, running):
                step = b.sub(ir.Constant(I32, length - 1), k) if reverse else k
                at = b.add(first, b.mul(step, ir.Constant(I32, stride)))
                current = [self.smem_load(at, dtype, base) for dtype, base in zip(dtypes, bases)]
                combined = combine(running, current)  # the running value, then the element: as the interpreter
                for value, dtype, base in zip(combined, dtypes, bases):
                    self.smem_store(at, value, dtype, base)
                return combined

            self.loop(ir.Constant(I32, 1), ir.Constant(I32, length), 1, carried, element)

        self.counted_loop(self.tid, ir.Constant(I32, lines), self.threads, line_body)
        self.barrier()
        for r, dtype, base in zip(op.results, dtypes, bases):
            values = [self.smem_load(self.linear_index(self.element_index(layout, q), shape), dtype, base)
                      for q in range(layout.num_regs)]
            self.dist[r.id] = (layout, values)

    # dot: on the tensor cores (mma.py) where they apply, else an outer product per k (dot.py) ----------
    def lower_dot(self, op: Operation) -> None:
        from . import dot

        dot.lower_dot(self, op)

    def lower_philox(self, op: Operation) -> None:
        if not _is_block(op.results[0]):
            result = self.lane_op(op, [self.scalar(o) for o in op.operands])
            for r, value in zip(op.results, result):
                self.scalars[r.id] = value
            return
        blocks = [o for o in op.operands if _is_block(o)]
        layout = next((self.layout_of(o) for o in blocks if self.layout_of(o) is not None), None)
        layout = layout or self.default_layout(_shape(op.results[0].type))
        n = layout.num_regs
        operands = [self.regs(o, layout) if _is_block(o) else [self.scalar(o)] * n for o in op.operands]
        per_reg = [lanes.lower_op(self.b, op, [ops[r] for ops in operands]) for r in range(n)]
        for k, result in enumerate(op.results):
            self.dist[result.id] = (layout, [per_reg[r][k] for r in range(n)])

    def lower_inline_asm(self, op: Operation) -> None:
        """The asm itself, once per group of ``pack`` elements of a thread's registers (see
        ``inline_asm.py``)."""
        b = self.b
        pack = op.attrs["pack"]
        if any(v.type.scalar.is_bool() or v.type.scalar.is_ptr() for v in list(op.operands) + op.results):
            raise UnsupportedOp("inline asm on booleans or pointers")
        blocks = [o for o in op.operands if _is_block(o)]
        layout = None
        if blocks:
            layout = next((self.layout_of(o) for o in blocks if self.layout_of(o) is not None), None)
            layout = layout or self.default_layout(_shape(op.results[0].type))
        n = layout.num_regs if layout is not None else 1
        operands = [self.regs(o, layout) if _is_block(o) else [self.scalar(o)] * n for o in op.operands]
        in_plans = [asm.operand_plan(o.type.scalar.primitive_bitwidth, pack) for o in op.operands]
        out_plans = [asm.operand_plan(r.type.scalar.primitive_bitwidth, pack) for r in op.results]
        outputs, inputs, _ = asm.split_constraints(op.attrs["constraints"])
        wanted_out, wanted_in = sum(p.registers for p in out_plans), sum(p.registers for p in in_plans)
        if len(outputs) != wanted_out or len(inputs) != wanted_in:
            raise CompilationError(
                op.loc, f"inline asm constraints {op.attrs['constraints']!r} give {len(outputs)} outputs and "
                        f"{len(inputs)} inputs; with pack={pack} these results and arguments take {wanted_out} "
                        f"output and {wanted_in} input registers",
                "one constraint per register: elements narrower than 32 bits are packed into 32-bit registers")
        out_types = [asm.register_type(c, p.width) for p, c in zip(_repeat(out_plans), outputs)]
        in_types = [asm.register_type(c, p.width) for p, c in zip(_repeat(in_plans), inputs)]
        returned = out_types[0] if len(out_types) == 1 else ir.LiteralStructType(out_types)
        function_type = ir.FunctionType(returned, in_types)
        results = [[None] * n for _ in op.results]
        for first in range(0, n, pack):
            group = [min(first + k, n - 1) for k in range(pack)]  # a short last group repeats its last element
            args, at = [], 0
            for values, plan in zip(operands, in_plans):
                args += asm.pack_registers(b, [values[r] for r in group], plan, in_types[at:at + plan.registers])
                at += plan.registers
            call = b.asm(function_type, op.attrs["asm"], op.attrs["constraints"], args,
                         side_effect=not op.attrs["pure"])
            registers = [call] if len(out_types) == 1 else [b.extract_value(call, i) for i in range(len(out_types))]
            at = 0
            for k, (result, plan) in enumerate(zip(op.results, out_plans)):
                values = asm.unpack_registers(b, registers[at:at + plan.registers], plan,
                                              register_type(result.type.scalar))
                at += plan.registers
                for position, value in enumerate(values[:pack]):
                    if first + position < n:  # not a repeat
                        results[k][first + position] = value
        for result, values in zip(op.results, results):
            if layout is None:
                self.scalars[result.id] = values[0]
            else:
                self.dist[result.id] = (layout, values)

    # shape ops through shared memory ------------------------------------------------------------------
    def _through_shared(self, op: Operation, sources, index_of) -> None:
        """The result (in the default layout) reads, for each of its elements, element
        ``index_of(result index) -> (source number, linear index)`` of the sources written to shared
        memory one after the other."""
        b = self.b
        result = op.results[0]
        dtype = result.type.scalar
        layout = self.default_layout(_shape(result.type))
        bases, total = [], 0
        for v in sources:
            numel = 1
            for n in _shape(v.type):
                numel *= n
            bases.append(total)
            total += numel
        self.reserve(total * item_size(dtype))
        own = [self.some_layout(v) for v in sources]
        regs = [self.regs(v, lay) for v, lay in zip(sources, own)]
        self.barrier()
        for lay, values, base in zip(own, regs, bases):
            self.write_block(lay, values, dtype, base * item_size(dtype))
        self.barrier()
        out = []
        for r in range(layout.num_regs):
            index = self.element_index(layout, r)
            which, linear = index_of(index)
            out.append(self.smem_load(b.add(linear, ir.Constant(I32, bases[which])) if which else linear, dtype)
                       if isinstance(which, int) else self.smem_load(b.add(linear, b.select(
                           which, ir.Constant(I32, bases[1]), ir.Constant(I32, 0))), dtype))
        self.dist[result.id] = (layout, out)

    def lower_flip(self, op: Operation) -> None:
        axis = op.attrs["axis"]
        shape = _shape(op.results[0].type)

        def index_of(index):
            index = list(index)
            index[axis] = self.b.sub(ir.Constant(I32, shape[axis] - 1), index[axis])
            return 0, self.linear_index(index, shape)

        self._through_shared(op, [op.operands[0]], index_of)

    def lower_cat(self, op: Operation) -> None:
        b = self.b
        axis = op.attrs["axis"]
        lhs, rhs = op.operands
        left_shape = _shape(lhs.type)
        right_shape = _shape(rhs.type)
        split = left_shape[axis]

        def index_of(index):
            second = b.icmp_unsigned(">=", index[axis], ir.Constant(I32, split))
            moved = list(index)
            moved[axis] = b.select(second, b.sub(index[axis], ir.Constant(I32, split)), index[axis])
            left = self.linear_index(moved, left_shape)
            right = self.linear_index(moved, right_shape)
            return second, b.select(second, right, left)

        self._through_shared(op, [lhs, rhs], index_of)

    # run-time failures: the first one of the launch is recorded, the access it guards is skipped ---
    def fail(self, predicate: ir.Value, code: int, lane: ir.Value, value: ir.Value, extra: ir.Value) -> None:
        """Where ``predicate`` holds, records (once per launch: the first program to fail wins) the
        failure of the current op at block element ``lane``."""
        b = self.b
        op_index = self.op_index[id(self.current)]

        def record():
            slot0 = self.record
            pair = b.cmpxchg(slot0, ir.Constant(I64, 0), ir.Constant(I64, code), 'syncscope("device") monotonic',
                             "monotonic")
            won = b.extract_value(pair, 1)

            def fill():
                fields = [ir.Constant(I64, op_index)] + [
                    b.zext(self._sreg(self.b, f"ctaid.{axis}"), I64) for axis in "xyz"] + [
                    b.zext(lane, I64) if lane.type.width < 64 else lane,
                    value if value.type == I64 else b.sext(value, I64), extra]
                for slot, field in enumerate(fields, start=1):
                    b.store(field, b.gep(slot0, [ir.Constant(I32, slot)], source_etype=I64), align=8)

            self._guarded(won, lambda: fill() and None)
            return None

        self._guarded(predicate, record)

    def lower_assert(self, op: Operation) -> None:
        b = self.b
        condition = op.operands[0]
        if not _is_block(condition):
            self.fail(b.not_(self._truth(self.scalar(condition), condition.type)), reports.ASSERT,
                      ir.Constant(I32, 0), ir.Constant(I64, 0), ir.Constant(I64, 0))
            return
        layout = self.some_layout(condition)
        values = self.regs(condition, layout)
        for r, value in enumerate(values):
            lane = self.linear_index(self.element_index(layout, r), layout.shape)
            self.fail(b.not_(self._truth(value, condition.type.scalar)), reports.ASSERT, lane,
                      ir.Constant(I64, 0), ir.Constant(I64, 0))

    def _truth(self, value: ir.Value, dtype) -> ir.Value:
        if value.type == I1:
            return value
        if isinstance(value.type, ir.IntType):
            return self.b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
        return self.b.fcmp_unordered("!=", value, ir.Constant(value.type, 0.0))

    def lower_gather(self, op: Operation) -> None:
        """Through shared memory: the source written row-major, each result element read at its
        index along the axis (an index outside the axis is recorded and reads element 0)."""
        b = self.b
        source, index = op.operand("source"), op.operand("index")
        axis = op.attrs["axis"]
        dtype = source.type.scalar
        source_shape = _shape(source.type)
        layout_s = self.some_layout(source)
        values = self.regs(source, layout_s)
        layout = self.some_layout(index)
        indices = self.regs(index, layout)
        numel = 1
        for n in source_shape:
            numel *= n
        self.reserve(numel * item_size(dtype))
        self.barrier()
        self.write_block(layout_s, values, dtype)
        self.barrier()
        extent = source_shape[axis]
        signed = index.type.scalar.is_int_signed()
        out = []
        for r, at in enumerate(indices):
            at = b.sext(at, I64) if signed and at.type.width < 64 else (b.zext(at, I64) if at.type.width < 64 else at)
            outside = b.icmp_unsigned(">=", at, ir.Constant(I64, extent))
            lane = self.linear_index(self.element_index(layout, r), layout.shape)
            self.fail(outside, reports.GATHER_INDEX, lane, at, ir.Constant(I64, extent))
            position = self.element_index(layout, r)
            position[axis] = b.trunc(b.select(outside, ir.Constant(I64, 0), at), I32)
            out.append(self.smem_load(self.linear_index(position, source_shape), dtype))
        self.dist[op.results[0].id] = (layout, out)

    def lower_histogram(self, op: Operation) -> None:
        """Counts in shared memory with atomic adds, then read out by every thread in the result's
        layout. A value outside the bins (of an active lane) is recorded and not counted."""
        b = self.b
        value, mask = op.operand("value"), op.operand("mask")
        bins = op.attrs["num_bins"]
        result = op.results[0]
        out_type = register_type(result.type.scalar)
        layout = self.some_layout(value)
        values = self.regs(value, layout)
        masks = self.regs(mask, layout) if mask is not None else None
        owner = self.owner(layout)
        hints = cache_hints(op, STORE_CACHE_OPERATORS)
        self.reserve(bins * 4)
        self.barrier()
        self.counted_loop(self.tid, ir.Constant(I32, bins), self.threads,
                          lambda i: self.smem_store(i, ir.Constant(I32, 0), T.int32) and None)
        self.barrier()
        signed = value.type.scalar.is_int_signed()
        for r, v in enumerate(values):
            wide = b.sext(v, I64) if signed and v.type.width < 64 else (b.zext(v, I64) if v.type.width < 64 else v)
            active = self._and(owner, masks[r] if masks is not None else None)
            outside = b.icmp_unsigned(">=", wide, ir.Constant(I64, bins))
            lane = self.linear_index(self.element_index(layout, r), layout.shape)
            self.fail(self._and(active, outside), reports.HISTOGRAM_VALUE, lane, wide, ir.Constant(I64, bins))
            counted = self._and(active, b.not_(outside))

            def count(wide=wide):
                offset = b.mul(b.trunc(wide, I32), ir.Constant(I32, 4))
                b.atomic_rmw("add", self.smem_pointer(offset), ir.Constant(I32, 1), 'syncscope("block") monotonic')

            self._guarded(counted, lambda count=count: count() and None)
        self.barrier()
        layout_out = self.default_layout((bins,))
        counts = []
        for r in range(layout_out.num_regs):
            count = self.smem_load(self.element_index(layout_out, r)[0], T.int32)
            counts.append(b.trunc(count, out_type) if out_type.width < 32 else (
                b.zext(count, out_type) if out_type.width > 32 else count))
        self.dist[result.id] = (layout_out, counts)

    def lower_sort(self, op: Operation) -> None:
        """The IR spec's bitonic network along the last dimension: at each step every element meets
        the one whose position differs in one bit, which lives in another register (same thread), in
        another lane (a shuffle) or another warp (shared memory)."""
        b = self.b
        value = op.operands[0]
        dtype = value.type.scalar
        layout = self.some_layout(value)
        values = list(self.regs(value, layout))
        last = layout.rank - 1
        n = layout.shape[last]
        descending = bool(op.attrs["descending"])
        positions = [self.element_index(layout, r)[last] for r in range(layout.num_regs)]
        stages = n.bit_length() - 1
        for stage in range(1, stages + 1):
            for step in range(stage - 1, -1, -1):
                partners = self.partner_values(layout, [[v] for v in values], last, 1 << step, [dtype])
                following = []
                for r, (own, position) in enumerate(zip(values, positions)):
                    partner = partners[r][0]
                    if stage == stages:
                        desc = ir.Constant(I1, int(descending))
                    else:
                        desc = b.trunc(b.lshr(position, ir.Constant(I32, stage)), I1)
                    is_right = b.icmp_unsigned("!=", b.and_(position, ir.Constant(I32, 1 << step)),
                                               ir.Constant(I32, 0))
                    take = b.xor(lanes.greater(self.b, own, partner, dtype), b.xor(desc, is_right))
                    following.append(b.select(take, partner, own))
                values = following
        self.dist[op.results[0].id] = (layout, values)

    def partner_values(self, layout: L.Layout, state: list, dim: int, weight: int, dtypes) -> list:
        """For each register, the values (a list per register) held for the element whose index along
        ``dim`` differs in the bit ``weight``."""
        for i, bit in enumerate(layout.reg_bits):
            if bit == (dim, weight):
                return [state[r ^ (1 << i)] for r in range(len(state))]
        for i, bit in enumerate(layout.lane_bits):
            if bit == (dim, weight):
                return [[self.shuffle_xor(v, 1 << i) for v in values] for values in state]
        for i, bit in enumerate(layout.warp_bits):
            if bit == (dim, weight):
                exchanged = self._exchange_warps(dict(enumerate(state)), dtypes, i)
                return [exchanged[r] for r in range(len(state))]
        raise AssertionError(f"no bit ({dim}, {weight}) in {layout}")

    # device_print through vprintf: one line per element and operand, in the interpreter's format -------
    def lower_print(self, op: Operation) -> None:
        b = self.b
        prefix = op.attrs["prefix"].strip()
        label = f" {prefix}" if prefix else ":"
        hex_format = bool(op.attrs.get("hex", False))
        pid = [self._sreg(b, f"ctaid.{axis}") for axis in "xyz"]
        if not op.operands:
            self._guarded(self.first_thread(), lambda: self._printf(
                "pid (%d, %d, %d) " + prefix.replace("%", "%%") + "\n", pid) and None)
            return
        shape = _shape(op.operands[0].type)
        layout = self.some_layout(op.operands[0]) if shape else None
        count = layout.num_regs if layout is not None else 1
        operands = [self.regs(v, layout) if layout is not None else [self.scalar(v)] for v in op.operands]
        owner = self.owner(layout) if layout is not None else self.first_thread()
        widths = [len(str(max(0, n - 1))) for n in shape]
        index_format = ", ".join(f"%{w}d" for w in widths)
        safe_label = label.replace("%", "%%")
        for r in range(count):
            index = self.element_index(layout, r) if layout is not None else []
            for n, (value, values) in enumerate(zip(op.operands, operands)):
                operand = f" (operand {n})" if len(op.operands) > 1 else ""
                spec, arg = self._print_spec(values[r], value.type.scalar, hex_format)
                text = f"pid (%d, %d, %d) idx ({index_format}){safe_label}{operand} {spec}\n"
                self._guarded(owner, lambda text=text, index=index, arg=arg: self._printf(text, pid + index + [arg])
                              and None)

    def _print_spec(self, value, dtype, hex_format: bool):
        b = self.b
        if dtype.is_ptr():
            return "0x%llx", b.ptrtoint(value, I64)
        if hex_format:
            bits = dtype.primitive_bitwidth if not dtype.is_bool() else 8
            raw = value if isinstance(value.type, ir.IntType) else b.bitcast(value, ir.IntType(bits))
            if raw.type.width < 32:
                raw = b.zext(raw, I32)
            return (f"0x%0{bits // 4}llx", b.zext(raw, I64)) if bits == 64 else (f"0x%0{max(2, bits // 4)}x", raw)
        if dtype.is_floating():
            wide = casts.to_arithmetic(b, value, dtype)
            return "%f", wide if wide.type == F64 else b.fpext(wide, F64)
        if value.type == I1 or dtype.is_bool():
            return "%d", b.zext(value, I32)
        signed = dtype.is_int_signed()
        if value.type.width == 64:
            return ("%lld" if signed else "%llu"), value
        if value.type.width < 32:
            value = b.sext(value, I32) if signed else b.zext(value, I32)
        return ("%d" if signed else "%u"), value

    def _printf(self, text: str, args: list) -> None:
        b = self.b
        data = bytearray(text.encode()) + b"\0"
        name = f"tritium_format_{len([g for g in self.module.global_values if g.name.startswith('tritium_format_')])}"
        fmt = ir.GlobalVariable(self.module, ir.ArrayType(I8, len(data)), name, addrspace=GLOBAL)
        fmt.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
        fmt.global_constant = True
        fmt.linkage = "internal"
        fmt.type = GLOBAL_PTR
        fmt_generic = b.addrspacecast(fmt, PTR)
        struct = ir.LiteralStructType([a.type for a in args])
        buffer = self.entry.alloca(struct)
        buffer.type = PTR  # opaque, as LLVM's IR has it
        for i, a in enumerate(args):
            b.store(a, b.gep(buffer, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=struct))
        vprintf = self.module.globals.get("vprintf")
        if vprintf is None:
            vprintf = ir.Function(self.module, ir.FunctionType(I32, [PTR, PTR]), "vprintf")
        b.call(vprintf, [fmt_generic, buffer])
