"""Atomic loads and stores: ``tl.atomic_load`` and ``tl.atomic_store`` (Triton 3.9).

Each lane is one atomic access. ``sem="acquire"`` (the load's default) orders the program's later
accesses after the load and after the writes of the release it reads from; ``sem="release"`` (the
store's default) orders the program's earlier accesses before the store; ``"relaxed"`` orders
nothing. ``scope`` is the set of threads that observe the ordering: ``"gpu"`` (default), ``"cta"``
or ``"sys"``. A kernel whose programs wait on one another through them (a flag one program sets with
``atomic_store`` and another spins on with ``atomic_load``) is found by the effects analysis and run
one program at a time, in order, on the host backends.
"""
from __future__ import annotations

from .core import _semantic, builtin, unwrap


@builtin
def atomic_load(pointer, mask=None, sem=None, scope=None):
    """Atomically reads the elements ``pointer`` points to (a scalar pointer or a block of them).
    ``mask``: lanes where it is false read nothing and give 0. ``sem``: ``"acquire"`` (default) or
    ``"relaxed"``; ``scope``: ``"gpu"`` (default), ``"cta"`` or ``"sys"``."""
    return _semantic().atomic_load(pointer, unwrap(mask), unwrap(sem), unwrap(scope))


@builtin
def atomic_store(pointer, val, mask=None, sem=None, scope=None):
    """Atomically writes ``val`` (converted to the pointer's element type) where ``pointer`` points.
    ``mask``: lanes where it is false write nothing. ``sem``: ``"release"`` (default) or
    ``"relaxed"``; ``scope``: ``"gpu"`` (default), ``"cta"`` or ``"sys"``."""
    return _semantic().atomic_store(pointer, val, unwrap(mask), unwrap(sem), unwrap(scope))
