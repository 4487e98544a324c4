"""The lines a kernel's ``print`` op writes (``tl.device_print``, ``print`` in a kernel), as compiled
Triton writes them: one line per element (and operand), ``pid (x, y, z) idx (i, j) prefix value``.

Every backend on host memory prints through ``format_print_lines``: the interpreter from its
values, the CPU backend from a callback its compiled code makes with each operand's lanes.
"""
from __future__ import annotations

import numpy as np

from ..compiler.ir import types as T


def format_print_lines(op, pid, values) -> list[str]:
    """The lines a ``print`` op writes for one program: ``values`` holds each operand's lanes in
    that program (an array of the operand's shape)."""
    prefix = op.attrs["prefix"].strip()
    label = f" {prefix}" if prefix else ":"
    x, y, z = pid
    head = f"pid ({x}, {y}, {z})"
    if not op.operands:
        return [f"{head} {prefix}"]
    columns = []
    for value, full in zip(op.operands, values):
        shape = T.shape_of(value.type)
        widths = [len(str(max(0, n - 1))) for n in shape]
        column = []
        for index, element in (np.ndenumerate(full) if shape else [((), full)]):
            text = ", ".join(f"{i:{w}}" for i, w in zip(index, widths))
            column.append((text, element, value.type.scalar))
        columns.append(column)
    lines = []
    for lane_values in zip(*columns):
        for n, (index, value, ty) in enumerate(lane_values):
            operand = f" (operand {n})" if len(op.operands) > 1 else ""
            lines.append(f"{head} idx ({index}){label}{operand} {_format_scalar(value, ty, op.attrs['hex'])}")
    return lines


def _format_scalar(value, ty, hex_format: bool) -> str:
    if ty.is_ptr():
        return f"0x{int(value):x}"
    if hex_format:
        array = np.asarray(value)
        bits = int(array.view(f"uint{array.itemsize * 8}"))
        return f"0x{bits:0{array.itemsize * 2}x}"
    if ty.is_fp8e4b15():  # held as its code
        from ..numerics import fp8e4b15

        return f"{float(fp8e4b15.decode(np.asarray(value))):f}"
    if ty.is_floating():
        return f"{float(value):f}"
    return str(int(value))
