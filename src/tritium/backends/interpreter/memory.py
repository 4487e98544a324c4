"""Checked access to the memory of a launch's tensor arguments.

Pointers are 64-bit *tagged addresses*: ``allocation_id << 40 | byte offset``. Every tensor
argument gets its own 1 TiB segment, so pointer arithmetic stays plain integer arithmetic
while each pointer still knows which tensor it came from. Before any load or store touches
memory, every active lane is checked against its tensor's extent and alignment; a bad lane
raises ``OutOfBoundsError`` and nothing is written.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ...errors import OutOfBoundsError, render_location
from ...numerics import arithmetic
from ..reports import NO_TENSOR

TAG_SHIFT = 40
_HALF_SEGMENT = 1 << (TAG_SHIFT - 1)
# the tag of an address made from an integer that lies in no live tensor: no allocation has it
UNMAPPED_TAG = (1 << 22) - 1


@dataclass
class Allocation:
    """The bytes a tensor argument may touch."""

    name: str  # the kernel parameter it was passed as
    address: int  # real address of its lowest byte
    nbytes: int
    pointer_offset: int  # byte offset of the element the kernel's pointer points at
    element_size: int
    keepalive: object = None
    _bytes: Optional[np.ndarray] = None
    _views: dict = field(default_factory=dict)

    @property
    def extent(self) -> int:
        """Number of elements from the kernel's pointer to the end of the allocation."""
        return max(0, (self.nbytes - self.pointer_offset) // max(1, self.element_size))

    def typed(self, dtype: np.dtype) -> np.ndarray:
        view = self._views.get(dtype)
        if view is None:
            if self._bytes is None:
                if self.nbytes == 0:
                    self._bytes = np.zeros(0, dtype=np.uint8)
                else:
                    buffer = (ctypes.c_uint8 * self.nbytes).from_address(self.address)
                    self._bytes = np.frombuffer(buffer, dtype=np.uint8)
            usable = self.nbytes - self.nbytes % dtype.itemsize
            view = self._bytes[:usable].view(dtype)
            self._views[dtype] = view
        return view


@dataclass
class Window:
    """An in-bounds affine block of element indices into one allocation."""

    allocation: Allocation
    start: int  # element index of program 0's first lane
    program_step: Optional[int]  # element step between consecutive programs; None when irregular
    lane_strides: tuple  # element stride along each block axis
    starts: Optional[np.ndarray]  # each program's first element, when the step is irregular
    # (programs per row, step between rows, step along a row) when the starts form a 2-D lattice,
    # as a 2-D grid's tiles do
    lattice: Optional[tuple] = None


def _lattice(starts: np.ndarray, period: int):
    if period < 2 or starts.size % period or starts.size == period:
        return None
    rows = starts.reshape(-1, period)
    along, across = int(rows[0, 1] - rows[0, 0]), int(rows[1, 0] - rows[0, 0])
    expected = rows[0, 0] + np.arange(rows.shape[0])[:, None] * across + np.arange(period)[None, :] * along
    return (period, across, along) if np.array_equal(rows, expected) else None


class Memory:
    """The allocations of one launch and the checked gather/scatter over them."""

    def __init__(self, kernel_name: str):
        self.kernel_name = kernel_name
        self.allocations: list[Allocation] = []
        self.checks = None  # debug mode's checks.DebugChecks: sees every store and atomic before/after it lands
        self._live = None  # the process's live tensors (live_memory.live_ranges), found at the first need
        self._live_tags: dict[int, int] = {}  # a live range's low address -> the tag of its allocation

    # addresses <-> tagged pointers (ptr_to_int, int_to_ptr) ------------------------------------------
    def addresses(self, pointers: np.ndarray) -> np.ndarray:
        """The real byte addresses of tagged pointers (what a GPU's ptr_to_int gives); a null pointer
        is 0."""
        tags, offsets = self.decode(np.asarray(pointers, dtype=np.int64))
        bases = np.array([0] + [a.address for a in self.allocations], dtype=np.int64)
        known = (tags >= 0) & (tags < bases.size)
        return np.where(known, bases[np.clip(tags, 0, bases.size - 1)] + offsets, offsets)

    def pointers(self, addresses: np.ndarray, element_size: int) -> np.ndarray:
        """Tagged pointers for real addresses (int_to_ptr): an address inside (or just past) a tensor
        argument points into it; else one inside a live tensor of the process points into that
        tensor, which joins the launch's allocations; else it points nowhere (an access through it is
        an OutOfBoundsError), and 0 stays the null pointer."""
        addresses = np.asarray(addresses, dtype=np.int64)
        result = np.zeros(addresses.shape, dtype=np.int64)
        todo = addresses != 0
        for tag, alloc in enumerate(self.allocations, start=1):
            if not todo.any():
                return result
            inside = todo & (addresses >= alloc.address) & (addresses <= alloc.address + alloc.nbytes)
            if inside.any():
                result[inside] = (tag << TAG_SHIFT) + (addresses[inside] - alloc.address)
                todo &= ~inside
        if not todo.any():
            return result
        from ..live_memory import find, live_ranges

        if self._live is None:
            self._live = live_ranges()
        for address in np.unique(addresses[todo]):
            found = find(self._live, int(address), 0)
            lanes = todo & (addresses == address)
            if found is None:
                result[lanes] = (UNMAPPED_TAG << TAG_SHIFT) + (int(address) & ((1 << TAG_SHIFT) - 1))
                continue
            tag = self._live_tags.get(found.low)
            if tag is None:
                tag = self._live_tags[found.low] = len(self.allocations) + 1
                self.allocations.append(Allocation(name=f"the tensor at {found.low:#x}", address=found.low,
                                                   nbytes=found.high - found.low, pointer_offset=0,
                                                   element_size=element_size, keepalive=found.owner))
            result[lanes] = (tag << TAG_SHIFT) + (int(address) - found.low)
        return result

    def add(self, allocation: Allocation) -> int:
        """Registers an allocation; returns the tagged pointer to its first element."""
        self.allocations.append(allocation)
        tag = len(self.allocations)
        return (tag << TAG_SHIFT) + allocation.pointer_offset

    @staticmethod
    def decode(pointers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tags = (pointers + _HALF_SEGMENT) >> TAG_SHIFT
        return tags, pointers - (tags << TAG_SHIFT)

    def _check(self, pointers, mask, itemsize, access, loc, program_of_lane: Callable) -> list[tuple]:
        """Validates every lane where ``mask`` holds; returns (allocation, lanes, element index) groups.

        ``lanes`` is the boolean mask of the group's lanes, or True for all of them.
        """
        fast = self._check_single_allocation(pointers, mask, itemsize)
        if fast is not None:
            return fast
        return self._check_lanes(pointers, mask, itemsize, access, loc, program_of_lane)

    def _check_single_allocation(self, pointers, mask, itemsize):
        """The common case, in a few passes: every selected lane is in bounds of one allocation.

        Returns None when that is not so; the lane-by-lane check then finds what is wrong.
        """
        if pointers.size == 0:
            return []
        if mask is None:
            sample = int(pointers.flat[0])
        else:
            first = int(np.argmax(mask.reshape(-1)))
            if not mask.reshape(-1)[first]:
                return []  # no lane selected
            sample = int(pointers.reshape(-1)[first])
        tag = (sample + _HALF_SEGMENT) >> TAG_SHIFT
        if not 1 <= tag <= len(self.allocations):
            return None
        alloc = self.allocations[tag - 1]
        offsets = pointers - (tag << TAG_SHIFT)
        selected = offsets if mask is None else np.where(mask, offsets, 0)
        if selected.min() < 0 or selected.max() > alloc.nbytes - itemsize:
            return None
        if itemsize > 1 and np.any(selected & (itemsize - 1)):
            return None
        return [(alloc, True if mask is None else mask, selected >> (itemsize.bit_length() - 1))]

    def _check_lanes(self, pointers, mask, itemsize, access, loc, program_of_lane: Callable) -> list[tuple]:
        tags, offsets = self.decode(pointers)
        groups = []
        selected_tags = tags[mask] if mask is not None else tags.reshape(-1)
        unique = np.unique(selected_tags) if selected_tags.size else np.zeros(0, dtype=np.int64)
        for tag in unique:
            tag = int(tag)
            lanes = (tags == tag) if mask is None else (mask & (tags == tag))
            if not 1 <= tag <= len(self.allocations):
                self._raise(None, offsets, lanes, itemsize, access, loc, program_of_lane, tag)
            alloc = self.allocations[tag - 1]
            off = offsets
            bad = lanes & ((off < 0) | (off > alloc.nbytes - itemsize) | (off % itemsize != 0))
            if bad.any():
                self._raise(alloc, offsets, bad, itemsize, access, loc, program_of_lane, tag)
            groups.append((alloc, lanes, off // itemsize))
        return groups

    def _raise(self, alloc, offsets, bad, itemsize, access, loc, program_of_lane, tag):
        flat = np.flatnonzero(bad.reshape(-1))
        first = int(flat[0])
        lane_index = np.unravel_index(first, bad.shape)
        program = program_of_lane(int(lane_index[0]))
        same_program = bad[lane_index[0]]
        count = int(np.count_nonzero(same_program))
        byte_offset = int(offsets.reshape(-1)[first] if offsets.shape == bad.shape
                          else np.broadcast_to(offsets, bad.shape).reshape(-1)[first])
        lane = tuple(int(i) for i in lane_index[1:])
        lane_text = f"lane {lane[0] if len(lane) == 1 else lane}" if lane else "the scalar access"
        if alloc is None:
            what = "a null pointer" if tag == 0 else NO_TENSOR
            message = render_location(loc, f"out-of-bounds {access} in kernel '{self.kernel_name}': "
                                      f"program {program}, {lane_text} dereferences {what}")
            raise OutOfBoundsError(message, kernel=self.kernel_name, loc=loc, program_id=program,
                                   offset=byte_offset, extent=0, tensor="?", access=access)
        element_offset = (byte_offset - alloc.pointer_offset) // alloc.element_size
        extent = alloc.extent
        if byte_offset % itemsize == 0 or byte_offset < 0 or byte_offset > alloc.nbytes - itemsize:
            problem = (f"element offset {element_offset} of '{alloc.name}', a tensor of {extent} elements "
                       f"(valid offsets 0..{extent - 1})")
        else:
            problem = f"a misaligned address (byte {byte_offset}) inside '{alloc.name}'"
        others = f"; {count} lanes of this program are out of bounds" if count > 1 else ""
        hint = ("mask the access: compute mask = offsets < n and pass mask=mask"
                + (", other=0.0 to tl.load" if access == "load" else " to tl.store"))
        message = render_location(loc, f"out-of-bounds {access} in kernel '{self.kernel_name}': program {program}, "
                                  f"{lane_text} touches {problem}{others}", hint)
        raise OutOfBoundsError(message, kernel=self.kernel_name, loc=loc, program_id=program,
                               offset=element_offset, extent=extent, tensor=alloc.name, access=access)

    def strided_window(self, pointers, itemsize: int, batch: int, period: int = 0):
        """For an affine block of pointers that stays inside one tensor, a ``Window`` -- else None.

        The whole window must be in bounds and aligned, so any lane may be touched without a
        per-lane check.
        """
        base = pointers.base
        tag = (int(base[0]) + _HALF_SEGMENT) >> TAG_SHIFT
        if not 1 <= tag <= len(self.allocations):
            return None
        alloc = self.allocations[tag - 1]
        low, high = pointers.extremes()
        low -= tag << TAG_SHIFT
        high -= tag << TAG_SHIFT
        if low < 0 or high > alloc.nbytes - itemsize:
            return None
        offsets = base - (tag << TAG_SHIFT)
        if any(s % itemsize for s in pointers.strides) or np.any(offsets % itemsize):
            return None
        lane_strides = tuple(s // itemsize for s in pointers.strides)
        starts = offsets // itemsize
        if starts.shape[0] == 1:
            return Window(alloc, int(starts[0]), 0, lane_strides, None)
        steps = np.diff(starts)
        if np.all(steps == steps[0]):
            return Window(alloc, int(starts[0]), int(steps[0]), lane_strides, None)
        lattice = _lattice(starts, period)
        return Window(alloc, int(starts[0]), None, lane_strides, starts, lattice)

    @staticmethod
    def _carrier(dtype: np.dtype) -> np.dtype:
        # as_strided cannot build ml_dtypes arrays (bf16, fp8): stride over same-width integers
        return np.dtype(f"uint{dtype.itemsize * 8}") if dtype.type.__module__.startswith("ml_dtypes") else dtype

    def _window_view(self, window: "Window", dtype, batch: int, shape):
        carrier = self._carrier(dtype)
        data = window.allocation.typed(carrier)
        lead = batch if window.program_step else 1
        strides = (window.program_step or 0,) + window.lane_strides
        view = np.lib.stride_tricks.as_strided(
            data[window.start:], shape=(lead,) + tuple(shape), strides=tuple(s * dtype.itemsize for s in strides),
            writeable=True)
        return view.view(dtype) if carrier is not dtype else view

    def _window_index(self, window: "Window", shape) -> np.ndarray:
        rank = len(shape)
        index = window.starts.reshape((-1,) + (1,) * rank)
        for axis, (n, stride) in enumerate(zip(shape, window.lane_strides)):
            if stride and n > 1:
                index = index + (np.arange(n, dtype=np.int64) * stride).reshape((1,) + (1,) * axis + (n,) + (1,) * (rank - axis - 1))
        return index

    def _gather_rows(self, window: "Window", dtype, shape) -> np.ndarray:
        """The window's elements when programs start at irregular places. Where one block axis runs
        over consecutive elements, whole runs along it are gathered at once (rows of a sliding view
        over memory), several times faster than gathering element by element."""
        data = window.allocation.typed(self._carrier(dtype))
        unit = [axis for axis, (n, s) in enumerate(zip(shape, window.lane_strides)) if s == 1 and n > 1]
        if not unit or data.size < shape[unit[0]]:
            values = data[self._window_index(window, shape)]
        else:
            axis, n = unit[0], shape[unit[0]]
            others = tuple(shape[:axis]) + tuple(shape[axis + 1:])
            outer = Window(window.allocation, window.start, None,
                           window.lane_strides[:axis] + window.lane_strides[axis + 1:], window.starts)
            rows = np.lib.stride_tricks.as_strided(data, shape=(data.size - n + 1, n), strides=(data.itemsize,) * 2,
                                                   writeable=False)
            values = np.moveaxis(rows[self._window_index(outer, others)], -1, axis + 1)
        return values.view(dtype) if values.dtype != dtype else values

    def load_window(self, window: "Window", mask, other, dtype: np.dtype, batch: int, shape) -> np.ndarray:
        if window.starts is None:
            values = np.array(self._window_view(window, dtype, batch, shape))
        elif window.lattice is not None:
            period, across, along = window.lattice
            carrier = self._carrier(dtype)
            data = window.allocation.typed(carrier)
            strides = (across, along) + window.lane_strides
            view = np.lib.stride_tricks.as_strided(
                data[window.start:], shape=(batch // period, period) + tuple(shape),
                strides=tuple(s * dtype.itemsize for s in strides), writeable=False)
            values = view.reshape((batch,) + tuple(shape))
            values = values.view(dtype) if carrier is not dtype else values
        else:
            values = self._gather_rows(window, dtype, shape)
        if mask is None or mask.all():
            return values
        fill = np.zeros((), dtype=dtype) if other is None else other
        return np.where(mask, values, fill).astype(dtype, copy=False)

    def store_window(self, window: "Window", values, dtype: np.dtype, batch: int, shape) -> bool:
        """Writes a whole window when no two lanes share an address; False when they might."""
        if window.starts is not None:
            if self.checks is not None:
                self.checks.before_window_store(window, dtype, batch, shape)
            index = self._window_index(window, shape)
            window.allocation.typed(dtype)[index] = np.broadcast_to(values, index.shape)
            return True
        extents = sorted((abs(s), n) for s, n in zip((window.program_step,) + window.lane_strides,
                                                      (batch,) + tuple(shape)) if n > 1)
        reach = 0
        for stride, n in extents:
            if stride <= reach:
                return False  # lanes could overlap: keep numpy's well-defined fancy assignment
            reach += stride * (n - 1)
        if self.checks is not None:
            self.checks.before_window_store(window, dtype, batch, shape)
        view = self._window_view(window, dtype, batch, shape)
        view[...] = np.broadcast_to(values, view.shape)
        return True

    def load(self, pointers, mask, other, dtype: np.dtype, loc, program_of_lane) -> np.ndarray:
        groups = self._check(pointers, mask, dtype.itemsize, "load", loc, program_of_lane)
        if other is None:
            result = np.zeros(pointers.shape, dtype=dtype)
        else:
            result = np.array(np.broadcast_to(other, pointers.shape), dtype=dtype)
        if len(groups) == 1 and mask is None:
            alloc, lanes, index = groups[0]
            return alloc.typed(dtype)[index]
        for alloc, lanes, index in groups:
            data = alloc.typed(dtype)
            result[lanes] = data[index[lanes]]
        return result

    def store(self, pointers, values, mask, dtype: np.dtype, loc, program_of_lane) -> None:
        groups = self._check(pointers, mask, dtype.itemsize, "store", loc, program_of_lane)
        if self.checks is not None:
            self.checks.before_store(groups, pointers.shape, dtype.itemsize)
        values = np.broadcast_to(values, pointers.shape)
        for alloc, lanes, index in groups:
            data = alloc.typed(dtype)
            if lanes is True:
                data[index] = values
            else:
                data[index[lanes]] = values[lanes]

    def atomic(self, kind: str, pointers, values, compare, mask, dtype: np.dtype, loc, program_of_lane):
        """Read-modify-write in program order, then lane order; returns the values found before each lane's update.

        Lanes that hit the same address are applied one after another: round r applies every lane
        that is the r-th to touch its address, so one round never touches an address twice.
        """
        groups = self._check(pointers, mask, dtype.itemsize, "atomic", loc, program_of_lane)
        old = np.zeros(pointers.shape, dtype=dtype)
        old_flat = old.reshape(-1)
        values = np.broadcast_to(values, pointers.shape).reshape(-1)
        compare = None if compare is None else np.broadcast_to(compare, pointers.shape).reshape(-1)
        for alloc, lanes, index in groups:
            data = alloc.typed(dtype)
            selected = np.ones(pointers.size, dtype=bool) if lanes is True else np.broadcast_to(lanes, pointers.shape).reshape(-1)
            positions = np.flatnonzero(selected)
            if positions.size == 0:
                continue
            idx = np.broadcast_to(index, pointers.shape).reshape(-1)[positions]
            by_address = np.argsort(idx, kind="stable")
            sorted_idx = idx[by_address]
            count = idx.size
            first_of_run = np.ones(count, dtype=bool)
            first_of_run[1:] = sorted_idx[1:] != sorted_idx[:-1]
            run_start = np.maximum.accumulate(np.where(first_of_run, np.arange(count), 0))
            rank = np.empty(count, dtype=np.int64)
            rank[by_address] = np.arange(count) - run_start
            by_round = np.argsort(rank, kind="stable")
            bounds = np.searchsorted(rank[by_round], np.arange(int(rank.max()) + 2))
            for start, end in zip(bounds[:-1], bounds[1:]):
                lane_ids = by_round[start:end]
                where = idx[lane_ids]
                flat_positions = positions[lane_ids]
                current = data[where].copy()
                update = values[flat_positions]
                data[where] = _combine(kind, current, update,
                                       None if compare is None else compare[flat_positions])
                old_flat[flat_positions] = current
        if self.checks is not None:
            self.checks.after_atomic(groups, pointers.shape, old, compare)
        return old


def _combine(kind: str, current, update, compare):
    if kind == "add":
        return current + update
    if kind in ("max", "min"):
        return arithmetic.atomic_extremum(current, update, kind == "max")
    if kind == "and":
        return current & update
    if kind == "or":
        return current | update
    if kind == "xor":
        return current ^ update
    if kind == "xchg":
        return update
    if kind == "load":  # an atomic load: the update writes back what it found
        return current
    if kind == "cas":
        return np.where(arithmetic.bits_equal(current, compare), update, current)  # atom.cas compares bits
    raise NotImplementedError(kind)
