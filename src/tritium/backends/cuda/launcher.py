"""Launching a compiled kernel: its cubin (or PTX) loaded once per device, each argument packed as
its kernel parameter, ``cuLaunchKernel`` on torch's current stream.

Arguments in host memory (numpy arrays, CPU tensors: ``TRITIUM_BACKEND=cuda``) are staged: each
range of host memory the pointer arguments cover (overlapping ranges merged, so aliasing holds)
is copied to device memory, the kernel runs, and the ranges are copied back.
"""
from __future__ import annotations

import ctypes
from typing import Any, Optional, Sequence

from ...compiler.ir import types as T
from ...errors import LaunchError
from .. import reports
from ..base import KernelArgument
from ..llvm.types import register_type, scalar_bits
from . import driver

_MAX_GRID = (2 ** 31 - 1, 65535, 65535)


def _parameter_type(ty):
    if isinstance(ty, T.pointer_type):
        return ctypes.c_void_p
    reg = register_type(ty)
    width = getattr(reg, "width", None)
    if width is None:  # float / double
        return ctypes.c_uint32 if str(reg) == "float" else ctypes.c_uint64
    return {1: ctypes.c_uint32, 8: ctypes.c_uint8, 16: ctypes.c_uint16, 32: ctypes.c_uint32,
            64: ctypes.c_uint64}[width]


def _flush_c_stdout() -> None:
    libc = ctypes.CDLL(None)
    libc.fflush(None)


class Executable:
    """A kernel compiled for one GPU architecture."""

    def __init__(self, fn, asm: dict, shared_bytes: int, num_warps: int, report_ops: Optional[list] = None):
        from ...compiler.analysis.effects import needs_program_order

        self.fn = fn
        self.asm = asm
        # The effects analysis says the programs communicate (locks, ticket counters): on a GPU they
        # run concurrently, so a wait for a program that has started ends.
        self.program_order = needs_program_order(fn)
        self.shared_bytes = shared_bytes
        self.threads = 32 * num_warps
        # ops by index for kernels that can fail at run time: they take an error record, read after
        # each launch (which makes such launches synchronous)
        self.report_ops = report_ops
        self.types = tuple(_parameter_type(a.type) for a in fn.args) + ((ctypes.c_void_p,) if report_ops else ())
        self._kernels: dict[int, driver.Kernel] = {}
        self._records: dict[int, int] = {}
        self.prints = any(op.opcode == "print" for op in fn.walk())

    def _kernel(self, ordinal: int) -> driver.Kernel:
        kernel = self._kernels.get(ordinal)
        if kernel is None:
            image = self.asm.get("cubin") or (self.asm["ptx"].encode() + b"\0")
            kernel = self._kernels[ordinal] = driver.Kernel(driver.device(ordinal), image, self.fn.name,
                                                            self.shared_bytes)
        return kernel

    def launch(self, grid, args: Sequence[KernelArgument], stream: Any = None, *, debug: Optional[bool] = None) -> None:
        gx, gy, gz = (int(g) for g in grid)
        if gx * gy * gz <= 0:
            return
        for extent, limit, axis in zip((gx, gy, gz), _MAX_GRID, "xyz"):
            if extent > limit:
                raise LaunchError(f"kernel '{self.fn.name}': a grid of {extent} programs along {axis} is more than "
                                  f"a CUDA GPU launches ({limit}); fold it into another axis")
        staged = [a for a in args if isinstance(a.type, T.pointer_type) and a.value.device != "cuda"]
        ordinal = driver.current_device_ordinal()
        kernel = self._kernel(ordinal)
        kernel.device.make_current()
        record = self._record(ordinal) if self.report_ops else None
        if staged:
            self._launch_staged((gx, gy, gz), args, kernel, record)
        else:
            values = tuple(a.value.address if isinstance(a.type, T.pointer_type) else scalar_bits(a.value, a.type)
                           for a in args)
            stream = driver.current_stream() if stream is None else int(stream)
            if record is not None:
                driver.zero(record, reports.RECORD_SLOTS * 8, stream)
                values += (record,)
            kernel.launch((gx, gy, gz), self.threads, stream, values, self.types)
        if record is not None:
            self._check(record)
        if self.prints:  # the GPU's printf buffer reaches stdout at a synchronization; C's stdio buffers it
            driver.synchronize()
            _flush_c_stdout()

    def _record(self, ordinal: int) -> int:
        found = self._records.get(ordinal)
        if found is None:
            found = self._records[ordinal] = driver.allocate(reports.RECORD_SLOTS * 8)
        return found

    def _check(self, record: int) -> None:
        fields = (ctypes.c_int64 * reports.RECORD_SLOTS)()
        driver.synchronize()
        driver.copy_to_host(ctypes.addressof(fields), record, reports.RECORD_SLOTS * 8)
        code, op_index, x, y, z, lane, value, extra = (int(v) & 0xFFFFFFFFFFFFFFFF for v in fields)
        if code:
            reports.raise_reported(self.fn.name, self.report_ops[op_index], code, (x, y, z), lane, value, extra)

    def _launch_staged(self, grid, args, kernel, record) -> None:
        ranges = []
        for a in args:
            if isinstance(a.type, T.pointer_type) and a.value.device != "cuda":
                ranges.append([a.value.address + a.value.low, a.value.address + a.value.high])
        ranges.sort()
        merged = []
        for start, end in ranges:
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        allocations = []
        try:
            for start, end in merged:
                device_address = driver.allocate(end - start)
                allocations.append((start, end, device_address))
                driver.copy_to_device(device_address, start, end - start)

            def device_pointer(a):
                for start, end, device_address in allocations:
                    if start <= a.value.address + a.value.low and a.value.address + a.value.high <= end:
                        return device_address + (a.value.address - start)
                raise AssertionError("a staged pointer outside every staged range")

            values = tuple((device_pointer(a) if a.value.device != "cuda" else a.value.address)
                           if isinstance(a.type, T.pointer_type) else scalar_bits(a.value, a.type) for a in args)
            if record is not None:
                driver.zero(record, reports.RECORD_SLOTS * 8, 0)
                values += (record,)
            kernel.launch(grid, self.threads, 0, values, self.types)
            driver.synchronize()
            for start, end, device_address in allocations:
                driver.copy_to_host(start, device_address, end - start)
        finally:
            for _, _, device_address in allocations:
                driver.free(device_address)
