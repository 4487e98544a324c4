"""``tl.inline_asm_elementwise`` on the GPU: the asm itself, as LLVM inline assembly.

One asm statement per group of ``pack`` elements of a thread's registers (which elements form a
group is unspecified, as in Triton: here, consecutive registers of the value's layout). Its
operands, numbered ``$0``... in this order: each result's registers, then each argument's. An
element of 32 bits or more is one register; narrower elements are packed, ``32 // bits`` to a
32-bit register (element 0 in the low bits), or into one register of ``pack * bits`` bits when
the group is smaller than that (an fp16 with ``pack=1`` is a 16-bit ``h`` register). A register
is an integer of its width, or a float for the ``f`` and ``d`` constraints. The constraint
string is LLVM's, one entry per register (outputs first, marked ``=``), then any clobbers
(``~{memory}``); ``is_pure=False`` marks the asm as having side effects.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ..llvm.types import F32, F64


@dataclass(frozen=True)
class Operand:
    """How one result or argument of ``dtype`` (``bits`` wide) travels in ``registers`` registers of
    ``width`` bits, ``per_register`` elements in each."""

    bits: int
    registers: int
    width: int
    per_register: int


def operand_plan(bits: int, pack: int) -> Operand:
    if bits >= 32:
        return Operand(bits, pack, bits, 1)
    per_register = min(pack, 32 // bits)
    return Operand(bits, -(-pack // per_register), per_register * bits, per_register)


def split_constraints(text: str) -> tuple[list[str], list[str], list[str]]:
    """(outputs, inputs, clobbers) of an LLVM constraint string."""
    entries = [e.strip() for e in text.split(",") if e.strip()]
    outputs = [e for e in entries if e.startswith("=")]
    clobbers = [e for e in entries if e.startswith("~")]
    inputs = [e for e in entries if not e.startswith(("=", "~"))]
    return outputs, inputs, clobbers


def register_type(constraint: str, width: int) -> ir.Type:
    """The LLVM type of a register of ``width`` bits under ``constraint`` ("=r", "f", ...)."""
    letter = constraint.lstrip("=&+*")[:1]
    if letter == "f" and width == 32:
        return F32
    if letter == "d" and width == 64:
        return F64
    return ir.IntType(width)


def pack_registers(b: ir.IRBuilder, values: list, plan: Operand, types: list) -> list:
    """The registers holding ``values`` (one group's elements, LLVM values of ``plan.bits`` bits),
    each of the LLVM type in ``types``."""
    registers = []
    for j, ty in enumerate(types):
        part = values[j * plan.per_register:(j + 1) * plan.per_register]
        if plan.per_register == 1:
            registers.append(_as(b, part[0], ty))
            continue
        word = ir.IntType(plan.width)
        packed = ir.Constant(word, 0)
        for k, value in enumerate(part):
            bits = b.zext(_as(b, value, ir.IntType(plan.bits)), word)
            packed = b.or_(packed, b.shl(bits, ir.Constant(word, k * plan.bits)) if k else bits)
        registers.append(_as(b, packed, ty))
    return registers


def unpack_registers(b: ir.IRBuilder, registers: list, plan: Operand, element: ir.Type) -> list:
    """The elements (of LLVM type ``element``) that ``registers`` hold, in order."""
    values = []
    for register in registers:
        if plan.per_register == 1:
            values.append(_as(b, register, element))
            continue
        word = ir.IntType(plan.width)
        bits = _as(b, register, word)
        for k in range(plan.per_register):
            shifted = b.lshr(bits, ir.Constant(word, k * plan.bits)) if k else bits
            values.append(_as(b, b.trunc(shifted, ir.IntType(plan.bits)), element))
    return values


def _as(b: ir.IRBuilder, value: ir.Value, ty: ir.Type) -> ir.Value:
    """``value``'s bits as ``ty`` (same width; an integer of another width is truncated or
    zero-extended)."""
    if value.type == ty:
        return value
    if isinstance(value.type, ir.IntType) and isinstance(ty, ir.IntType):
        return b.trunc(value, ty) if value.type.width > ty.width else b.zext(value, ty)
    return b.bitcast(value, ty)
