"""Prints the tile IR as text, one operation per line, with the source line it came from.

Format::

    func @name(%0: ptr<fp32>, %1: i32) {
      %2 = program_id {axis=0} : i32                      # kernel.py:7
      %5 = if %4 : <8xfp32> {
      ^then():
        yield %3
      } {
      ^else():
        yield %2
      }
    }
"""
from __future__ import annotations

import os

from .ops import Function, Operation, Region, Value


class _Names:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def define(self, value: Value) -> str:
        name = f"%{len(self.names)}"
        self.names[value.id] = name
        return name

    def use(self, value: Value) -> str:
        return self.names.get(value.id, f"%<undefined #{value.id}>")


def _type_name(ty) -> str:
    return getattr(ty, "ir_name", str(ty))


def _attr_text(value) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_attr_text(v) for v in value) + "]"
    return _type_name(value) if hasattr(value, "ir_name") else repr(value)


def _print_region(region: Region, label: str, names: _Names, indent: str, lines: list[str]) -> None:
    args = ", ".join(f"{names.define(a)}: {_type_name(a.type)}" for a in region.args)
    lines.append(f"{indent}^{label}({args}):")
    for op in region.ops:
        _print_op(op, names, indent + "  ", lines)


_REGION_LABELS = {"if": ("then", "else"), "for": ("body",), "while": ("before", "after"), "reduce": ("combine",),
                  "scan": ("combine",)}


def _print_op(op: Operation, names: _Names, indent: str, lines: list[str]) -> None:
    operands = ", ".join(names.use(v) for v in op.operands)
    results = ", ".join(names.define(r) for r in op.results)
    text = indent + (f"{results} = " if results else "") + op.opcode
    if operands:
        text += " " + operands
    if op.attrs:
        text += " {" + ", ".join(f"{k}={_attr_text(v)}" for k, v in op.attrs.items()) + "}"
    if op.results:
        text += " : " + ", ".join(_type_name(r.type) for r in op.results)
    if op.loc is not None and not op.regions:
        text = f"{text:<72}  # {os.path.basename(op.loc.file)}:{op.loc.line}"
    if not op.regions:
        lines.append(text)
        return
    labels = _REGION_LABELS.get(op.opcode, ())
    for i, region in enumerate(op.regions):
        lines.append(text + " {" if i == 0 else indent + "} {")
        label = labels[i] if i < len(labels) else f"region{i}"
        _print_region(region, label, names, indent + "  ", lines)
    loc = f"  # {os.path.basename(op.loc.file)}:{op.loc.line}" if op.loc else ""
    lines.append(indent + "}" + loc)


def print_function(fn: Function) -> str:
    names = _Names()
    args = ", ".join(f"{names.define(a)}: {_type_name(a.type)}" for a in fn.args)
    lines = [f"func @{fn.name}({args}) {{"]
    for op in fn.body.ops:
        _print_op(op, names, "  ", lines)
    lines.append("}")
    return "\n".join(lines)
