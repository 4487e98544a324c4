"""Checks the IR against its spec: every op known, its operands, attributes, regions and result types
as ``spec.py`` says, values defined before use, regions terminated.

A failure here is a bug in tritium, not in the user's kernel: it raises ``IRVerificationError``
with the offending operation's location, so the frontend or pass that broke the IR is easy to find.
"""
from __future__ import annotations

from typing import Callable, Optional

from . import types as T
from .encodings import Encoding
from .ops import Function, Operation, Region
from .spec import SPEC, TERMINATOR, OpSpec


class IRVerificationError(AssertionError):
    pass


def _fail(op: Operation, message: str):
    raise IRVerificationError(f"invalid IR at {op.loc}: {op.opcode}: {message}")


def _types(op: Operation) -> list:
    return [v.type for v in op.operands]


def _is_int(ty) -> bool:
    return not ty.scalar.is_ptr() and ty.scalar.is_int()


# result-type rules: each returns None when the op is well typed, else what is wrong ----------------------
def _none(op):
    return f"has results {[r.type for r in op.results]}, expected none" if op.results else None


def _one(op) -> Optional[str]:
    return None if len(op.results) == 1 else f"has {len(op.results)} results, expected one"


def _rule_same_as_operands(op):
    types = _types(op)
    if len(set(types)) != 1 or op.result.type != types[0]:
        return f"operand and result types differ: {types} -> {op.result.type}"
    return None


def _rule_same_as_operand(op):
    return None if op.result.type == op.operands[0].type else f"{op.operands[0].type} -> {op.result.type}"


def _rule_constant(op):
    ty, value = op.result.type, op.attrs["value"]
    if ty.is_block() or ty.is_ptr():
        return f"a constant is a scalar of a number type, not {ty}"
    if ty.is_bool():
        ok = isinstance(value, bool)
    elif ty.is_floating():
        ok = isinstance(value, float)
    else:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok:
            bits = ty.primitive_bitwidth
            low, high = (-(1 << (bits - 1)), 1 << (bits - 1)) if ty.is_int_signed() else (0, 1 << bits)
            if not low <= value < high:
                return f"value {value} is outside the range of {ty} [{low}, {high - 1}]"
    return None if ok else f"value {value!r} does not match {ty}"


def _rule_arange(op):
    expected = T.block_type(T.int32, (op.attrs["end"] - op.attrs["start"],))
    return None if op.result.type == expected else f"gives {op.result.type}, expected {expected}"


def _rule_i32(op):
    return None if op.result.type == T.int32 else f"gives {op.result.type}, expected i32"


def _rule_special_register(op):
    expected = T.int64 if op.attrs.get("name") == "globaltimer" else T.int32
    return None if op.result.type == expected else f"gives {op.result.type}, expected {expected}"


def _rule_splat(op):
    src, out = op.operands[0].type, op.result.type
    if src.is_block() or not out.is_block() or out.element_ty != src:
        return f"splat of {src} to {out}"
    return None


def _rule_broadcast(op):
    src, out = op.operands[0].type, op.result.type
    if not out.is_block() or out.element_ty != src.scalar:
        return f"broadcast of {src} to {out}"
    shape = T.shape_of(src)
    if len(shape) not in (0, len(out.shape)) or any(s not in (1, o) for s, o in zip(shape, out.shape)):
        return f"shape {list(shape)} does not broadcast to {list(out.shape)}"
    return None


def _numel(ty) -> int:
    return ty.numel if ty.is_block() else 1


def _rule_reshape(op):
    src, out = op.operands[0].type, op.result.type
    if _numel(src) != _numel(out) or src.scalar != out.scalar or tuple(op.attrs["shape"]) != T.shape_of(out):
        return f"reshape of {src} to {out} with shape {op.attrs['shape']}"
    return None


def _rule_permute(op):
    src, order = op.operands[0].type, list(op.attrs["order"])
    if sorted(order) != list(range(len(src.shape))):
        return f"order {order} is not a permutation of {len(src.shape)} dimensions"
    expected = T.block_type(src.element_ty, tuple(src.shape[d] for d in order))
    return None if op.result.type == expected else f"gives {op.result.type}, expected {expected}"


def _rule_join(op):
    a, b = _types(op)
    expected = T.block_type(a.scalar, T.shape_of(a) + (2,))
    return None if a == b and op.result.type == expected else f"join of {a} and {b} gives {op.result.type}"


def _rule_split(op):
    src = op.operands[0].type
    if len(op.results) != 2 or not src.is_block() or src.shape[-1] != 2:
        return f"split of {src} into {len(op.results)} results"
    rest = src.shape[:-1]
    expected = T.block_type(src.element_ty, rest) if rest else src.element_ty
    return None if all(r.type == expected for r in op.results) else f"results {[r.type for r in op.results]}"


def _rule_cat(op):
    a, b = _types(op)
    axis = op.attrs["axis"]
    if a.scalar != b.scalar or len(a.shape) != len(b.shape) or not 0 <= axis < len(a.shape):
        return f"cat of {a} and {b} along {axis}"
    if any(x != y for d, (x, y) in enumerate(zip(a.shape, b.shape)) if d != axis):
        return f"cat of {a} and {b} along {axis}: the other dimensions differ"
    shape = list(a.shape)
    shape[axis] += b.shape[axis]
    return None if T.shape_of(op.result.type) == tuple(shape) else f"gives {op.result.type}"


def _rule_gather(op):
    src, index = _types(op)
    if not _is_int(index) or op.result.type != T.block_type(src.scalar, T.shape_of(index)):
        return f"gather of {src} by {index} gives {op.result.type}"
    return None


def _rule_histogram(op):
    expected = T.block_type(T.int32, (op.attrs["num_bins"],))
    return None if op.result.type == expected else f"gives {op.result.type}, expected {expected}"


def _rule_cast(op):
    src, out = op.operands[0].type, op.result.type
    if src.scalar.is_ptr() or out != T.with_element(src, op.attrs["to"]):
        return f"cast of {src} to {op.attrs['to']} gives {out}"
    return None


def _rule_bitcast(op):
    src, out = op.operands[0].type, op.result.type
    if T.shape_of(src) != T.shape_of(out):
        return f"bitcast changes the shape: {src} -> {out}"
    if src.scalar.is_ptr() != out.scalar.is_ptr() or src.scalar.primitive_bitwidth != out.scalar.primitive_bitwidth:
        return f"bitcast between types of different widths: {src} -> {out}"
    return None


def _rule_ptr_to_int(op):
    src, out = op.operands[0].type, op.result.type
    ok = src.scalar.is_ptr() and _is_int(out) and T.shape_of(src) == T.shape_of(out)
    return None if ok else f"{src} -> {out}"


def _rule_int_to_ptr(op):
    src, out = op.operands[0].type, op.result.type
    ok = _is_int(src) and src.scalar.primitive_bitwidth == 64 and out.scalar.is_ptr() and T.shape_of(src) == T.shape_of(out)
    return None if ok else f"{src} -> {out}"


def _rule_cmp(op):
    a, b = _types(op)
    if a != b or op.result.type != T.with_element(a, T.int1):
        return f"comparison of {a} and {b} gives {op.result.type}"
    return None


def _rule_select(op):
    cond, a, b = _types(op)
    if a != b or op.result.type != a or cond != T.with_element(a, T.int1):
        return f"select types {[cond, a, b]} -> {op.result.type}"
    return None


def _rule_addptr(op):
    ptr, offset = _types(op)
    if not ptr.scalar.is_ptr() or not _is_int(offset) or T.shape_of(ptr) != T.shape_of(offset) or op.result.type != ptr:
        return f"addptr of {ptr} and {offset} gives {op.result.type}"
    return None


def _rule_libdevice(op):
    shapes = {T.shape_of(t) for t in _types(op)}
    if len(shapes) > 1 or T.shape_of(op.result.type) != next(iter(shapes), ()):
        return f"operand shapes {sorted(shapes)} and result {op.result.type} differ"
    return None


def _pointee(ptr):
    return T.with_element(ptr, ptr.scalar.element_ty) if ptr.scalar.is_ptr() else None


def _mask_ok(op, ptr) -> Optional[str]:
    mask = op.operand("mask")
    if mask is not None and mask.type != T.with_element(ptr, T.int1):
        return f"mask {mask.type} does not match pointer {ptr}"
    return None


def _rule_load(op):
    ptr = op.operand("pointer").type
    if _pointee(ptr) is None or op.result.type != _pointee(ptr):
        return f"load through {ptr} gives {op.result.type}"
    other = op.operand("other")
    if other is not None and (op.operand("mask") is None or other.type != op.result.type):
        return f"other {other.type} needs a mask and the result type {op.result.type}"
    return _mask_ok(op, ptr)


def _rule_store(op):
    ptr, value = op.operand("pointer").type, op.operand("value").type
    if _pointee(ptr) is None or value != _pointee(ptr):
        return f"store of {value} through {ptr}"
    return _mask_ok(op, ptr) or _none(op)


def _rule_atomic(op):
    ptr, value = op.operand("pointer").type, op.operand("value").type
    if _pointee(ptr) is None or value != _pointee(ptr) or op.result.type != value:
        return f"atomic on {ptr} with {value} gives {op.result.type}"
    return _mask_ok(op, ptr)


def _rule_atomic_cas(op):
    ptr, compare, value = _types(op)
    if _pointee(ptr) is None or not compare == value == op.result.type == _pointee(ptr):
        return f"atomic_cas on {ptr} with {compare}, {value} gives {op.result.type}"
    return None


def _tile_layout(op, base, layout) -> Optional[str]:
    rank = len(op.attrs["block_shape"])
    if base.is_block() or not base.is_ptr():
        return f"the base {base} is not a scalar pointer"
    if len(layout) != 3 * rank:
        return f"{len(layout)} layout operands for a tile of rank {rank} (expected shape, strides, offsets: {3 * rank})"
    if any(ty.is_block() or not _is_int(ty) for ty in layout):
        return f"layout operands {layout} are not integer scalars"
    if any(ty != T.int32 for ty in layout[2 * rank:]):
        return f"tile offsets {layout[2 * rank:]} are not i32"
    if any(not 0 <= d < rank for d in op.attrs["boundary_check"]):
        return f"boundary_check {op.attrs['boundary_check']} names dimensions outside 0..{rank - 1}"
    return None


def _rule_tile_load(op):
    base = op.operand("base").type
    problem = _tile_layout(op, base, _types(op)[1:])
    expected = T.block_type(base.scalar.element_ty, tuple(op.attrs["block_shape"])) if base.is_ptr() else None
    return problem or (None if op.result.type == expected else f"gives {op.result.type}, expected {expected}")


def _rule_tile_store(op):
    base, value = op.operand("base").type, op.operand("value").type
    problem = _tile_layout(op, base, _types(op)[2:])
    expected = T.block_type(base.scalar.element_ty, tuple(op.attrs["block_shape"])) if base.is_ptr() else None
    return problem or (None if value == expected else f"stores {value}, expected {expected}") or _none(op)


def _rule_reduce(op):
    axis = op.attrs["axis"]
    for value, result in zip(op.operands, op.results):
        shape = T.shape_of(value.type)
        if not 0 <= axis < len(shape):
            return f"axis {axis} of a block of rank {len(shape)}"
        rest = shape[:axis] + shape[axis + 1:]
        if T.shape_of(result.type) != rest:
            return f"reducing {value.type} along {axis} gives {result.type}"
    if op.attrs["kind"] not in ("argmax", "argmin") and len(op.results) != len(op.operands):
        return f"{len(op.operands)} inputs but {len(op.results)} results"
    return _combine_region(op)


def _rule_scan(op):
    if [r.type for r in op.results] != _types(op):
        return f"scan results {[r.type for r in op.results]} differ from inputs {_types(op)}"
    return _combine_region(op)


def _combine_region(op) -> Optional[str]:
    custom = op.attrs["kind"] == "custom"
    if len(op.regions) != (1 if custom else 0):
        return f"kind={op.attrs['kind']} with {len(op.regions)} combine regions"
    if custom:
        region = op.regions[0]
        scalars = [v.type.scalar for v in op.operands]
        if [a.type for a in region.args] != scalars * 2:
            return f"combine region arguments {[a.type for a in region.args]}, expected {scalars * 2}"
        return _yields(op, region, scalars)
    return None


def _rule_dot(op):
    a, b, acc = _types(op)
    sa, sb = T.shape_of(a), T.shape_of(b)
    if len(sa) not in (2, 3) or len(sa) != len(sb) or sa[-1] != sb[-2] or sa[:-2] != sb[:-2]:
        return f"dot of {a} and {b}"
    if T.shape_of(acc) != sa[:-1] + sb[-1:] or op.result.type != acc:
        return f"dot accumulator {acc} and result {op.result.type} for {a} @ {b}"
    return None


def _rule_shared_slot(op):
    if op.operands[0].type != T.int32:
        return f"shared_slot's slot is {op.operands[0].type}, not i32"
    expected = T.block_type(op.attrs["dtype"], tuple(op.attrs["shape"]))
    return None if op.result.type == expected else f"shared_slot of {expected} gives {op.result.type}"


def _rule_inline_asm(op):
    shapes = {T.shape_of(v.type) for v in op.operands}
    if len(shapes) > 1:
        return f"operands of shapes {sorted(shapes)}: they must share one"
    shape = shapes.pop() if shapes else ()
    if not op.results or any(T.shape_of(r.type) != shape for r in op.results):
        return f"results {[r.type for r in op.results]}: one or more, of the operands' shape {shape}"
    return None


def _rule_philox(op):
    if len(op.results) != 4 or any(r.type != op.operands[0].type for r in op.results):
        return "philox gives four results of the counter's type"
    return None


def _yields(op, region: Region, types) -> Optional[str]:
    term = region.terminator
    if term is None or term.opcode != "yield":
        return "a region does not end in yield"
    if [v.type for v in term.operands] != list(types):
        return f"a region yields {[v.type for v in term.operands]}, expected {list(types)}"
    return None


def _rule_if(op):
    if op.operands[0].type != T.int1:
        return f"the condition is {op.operands[0].type}, expected a scalar i1"
    for region in op.regions:
        problem = _yields(op, region, [r.type for r in op.results])
        if problem:
            return problem
    return None


def _rule_for(op):
    lower, upper, step = _types(op)[:3]
    if not (lower == upper == step) or not _is_int(lower) or lower.is_block():
        return f"bounds {lower}, {upper}, {step} are not scalars of one integer type"
    inits = _types(op)[3:]
    body = op.regions[0]
    if [a.type for a in body.args] != [lower] + inits:
        return f"body arguments {[a.type for a in body.args]}, expected {[lower] + inits}"
    if [r.type for r in op.results] != inits:
        return f"results {[r.type for r in op.results]} differ from the carried values {inits}"
    return _yields(op, body, inits)


def _rule_while(op):
    before, after = op.regions
    inits = _types(op)
    if [a.type for a in before.args] != inits:
        return f"before region arguments {[a.type for a in before.args]}, expected {inits}"
    condition = before.terminator
    if condition is None or condition.opcode != "condition":
        return "the before region does not end in condition"
    if condition.operands[0].type != T.int1:
        return f"the loop condition is {condition.operands[0].type}, expected a scalar i1"
    carried = [v.type for v in condition.operands[1:]]
    if [a.type for a in after.args] != carried or [r.type for r in op.results] != carried:
        return f"after region arguments / results differ from the condition's values {carried}"
    return _yields(op, after, inits)


RESULT_RULES: dict[str, Callable[[Operation], Optional[str]]] = {
    "none": _none, "same_as_operands": _rule_same_as_operands, "same_as_operand": _rule_same_as_operand,
    "constant": _rule_constant, "arange": _rule_arange, "i32": _rule_i32, "splat": _rule_splat,
    "broadcast": _rule_broadcast, "reshape": _rule_reshape, "permute": _rule_permute, "join": _rule_join,
    "split": _rule_split, "cat": _rule_cat, "gather": _rule_gather, "histogram": _rule_histogram,
    "cast": _rule_cast, "bitcast": _rule_bitcast, "ptr_to_int": _rule_ptr_to_int, "int_to_ptr": _rule_int_to_ptr,
    "cmp": _rule_cmp, "select": _rule_select, "addptr": _rule_addptr, "libdevice": _rule_libdevice,
    "load": _rule_load, "store": _rule_store, "tile_load": _rule_tile_load, "tile_store": _rule_tile_store, "atomic": _rule_atomic, "atomic_cas": _rule_atomic_cas,
    "reduce": _rule_reduce, "scan": _rule_scan, "dot": _rule_dot, "philox": _rule_philox, "if": _rule_if,
    "inline_asm": _rule_inline_asm, "special_register": _rule_special_register,
    "for": _rule_for, "while": _rule_while, "shared_slot": _rule_shared_slot,
}
# Rules that need exactly one result before they run.
_ONE_RESULT = frozenset(RESULT_RULES) - {"none", "reduce", "scan", "split", "philox", "inline_asm", "if", "for", "while",
                                         "tile_store", "store"}


# operands and attributes ------------------------------------------------------------------------------
def _check_operands(op: Operation, spec: OpSpec) -> None:
    names = list(op.operand_names)
    if len(names) != len(op.operands):
        _fail(op, f"{len(op.operands)} operands but {len(names)} operand names")
    position = 0
    for slot in spec.operands:
        if slot.variadic:
            rest = names[position:]
            if any(n != slot.name for n in rest):
                _fail(op, f"operands {rest} after the fixed ones, expected only {slot.name!r}")
            return
        if position < len(names) and names[position] == slot.name:
            position += 1
        elif not slot.optional:
            _fail(op, f"missing operand {slot.name!r} (operands: {names})")
    if position != len(names):
        _fail(op, f"unexpected operands {names[position:]} (the spec names {[s.name for s in spec.operands]})")


_KIND_CHECKS = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "ints": lambda v: isinstance(v, (tuple, list)) and all(isinstance(i, int) and not isinstance(i, bool) for i in v),
    "dtype": lambda v: isinstance(v, T.dtype),
    "scalar": lambda v: isinstance(v, (bool, int, float)),
}


def _check_attrs(op: Operation, spec: OpSpec) -> None:
    known = {a.name for a in spec.attrs}
    unknown = set(op.attrs) - known
    if unknown:
        _fail(op, f"unknown attributes {sorted(unknown)} (the spec has {sorted(known)})")
    for attr in spec.attrs:
        if attr.name not in op.attrs:
            if attr.required:
                _fail(op, f"missing attribute {attr.name!r}")
            continue
        value = op.attrs[attr.name]
        if value is None and not attr.required and attr.default is None:
            continue
        if not _KIND_CHECKS[attr.kind](value):
            _fail(op, f"attribute {attr.name}={value!r} is not of kind {attr.kind}")
        if attr.choices and value not in attr.choices:
            _fail(op, f"attribute {attr.name}={value!r} is not one of {list(attr.choices)}")


def _check_op(op: Operation) -> None:
    spec = SPEC.get(op.opcode)
    if spec is None:
        _fail(op, "unknown opcode (not in compiler/ir/spec.py)")
    _check_operands(op, spec)
    _check_attrs(op, spec)
    if op.opcode not in ("reduce", "scan") and len(op.regions) != len(spec.regions):
        _fail(op, f"has {len(op.regions)} regions, expected {len(spec.regions)} ({', '.join(spec.regions)})")
    if spec.result in _ONE_RESULT:
        problem = _one(op)
        if problem:
            _fail(op, problem)
    problem = RESULT_RULES[spec.result](op)
    if problem:
        _fail(op, problem)


def _check_encodings(op: Operation, values, what: str) -> None:
    """A placement stage's encodings (encodings.py) must fit the values they are written on."""
    for i, value in enumerate(values):
        if value.encoding is not None:
            if not isinstance(value.encoding, Encoding):
                _fail(op, f"{what} {i} has the encoding {value.encoding!r}, which is not an IR encoding")
            problem = value.encoding.check(value)
            if problem:
                _fail(op, f"{what} {i}: {problem}")


def _verify_region(region: Region, defined: set[int], owner: Optional[Operation]) -> None:
    defined = set(defined)
    defined.update(a.id for a in region.args)
    if owner is not None:
        _check_encodings(owner, region.args, "region argument")
    for index, op in enumerate(region.ops):
        for v in op.operands:
            if v.id not in defined:
                _fail(op, f"uses value #{v.id} before it is defined")
        spec = SPEC.get(op.opcode)
        if spec is not None and TERMINATOR in spec.traits and (owner is None or index != len(region.ops) - 1):
            _fail(op, "a terminator must end a region of a control-flow, reduce or scan op")
        _check_op(op)
        _check_encodings(op, op.results, "result")
        for nested in op.regions:
            _verify_region(nested, defined, op)
        defined.update(r.id for r in op.results)


def verify(fn: Function) -> None:
    if fn.arg_attrs and len(fn.arg_attrs) != len(fn.args):
        raise IRVerificationError(f"{fn.name}: {len(fn.arg_attrs)} argument attribute sets for {len(fn.args)} arguments")
    _verify_region(fn.body, set(), None)
