"""What a compiled kernel reports when a program fails: the error record's layout and codes, and
the exceptions the launcher raises from it, worded as the interpreter words them.

A record is eight 64-bit slots: ``[code, op index, pid x, pid y, pid z, lane, value, extra]``.
``lane`` is the row-major index of the failing element in its block; ``value`` the address (an
access), the index (gather) or the value (histogram); ``extra`` the extent the value fell outside.
"""
from __future__ import annotations

import numpy as np

from ..errors import DeviceAssertionError, OutOfBoundsError, render_location

OUT_OF_BOUNDS = 1
ASSERT = 2
GATHER_INDEX = 3
HISTOGRAM_VALUE = 4
RECORD_SLOTS = 8


def lane_text(lane: int, shape: tuple) -> str:
    if not shape:
        return "the scalar access"
    position = tuple(int(i) for i in np.unravel_index(lane, shape))
    return f"lane {position[0] if len(position) == 1 else position}"


def _signed(value: int) -> int:
    return value if value < (1 << 63) else value - (1 << 64)


def raise_reported(kernel: str, op, code: int, pid: tuple, lane: int, value: int, extra: int) -> None:
    """Raises the error of a failed assert, gather index or histogram value (the launcher handles
    out-of-bounds accesses, which need the arguments' memory)."""
    from ..compiler.ir import types as T

    if code == ASSERT:
        condition = op.operands[0]
        shape = tuple(condition.type.shape) if isinstance(condition.type, T.block_type) else ()
        text = lane_text(lane, shape)
        where = f", {text}" if text != "the scalar access" else ""
        message = render_location(op.loc, f"device_assert failed in kernel '{kernel}', program {pid}{where}: "
                                  f"{op.attrs['message']}")
        raise DeviceAssertionError(message, loc=op.loc, program_id=pid)
    if code == HISTOGRAM_VALUE:
        value, bins = _signed(value), extra
        message = render_location(
            op.loc, f"tl.histogram in kernel '{kernel}', program {pid}, lane {lane}: value {value} is outside the "
            f"{bins} bins [0, {bins})",
            f"pass mask= to leave such lanes out. A GPU counts them in bin value & {bins - 1} ({value & (bins - 1)} "
            "here) and Triton's interpreter drops them, so the result depends on where the kernel runs")
        raise OutOfBoundsError(message, kernel=kernel, loc=op.loc, program_id=pid, offset=value, extent=bins,
                               tensor="input", access="histogram")
    if code == GATHER_INDEX:
        index_shape = tuple(op.operand("index").type.shape)
        position = tuple(int(i) for i in np.unravel_index(lane, index_shape))
        value = _signed(value)
        message = render_location(
            op.loc, f"tl.gather in kernel '{kernel}', program {pid}, lane {position}: index {value} is out of range "
            f"for axis {op.attrs['axis']} of size {extra}",
            "clamp the index (tl.minimum/tl.maximum) or build it so that it stays within the source block")
        raise OutOfBoundsError(message, kernel=kernel, loc=op.loc, program_id=pid, offset=value, extent=extra,
                               tensor="src", access="gather")
    raise AssertionError(f"error record code {code}")
