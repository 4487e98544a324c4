"""Prints the tile IR as text, one operation per line, with the source line it came from.

Format (``parser.py`` reads it back; print -> parse -> print gives the same text)::

    func @name(%x_ptr: ptr<fp32> {divisibility=16}, %n: i32) {
      %0 = program_id {axis=0} : i32                                  # kernel.py:7
      %1 = load %ptrs, mask=%m : <8xfp32>                             # kernel.py:9
      %2 = if %c : <8xfp32> {
        ^then():
          yield %1
      } {
        ^else():
          yield %3
      }                                                               # kernel.py:10
    }

A block value a backend's placement stage has placed carries its encoding inside its type,
``<8xfp32, #cpu.buffer>`` (``encodings.py``). Arguments are named after the kernel's parameters,
other values are numbered. Required operands
are positional; optional ones (a load's ``mask`` and ``other``) are written ``name=%v``.
Attributes equal to their default in the IR spec are left out; a NaN other than the positive
quiet one prints with its bits, ``nan(0xfff8000000000000)``. A location inside an inlined
``@jit`` helper shows its call sites after ``<-``: ``# helper.py:3 <- kernel.py:12``.
"""
from __future__ import annotations

import math
import os
import struct

from .ops import Function, Location, Operation, Region, Value
from .spec import SPEC


_QUIET_NAN = 0x7FF8000000000000  # the NaN Python's float("nan") is, printed as plain `nan`


class _Names:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.count = 0

    def define(self, value: Value, name: str | None = None) -> str:
        if name is None:
            name = f"%{self.count}"
            self.count += 1
        self.names[value.id] = name
        return name

    def use(self, value: Value) -> str:
        return self.names.get(value.id, f"%<undefined #{value.id}>")


def type_text(ty) -> str:
    return getattr(ty, "ir_name", str(ty))


def value_type_text(value: Value) -> str:
    """A value's type, with its encoding (if a placement stage gave it one) inside a block's
    brackets: ``<64xfp32, #cpu.buffer>``."""
    text = type_text(value.type)
    if value.encoding is None:
        return text
    return f"{text[:-1]}, {value.encoding.text()}>"


def attr_text(value) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            bits = struct.unpack("<Q", struct.pack("<d", value))[0]
            return "nan" if bits == _QUIET_NAN else f"nan(0x{bits:016x})"  # keep a NaN's sign and payload
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(attr_text(v) for v in value) + "]"
    return type_text(value) if hasattr(value, "ir_name") else repr(value)


def location_text(loc: Location) -> str:
    return " <- ".join(f"{os.path.basename(site.file)}:{site.line}" for site in loc.call_chain())


def _attrs_text(op: Operation) -> str:
    spec = SPEC.get(op.opcode)
    shown = []
    for name, value in op.attrs.items():
        slot = spec.attr(name) if spec is not None else None
        if slot is not None and not slot.required and _same_attr(value, slot.default):
            continue
        shown.append(f"{name}={attr_text(value)}")
    return " {" + ", ".join(shown) + "}" if shown else ""


def _same_attr(a, b) -> bool:
    return type(a) is type(b) and a == b


def _operands_text(op: Operation, names: _Names) -> str:
    spec = SPEC.get(op.opcode)
    optional = {slot.name for slot in spec.operands if slot.optional} if spec is not None else set()
    parts = []
    for value, slot in zip(op.operands, op.operand_names or [None] * len(op.operands)):
        text = names.use(value)
        parts.append(f"{slot}={text}" if slot in optional else text)
    return ", ".join(parts)


def _print_region(region: Region, label: str, names: _Names, indent: str, lines: list[str]) -> None:
    args = ", ".join(f"{names.define(a)}: {value_type_text(a)}" for a in region.args)
    lines.append(f"{indent}^{label}({args}):")
    for op in region.ops:
        _print_op(op, names, indent + "  ", lines)


def _with_location(text: str, loc) -> str:
    return text if loc is None else f"{text:<72}  # {location_text(loc)}"


def _print_op(op: Operation, names: _Names, indent: str, lines: list[str]) -> None:
    operands = _operands_text(op, names)
    results = ", ".join(names.define(r) for r in op.results)
    text = indent + (f"{results} = " if results else "") + op.opcode
    if operands:
        text += " " + operands
    text += _attrs_text(op)
    if op.results:
        text += " : " + ", ".join(value_type_text(r) for r in op.results)
    if not op.regions:
        lines.append(_with_location(text, op.loc))
        return
    spec = SPEC.get(op.opcode)
    labels = spec.regions if spec is not None else ()
    for i, region in enumerate(op.regions):
        lines.append(text + " {" if i == 0 else indent + "} {")
        label = labels[i] if i < len(labels) else f"region{i}"
        _print_region(region, label, names, indent + "  ", lines)
    lines.append(_with_location(indent + "}", op.loc))


def _argument_text(fn: Function, index: int, value: Value, names: _Names) -> str:
    name = fn.arg_names[index] if index < len(fn.arg_names) else None
    text = f"{names.define(value, f'%{name}' if name else None)}: {type_text(value.type)}"
    attrs = fn.arg_attrs[index] if index < len(fn.arg_attrs) else {}
    if attrs:
        text += " {" + ", ".join(f"{k}={attr_text(v)}" for k, v in attrs.items()) + "}"
    return text


def print_function(fn: Function) -> str:
    names = _Names()
    args = ", ".join(_argument_text(fn, i, a, names) for i, a in enumerate(fn.args))
    lines = [f"func @{fn.name}({args}) {{"]
    for op in fn.body.ops:
        _print_op(op, names, "  ", lines)
    lines.append("}")
    return "\n".join(lines)
