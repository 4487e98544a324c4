"""tritium's exceptions and the one function that renders a source position for any of them.

Every message has the same shape: ``file:line:col``, what went wrong, the source line, a
caret under the column, and (when there is one) what to do instead.
"""
from __future__ import annotations

import linecache
from typing import Optional


def render_location(loc, message: str, hint: Optional[str] = None) -> str:
    """``file:line:col: message``, then the source line with a caret, then the hint."""
    if loc is None:
        text = message
    else:
        where = f"{loc.file}:{loc.line}:{loc.col + 1}"
        if getattr(loc, "function", ""):
            where += f" (in {loc.function})"
        text = f"{where}: {message}"
        source = linecache.getline(loc.file, loc.line).rstrip("\n")
        if source.strip():
            text += f"\n    {source.rstrip()}\n    {' ' * loc.col}^"
    if hint:
        text += f"\nhint: {hint}"
    return text


class TritonError(Exception):
    """Base class of every error tritium raises about a user's kernel or launch."""


TritiumError = TritonError


class CompilationError(TritonError):
    """The kernel cannot be compiled: the message points at the offending source line.

    ``error`` is the short description; ``loc`` the location; ``hint`` what to do instead.
    """

    def __init__(self, loc, error: str, hint: Optional[str] = None):
        self.loc = loc
        self.error = error
        self.hint = hint
        super().__init__(render_location(loc, error, hint))


class LaunchError(TritonError, TypeError):
    """A kernel was called the wrong way, or with arguments it cannot take."""


class OutOfBoundsError(TritonError, IndexError):
    """A load, store or atomic touched memory outside the tensor its pointer came from.

    Attributes: ``kernel``, ``loc``, ``program_id`` (x, y, z), ``offset`` (in elements of the
    tensor), ``extent`` (the tensor's number of elements), ``tensor`` (argument name),
    ``access`` ("load", "store", ...).
    """

    def __init__(self, message: str, *, kernel: str, loc, program_id, offset: int, extent: int,
                 tensor: str, access: str):
        self.kernel = kernel
        self.loc = loc
        self.program_id = program_id
        self.offset = offset
        self.extent = extent
        self.tensor = tensor
        self.access = access
        super().__init__(message)


class DeviceAssertionError(TritonError, AssertionError):
    """A ``tl.device_assert`` failed in some program."""

    def __init__(self, message: str, *, loc, program_id):
        self.loc = loc
        self.program_id = program_id
        super().__init__(message)


class HintViolationError(TritonError, ValueError):
    """A ``tl.multiple_of`` / ``tl.max_contiguous`` hint is false for the values at run time."""
