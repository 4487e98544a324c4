"""tritium's exceptions and the one function that renders a source position for any of them.

Every message has the same shape: ``file:line:col``, what went wrong, the source line, a
caret under the column, and (when there is one) what to do instead.
"""
from __future__ import annotations

import linecache
from typing import Optional


def _source_with_caret(loc) -> str:
    source = linecache.getline(loc.file, loc.line).rstrip("\n")
    return f"\n    {source.rstrip()}\n    {' ' * loc.col}^" if source.strip() else ""


def render_location(loc, message: str, hint: Optional[str] = None) -> str:
    """``file:line:col: message``, then the source line with a caret, then the hint."""
    if loc is None:
        text = message
    else:
        where = f"{loc.file}:{loc.line}:{loc.col + 1}"
        if getattr(loc, "function", ""):
            where += f" (in {loc.function})"
        text = f"{where}: {message}"
        text += _source_with_caret(loc)
        site = getattr(loc, "inlined_at", None)
        while site is not None:  # the @jit helper's call sites, innermost first
            text += f"\n  called from {site.file}:{site.line}:{site.col + 1}"
            if getattr(site, "function", ""):
                text += f" (in {site.function})"
            text += _source_with_caret(site)
            site = site.inlined_at
    if hint:
        text += f"\nhint: {hint}"
    return text


class TritonError(Exception):
    """Base class of every error tritium raises about a user's kernel or launch."""

    # A cause whose text the message already shows (a typing error of an op, rendered at the
    # kernel's line) is kept where code reads ``error.__cause__`` (Triton's tests do), but not
    # printed a second time under the error: Python's traceback printer reads the exception's cause
    # slot, which ``show_cause_once`` leaves empty.
    @property
    def __cause__(self):
        quiet = self.__dict__.get("_quiet_cause")
        return quiet if quiet is not None else BaseException.__cause__.__get__(self)

    @__cause__.setter
    def __cause__(self, value):
        self.__dict__.pop("_quiet_cause", None)
        BaseException.__cause__.__set__(self, value)


TritiumError = TritonError


def show_cause_once(error: TritonError) -> Optional[BaseException]:
    """The cause to chain when re-raising ``error``: None (the cause kept quietly, see TritonError)
    when the message already includes the cause's text; an ``InternalError`` keeps its traceback."""
    cause = error.__cause__
    if cause is None or isinstance(error, InternalError):
        return cause
    text = str(cause)
    if text and text in str(error):
        error.__dict__["_quiet_cause"] = cause
        return None
    return cause


class InterpreterError(TritonError):
    """An error in a kernel run by an interpreter, as Triton's interpreter (``TRITON_INTERPRET=1``)
    reports any exception the kernel's code raises. tritium always interprets, so its
    ``CompilationError`` is one: code written for Triton's interpreter (``except InterpreterError``)
    and for compiled Triton (``except CompilationError``) both catch a kernel's mistakes."""


class CompilationError(InterpreterError):
    """The kernel cannot be compiled: the message points at the offending source line.

    ``error`` is the short description; ``loc`` the location; ``hint`` what to do instead.
    """

    def __init__(self, loc, error: str, hint: Optional[str] = None):
        self.loc = loc
        self.error = error
        self.hint = hint
        super().__init__(render_location(loc, error, hint))


class NotLoweredError(CompilationError):
    """A backend cannot lower an op of this kernel yet. When that backend was chosen by default
    (not by TRITIUM_BACKEND), the kernel runs on the interpreter instead, with a note."""


_noted_fallbacks: set = set()


def note_interpreter_fallback(kernel: str, backend: str, error: NotLoweredError) -> None:
    """Once per kernel and op: a warning that the kernel runs on the interpreter, because ``backend``
    (chosen by default) cannot lower ``error``'s op."""
    import warnings

    key = (kernel, backend, error.error)
    if key in _noted_fallbacks:
        return
    _noted_fallbacks.add(key)
    warnings.warn(f"{error}\nnote: kernel '{kernel}' runs on the interpreter instead (TRITIUM_BACKEND={backend} "
                  "makes this an error)", RuntimeWarning, stacklevel=3)


class CompileTimeAssertionFailure(CompilationError):
    """A ``tl.static_assert`` is false for these constexprs (the autotuner skips such configs)."""


class UnsupportedLanguageConstruct(CompilationError):
    """The kernel uses Python that Triton's language does not have."""


class OutOfResources(TritonError):
    """A kernel needs more of a resource (shared memory, registers) than the device has.

    ``required`` and ``limit`` are amounts of ``name`` ("shared memory", ...). The autotuner
    skips configs that raise it.
    """

    def __init__(self, required, limit, name: str):
        self.required = required
        self.limit = limit
        self.name = name
        super().__init__(f"out of resource: {name}, required: {required}, hardware limit: {limit}; "
                         "reduce the block sizes or num_stages")

    def __reduce__(self):
        return type(self), (self.required, self.limit, self.name)


class PTXASError(TritonError):
    """ptxas rejected generated code (only the cuda backend can raise it)."""


class LaunchError(TritonError, TypeError):
    """A kernel was called the wrong way, or with arguments it cannot take."""


class ArgumentOverflowError(LaunchError, OverflowError):
    """An integer argument that fits in no 64-bit type (Triton raises OverflowError)."""


class LaunchOptionError(LaunchError, AssertionError):
    """A ``num_warps`` that is not a power of 2 (Triton's options assert it)."""


class PointerArgumentError(LaunchError, ValueError):
    """A value that is not a tensor passed where the kernel was compiled for a pointer (Triton's
    launcher raises ValueError for a pointer it cannot use)."""


class ValidationError(TritonError, AssertionError):
    """``TRITIUM_VALIDATE``: a backend's launch wrote other results than the interpreter's."""


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
    """In debug mode: a store or atomic whose address relies on a ``tl.multiple_of`` /
    ``tl.max_contiguous`` / ``tl.max_constancy`` hint that is false for its active lanes
    (docs/language.md, "Hints"; without debug mode, and for loads, a warning)."""


class InternalError(TritonError, RuntimeError):
    """A bug in tritium, not in the kernel: an unexpected exception inside the compiler, the
    interpreter or a backend, re-raised with the kernel, its source line and the IR op being
    compiled or executed (the original exception is chained as ``__cause__``)."""

    def __init__(self, message: str, *, kernel: str = "", loc=None, opcode: str = ""):
        self.kernel = kernel
        self.loc = loc
        self.opcode = opcode
        super().__init__(message)


def internal_error(error: BaseException, *, kernel: str, loc, opcode: str, where: str) -> InternalError:
    """The InternalError for ``error`` raised while ``where`` ('the interpreter', 'the cpu backend')
    handled the ``opcode`` op of ``kernel`` at ``loc``."""
    what = f"the {opcode} op of kernel '{kernel}'" if opcode else f"kernel '{kernel}'"
    message = render_location(loc, f"internal error in {where} while handling {what}: "
                                   f"{type(error).__name__}: {error}",
                              "this is a bug in tritium, not in the kernel; please report it with the kernel "
                              "(another backend may run it meanwhile: TRITIUM_BACKEND=...)")
    return InternalError(message, kernel=kernel, loc=loc, opcode=opcode)


class KernelFault(TritonError):
    """A fault a running kernel made, found by the interpreter's checks (most of them in debug mode,
    ``TRITIUM_DEBUG=1``). ``loc`` is the kernel source position; ``program_ids`` the (x, y, z) ids
    of the programs involved; ``program_id`` the first of them."""

    def __init__(self, message: str, *, loc, program_ids, kernel: str = ""):
        self.loc = loc
        self.kernel = kernel
        self.program_ids = [tuple(p) for p in program_ids]
        self.program_id = self.program_ids[0] if self.program_ids else None
        super().__init__(message)


class RaceError(KernelFault, RuntimeError):
    """Two different programs stored to one address in one launch, without atomics or a
    synchronisation between them: on a GPU the result depends on which one lands last.

    ``program_ids`` holds (earlier writer, later writer); ``tensor`` and ``offset`` name the address
    (argument name, element offset from the argument's pointer)."""

    def __init__(self, message: str, *, loc, program_ids, kernel: str = "", tensor: str = "", offset: int = 0):
        self.tensor = tensor
        self.offset = offset
        super().__init__(message, loc=loc, program_ids=program_ids, kernel=kernel)


class IntegerOverflowError(KernelFault, OverflowError):
    """An int32 add, sub or mul whose exact result does not fit in int32 (debug mode)."""


class DivisionByZeroError(KernelFault, ZeroDivisionError):
    """An integer ``//`` or ``%`` by zero (debug mode; a GPU gives -1 and the dividend)."""


class InvalidConversionError(KernelFault, ValueError):
    """A float -> int conversion of NaN, an infinity, or a value outside the target's range (debug
    mode; a GPU saturates and turns NaN into 0)."""


class DeadlockError(KernelFault, RuntimeError):
    """A ``while`` loop that can never exit: an iteration repeated the previous one exactly (same
    carried values, same values read from memory), so every live program spins on memory that no
    running program can change."""


class SettingError(TritonError, ValueError):
    """A ``TRITIUM_*`` environment setting holds a value tritium does not accept; the message names
    the setting and the values it takes."""
