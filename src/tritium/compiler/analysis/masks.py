"""Recognises masks that are boxes: tails such as ``offs < n`` and 2-D tiles such as
``(rows < M)[:, None] & (cols < N)[None, :]``, so that a backend can run full blocks unmasked
and only the tail with a mask.

A mask is a box when it is the conjunction (``&``) of comparisons ``index < bound`` (or ``<=``,
or the lower bounds ``>=``, ``>``, either way round) where ``bound`` is the same in every lane and
``index`` runs through consecutive values along one dimension (contiguity equal to the
dimension's size) and is constant along the others. Along that dimension the comparison then
holds on a prefix (upper bounds) or a suffix (lower bounds) of the lanes, so the block is full
exactly when ``index``'s first element plus the dimension's extent stays within the bound. An
``index`` constant along every dimension gives a bound with no dimension: the whole block is
on or off together (``pid < n`` splat over a block).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..ir import types as T
from ..ir.ops import Value
from ..ir.spec import VIEW, opcodes_with
from .axis_info import AxisInfoMap, dims_of

# The ops a bound survives: each moves its operand's dimensions without reordering along any.
_VIEWS = opcodes_with(VIEW)

# predicate -> (index is the left operand?, side, inclusive): "index < bound" is ("lt", left)...
_FORMS = {
    ("lt", True): ("upper", False), ("le", True): ("upper", True),
    ("gt", False): ("upper", False), ("ge", False): ("upper", True),
    ("ge", True): ("lower", True), ("gt", True): ("lower", False),
    ("le", False): ("lower", True), ("lt", False): ("lower", False),
}


@dataclass(frozen=True)
class MaskBound:
    """One comparison of a box mask: lanes are on where ``index`` (compared to ``bound``) passes.

    ``dim`` is the dimension of the mask the bound limits (None: the same answer in every lane);
    ``index_dim`` the dimension of ``index``'s own shape that runs (None with ``dim``). ``side``
    is "upper" (``index < bound``, ``<=`` when ``inclusive``) or "lower" (``index >= bound``,
    ``>`` when not ``inclusive``). ``bound`` is a scalar Value where one is found behind splats and
    broadcasts, else a block that is the same in every lane. ``test`` is the comparison itself (a
    block of ``index``'s shape), when it is known: its lanes are the mask's along ``index_dim``."""

    dim: Optional[int]
    index: Value
    index_dim: Optional[int]
    bound: Value
    side: str
    inclusive: bool
    test: Optional[Value] = None

    def __str__(self) -> str:
        op = {("upper", False): "<", ("upper", True): "<=", ("lower", True): ">=", ("lower", False): ">"}
        where = "all lanes" if self.dim is None else f"dim {self.dim}"
        return f"{where}: index {op[(self.side, self.inclusive)]} bound"


@dataclass(frozen=True)
class MaskInfo:
    """A box mask of ``shape``: the conjunction of ``bounds``."""

    shape: tuple[int, ...]
    bounds: tuple[MaskBound, ...]

    @property
    def dims(self) -> frozenset[int]:
        """The dimensions some bound limits."""
        return frozenset(b.dim for b in self.bounds if b.dim is not None)

    def __str__(self) -> str:
        return "box mask " + "; ".join(str(b) for b in self.bounds)


def classify_mask(mask: Value, axis_info: AxisInfoMap) -> Optional[MaskInfo]:
    """The box ``mask`` is, or None when it is not recognised as one."""
    if not mask.type.scalar.is_bool():
        return None
    bounds = _bounds(mask, axis_info)
    if bounds is None:
        return None
    return MaskInfo(T.shape_of(mask.type), tuple(bounds))


def _bounds(value: Value, axis_info: AxisInfoMap) -> Optional[list[MaskBound]]:
    op = value.owner
    if op is None:
        return None
    if op.opcode == "and":
        left = _bounds(op.operands[0], axis_info)
        right = _bounds(op.operands[1], axis_info) if left is not None else None
        return None if right is None else left + right
    if op.opcode == "cmp":
        bound = _comparison(value, axis_info)
        return None if bound is None else [bound]
    if op.opcode in _VIEWS:
        inner = _bounds(op.operands[0], axis_info)
        if inner is None:
            return None
        mapping = _dimension_map(op)
        if mapping is None:
            return None
        moved = []
        for b in inner:
            if b.dim is not None and b.dim not in mapping:
                return None
            moved.append(MaskBound(None if b.dim is None else mapping[b.dim], b.index, b.index_dim, b.bound,
                                   b.side, b.inclusive, b.test))
        return moved
    return None


def _dimension_map(op) -> Optional[dict[int, int]]:
    """Where each dimension of size > 1 of the operand lands in the result (None: scrambled)."""
    source, target = T.shape_of(op.operands[0].type), T.shape_of(op.result.type)
    if op.opcode == "splat":
        return {}
    if op.opcode == "permute":
        return {old: new for new, old in enumerate(op.attrs["order"])}
    if op.opcode == "broadcast":
        return {d: d for d, n in enumerate(source) if n != 1} if len(source) == len(target) else None
    kept_source = [d for d, n in enumerate(source) if n != 1]
    kept_target = [d for d, n in enumerate(target) if n != 1]
    if [source[d] for d in kept_source] != [target[d] for d in kept_target]:
        return None
    return dict(zip(kept_source, kept_target))


def _comparison(value: Value, axis_info: AxisInfoMap) -> Optional[MaskBound]:
    op = value.owner
    predicate = op.attrs["predicate"]
    for index_is_left in (True, False):
        form = _FORMS.get((predicate, index_is_left))
        if form is None:
            continue
        index, bound = (op.operands[0], op.operands[1]) if index_is_left else (op.operands[1], op.operands[0])
        index_info, bound_info = axis_info.get(index), axis_info.get(bound)
        if index_info is None or bound_info is None:
            continue
        dims = dims_of(index.type)
        if any(k != n for k, n in zip(bound_info.constancy, dims)):
            continue  # the bound differs between lanes
        running = [d for d, n in enumerate(dims) if n > 1 and index_info.constancy[d] != n]
        if len(running) > 1:
            continue
        if running and index_info.contiguity[running[0]] != dims[running[0]]:
            continue
        dim = running[0] if running else None
        side, inclusive = form
        return MaskBound(dim, index, dim, _scalar_behind(bound), side, inclusive, value)
    return None


def _scalar_behind(value: Value) -> Value:
    """The scalar a lane-uniform block was splat from, when splats, broadcasts and reshapes lead to
    one; else the block itself."""
    while value.type.is_block() and value.owner is not None and \
            value.owner.opcode in _VIEWS:
        value = value.owner.operands[0]
    return value
