"""Checks and kernels several test files share: that an error points at a kernel's line, and a
kernel whose odd programs never leave their loop."""
from __future__ import annotations

import inspect
from pathlib import Path

import tritium as triton
import tritium.language as tl


def line_of(kernel, text: str) -> int:
    """The file line of the first source line of ``kernel`` containing ``text``."""
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def assert_points_at(error, kernel, text: str) -> None:
    """``error`` names the line of ``kernel`` holding ``text``: its location, and file:line, the
    source line and a caret in its message."""
    line = line_of(kernel, text)
    assert error.loc.line == line
    message = str(error)
    assert f"{Path(inspect.getsourcefile(kernel.fn)).name}:{line}:" in message and text in message and "^" in message


@triton.jit
def spin_unless_even(out_ptr):
    pid = tl.program_id(0)
    x = pid % 2
    while x != 0:  # odd programs never leave
        x = x * 1
    tl.store(out_ptr + pid, pid)
