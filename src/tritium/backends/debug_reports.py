"""Debug mode's faults, worded once for every backend that checks them (the interpreter's
``interpreter/checks.py``, the CPU backend's compiled checks ``cpu/debug_checks.py``): int32
overflow, integer division by zero, float -> int conversions without a value, data races; and how
pointer arguments that share memory share one record of who stored where.

``lane`` is a tuple of block indices (empty for a scalar); ``pid`` a program id ``(x, y, z)``.
"""
from __future__ import annotations

from ..errors import DivisionByZeroError, IntegerOverflowError, InvalidConversionError, RaceError, render_location

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

SYMBOL = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%", "div": "/", "neg": "-"}


def lane_text(lane: tuple) -> str:
    if not lane:
        return ""
    return f", lane {lane[0] if len(lane) == 1 else lane}"


def exact_int32_result(opcode: str, x: int, y: int) -> int:
    """The exact (unwrapped) result of an int32 ``add``, ``sub``, ``mul`` or ``neg`` of ``x``, ``y``."""
    return {"add": x + y, "sub": x - y, "mul": x * y, "neg": -x}[opcode]


def overflow_error(kernel: str, op, pid, lane: tuple, x: int, y: int, exact: int) -> IntegerOverflowError:
    wrapped = (exact - INT32_MIN) % (1 << 32) + INT32_MIN
    expression = f"-({x})" if op.opcode == "neg" else f"{x} {SYMBOL[op.opcode]} {y}"
    message = render_location(
        op.loc, f"int32 overflow in kernel '{kernel}', program {pid}{lane_text(lane)}: "
                f"{expression} = {exact} does not fit in int32 (it would wrap to {wrapped})",
        "compute in int64 (e.g. offs = pid.to(tl.int64) * stride) or keep the values smaller")
    return IntegerOverflowError(message, loc=op.loc, program_ids=[pid], kernel=kernel)


def division_error(kernel: str, op, pid, lane: tuple, x) -> DivisionByZeroError:
    message = render_location(
        op.loc, f"integer division by zero in kernel '{kernel}', program {pid}{lane_text(lane)}: "
                f"{x} {SYMBOL[op.opcode]} 0",
        "a GPU gives -1 for x // 0 and x for x % 0 without complaint; guard the divisor "
        "(e.g. tl.where(d != 0, x // d, 0))")
    return DivisionByZeroError(message, loc=op.loc, program_ids=[pid], kernel=kernel)


def integer_range(dtype) -> tuple[int, int]:
    """The lowest and highest value of the integer type ``dtype`` (a tritium dtype)."""
    bits = dtype.primitive_bitwidth
    if dtype.is_int_signed():
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def conversion_error(kernel: str, op, pid, lane: tuple, value: float, src, dst) -> InvalidConversionError:
    low, high = integer_range(dst)
    message = render_location(
        op.loc, f"invalid conversion in kernel '{kernel}', program {pid}{lane_text(lane)}: "
                f"{value!r} ({src}) has no {dst} value (valid: {low}..{high})",
        "a GPU saturates (NaN -> 0, inf -> the largest value); clamp or mask the value first")
    return InvalidConversionError(message, loc=op.loc, program_ids=[pid], kernel=kernel)


def race_error(kernel: str, loc, first, second, tensor: str, offset: int, lane: tuple,
               program_order: bool) -> RaceError:
    """Programs ``first`` and ``second`` (program ids) both stored to element ``offset`` of the
    argument ``tensor``; ``second`` stores it at ``loc``, in block lane ``lane``."""
    why = (" with no synchronisation between them (no release by the first that the second acquired)"
           if program_order else " without atomics")
    message = render_location(
        loc, f"data race in kernel '{kernel}': programs {first} and {second} both store to element {offset} "
             f"of '{tensor}'{why}; program {second} stores it here{lane_text(lane)}, and on a GPU the value "
             "left there depends on which program lands last",
        "give each program its own elements, combine the values with tl.atomic_add/atomic_max/..., "
        "or order the stores with a lock (tl.atomic_cas to take it, tl.atomic_xchg to release it)")
    return RaceError(message, loc=loc, program_ids=[first, second], kernel=kernel, tensor=tensor, offset=offset)


def alias_groups(ranges) -> dict:
    """For the byte ranges ``ranges`` (``key -> (address, nbytes, element_size)``) of a launch's
    pointer arguments: ``key -> (keys of the ranges sharing its bytes, lowest address, elements
    spanned)``, for each range that overlaps another of the same element size and alignment (their
    stores are recorded in one array). Ranges that overlap none are left out; so are overlaps of
    different element sizes, which keep records of their own."""
    groups: dict = {}
    by_size: dict = {}
    for key, (address, nbytes, size) in ranges.items():
        size = max(1, size)
        if nbytes > 0:
            by_size.setdefault((size, address % size), []).append((address, nbytes, key))
    for (size, _), members in by_size.items():
        members.sort(key=lambda m: m[0])
        run = [members[0]]
        end = members[0][0] + members[0][1]
        for member in members[1:] + [None]:
            if member is not None and member[0] < end:
                run.append(member)
                end = max(end, member[0] + member[1])
                continue
            if len(run) > 1:
                start = run[0][0]
                entry = ([m[2] for m in run], start, -(-(end - start) // size))
                groups.update({m[2]: entry for m in run})
            if member is not None:
                run, end = [member], member[0] + member[1]
    return groups
