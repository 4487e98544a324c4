"""Quick code first, optimized code when it is ready.

A kernel's first compilation (nothing in the disk cache) makes *quick* code: LLVM with a handful of
passes and its fast instruction selector (``host.compile_quick``: scalar loops, 5-8x less LLVM time
than the full pipeline, 3-10x slower to run). The kernel launches with it at once, and ``request``
queues the full compilation (``host.compile_to_object(background=True)``, in a compile child of its
own), which one background thread runs, the kernel launched most often first. It is asked for at
the kernel's second launch, or at its first when that one has enough work to go to the worker
pool (``defer``, then ``request``): a kernel launched once on a few lanes, as most tests launch
theirs, is never compiled twice. When the optimized
object arrives, the executable loads it and switches to it (``Executable.install_optimized``): the
next launch uses it, and so do the remaining chunks of a launch running at that moment (the worker
pool reads the grid function before each chunk). Both tiers are compiled from the same LLVM IR
without fast-math, so they compute the same bits; only their speed differs.

``wait(timeout)`` asks for every deferred one and returns once no full compilation is queued or
running (benchmarks call it before timing; ``triton.testing.do_bench`` does too). ``TRITIUM_QUICK_COMPILE=0`` turns the quick tier off.
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Optional

_condition = threading.Condition()
_deferred: dict = {}  # executable token -> (weak reference to it, its LLVM IR): not asked for yet
_pending: list = []  # (weak reference to an executable, its LLVM IR), waiting for the full compilation
_running = 0  # full compilations in progress (0 or 1)
_thread: Optional[threading.Thread] = None


def defer(executable, llvm_ir: str) -> None:
    """Keeps ``executable``'s LLVM IR until ``request`` (or ``wait``) queues its full compilation."""
    with _condition:
        _deferred[executable.token] = (weakref.ref(executable), llvm_ir)


def request(executable) -> None:
    """Queues the full compilation of ``executable``, deferred before; its result is installed in it."""
    with _condition:
        _queue(executable.token)


def _queue(token: int) -> None:
    """Moves a deferred entry to the queue and makes sure the thread serving it runs. Called holding
    the condition."""
    global _thread
    entry = _deferred.pop(token, None)
    if entry is None:
        return
    _pending.append(entry)
    if _thread is None or not _thread.is_alive():
        _thread = threading.Thread(target=_serve, name="tritium-cpu-optimizer", daemon=True)
        _thread.start()
    _condition.notify_all()


def _next():
    """(executable, LLVM IR) of the queued compilation of the kernel launched most often (the
    earliest queued among equals); entries whose executable is gone are dropped. Called holding the
    condition."""
    global _running
    alive = [(ref(), ref, llvm_ir) for ref, llvm_ir in _pending]
    alive = [entry for entry in alive if entry[0] is not None]  # strong references from here on
    _pending[:] = [(ref, llvm_ir) for _, ref, llvm_ir in alive]
    if not alive:
        return None
    best = max(range(len(alive)), key=lambda i: (alive[i][0].launches, -i))
    executable, _, llvm_ir = alive[best]
    del _pending[best]
    _running += 1
    return executable, llvm_ir


def _serve() -> None:
    global _running
    from ..llvm import host

    while True:
        with _condition:
            entry = _next()
            while entry is None:
                _condition.notify_all()  # wait() may be watching for an empty queue
                _condition.wait()
                entry = _next()
        executable, llvm_ir = entry
        del entry
        try:
            executable.install_optimized(host.compile_to_object(llvm_ir, background=True))
        except BaseException as failure:  # noqa: BLE001 - the quick code stays; this thread serves every kernel
            _report(executable, failure)
        finally:
            executable = None
            with _condition:
                _running -= 1
                _condition.notify_all()


def _report(executable, failure: BaseException) -> None:
    """Says that ``executable`` keeps its quick code, and why (LLVM failed on the full compilation,
    or loading its object did)."""
    import warnings

    try:
        warnings.warn(f"kernel '{executable.fn.name}' keeps its quick, unoptimized code on the cpu backend: "
                      f"{type(failure).__name__}: {failure}", RuntimeWarning, stacklevel=2)
    except BaseException:  # noqa: BLE001, S110 - warnings turned into errors: nothing more to say
        pass


def wait(timeout: Optional[float] = None) -> bool:
    """Queues every deferred full compilation, then blocks until none is queued or running; False
    when ``timeout`` (seconds) passed first."""
    with _condition:
        for token in list(_deferred):
            _queue(token)
        return _condition.wait_for(lambda: _running == 0 and not any(ref() is not None for ref, _ in _pending),
                                   timeout)


def _forget() -> None:
    """In a forked child: the parent's queue and thread are not this process's."""
    global _condition, _thread, _running
    _condition = threading.Condition()
    _deferred.clear()
    _pending.clear()
    _running = 0
    _thread = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)
