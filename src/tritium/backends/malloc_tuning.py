"""Keeps glibc's malloc from handing freed arrays back to the OS, for the backends on host memory.

The interpreter and the CPU backend call ``tune_once`` at every launch. Every op of an interpreter
batch allocates arrays of the same few sizes (a value of the batch: hundreds of KB to a few MB) and
frees them moments later. With glibc's defaults, memory freed at the top of the heap beyond a small
threshold is returned to the kernel, and the next array of that size is faulted in again, page by
page, zero-filled: measured here, that made a fp32 multiply of a batch value 6-10x slower than the
same multiply into memory already mapped, and causal attention 2x slower overall. Raising the mmap
and trim thresholds lets freed blocks be reused instead (on the CPU backend, the outputs a caller
allocates for each launch). The process then keeps up to ``_TRIM_THRESHOLD`` of freed memory
mapped for reuse rather than returning it at once; ``TRITIUM_MALLOC_TUNING=0`` leaves malloc as it
is.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import threading

from .. import config

# mallopt(3) parameters, as numbered in glibc's <malloc.h>.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 << 20  # blocks below 32 MB come from the heap (glibc's own ceiling for this)
_TRIM_THRESHOLD = 256 << 20  # free memory at the top of the heap is returned past 256 MB

_lock = threading.Lock()
_state = {"done": False, "tuned": False}


def tune_once() -> bool:
    """Raises glibc's thresholds, once per process; True when they were raised (glibc only)."""
    if _state["done"]:  # every launch asks: answer without the lock
        return _state["tuned"]
    with _lock:
        if not _state["done"]:
            _state["done"] = True
            _state["tuned"] = config.malloc_tuning() and _raise_thresholds()
        return _state["tuned"]


def _raise_thresholds() -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 -- glibc only: other C libraries number mallopt's options otherwise
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
