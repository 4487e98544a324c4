"""What a compiled kernel reports when a program fails: the error record's layout and codes, and
the exceptions the launcher raises from it, worded as the interpreter words them.

A record is eight 64-bit slots: ``[code, op index, pid x, pid y, pid z, lane, value, extra]``.
``lane`` is the row-major index of the failing element in its block; ``value`` the address (an
access), the index (gather) or the value (histogram); ``extra`` the extent the value fell outside.
"""
from __future__ import annotations

import numpy as np

from ..errors import DeadlockError, DeviceAssertionError, OutOfBoundsError, render_location

OUT_OF_BOUNDS = 1
ASSERT = 2
GATHER_INDEX = 3
HISTOGRAM_VALUE = 4
ENDLESS_LOOP = 5
# debug mode's checks (cpu/debug_checks.py): value and extra hold the operands (an overflow), the
# dividend (a division by zero), the fp64 bits of the value (a conversion), the address stored to and
# the tag of the program that stored there before (a race)
INT_OVERFLOW = 6
DIVISION_BY_ZERO = 7
INVALID_CONVERSION = 8
RACE = 9
RECORD_SLOTS = 8


def lane_text(lane: int, shape: tuple) -> str:
    if not shape:
        return "the scalar access"
    position = tuple(int(i) for i in np.unravel_index(lane, shape))
    return f"lane {position[0] if len(position) == 1 else position}"


def _signed(value: int) -> int:
    return value if value < (1 << 63) else value - (1 << 64)


def _block_lane(lane: int, ty) -> tuple:
    """The block index of the row-major lane number ``lane`` of a value of type ``ty``; () for a
    scalar (lane -1)."""
    from ..compiler.ir import types as T

    if lane < 0 or not isinstance(ty, T.block_type):
        return ()
    return tuple(int(i) for i in np.unravel_index(lane, tuple(ty.shape)))


def _raise_debug_fault(kernel: str, op, code: int, pid: tuple, lane: int, value: int, extra: int) -> None:
    from . import debug_reports

    where = _block_lane(lane, op.results[0].type)
    if code == INT_OVERFLOW:
        x, y = _signed(value & 0xFFFFFFFFFFFFFFFF), _signed(extra & 0xFFFFFFFFFFFFFFFF)
        raise debug_reports.overflow_error(kernel, op, pid, where, x, y,
                                           debug_reports.exact_int32_result(op.opcode, x, y))
    if code == DIVISION_BY_ZERO:
        kind = op.operands[0].type.scalar
        bits = value & 0xFFFFFFFFFFFFFFFF
        x = _signed(bits) if kind.is_int_signed() and not kind.is_bool() else bits & ((1 << kind.primitive_bitwidth) - 1)
        raise debug_reports.division_error(kernel, op, pid, where, x)
    number = float(np.array([value & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64).view(np.float64)[0])
    raise debug_reports.conversion_error(kernel, op, pid, where, number, op.operands[0].type.scalar, op.attrs["to"])


def raise_race(kernel: str, op, pid: tuple, lane: int, address: int, previous_tag: int, grid: tuple, source,
               arguments) -> None:
    """Raises the RaceError of a store of ``op`` by program ``pid`` to byte ``address``, which the
    program with tag ``previous_tag`` (1 + its linear id in ``grid``) stored to before.
    ``arguments``, ``source``: as ``raise_out_of_bounds``'s."""
    from . import debug_reports

    gx, gy, _ = grid
    linear = previous_tag - 1
    first = (linear % gx, (linear // gx) % gy, linear // (gx * gy))
    pointer = op.operand("pointer")
    known = source is not None and source >= 0
    candidates = [source] if known else range(len(arguments))
    for position in candidates:
        name, base, low, high, size = arguments[position]
        if known or low <= address < high:
            raise debug_reports.race_error(kernel, op.loc, first, pid, name, (address - base) // size,
                                           _block_lane(lane, pointer.type), program_order=False)
    raise AssertionError(f"a race at address {address:#x} outside every argument")


def raise_reported(kernel: str, op, code: int, pid: tuple, lane: int, value: int, extra: int) -> None:
    """Raises the error of a failed assert, gather index, histogram value or debug-mode check (the
    launcher handles out-of-bounds accesses and races, which need the arguments' memory)."""
    from ..compiler.ir import types as T

    if code in (INT_OVERFLOW, DIVISION_BY_ZERO, INVALID_CONVERSION):
        _raise_debug_fault(kernel, op, code, pid, lane, value, extra)

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
    if code == ENDLESS_LOOP:
        message = render_location(
            op.loc, f"the while loop in kernel '{kernel}' never ends for program {pid}: iteration {value} left "
            "every value the loop carries as it was, so every later iteration will too",
            "check the loop condition and the values the loop updates (a program that must wait for another "
            "one to write memory has to read that memory inside the loop)")
        raise DeadlockError(message, loc=op.loc, program_ids=[pid], kernel=kernel)
    raise AssertionError(f"error record code {code}")


# what an access through a pointer outside every tensor dereferences
NO_TENSOR = "an address that lies in no tensor argument and no other live tensor of the process"


def raise_out_of_bounds(kernel: str, op, pid: tuple, lane: int, address: int, source, arguments,
                        bad_lanes: int = 0) -> None:
    """Raises the OutOfBoundsError of an access of ``op`` at byte ``address``. ``arguments``: per
    pointer argument (in order), ``(name, base address, lowest byte, one past the highest)``;
    ``source``: the position of the argument the pointer derives from (pointer provenance), or
    None / a negative number when unknown (the argument whose memory holds the address is named);
    ``bad_lanes``: how many active lanes of the program's access are outside (0: not counted)."""
    from ..compiler.ir import types as T

    access = {"load": "load", "store": "store"}.get(op.opcode, "atomic")
    pointer = op.operand("pointer")
    pointer_shape = tuple(pointer.type.shape) if isinstance(pointer.type, T.block_type) else ()
    text = lane_text(lane, pointer_shape)
    address &= 0xFFFFFFFFFFFFFFFF
    element = pointer.type.scalar.element_ty
    size = max(1, element.primitive_bitwidth // 8) if not element.is_ptr() else 8
    hint = ("mask the access: compute mask = offsets < n and pass mask=mask"
            + (", other=0.0 to tl.load" if access == "load" else " to tl.store"))
    known = source is not None and source >= 0
    candidates = [source] if known else range(len(arguments))
    for position in candidates:
        arg_name, base, low, high = arguments[position]
        if not known and not low <= address < high:
            continue
        extent = max(0, (high - base) // size)
        offset = address - base
        if offset % size == 0 or not low <= address <= high - size:
            problem = (f"element offset {offset // size} of '{arg_name}', a tensor of {extent} elements "
                       f"(valid offsets 0..{extent - 1})")
        else:
            problem = f"a misaligned address (byte {offset}) inside '{arg_name}'"
        others = f"; {bad_lanes} lanes of this program are out of bounds" if bad_lanes > 1 else ""
        message = render_location(op.loc, f"out-of-bounds {access} in kernel '{kernel}': program {pid}, "
                                  f"{text} touches {problem}{others}", hint)
        raise OutOfBoundsError(message, kernel=kernel, loc=op.loc, program_id=pid, offset=offset // size,
                               extent=extent, tensor=arg_name, access=access)
    what = "a null pointer" if address == 0 else NO_TENSOR
    message = render_location(op.loc, f"out-of-bounds {access} in kernel '{kernel}': program {pid}, "
                              f"{text} dereferences {what}")
    raise OutOfBoundsError(message, kernel=kernel, loc=op.loc, program_id=pid, offset=address, extent=0,
                           tensor="?", access=access)
