"""A load read only through a transpose reads the transposed block itself: ``permute(load(p, m, o))``
becomes ``load(permute(p), permute(m), permute(o))``.

Tensor-descriptor code transposes what it loads (Triton's fused-attention tutorial: ``k =
desc_k.load([offset, 0]).T``). After the rewrite the load's result is the dot's operand itself, so the
layouts pass can copy it into the operand's tile as it lies in memory (K^T with K contiguous: a
K-major B, ``#cuda.nvmma<..., transposed>``) and the pipeliner can run it ahead; the values are the
same, element by element. Applies where the load has no other reader and nothing between it and the
transpose writes memory or synchronizes (the load moves down to the transpose).
"""
from __future__ import annotations

from ...compiler.ir import types as T
from ...compiler.ir.ops import Function, Operation, Region
from ...compiler.ir.spec import is_pure
from ...compiler.passes.rewriting import become, new_op


def load_transposed(fn: Function) -> int:
    """Rewrites ``fn``'s loads read only through a permute (see the module); returns how many."""
    readers: dict[int, int] = {}
    for op in fn.walk():
        for v in op.operands:
            readers[v.id] = readers.get(v.id, 0) + 1
    return _rewrite(fn.body, readers)


def _rewrite(region: Region, readers: dict) -> int:
    count = 0
    position = {id(op): i for i, op in enumerate(region.ops)}
    removed: set[int] = set()
    ops: list[Operation] = []
    for op in region.ops:
        for inner in op.regions:
            count += _rewrite(inner, readers)
        load = _transposed_load(op, region, position, readers)
        if load is None:
            ops.append(op)
            continue
        order = op.attrs["order"]
        operands = []
        for v in load.operands:
            permuted = new_op("permute", [v], _permuted(v.type, order), {"order": order}, op.loc)
            ops.append(permuted)
            operands.append(permuted.results[0])
        names = load.operand_names
        become(op, "load", operands, dict(load.attrs))
        op.operand_names = names
        removed.add(id(load))
        count += 1
        ops.append(op)
    region.ops = [op for op in ops if id(op) not in removed]
    return count


def _transposed_load(op: Operation, region: Region, position: dict, readers: dict):
    """The load ``op`` (a permute) transposes, when it can be read transposed in its place."""
    if op.opcode != "permute":
        return None
    source = op.operands[0]
    load = source.owner
    if load is None or load.opcode != "load" or readers.get(source.id) != 1 or id(load) not in position:
        return None
    if load.attrs.get("volatile") or not isinstance(source.type, T.block_type):
        return None
    between = region.ops[position[id(load)] + 1:position[id(op)]]
    if not all(is_pure(other) and not other.regions for other in between):
        return None
    return load


def _permuted(ty, order) -> T.block_type:
    shape = T.shape_of(ty)
    return T.block_type(ty.scalar, [shape[i] for i in order])

