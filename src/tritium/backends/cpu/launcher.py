"""Running a compiled kernel: the argument block, the grid split over worker threads, errors.

The compiled ``tritium_grid(args, first, last, error)`` runs the programs ``[first, last)`` (linear
ids, x fastest) and returns non-zero after the first program that fails, its error record filled.
The launcher calls it through ctypes, which releases the GIL; a launch with enough work runs its
programs in chunks over worker threads (``workers.py``: threads that wait and take work in native
code, a few microseconds per launch; torch's OpenMP threads when torch is imported with them), and
a small one (few lanes of work in all) on the calling thread. Kernels whose programs communicate
through memory (``compiler/analysis/effects.py``: atomics or loads that steer a spin wait) run in
program order on one thread, as the interpreter runs them.

Debug mode (``launch(debug=True)``): the kernel's variant with debug mode's checks
(``debug_checks.py``), compiled at the first such launch, runs its programs one at a time with a
shadow array per written argument; kernels whose checks stay the interpreter's run there.
"""
from __future__ import annotations

import contextlib
import ctypes
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional, Sequence

import numpy as np

from ... import config
from ...compiler.ir import types as T
from .. import debug_reports, malloc_tuning, registry, reports
from ..base import Executable as ExecutableBase
from ..base import KernelArgument, byte_range
from ..llvm.types import item_size, parameter_plan, scalar_bits
from ..print_format import format_print_lines
from . import codegen, debug_checks, workers

_GRID_FUNCTION = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
# Lanes of work (programs x the largest block) below which a launch runs on the calling thread.
_PARALLEL_WORK = 1 << 16

_NATIVE_POOL = workers.available()

_pool: Optional[ThreadPoolExecutor] = None
_pool_size = 0
_pool_lock = threading.Lock()


def thread_count() -> int:
    """Worker threads for a launch (``config.num_threads``: TRITIUM_NUM_THREADS, else the CPUs this
    process may run on)."""
    return config.num_threads()


def _workers(count: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size != count:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=count, thread_name_prefix="tritium-cpu")
            _pool_size = count
        return _pool


def _tune_malloc() -> None:
    """As the interpreter does at its first launch: glibc keeps freed blocks for reuse, so the
    outputs a caller allocates for each launch are not faulted in page by page every time
    (TRITIUM_MALLOC_TUNING=0 leaves malloc alone; see backends/malloc_tuning.py)."""
    malloc_tuning.tune_once()


def _strided_bounds(tensor, address: int) -> tuple[int, int]:
    """The byte range [low, high) a strided torch tensor at ``address`` spans."""
    size = tensor.element_size()
    low, high = byte_range(tensor.shape, [st * size for st in tensor.stride()], size)
    return address + low, address + high


def _first_failure(records: list) -> np.ndarray:
    """Of the error records of threads whose program failed, the one of the program first in launch
    order (linear ids, x fastest)."""
    return min(records, key=lambda r: (int(r[4]), int(r[3]), int(r[2])))


_tokens = itertools.count(1)
_records = threading.local()  # per thread: executable token -> its reusable error record


class Executable(ExecutableBase):
    """A kernel compiled for the host CPU."""

    def __init__(self, fn, loaded, asm: dict, ops: list, pointer_args: list, provenance: dict, largest_block: int,
                 program_order: bool, scratch_bytes: int = 0, make_checked=None, written: tuple = ()):
        self.fn = fn
        # debug mode: ``make_checked()`` compiles the variant with its checks (``debug_checks.py``); on
        # that variant, ``written`` are the positions of the pointer arguments it keeps shadows of
        self.make_checked = make_checked
        self.written = written
        self.debug_variant = make_checked is None
        self._checked_executable = None
        self.scratch_bytes = scratch_bytes
        self.loaded = loaded
        self.asm = asm
        self.ops = ops
        self.pointer_args = pointer_args
        self.provenance = provenance
        self.raw_pointers = codegen.makes_raw_pointers(fn)
        self.largest_block = largest_block
        self.program_order = program_order
        self._grid_address = loaded.address("tritium_grid")
        self._grid = _GRID_FUNCTION(self._grid_address)
        # The worker pool reads the grid function's address from this word before each chunk, so that
        # optimized code installed during a launch takes its remaining chunks (install_optimized).
        self._grid_cell = ctypes.c_uint64(self._grid_address)
        self._grid_cell_address = ctypes.addressof(self._grid_cell)
        # launches of at least this many programs have the work for the worker pool (fewer lanes of
        # work in all run on the calling thread, as do programs that must run in order)
        self._big_from = -(-_PARALLEL_WORK // max(1, largest_block))
        self._pool_from = 1 << 62 if program_order else self._big_from
        self._pool_records: Optional[tuple] = None  # (thread count, records, array of their addresses)
        self.token = next(_tokens)  # never reused, unlike id(self)
        self.launches = 0  # which quick kernel's full compilation goes first (tiers.py)
        self.quick = False  # True while the code is the quick tier's
        self._deferred = False  # True until its full compilation is asked for
        self._optimized_lock = threading.Lock()
        self._when_optimized: list = []
        self._debug_executable = None  # the interpreter's executable of ``fn`` (debug mode: ``_interpreted``)
        self._shadow_arrays: list = []  # the debug variant's shadows during a launch

    # tiers (tiers.py) ---------------------------------------------------------------------------
    def optimize_later(self, llvm_ir: str) -> None:
        """Marks this executable's code as the quick tier's; its full compilation is asked for at its
        second launch, or at its first if that one goes to the worker pool (``_run``)."""
        from . import tiers

        self.quick = self._deferred = True
        tiers.defer(self, llvm_ir)

    def when_optimized(self, callback) -> None:
        """Calls ``callback()`` once the code is the fully optimized one: now, or when the background
        compilation installs it (never, if that fails: the quick code then stays)."""
        with self._optimized_lock:
            if self.quick:
                self._when_optimized.append(callback)
                return
        callback()

    def install_optimized(self, obj: bytes) -> None:
        """Switches to the fully optimized object ``obj`` (the background compilation's result)."""
        from ..llvm import host

        loaded = host.LoadedObject(obj)
        address = loaded.address("tritium_grid")
        self._loaded_quick, self.loaded = self.loaded, loaded  # the quick code may still be running
        self._grid_address = address
        self._grid = _GRID_FUNCTION(address)
        self._grid_cell.value = address  # a running pool job takes its next chunks with it
        dict.__setitem__(self.asm, "obj", obj)
        with self._optimized_lock:
            self.quick = False
            callbacks, self._when_optimized = self._when_optimized, []
        for callback in callbacks:
            callback()

    def launch(self, grid, args: Sequence[KernelArgument], stream: Any = None, *, debug: Optional[bool] = None) -> None:
        _tune_malloc()
        debug = config.debug_mode() if debug is None else bool(debug)
        if debug and not self.debug_variant:
            if debug_checks.stays_on_interpreter(self.fn, self.program_order):
                self._interpreted().launch(grid, args, stream, debug=True)
            else:
                self._checked().launch(grid, args, stream, debug=True)
            return
        gx, gy, gz = (int(g) for g in grid)
        total = gx * gy * gz
        if total <= 0:
            return
        # (the debug variant watches a while loop from its first iteration, as the interpreter does)
        slots = [gx, gy, gz, self.token, 1 if self.debug_variant else config.spin_check_after()]
        bounds = []
        keepalive = []
        for name, ty, value in args:
            if isinstance(ty, T.pointer_type):
                slots.append(value.address)
                bounds += [value.address + value.low, value.address + value.high]
                keepalive.append(value.keepalive)
            else:
                slots.append(scalar_bits(value, ty))
        slots += bounds
        if self.debug_variant:
            slots += self._shadow_slots(args)
        block = (ctypes.c_uint64 * len(slots))(*slots)
        _PRINTING[self.token] = (self, args)
        try:
            if self.raw_pointers:
                with _live_tensors_table():
                    self._run(block, total, 1 if self.debug_variant else None, config.shuffle_seed())
            else:
                self._run(block, total, 1 if self.debug_variant else None, config.shuffle_seed())
        finally:
            _PRINTING.pop(self.token, None)
            self._shadow_arrays = []
        del keepalive

    def _checked(self):
        """The variant of this kernel with debug mode's checks, compiled once (not kept on disk)."""
        if self._checked_executable is None:
            self._checked_executable = self.make_checked()
        return self._checked_executable

    def _shadow_slots(self, args) -> list:
        """Per pointer argument the address of its shadow array (debug_checks.py): an int32 per element
        of the bytes it may touch, zeroed; arguments over the same memory share one; 0 for arguments
        no store writes."""
        ranges = {}
        pointers = [(ty, value) for _, ty, value in args if isinstance(ty, T.pointer_type)]
        for position in self.written:
            ty, value = pointers[position]
            low = value.address + value.low
            ranges[position] = (low, value.high - value.low, item_size(ty.element_ty))
        groups = debug_reports.alias_groups(ranges)
        shared: dict = {}
        addresses = [0] * len(pointers)
        for position, (low, nbytes, size) in ranges.items():
            group = groups.get(position)
            if group is None:
                array = np.zeros(max(1, -(-nbytes // size)), dtype=np.int32)
                addresses[position] = array.ctypes.data
            else:
                _, start, units = group
                array = shared.get(start)
                if array is None:
                    array = shared[start] = np.zeros(units, dtype=np.int32)
                addresses[position] = array.ctypes.data + 4 * ((low - start) // size)
            self._shadow_arrays.append(array)
        return addresses

    def _interpreted(self):
        """This kernel on the interpreter backend, for debug mode: found through the registry and
        compiled there through the Backend protocol (once; the interpreter's compilation keeps the
        IR as it is, so it runs the same function as this code)."""
        if self._debug_executable is None:
            interpreter = registry.get("interpreter")
            self._debug_executable = interpreter.compile(self.fn, interpreter.parse_options({}),
                                                         interpreter.default_target())
        return self._debug_executable

    def direct_launcher(self, arg_names: list):
        """``launch(grid3, values) -> bool`` for repeated plain launches (``values``: parameter name ->
        torch CPU tensor or Python scalar): the argument block of ``launch`` built straight from the
        values, bounds included, so every access is still checked. None for kernels that print
        (their output is formatted from the launch's arguments).

        Generated per kernel, one statement per parameter: a launch after a kernel that streamed
        megabytes finds this code and its data out of the caches, and there each Python call and
        attribute read costs microseconds (a 16 MB copy on two threads, back to back: 0.74 ms
        through the loop this replaces, 0.70 ms through this, 0.66-0.69 ms for the native dispatch
        called directly). The thread count, the shuffle seed and the spin-check
        setting are read here, once: a launcher is made per fast-path key, which holds the launch
        settings, so a change of them makes a new one."""
        if self.raw_pointers or any(op.opcode == "print" for op in self.fn.walk()):
            return None  # (a launch of a kernel that makes pointers from integers finds the live tensors)
        _tune_malloc()
        plan = parameter_plan(arg_names, self.fn.args)
        namespace = {"run": self._run, "strided_bounds": _strided_bounds}
        lines = ["def launch(grid3, values):",
                 "    gx, gy, gz = grid3",
                 "    total = gx * gy * gz",
                 "    if total <= 0:",
                 "        return False"]
        slots, bounds = [], []
        for i, (name, bits) in enumerate(plan):
            if bits is None:
                lines += [f"    t{i} = values[{name!r}]",
                          f"    a{i} = t{i}.data_ptr()",
                          f"    if t{i}.is_contiguous():",
                          f"        l{i}, h{i} = a{i}, a{i} + t{i}.nbytes",
                          "    else:",
                          f"        l{i}, h{i} = strided_bounds(t{i}, a{i})"]
                slots.append(f"a{i}")
                bounds += [f"l{i}", f"h{i}"]
            else:
                namespace[f"bits{i}"] = bits
                slots.append(f"bits{i}(values[{name!r}])")
        namespace["Block"] = ctypes.c_uint64 * (codegen.HEADER_SLOTS + len(slots) + len(bounds))
        header = [self.token, config.spin_check_after()]
        lines += [(f"    run(Block(gx, gy, gz, {', '.join(map(str, header + slots + bounds))}), total, "
                   f"{thread_count()}, {config.shuffle_seed()!r})"),
                  "    return True"]
        code = compile("\n".join(lines) + "\n", f"<tritium cpu launcher {self.fn.name}>", "exec")
        exec(code, namespace)  # noqa: S102 - the launcher written above
        return namespace["launch"]

    def _run(self, block, total: int, threads: Optional[int], seed: Optional[int]) -> None:
        """Runs programs [0, total) with the argument block ``block``: on ``threads`` threads (None:
        ``thread_count()``, read only for a launch with the work for several) when the launch has the
        work for them, one at a time in an order drawn from ``seed`` when given."""
        self.launches += 1
        if self._deferred and (self.launches > 1 or total >= self._big_from):
            from . import tiers

            self._deferred = False
            tiers.request(self)
        address = ctypes.addressof(block)
        if seed is not None:  # TRITIUM_SHUFFLE: programs one at a time in an order drawn from the seed
            record = self._record()
            for p in np.random.default_rng(seed).permutation(total).tolist():
                if self._grid(address, p, p + 1, record.ctypes.data):
                    self._raise(record, block)
            return
        if total >= self._pool_from and threads is None:
            threads = thread_count()
        if total < self._pool_from or threads == 1:
            self._run_serially(address, total, block)
        elif _NATIVE_POOL:
            self._run_on_workers(address, total, threads, block)
        else:
            self._run_on_executor(address, total, min(threads, total), block)

    def _run_on_executor(self, address: int, total: int, threads: int, block) -> None:
        """One contiguous range of programs per thread of a ``concurrent.futures`` pool (where the
        native pool is not available); the calling thread runs the first itself."""
        edges = [total * i // threads for i in range(threads + 1)]
        records = [self._new_record() for _ in range(threads)]
        pool = _workers(threads - 1)
        futures = [pool.submit(self._grid, address, edges[i], edges[i + 1], records[i].ctypes.data)
                   for i in range(1, threads)]
        statuses = [self._grid(address, edges[0], edges[1], records[0].ctypes.data)]
        statuses += [f.result() for f in futures]
        failed = [records[i] for i, status in enumerate(statuses) if status]
        if failed:
            self._raise(_first_failure(failed), block)

    def _run_on_workers(self, address: int, total: int, threads: int, block) -> None:
        """The grid over the native worker pool (``workers.py``): chunks of programs taken in order by
        whichever thread is free. A launch from a second Python thread while the pool is busy runs
        on its own thread instead of waiting."""
        pool = workers.pool(threads)
        if not pool.lock.acquire(blocking=False):
            self._run_serially(address, total, block)
            return
        try:
            if pool.closed:  # replaced (another thread launched with another thread count): its workers are gone
                failed = None
            else:
                records = self._pool_records
                if records is None or records[0] != pool.threads:
                    records = self._pool_records = self._thread_records(pool.threads)
                failed = pool.failed_threads() if pool.run(self._grid_cell_address, address, total, records[3]) else ()
        finally:
            pool.lock.release()
        if failed is None:
            self._run_serially(address, total, block)
        elif failed:
            self._raise(_first_failure([records[1][i] for i in failed]), block)

    def _run_serially(self, address: int, total: int, block) -> None:
        record, record_address = self._record_and_address()
        if self._grid(address, 0, total, record_address):
            self._raise(record, block)

    def _thread_records(self, count: int) -> tuple:
        """(count, an error record per pool thread, the array of their addresses, its address), kept
        for the next launch (the compiled code writes a record only when a program fails, and never
        reads it)."""
        records = [self._new_record() for _ in range(count)]
        addresses = (ctypes.c_uint64 * count)(*(r.ctypes.data for r in records))
        return count, records, addresses, ctypes.addressof(addresses)

    def _record(self) -> np.ndarray:
        return self._record_and_address()[0]

    def _record_and_address(self) -> tuple:
        """The calling thread's error record for a serial launch and its address, kept for the next
        one (the compiled code fills it only when a program fails, and reads nothing from it)."""
        records = _records.__dict__
        found = records.get(self.token)
        if found is None:
            record = self._new_record()
            found = records[self.token] = (record, record.ctypes.data)
        return found

    def _new_record(self) -> np.ndarray:
        """A thread's error record, followed by its scratch memory, 64-byte aligned."""
        slots = reports.RECORD_SLOTS + self.scratch_bytes // 8
        raw = np.zeros(slots + 8, dtype=np.int64)
        start = (-raw.ctypes.data % 64) // 8
        return raw[start:start + slots]

    # errors ----------------------------------------------------------------------------------------
    def _raise(self, record: np.ndarray, block: np.ndarray) -> None:
        code, op_index, x, y, z, lane, address, extra = (int(v) for v in record[:reports.RECORD_SLOTS])
        op = self.ops[op_index]
        pid = (x, y, z)
        name = self.fn.name
        if code not in (reports.OUT_OF_BOUNDS, reports.RACE):
            reports.raise_reported(name, op, code, pid, lane, address, extra)
        arguments = []
        for position, arg_index in enumerate(self.pointer_args):
            base = int(block[codegen.HEADER_SLOTS + arg_index])
            low = int(block[codegen.HEADER_SLOTS + len(self.fn.args) + 2 * position])
            high = int(block[codegen.HEADER_SLOTS + len(self.fn.args) + 2 * position + 1])
            arguments.append((self.fn.arg_names[arg_index], base, low, high))
        source = self.provenance.get(op.operand("pointer").id)
        if code == reports.RACE:
            sizes = [item_size(self.fn.args[i].type.element_ty) for i in self.pointer_args]
            reports.raise_race(name, op, pid, lane, address, extra, tuple(int(g) for g in block[:3]), source,
                               [argument + (size,) for argument, size in zip(arguments, sizes)])
        reports.raise_out_of_bounds(name, op, pid, lane, address, source, arguments, bad_lanes=extra)



# prints ------------------------------------------------------------------------------------------------
_PRINTING: dict[int, tuple] = {}
_PRINT_FUNCTION = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int32, ctypes.c_int32,
                                   ctypes.c_int32, ctypes.c_void_p)
_print_lock = threading.Lock()


def _print_hook(token, op_index, x, y, z, pointers):
    entry = _PRINTING.get(token)
    if entry is None:
        return
    executable, _ = entry
    op = executable.ops[op_index]
    addresses = ctypes.cast(pointers, ctypes.POINTER(ctypes.c_void_p))
    values = []
    for n, v in enumerate(op.operands):
        shape = tuple(v.type.shape) if isinstance(v.type, T.block_type) else ()
        count = int(np.prod(shape)) if shape else 1
        scalar = v.type.scalar
        dtype = np.dtype(np.int64) if scalar.is_ptr() else (np.dtype(np.int8) if scalar.is_bool() else scalar.numpy)
        raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(addresses[n])
        array = np.frombuffer(bytes(raw), dtype=dtype).reshape(shape)
        if scalar.is_bool() and not scalar.is_ptr():
            array = array != 0
        values.append(array)
    with _print_lock:
        for line in format_print_lines(op, (x, y, z), values):
            print(line, flush=True)


_hook = _PRINT_FUNCTION(_print_hook)


# [address of the table, count] of the live tensors' byte ranges (values.LIVE_TENSORS_SYMBOL); one
# launch of a kernel that makes pointers from integers at a time fills it
_LIVE_TENSORS = (ctypes.c_uint64 * 2)(0, 0)
_live_tensors_lock = threading.Lock()


@contextlib.contextmanager
def _live_tensors_table():
    """The process's live tensors (backends/live_memory.py) in the table compiled code searches, for
    the duration of a launch."""
    from ..live_memory import live_ranges

    with _live_tensors_lock:
        ranges = live_ranges()
        table = np.array([(r.low, r.high) for r in ranges] or [(0, 0)], dtype=np.uint64)
        _LIVE_TENSORS[0], _LIVE_TENSORS[1] = table.ctypes.data, len(ranges)
        try:
            yield
        finally:
            _LIVE_TENSORS[0], _LIVE_TENSORS[1] = 0, 0
            del table, ranges


def register_print_hook() -> None:
    from ..llvm import host

    host.add_symbol(codegen.PRINT_SYMBOL, ctypes.cast(_hook, ctypes.c_void_p).value)
    host.add_symbol(codegen.LIVE_TENSORS_SYMBOL, ctypes.addressof(_LIVE_TENSORS))
