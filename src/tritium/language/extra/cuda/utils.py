"""``tl.extra.cuda``'s special registers and launch facts, as Triton has them: ``globaltimer()``,
``smid()``, ``num_threads()``, ``num_warps()``.

On the CUDA backend ``globaltimer`` and ``smid`` read ``%globaltimer`` and ``%smid``. The host
backends give: ``globaltimer``, the host's real-time clock in nanoseconds since the Unix epoch (so
differences are elapsed nanoseconds, as on a GPU); ``smid``, the index of the CPU core running the
program (0 where the C library cannot tell). ``num_threads`` and ``num_warps`` are compile-time
constants from the launch's ``num_warps`` on every backend (threads: 32 per warp).
"""
from __future__ import annotations

from ....compiler.ir import types as T
from ...core import _semantic, builtin, constexpr


@builtin
def globaltimer():
    """A scalar int64: the GPU's global nanosecond timer (the host's real-time clock in ns on the
    host backends). Each call reads it again."""
    return _semantic()._emit("special_register", [], T.int64, {"name": "globaltimer"})


@builtin
def smid():
    """A scalar int32: the index of the multiprocessor running this program (the CPU core's index on
    the host backends)."""
    return _semantic()._emit("special_register", [], T.int32, {"name": "smid"})


@builtin
def num_warps():
    """The launch's ``num_warps``, a constexpr."""
    sem = _semantic()
    sem.num_warps_read = True
    return constexpr(sem.num_warps)


@builtin
def num_threads():
    """The number of threads of a program, ``num_warps * 32``, a constexpr."""
    sem = _semantic()
    sem.num_warps_read = True
    return constexpr(sem.num_warps * 32)
