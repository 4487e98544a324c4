"""One lane of an atomic op, shared by the compiled backends.

``rmw`` and ``cas`` give the old value at ``address`` after atomically combining ``value`` into it
with the IR's kind and ordering; float kinds LLVM has no instruction for (max, min, add of the
narrow floats) run a compare-and-swap loop. ``ordering`` is an LLVM ordering, optionally preceded
by a ``syncscope(...)`` (a GPU's device scope).
"""
from __future__ import annotations

import llvmlite.ir as ir

from . import scalar as lanes
from .types import item_size, register_type

ORDERING = {"acquire": "acquire", "release": "release", "acq_rel": "acq_rel", "relaxed": "monotonic"}


def ordering_of(op, syncscope: str = "") -> str:
    ordering = ORDERING[op.attrs.get("sem", "acq_rel")]
    return f'syncscope("{syncscope}") {ordering}' if syncscope else ordering


def _failure_ordering(ordering: str) -> str:
    return "acquire" if ordering.endswith("acq_rel") else "monotonic"


def float_combine(b: ir.IRBuilder, kind: str, old, v, dtype):
    """What a float atomic writes: ``old + v``, or the larger (smaller) of the two by IEEE totalOrder
    on their sign-magnitude bits (the IR spec's max/min)."""
    if kind == "add":
        return lanes.float_binary(b, dtype, [old, v], b.fadd)
    bits_ty = ir.IntType(dtype.primitive_bitwidth)
    ob = old if old.type == bits_ty else b.bitcast(old, bits_ty)
    vb = v if v.type == bits_ty else b.bitcast(v, bits_ty)
    width = dtype.primitive_bitwidth

    def key(x):  # totalOrder as a signed integer: negative values reversed
        negative = b.icmp_signed("<", x, ir.Constant(bits_ty, 0))
        return b.select(negative, b.xor(x, ir.Constant(bits_ty, (1 << (width - 1)) - 1)), x)

    take = b.icmp_signed(">" if kind == "max" else "<", key(vb), key(ob))
    chosen = b.select(take, vb, ob)
    return chosen if chosen.type == old.type else b.bitcast(chosen, old.type)


def cas_loop(b: ir.IRBuilder, function: ir.Function, address, dtype, ordering: str, combine):
    """Reads the old value, writes ``combine(old)`` with compare-and-swap until no other write came
    between; returns the old value."""
    bits_ty = ir.IntType(dtype.primitive_bitwidth)
    reg = register_type(dtype)
    pre = b.block
    initial = b.load(address, typ=bits_ty)
    initial.align = item_size(dtype)
    loop = function.append_basic_block("cas")
    after = function.append_basic_block("cas_done")
    b.branch(loop)
    b.position_at_end(loop)
    current = b.phi(bits_ty)
    current.add_incoming(initial, pre)
    as_reg = current if reg == bits_ty else b.bitcast(current, reg)
    new = combine(as_reg)
    new_bits = new if new.type == bits_ty else b.bitcast(new, bits_ty)
    pair = b.cmpxchg(address, current, new_bits, ordering, _failure_ordering(ordering))
    seen = b.extract_value(pair, 0)
    ok = b.extract_value(pair, 1)
    current.add_incoming(seen, b.block)
    b.cbranch(ok, after, loop)
    b.position_at_end(after)
    return as_reg if reg == bits_ty else b.bitcast(current, reg)


def rmw(b: ir.IRBuilder, function: ir.Function, kind: str, dtype, address, v, ordering: str):
    """``atomic_rmw`` of one lane: the old value."""
    if dtype.is_floating():
        if kind == "add" and (dtype.is_fp32() or dtype.is_fp64()):
            return b.atomic_rmw("fadd", address, v, ordering)
        if kind == "xchg":
            bits = ir.IntType(dtype.primitive_bitwidth)
            old = b.atomic_rmw("xchg", address, v if v.type == bits else b.bitcast(v, bits), ordering)
            return old if old.type == register_type(dtype) else b.bitcast(old, register_type(dtype))
        return cas_loop(b, function, address, dtype, ordering, lambda old: float_combine(b, kind, old, v, dtype))
    signed = dtype.is_int_signed()
    llvm_kind = {"add": "add", "and": "and", "or": "or", "xor": "xor", "xchg": "xchg",
                 "max": "max" if signed else "umax", "min": "min" if signed else "umin"}[kind]
    return b.atomic_rmw(llvm_kind, address, v, ordering)


def cas(b: ir.IRBuilder, dtype, address, compare, value, ordering: str):
    """``atomic_cas`` of one lane: the old value."""
    bits_ty = ir.IntType(dtype.primitive_bitwidth)
    reg = register_type(dtype)
    compare = compare if compare.type == bits_ty else b.bitcast(compare, bits_ty)
    value = value if value.type == bits_ty else b.bitcast(value, bits_ty)
    pair = b.cmpxchg(address, compare, value, ordering, _failure_ordering(ordering))
    old = b.extract_value(pair, 0)
    return old if reg == bits_ty else b.bitcast(old, reg)
