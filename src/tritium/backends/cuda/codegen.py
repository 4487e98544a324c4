"""The tile IR of one kernel as an LLVM module for NVPTX: one program is one thread block.

The IR is walked once (``backends/llvm/lowering.py``) with the rules of this folder's mixins, one
concern each: where block values live (``registers.py``: layouts, registers, recomputed index
arithmetic, elementwise ops), shared memory (``shared.py``), global memory (``memory.py``), control
flow (``control_flow.py``), reductions, scans and sorts (``cross_lane.py``) and what a kernel reports
(``debugging.py``); here the kernel's signature and entry, the special registers (program ids) and
the rules of dot, philox and inline asm. Docs: docs/cuda-backend.md.

One lane of every elementwise op comes from ``backends/llvm/scalar.py`` (the CPU backend's code),
except the math Triton lowers to approximate instructions or libdevice (``math.py`` here).
"""
from __future__ import annotations

from typing import ClassVar, Optional

from llvmlite import ir

from ...compiler.analysis.axis_info import analyze_axis_info
from ...compiler.analysis.provenance import pointer_provenance
from ...compiler.ir import types as T
from ...compiler.ir.encodings import Distributed
from ...compiler.ir.ops import Function, Operation, Value
from ...errors import CompilationError
from ..llvm import scalar as lanes
from ..llvm.lowering import Lowering, UnsupportedOp  # noqa: F401  (UnsupportedOp: raised by the rules)
from ..llvm.types import I1, I8, I32, I64, PTR, VOID, register_type
from . import async_copy
from . import inline_asm as asm
from . import layouts as L
from . import mma
from . import math as gpu_math
from .assign import Choices
from .atomic_access import AtomicAccess
from .control_flow import ControlFlow
from .cross_lane import CrossLane
from .debugging import Debugging
from .memory import Memory
from .registers import Registers
from .shared import SharedMemory
from .wgmma import WarpgroupWaits
from .values import GLOBAL_PTR, SHARED, SHARED_PTR, SMEM_SYMBOL, _is_block, _shape


def _repeat(plans) -> list:
    """Each inline-asm operand plan once per register it takes."""
    return [plan for plan in plans for _ in range(plan.registers)]


class _Distributed(dict):
    """Value id -> (its Layout, its registers): where each block value lives. Each layout is also
    written on its value as the IR's encoding (the "layouts" stage prints them); a value that each
    consumer recomputes in its own layout has none.

    ``assigned``: the layouts the layouts pass (``assign.py``) wrote on values before lowering, which
    the rules read (``Codegen.assigned_layout``); a value placed so must be lowered in that layout."""

    def __init__(self, fn: Function):
        super().__init__()
        self._values = {}
        for op in fn.walk():
            self._values.update((r.id, r) for r in op.results)
            self._values.update((a.id, a) for region in op.regions for a in region.args)
        self.assigned = {value_id: value.encoding for value_id, value in self._values.items()
                         if isinstance(value.encoding, Distributed)}
        for value in self._values.values():
            value.encoding = None  # written again as each value is lowered

    def __setitem__(self, value_id: int, placed: tuple) -> None:
        super().__setitem__(value_id, placed)
        value = self._values.get(value_id)
        if value is not None and isinstance(value.type, T.block_type):
            value.encoding = placed[0].encoding()
            assigned = self.assigned.get(value_id)
            if assigned is not None and assigned != value.encoding:
                raise AssertionError(f"{value} was assigned {assigned.text()} before lowering and lowered in "
                                     f"{value.encoding.text()}")

    def check_assigned(self) -> None:
        """Every value the layouts pass placed has been lowered (in its layout: ``__setitem__``)."""
        missing = [self._values[value_id] for value_id in self.assigned if value_id not in self]
        if missing:
            raise AssertionError(f"{missing[0]} was assigned {self.assigned[missing[0].id].text()} and not lowered "
                                 "in a layout")


class Codegen(Registers, SharedMemory, Memory, AtomicAccess, async_copy.AsyncCopies, WarpgroupWaits, ControlFlow,
              CrossLane, Debugging, Choices, Lowering):
    """One kernel's LLVM module for NVPTX: the kernel function, then the IR's ops lowered in order.
    The layouts of the values a dot touches come from the layouts pass (``assign.py``, run first:
    ``assigned_layout``); the generator chooses the others as it lowers, by the same rules
    (``assign.Choices``)."""

    # The elementwise opcodes: one lane each from backends/llvm/scalar.py's rules, (b, op, args), or
    # from math.py's, (codegen, op, args), which take their place (lane_op calls either)
    lane_rules: ClassVar[dict] = {**lanes.LOWER, **gpu_math.LOWER}

    def __init__(self, fn: Function, num_warps: int = 4, enable_fp_fusion: bool = True, checks: bool = False,
                 capability: int = 90, wgmma: bool = False, share_rings: bool = True):
        Lowering.__init__(self, fn)
        self.capability = capability  # the target's compute capability (80: sm_80): which instructions exist
        self.wgmma = wgmma  # Hopper's wgmma allowed for the dots (CUDAOptions.wgmma)
        # the dots whose wgmma instructions run on after the dot: a dot_wait reads their result
        self.asynchronous_dots = {id(op.operands[0].owner) for op in fn.walk()
                                  if op.opcode == "dot_wait" and op.operands[0].owner is not None
                                  and op.operands[0].owner.opcode == "dot"}
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
        async_operands, copying_dots = async_copy.async_operands(fn)  # (before _Distributed clears the encodings)
        self.dist: dict[int, tuple] = _Distributed(fn)  # value id -> (Layout, registers)
        self.scopes: list[dict] = [{}]
        self.smem_bytes = 0
        # the dots' operand tiles that loads fill with cp.async (async_copy.py), before the scratch memory,
        # or under it where every tile is a pipelined loop's ring (``share_rings``: async_copy.py)
        self.tiles_bytes = self.tile_regions(async_operands, copying_dots)
        self.share_rings = share_rings and bool(self.rings) and self.all_rings
        self.scratch_offset = 0 if self.share_rings else self.tiles_bytes
        self._thread_index: dict = {}
        # Kernels that can fail at run time (an assert, a gather index, a histogram value) take one more
        # parameter: the error record (backends/reports.py) the launcher reads after the launch.
        self.reports = checks or any(op.opcode in ("assert", "gather", "histogram") for op in fn.walk())
        # inside a spin wait (a while loop whose condition depends on memory it reads) every load is
        # an acquiring atomic one: LLVM would hoist a plain load out of the loop, which then never
        # ends, and what the loop waited for orders the loads after it
        self.spinning = 0

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
        self.smem.align = mma.TILE_ALIGN if self.tiles_bytes else 16
        self.smem.type = SHARED_PTR  # opaque, as LLVM's IR has it: llvmlite would type it [0 x i8]*
        self.lower_region(fn.body)
        if not self.b.block.is_terminated:
            self.b.ret_void()
        self.entry.branch(body)
        self.dist.check_assigned()
        self.smem_bytes = max(self.smem_bytes + self.scratch_offset, self.tiles_bytes)
        return self.module

    def assigned_layout(self, v: Value) -> Optional[L.Layout]:
        """The layout the layouts pass gave ``v`` before lowering, or None (the rules choose)."""
        return L.from_encoding(self.dist.assigned.get(v.id))

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

    def lower_program_id(self, op: Operation) -> None:
        self.scalars[op.results[0].id] = self._sreg(self.entry, "ctaid." + "xyz"[op.attrs["axis"]])

    def lower_num_programs(self, op: Operation) -> None:
        self.scalars[op.results[0].id] = self._sreg(self.entry, "nctaid." + "xyz"[op.attrs["axis"]])

    def lower_barrier(self, op: Operation) -> None:
        self.barrier()

    def lower_special_register(self, op: Operation) -> None:
        """%globaltimer and %smid, read as Triton's tl.extra.cuda reads them (a volatile mov)."""
        name = op.attrs["name"]
        ty, text, constraint = (I64, "mov.u64 $0, %globaltimer;", "=l") if name == "globaltimer" else (
            I32, "mov.u32 $0, %smid;", "=r")
        self.scalars[op.results[0].id] = self.b.asm(ir.FunctionType(ty, []), text, constraint, [], side_effect=True)

    # dot: on the tensor cores (mma.py) where they apply, else an outer product per k (dot.py) -----
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
