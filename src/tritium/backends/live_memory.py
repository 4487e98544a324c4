"""The host memory a kernel may reach through an address it made from an integer (``int_to_ptr``):
the tensors alive in the process, not only the launch's arguments.

A kernel that loads raw addresses (a table of ``data_ptr()`` values, as grouped GEMMs pass their
operands) dereferences memory no argument names. Such an access is valid when its bytes lie inside
a live tensor, and an ``OutOfBoundsError`` when they lie inside none. The live tensors are found
when a launch needs them (only kernels with an ``int_to_ptr`` op do): every torch tensor on the CPU
that the garbage collector tracks (each one counts with its whole storage, so the bytes of any view
of it are inside), and the launch's own tensor arguments (numpy arrays among them). Memory held
only by C++ code (an autograd graph's saved tensors that no Python object refers to) and numpy
arrays that are not arguments are not found: an access there is reported as outside every tensor.
"""
from __future__ import annotations

import gc
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class LiveRange:
    """The bytes [low, high) of a live tensor's storage; ``owner`` keeps it alive while in use."""

    low: int
    high: int
    owner: object
    element_size: int


def live_ranges() -> list[LiveRange]:
    """The storages of the process's CPU torch tensors, sorted by address, overlaps merged into the
    first storage that holds them (one storage per address)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    found: dict[int, LiveRange] = {}
    for obj in gc.get_objects():
        if not issubclass(type(obj), torch.Tensor):  # type(): no proxy object's __class__ is asked
            continue
        try:
            if obj.device.type != "cpu" or obj.is_sparse:
                continue
            storage = obj.untyped_storage()
            low, size = int(storage.data_ptr()), int(storage.nbytes())
        except Exception:  # noqa: BLE001, S112 - meta, fake or other tensors with no host memory of their own
            continue
        if low == 0 or size == 0:
            continue
        known = found.get(low)
        if known is None or known.high < low + size:
            found[low] = LiveRange(low, low + size, storage, obj.element_size())
    ranges = sorted(found.values(), key=lambda r: r.low)
    merged: list[LiveRange] = []
    for r in ranges:
        if merged and r.low < merged[-1].high:
            if r.high > merged[-1].high:
                last = merged[-1]
                merged[-1] = LiveRange(last.low, r.high, (last.owner, r.owner), last.element_size)
            continue
        merged.append(r)
    return merged


def find(ranges: list[LiveRange], address: int, size: int):
    """The range holding the ``size`` bytes at ``address``, or None (``ranges`` sorted by address)."""
    lo, hi = 0, len(ranges)
    while lo < hi:
        mid = (lo + hi) // 2
        if ranges[mid].high <= address:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(ranges) and ranges[lo].low <= address and address + size <= ranges[lo].high:
        return ranges[lo]
    return None
