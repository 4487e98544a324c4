"""Launching a compiled kernel: its cubin (or PTX) loaded once per device, each argument packed as
its kernel parameter, ``cuLaunchKernel`` on torch's current stream.

Arguments in host memory (numpy arrays, CPU tensors: ``TRITIUM_BACKEND=cuda``) are staged: each
range of host memory the pointer arguments cover (overlapping ranges merged, so aliasing holds)
is copied to device memory, the kernel runs, and the ranges are copied back.
"""
from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any, Callable, Optional, Sequence

from ...compiler.ir import types as T
from ...errors import LaunchError
from .. import reports
from ..base import Executable as ExecutableBase
from ..base import KernelArgument
from ..llvm.types import parameter_plan, scalar_bits
from . import driver

_MAX_GRID = (2 ** 31 - 1, 65535, 65535)


def _device_address(argument) -> int:
    return argument.value.address


def _flush_c_stdout() -> None:
    libc = ctypes.CDLL(None)
    libc.fflush(None)


# CUDA_ERROR_INVALID_CONTEXT and CUDA_ERROR_INVALID_HANDLE: what a launch from a thread without our
# context current returns; any other failure is reported as it is
_NO_CONTEXT = (201, 400)


class Executable(ExecutableBase):
    """A kernel compiled for one GPU architecture. ``report_ops``: the op table of a kernel that takes
    an error record (it can fail at run time); ``checks``: its accesses are bounds-checked (debug
    mode's variant: each pointer argument's byte range follows the arguments); ``make_checked``:
    builds that variant, for launches in debug mode; ``ptxas_report``: what ``ptxas -v`` said of it
    (``nvptx.PtxasReport``: registers, spills, warnings; None without ptxas), or a function that
    makes it when it is first read (a kernel loaded from the disk cache)."""

    def __init__(self, fn, asm: dict, shared_bytes: int, num_warps: int, report_ops: Optional[list] = None,
                 checks: bool = False, make_checked: Optional[Callable[[], Executable]] = None,
                 ptxas_report=None):
        from ...compiler.analysis.effects import needs_program_order
        from ...compiler.analysis.provenance import pointer_provenance

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
        self.checks = checks
        self.pointer_args, self.provenance = pointer_provenance(fn) if checks else ([], {})
        self.make_checked = make_checked
        self._ptxas_report = ptxas_report
        self._checked: Optional[Executable] = None
        self._kernels: dict[int, driver.Kernel] = {}
        self._records: dict[int, int] = {}
        self.prints = any(op.opcode == "print" for op in fn.walk())
        # The packed parameter block cuLaunchKernel reads: one 8-byte slot per parameter (a narrower
        # parameter reads the low bytes of its slot: the GPU is little-endian) and the array of the
        # slots' addresses. Written and launched under a lock: the driver copies it at the call.
        count = len(fn.args) + 2 * len(self.pointer_args) + (1 if report_ops else 0)
        self._slots = (ctypes.c_uint64 * max(count, 1))()
        base = ctypes.addressof(self._slots)
        self._parameters = (ctypes.c_void_p * max(count, 1))(*(base + 8 * i for i in range(count)))
        self._lock = threading.Lock()

    @property
    def ptxas_report(self):
        """``ptxas -v``'s report of this kernel's PTX (``nvptx.PtxasReport``), or None without ptxas."""
        if callable(self._ptxas_report):
            self._ptxas_report = self._ptxas_report()
        return self._ptxas_report

    def direct_launcher(self, arg_names: list) -> Optional[Callable]:
        """``launch(grid3, values) -> bool`` for launches with plain values (``values``: parameter name
        -> torch CUDA tensor or Python scalar) and nothing to check after them: each pointer is the
        tensor's ``data_ptr()``, each scalar its bits, written straight into the parameter block.
        None for kernels that report run-time failures or print (their launch waits and reads
        back). The launch returns False, launching nothing, for a grid it leaves to ``launch``."""
        if self.report_ops or self.prints or self.checks:
            return None
        torch = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_initialized():
            return None  # the launches it serves pass torch CUDA tensors: torch has started CUDA
        get_device, get_stream = driver.torch_place_functions(torch)
        plan = parameter_plan(arg_names, self.fn.args)
        slots, lock, parameters, threads = self._slots, self._lock, self._parameters, self.threads
        kernels = self._kernels
        max_x, max_y, max_z = _MAX_GRID

        def launch(grid3, values) -> bool:
            gx, gy, gz = grid3
            if gx <= 0 or gy <= 0 or gz <= 0 or gx > max_x or gy > max_y or gz > max_z:
                return False
            ordinal = get_device()  # torch keeps this device's context current
            kernel = kernels.get(ordinal) or self._kernel(ordinal)
            stream = get_stream(ordinal)
            with lock:
                for i, (name, bits) in enumerate(plan):
                    value = values[name]
                    slots[i] = value.data_ptr() if bits is None else bits(value)
                status = kernel.launch_packed(grid3, threads, stream, parameters)
                if status in _NO_CONTEXT:  # no current context on this thread: make ours current, once more
                    kernel.device.make_current()
                    status = kernel.launch_packed(grid3, threads, stream, parameters)
            if status:
                driver.raise_status(status, "cuLaunchKernel")
            return True

        return launch

    def load(self) -> driver.Kernel:
        """The kernel loaded on the current device (``CompiledKernel._init_handles``: its function
        handle, registers and spills)."""
        return self._kernel(driver.current_device_ordinal())

    def _kernel(self, ordinal: int) -> driver.Kernel:
        kernel = self._kernels.get(ordinal)
        if kernel is None:
            image = self.asm.get("cubin") or (self.asm["ptx"].encode() + b"\0")
            kernel = self._kernels[ordinal] = driver.Kernel(driver.device(ordinal), image, self.fn.name,
                                                            self.shared_bytes)
        return kernel

    def launch(self, grid, args: Sequence[KernelArgument], stream: Any = None, *, debug: Optional[bool] = None) -> None:
        if debug and not self.checks and self.make_checked is not None:
            if self._checked is None:
                self._checked = self.make_checked()
            self._checked.launch(grid, args, stream, debug=True)
            return
        gx, gy, gz = (int(g) for g in grid)
        if gx * gy * gz <= 0:
            return
        for extent, limit, axis in zip((gx, gy, gz), _MAX_GRID, "xyz"):
            if extent > limit:
                raise LaunchError(f"kernel '{self.fn.name}': a grid of {extent} programs along {axis} is more than "
                                  f"a CUDA GPU launches ({limit}); fold it into another axis")
        staged = False
        for a in args:
            if isinstance(a.type, T.pointer_type) and a.value.device != "cuda":
                staged = True
        ordinal = driver.current_device_ordinal()
        kernel = self._kernels.get(ordinal) or self._kernel(ordinal)
        torch = sys.modules.get("torch")
        if staged or self.report_ops or torch is None or not torch.cuda.is_initialized():
            # else torch keeps the current device's context current (and a thread where it has
            # none gets it when the launch reports that: see _launch)
            kernel.device.make_current()
        record = self._record(ordinal) if self.report_ops else None
        if staged:
            self._launch_staged((gx, gy, gz), args, kernel, record)
        else:
            stream = driver.current_stream() if stream is None else int(stream)
            self._run(kernel, (gx, gy, gz), args, _device_address, record, stream)
        if self.prints:  # the GPU's printf buffer reaches stdout at a synchronization; C's stdio buffers it
            driver.synchronize()
            _flush_c_stdout()

    def _run(self, kernel, grid, args, device_address, record, stream) -> None:
        """Packs the parameters (each pointer at ``device_address(argument)``), launches, and with an
        error record, waits and raises what it reports."""
        values = tuple(device_address(a) if isinstance(a.type, T.pointer_type) else scalar_bits(a.value, a.type)
                       for a in args)
        ranges = []
        for arg_index in self.pointer_args:
            a = args[arg_index]
            base = device_address(a)
            ranges.append((a.name, base, base + a.value.low, base + a.value.high))
        for _, _, low, high in ranges:
            values += (low, high)
        if record is not None:
            driver.zero(record, reports.RECORD_SLOTS * 8, stream)
            values += (record,)
        self._launch(kernel, grid, stream, values)
        if record is not None:
            self._check(record, ranges)

    def _launch(self, kernel, grid, stream: int, values: tuple) -> None:
        with self._lock:
            slots = self._slots
            for i, value in enumerate(values):
                slots[i] = value
            status = kernel.launch_packed(grid, self.threads, stream, self._parameters)
            if status in _NO_CONTEXT:  # no current context on this thread: make ours current, once more
                kernel.device.make_current()
                status = kernel.launch_packed(grid, self.threads, stream, self._parameters)
        if status:
            driver.raise_status(status, "cuLaunchKernel")

    def _record(self, ordinal: int) -> int:
        found = self._records.get(ordinal)
        if found is None:
            found = self._records[ordinal] = driver.allocate(reports.RECORD_SLOTS * 8)
        return found

    def _check(self, record: int, ranges) -> None:
        fields = (ctypes.c_int64 * reports.RECORD_SLOTS)()
        driver.synchronize()
        driver.copy_to_host(ctypes.addressof(fields), record, reports.RECORD_SLOTS * 8)
        code, op_index, x, y, z, lane, value, extra = (int(v) & 0xFFFFFFFFFFFFFFFF for v in fields)
        if not code:
            return
        op = self.report_ops[op_index]
        if code == reports.OUT_OF_BOUNDS:
            reports.raise_out_of_bounds(self.fn.name, op, (x, y, z), lane, value,
                                        self.provenance.get(op.operand("pointer").id), ranges)
        reports.raise_reported(self.fn.name, op, code, (x, y, z), lane, value, extra)

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
                if a.value.device == "cuda":
                    return a.value.address
                for start, end, device_address in allocations:
                    if start <= a.value.address + a.value.low and a.value.address + a.value.high <= end:
                        return device_address + (a.value.address - start)
                raise AssertionError("a staged pointer outside every staged range")

            try:
                self._run(kernel, grid, args, device_pointer, record, 0)
            finally:
                driver.synchronize()
                for start, end, device_address in allocations:
                    driver.copy_to_host(start, device_address, end - start)
        finally:
            for _, _, device_address in allocations:
                driver.free(device_address)
