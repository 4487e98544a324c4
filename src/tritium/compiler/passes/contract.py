"""Floating-point contraction: an fp32 or fp64 ``x * y + z`` (or ``- z``, ``z - x * y``) becomes one
``fma``, rounded once, where the CUDA backend's LLVM contracts it (Triton's ``enable_fp_fusion``, on by
default), so that the host backends give the GPU's bits.

LLVM's NVPTX code generator fuses a multiply into the add or subtract that reads it in the same
basic block, whatever else reads the multiply (its "aggressive" fusion), after folding negations:
``-a + b`` is ``b - a`` and ``a - (-b)`` is ``a + b``. Where both operands of the add are multiplies
it fuses the one with fewer readers, the first on a tie; for a subtract, the first unless it has
more readers. What it makes, with ``m = a * b``:

    m + z, z + m  ->  fma(a, b, z)        m - z  ->  fma(a, b, -z)        z - m  ->  fma(-a, b, z)

Negation is exact, so each is ``a * b ± z`` rounded once. A multiply seen through ``splat`` or
``broadcast`` (a scalar product added to a block) fuses too: those are no code on the GPU. Only ops
in one region fuse (a loop body, a branch: LLVM's blocks). The CUDA backend skips this pass (its LLVM
does the same); every backend skips it for a launch with ``enable_fp_fusion=False``.
"""
from __future__ import annotations

from collections import Counter
from typing import Optional

from ..ir import types as T
from ..ir.ops import Function, Operation, Region, Value
from .rewriting import become, new_op

VIEWS = ("splat", "broadcast")


def contract_multiply_adds(fn: Function) -> bool:
    """Rewrites ``fn``'s contractible adds and subtracts into ``fma`` ops (see the module); returns
    whether anything changed. The multiplies stay for their other readers (dce drops the rest). The
    negations it makes are folded where constant, hoisted out of loops where invariant and merged
    with equal ones, by the passes that run before it, so one round of the pipeline still suffices."""
    from .constant_fold import fold_constants
    from .cse import eliminate_common_subexpressions
    from .licm import hoist_loop_invariants

    readers = Counter(v.id for op in fn.walk() for v in op.operands)
    if not _contract(fn.body, readers):
        return False
    fold_constants(fn)
    hoist_loop_invariants(fn)
    eliminate_common_subexpressions(fn)
    return True


def _contract(region: Region, readers: Counter) -> bool:
    changed = False
    here: set[int] = set()  # the ops of this region seen so far
    ops: list[Operation] = []
    for op in region.ops:
        for nested in op.regions:
            changed |= _contract(nested, readers)
        if op.opcode in ("add", "sub") and _contractible(op.results[0].type):
            fused = _fusion(op, here, readers)
            if fused is not None:
                made, operands = fused
                ops.extend(made)
                become(op, "fma", operands)
                changed = True
        ops.append(op)
        here.add(id(op))
    region.ops = ops
    return changed


def _contractible(ty) -> bool:
    scalar = ty.scalar if isinstance(ty, T.block_type) else ty
    return not scalar.is_ptr() and (scalar.is_fp32() or scalar.is_fp64())


def _fusion(op: Operation, here: set, readers: Counter) -> Optional[tuple[list, list]]:
    """The new ops and the fma's operands that replace add/sub ``op``, or None."""
    x, y = op.operands
    subtract = op.opcode == "sub"
    # the negations LLVM folds first: -a + b = b - a, a + -b = a - b, a - -b = a + b
    if not subtract and _negated(x, here) is not None:
        x, y, subtract = y, _negated(x, here), True
    elif not subtract and _negated(y, here) is not None:
        y, subtract = _negated(y, here), True
    elif subtract and _negated(y, here) is not None:
        y, subtract = _negated(y, here), False
    mx, my = _multiply(x, here), _multiply(y, here)
    if mx is not None and my is not None and readers[mx[0].results[0].id] > readers[my[0].results[0].id]:
        mx = None  # the multiply with fewer readers is fused
    made: list[Operation] = []
    loc = op.loc
    if mx is not None:
        a, b = _viewed(mx, made, loc)
        addend = y if not subtract else _negated_value(y, made, loc)
        return made, [a, b, addend]
    if my is not None:
        a, b = _viewed(my, made, loc)
        if subtract:
            a = _negated_value(a, made, loc)
        return made, [a, b, x]
    return None


def _negated(v: Value, here: set) -> Optional[Value]:
    """``a`` where ``v`` is ``neg(a)`` made in this region."""
    owner = v.owner
    if owner is None or owner.opcode != "neg" or id(owner) not in here:
        return None
    return owner.operands[0]


def _multiply(v: Value, here: set) -> Optional[tuple[Operation, list]]:
    """The multiply ``v`` is (through splats and broadcasts, outermost first) made in this region, and
    those views; None where it is not one."""
    views = []
    owner = v.owner
    while owner is not None and owner.opcode in VIEWS and id(owner) in here:
        views.append(owner)
        owner = owner.operands[0].owner
    if owner is None or owner.opcode != "mul" or id(owner) not in here:
        return None
    if not _contractible(owner.results[0].type):
        return None
    return owner, views


def _viewed(found: tuple[Operation, list], made: list, loc) -> tuple[Value, Value]:
    """The multiply's operands seen through its views, as the fma's first two operands."""
    multiply, views = found
    a, b = multiply.operands
    for view in reversed(views):  # innermost first
        a = _emit(made, view.opcode, [a], view.results[0].type, loc, view.attrs)
        b = _emit(made, view.opcode, [b], view.results[0].type, loc, view.attrs)
    return a, b


def _negated_value(v: Value, made: list, loc) -> Value:
    """``-v``: the operand of a negation, else a new ``neg``."""
    if v.owner is not None and v.owner.opcode == "neg":
        return v.owner.operands[0]
    return _emit(made, "neg", [v], v.type, loc)


def _emit(made: list, opcode: str, operands, type_, loc, attrs=None) -> Value:
    op = new_op(opcode, operands, type_, dict(attrs or {}), loc)
    made.append(op)
    return op.results[0]
