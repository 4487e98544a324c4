"""The worker threads a CPU launch splits its grid over: they wait, take work and signal its end in
native code, so a launch costs no Python thread hand-off.

A launch through a ``concurrent.futures`` pool wakes a sleeping Python thread and is woken back
(two futex round trips and the GIL): about 80 us each way on a small virtual machine, 10-20% of a
millisecond kernel. Here each worker is a Python thread that enters ``tritium_worker`` once and stays
in native code (the GIL released) until the pool is shut down. A launch (``tritium_dispatch``,
called by the launching thread through ctypes) publishes the job in a shared block and bumps its
generation; the workers, spinning for a short while after their last job and then sleeping on a
futex, see it, take chunks of programs from an atomic counter (so a thread slowed down by the
machine takes fewer), and count themselves done; the launching thread takes chunks too, then waits
for the count the same way (spinning, then a futex). A program that fails stops its thread and, by
a flag, the taking of further chunks; the others finish the chunks they hold, so every program
before the first failing one in launch order has run, as with static ranges.

The shared block (int64 slots; the two futex words and the chunk counter on cache lines of their
own):

====  ==================================================================================
0     generation (futex word): bumped once per job
8     shutdown: the workers return when a job finds it set
16    the grid function's cell: the address of a word that holds the grid function's address (read
      before each chunk, so optimized code installed meanwhile takes the remaining chunks);
      17 the argument block; 18 programs; 19 programs per chunk; 20 the array of the threads'
      error record addresses (0 is the launching thread's)
24    the next chunk (atomic)
32    finished threads (futex word of the launching thread); 33 the launching thread sleeps;
      34 its own count of sleepers, which nothing reads
40    a program failed; 41 workers asleep on the generation; 42 (a ``Team``'s) omp_get_thread_num
48+i  thread i's status (non-zero: one of its programs failed), reset by the thread at each job
====  ==================================================================================

When torch is imported with its GNU OpenMP runtime, ``pool()`` gives a ``Team`` instead: the same
jobs, chunks and block, run as one parallel region of that runtime on the threads torch's ops run
on (see ``Team``; ``TRITIUM_SHARE_OPENMP=0`` keeps the threads of this module).

Linux on x86-64 and AArch64 only (the futex system call, little-endian words); elsewhere
``available()`` is False and the launcher uses a ``concurrent.futures`` pool.
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform
import sys
import threading
from typing import Optional

from llvmlite import ir
import numpy as np

from ..llvm.types import I32, I64, PTR, VOID

MAX_THREADS = 64
_GENERATION, _SHUTDOWN = 0, 8
_GRID_CELL, _ARGS, _TOTAL, _CHUNK, _RECORDS = 16, 17, 18, 19, 20
_NEXT = 24
_DONE, _MAIN_SLEEPS = 32, 33
_FAILED, _SLEEPERS = 40, 41
_OMP_THREAD_NUM = 42  # a Team's: the address of its OpenMP runtime's omp_get_thread_num
_STATUSES = 48
_SLOTS = _STATUSES + MAX_THREADS
# chunks per thread a job is cut into: a thread the machine slows down takes fewer
_CHUNKS_PER_THREAD = 8

_FUTEX_SYSCALL = {"x86_64": 202, "aarch64": 98}
_YIELD_SYSCALL = {"x86_64": 24, "aarch64": 124}  # sched_yield
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
# How long a thread polls a futex word before sleeping on it: on x86-64, 2^22 time-stamp counter
# ticks (1-3 ms at the counter's 1.5-4 GHz), long enough for launches separated by the Python between
# them (tens of microseconds warm; after a kernel that streamed megabytes through the caches that
# code runs cold, 0.1-0.3 ms) to find the workers awake: waking a sleeping thread costs 50-80 us on
# a small virtual machine, and its virtual CPU, halted meanwhile, starts slow. With 2^19 ticks
# (0.2 ms) a memory-bound kernel launched back to back, a new output allocated each time, ran at
# 0.6x torch's speed against 0.9x (torch's OpenMP threads poll for milliseconds too). Short enough
# not to hold a core that another process wants for long. Elsewhere a count of polls.
_SPIN_TICKS = 1 << 22
_SPIN_POLLS = 1 << 19
_PAUSE_TICKS, _PAUSE_POLLS = 1 << 14, 1 << 10

_GRID_TYPE = ir.FunctionType(I32, [PTR, I64, I64, PTR])


def available() -> bool:
    return sys.platform.startswith("linux") and platform.machine() in _FUTEX_SYSCALL and sys.byteorder == "little"


def _build_module() -> ir.Module:
    module = ir.Module(name="tritium_workers")
    futex_number = _FUTEX_SYSCALL[platform.machine()]
    yield_number = _YIELD_SYSCALL[platform.machine()]
    syscall = ir.Function(module, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
    pause = clock = None
    if platform.machine() == "x86_64":
        pause = ir.Function(module, ir.FunctionType(VOID, []), "llvm.x86.sse2.pause")
        clock = ir.Function(module, ir.FunctionType(I64, []), "llvm.readcyclecounter")

    def slot(b, state, index):
        return b.gep(state, [ir.Constant(I64, index)], source_etype=I64)

    def load(b, pointer, ordering="seq_cst"):
        return b.load_atomic(pointer, ordering, 8, typ=I64)

    def store(b, value, pointer):  # a sequentially consistent store (llvmlite's store_atomic wants typed pointers)
        b.atomic_rmw("xchg", pointer, value if isinstance(value, ir.Value) else ir.Constant(I64, value), "seq_cst")

    def add(b, pointer, amount):
        return b.atomic_rmw("add", pointer, ir.Constant(I64, amount), "seq_cst")

    def futex(b, word, operation, value):
        b.call(syscall, [ir.Constant(I64, futex_number), b.ptrtoint(word, I64), ir.Constant(I64, operation),
                         value, ir.Constant(I64, 0), ir.Constant(I64, 0), ir.Constant(I64, 0)])

    def wait_while_equal(fn, b, word, seen, sleepers):
        """Returns once the 32-bit word no longer holds ``seen``: polls, then sleeps on the futex
        (announcing itself in ``sleepers`` first, so that a waker knows to call the kernel)."""
        seen32 = b.and_(seen, ir.Constant(I64, 0xFFFFFFFF))
        head = fn.append_basic_block("poll")
        spin = fn.append_basic_block("spin")
        sleep = fn.append_basic_block("sleep")
        after = fn.append_basic_block("changed")
        entry = b.block
        start = b.call(clock, []) if clock is not None else ir.Constant(I64, 0)
        b.branch(head)
        b.position_at_end(head)
        count = b.phi(I64)
        count.add_incoming(ir.Constant(I64, 0), entry)
        since = b.phi(I64)
        since.add_incoming(start, entry)
        current = b.and_(load(b, word), ir.Constant(I64, 0xFFFFFFFF))
        b.cbranch(b.icmp_unsigned("!=", current, seen32), after, spin)
        b.position_at_end(spin)
        following = b.add(count, ir.Constant(I64, 1))
        if clock is not None:
            elapsed = b.sub(b.call(clock, []), since)
            short = b.icmp_unsigned("<", elapsed, ir.Constant(I64, _PAUSE_TICKS))
            polling = b.icmp_unsigned("<", elapsed, ir.Constant(I64, _SPIN_TICKS))
        else:
            short = b.icmp_unsigned("<", following, ir.Constant(I64, _PAUSE_POLLS))
            polling = b.icmp_unsigned("<", following, ir.Constant(I64, _SPIN_POLLS))
        with b.if_else(short) as (then, otherwise):
            with then:
                if pause is not None:
                    b.call(pause, [])
            with otherwise:
                b.call(syscall, [ir.Constant(I64, yield_number)])
        count.add_incoming(following, b.block)
        since.add_incoming(since, b.block)
        b.cbranch(polling, head, sleep)
        b.position_at_end(sleep)
        add(b, sleepers, 1)
        futex(b, word, _FUTEX_WAIT_PRIVATE, seen32)  # returns at once if the word has changed meanwhile
        add(b, sleepers, -1)
        count.add_incoming(ir.Constant(I64, 0), sleep)
        since.add_incoming(b.call(clock, []) if clock is not None else ir.Constant(I64, 0), sleep)
        b.branch(head)
        b.position_at_end(after)

    # i32 run_chunks(state, thread): chunks until none is left or a program fails; 1 if one of ours failed
    run = ir.Function(module, ir.FunctionType(I32, [PTR, I64]), "tritium_run_chunks")
    run.linkage = "internal"
    state, thread = run.args
    b = ir.IRBuilder(run.append_basic_block("entry"))
    status_slot = b.gep(state, [b.add(thread, ir.Constant(I64, _STATUSES))], source_etype=I64)
    store(b, 0, status_slot)
    args = b.inttoptr(load(b, slot(b, state, _ARGS), "monotonic"), PTR)
    total = load(b, slot(b, state, _TOTAL), "monotonic")
    chunk = load(b, slot(b, state, _CHUNK), "monotonic")
    take = run.append_basic_block("take")
    work = run.append_basic_block("work")
    failed = run.append_basic_block("failed")
    finished = run.append_basic_block("finished")
    b.branch(take)
    b.position_at_end(take)
    stop = b.icmp_unsigned("!=", load(b, slot(b, state, _FAILED)), ir.Constant(I64, 0))
    first = b.mul(add(b, slot(b, state, _NEXT), 1), chunk)
    b.cbranch(b.or_(stop, b.icmp_unsigned(">=", first, total)), finished, work)
    b.position_at_end(work)
    # read before each chunk: optimized code replacing quick code takes over mid-launch
    cell = b.inttoptr(load(b, slot(b, state, _GRID_CELL), "monotonic"), PTR)
    grid = b.inttoptr(load(b, cell, "monotonic"), _GRID_TYPE.as_pointer())
    records = b.inttoptr(load(b, slot(b, state, _RECORDS), "monotonic"), PTR)
    record = b.inttoptr(load(b, b.gep(records, [thread], source_etype=I64), "monotonic"), PTR)
    end = b.add(first, chunk)
    last = b.select(b.icmp_unsigned("<", end, total), end, total)
    status = b.call(grid, [args, first, last, record])
    b.cbranch(b.icmp_unsigned("!=", status, ir.Constant(I32, 0)), failed, take)
    b.position_at_end(failed)
    store(b, 1, slot(b, state, _FAILED))
    store(b, 1, status_slot)
    b.ret(ir.Constant(I32, 1))
    b.position_at_end(finished)
    b.ret(ir.Constant(I32, 0))

    def finish(b, state):
        """Counts this worker done and wakes the launching thread if it sleeps."""
        add(b, slot(b, state, _DONE), 1)
        asleep = b.icmp_unsigned("!=", load(b, slot(b, state, _MAIN_SLEEPS)), ir.Constant(I64, 0))
        with b.if_then(asleep):
            futex(b, slot(b, state, _DONE), _FUTEX_WAKE_PRIVATE, ir.Constant(I64, 1))

    # void worker(state, thread): jobs until shutdown
    worker = ir.Function(module, ir.FunctionType(VOID, [PTR, I64]), "tritium_worker")
    state, thread = worker.args
    b = ir.IRBuilder(worker.append_basic_block("entry"))
    # A pool's generation starts at 0: a worker that starts after the first job was published must
    # still take it (reading the generation here could miss it, and the launch would wait forever).
    initial = ir.Constant(I64, 0)
    loop = worker.append_basic_block("job")
    entry = b.block
    b.branch(loop)
    b.position_at_end(loop)
    seen = b.phi(I64)
    seen.add_incoming(initial, entry)
    wait_while_equal(worker, b, slot(b, state, _GENERATION), seen, slot(b, state, _SLEEPERS))
    generation = load(b, slot(b, state, _GENERATION))
    quit_ = worker.append_basic_block("quit")
    job = worker.append_basic_block("run")
    b.cbranch(b.icmp_unsigned("!=", load(b, slot(b, state, _SHUTDOWN)), ir.Constant(I64, 0)), quit_, job)
    b.position_at_end(job)
    b.call(run, [state, thread])
    finish(b, state)
    seen.add_incoming(generation, b.block)
    b.branch(loop)
    b.position_at_end(quit_)
    b.ret_void()

    # i32 dispatch(state, grid_cell, args, total, records, workers): the job to every worker (cut into
    # _CHUNKS_PER_THREAD chunks per thread), this thread's share, then the wait; returns 1 when a
    # program failed
    def publish(b, state, cell_address, args_address, total, records_address, threads):
        """Writes a job's description into the shared block."""
        share = b.udiv(total, b.mul(threads, ir.Constant(I64, _CHUNKS_PER_THREAD)))
        chunk = b.select(b.icmp_unsigned("==", share, ir.Constant(I64, 0)), ir.Constant(I64, 1), share)
        for index, value in ((_GRID_CELL, cell_address), (_ARGS, args_address), (_TOTAL, total), (_CHUNK, chunk),
                             (_RECORDS, records_address), (_NEXT, ir.Constant(I64, 0)), (_DONE, ir.Constant(I64, 0)),
                             (_FAILED, ir.Constant(I64, 0))):
            store(b, value, slot(b, state, index))

    dispatch = ir.Function(module, ir.FunctionType(I32, [PTR, I64, I64, I64, I64, I64]), "tritium_dispatch")
    state, cell_address, args_address, total, records_address, workers = dispatch.args
    b = ir.IRBuilder(dispatch.append_basic_block("entry"))
    publish(b, state, cell_address, args_address, total, records_address, b.add(workers, ir.Constant(I64, 1)))
    add(b, slot(b, state, _GENERATION), 1)
    asleep = b.icmp_unsigned("!=", load(b, slot(b, state, _SLEEPERS)), ir.Constant(I64, 0))
    with b.if_then(asleep):
        futex(b, slot(b, state, _GENERATION), _FUTEX_WAKE_PRIVATE, ir.Constant(I64, 0x7FFFFFFF))
    b.call(run, [state, ir.Constant(I64, 0)])
    # wait until every worker has counted itself done
    head = dispatch.append_basic_block("wait")
    done_block = dispatch.append_basic_block("all_done")
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    done = load(b, slot(b, state, _DONE))
    waiting = dispatch.append_basic_block("not_yet")
    b.cbranch(b.icmp_unsigned(">=", done, workers), done_block, waiting)
    b.position_at_end(waiting)
    store(b, 1, slot(b, state, _MAIN_SLEEPS))
    scratch_sleepers = slot(b, state, _MAIN_SLEEPS + 1)  # a counter nobody reads
    wait_while_equal(dispatch, b, slot(b, state, _DONE), done, scratch_sleepers)
    store(b, 0, slot(b, state, _MAIN_SLEEPS))
    b.branch(head)
    b.position_at_end(done_block)
    failed_any = b.icmp_unsigned("!=", load(b, slot(b, state, _FAILED)), ir.Constant(I64, 0))
    b.ret(b.zext(failed_any, I32))
    del entry

    # The same jobs on an OpenMP team (``Team``): void team_body(state) runs in every thread of the
    # team, i32 team_dispatch(state, grid_cell, args, total, records, threads, GOMP_parallel) publishes
    # the job and runs it as one parallel region (GOMP_parallel returns after the region's barrier).
    body = ir.Function(module, ir.FunctionType(VOID, [PTR]), "tritium_team_body")
    body.linkage = "internal"
    b = ir.IRBuilder(body.append_basic_block("entry"))
    thread_number = b.inttoptr(load(b, slot(b, body.args[0], _OMP_THREAD_NUM), "monotonic"),
                               ir.FunctionType(I32, []).as_pointer())
    b.call(run, [body.args[0], b.zext(b.call(thread_number, []), I64)])
    b.ret_void()
    parallel_type = ir.FunctionType(VOID, [PTR, PTR, I32, I32])
    team = ir.Function(module, ir.FunctionType(I32, [PTR, I64, I64, I64, I64, I64, I64]), "tritium_team_dispatch")
    state, cell_address, args_address, total, records_address, threads, parallel = team.args
    b = ir.IRBuilder(team.append_basic_block("entry"))
    publish(b, state, cell_address, args_address, total, records_address, threads)
    for i in range(MAX_THREADS):  # a team may come with fewer threads than asked for: no stale statuses
        store(b, 0, slot(b, state, _STATUSES + i))
    b.call(b.inttoptr(parallel, parallel_type.as_pointer()), [body, state, b.trunc(threads, I32), ir.Constant(I32, 0)])
    failed_any = b.icmp_unsigned("!=", load(b, slot(b, state, _FAILED)), ir.Constant(I64, 0))
    b.ret(b.zext(failed_any, I32))
    return module


@functools.cache
def _functions():
    """(worker, dispatch) of the compiled module, loaded once per process. Emitted without LLVM's
    optimization pipeline: the module is a few loops written as they should run, and the pipeline
    would double the 15 ms this costs at a process's first threaded launch."""
    import llvmlite.binding as llvm

    from ..llvm import host

    host.initialize()
    machine = host.target_machine()
    module = llvm.parse_assembly(str(_build_module()))
    module.verify()
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    loaded = host.LoadedObject(machine.emit_object(module))
    worker = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(loaded.address("tritium_worker"))
    dispatch = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                ctypes.c_int64, ctypes.c_int64)(loaded.address("tritium_dispatch"))
    team_dispatch = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                     ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)(
        loaded.address("tritium_team_dispatch"))
    return loaded, worker, dispatch, team_dispatch


class _Threads:
    """What a launch runs its chunks on: ``threads`` threads sharing one block (64-byte aligned, the
    layout above), ``lock`` held by the launch that uses them, ``closed`` once they are gone."""

    def __init__(self, threads: int):
        self.threads = max(1, min(threads, MAX_THREADS))
        raw = np.zeros(_SLOTS + 8, dtype=np.int64)
        start = (-raw.ctypes.data % 64) // 8
        self.state = raw[start:start + _SLOTS]
        self.address = self.state.ctypes.data
        self.lock = threading.Lock()
        self.closed = False  # set, under ``lock``, when the threads are gone

    def failed_threads(self) -> list:
        """The indices of the threads whose program failed in the last job."""
        return [i for i in range(self.threads) if self.state[_STATUSES + i]]


class Pool(_Threads):
    """``threads - 1`` workers waiting in native code; the launching thread is thread 0."""

    def __init__(self, threads: int):
        super().__init__(threads)
        self._workers = self.threads - 1
        self._loaded, worker, self._dispatch, _ = _functions()
        self._threads = [threading.Thread(target=worker, args=(self.address, i), daemon=True,
                                          name=f"tritium-cpu-{i}") for i in range(1, self.threads)]
        for t in self._threads:
            t.start()

    def run(self, grid_cell: int, args_address: int, total: int, records: int) -> bool:
        """Runs programs [0, total) over the pool: ``grid_cell``, the address of the word that holds
        the grid function's address; ``records``, the address of an array of one error record address
        per thread. True when a program failed (``failed_threads`` says whose). The caller holds
        ``lock``."""
        return self._dispatch(self.address, grid_cell, args_address, total, records, self._workers) != 0

    def shutdown(self) -> None:
        with self.lock:
            self.closed = True  # a launch that took this pool before it was replaced runs elsewhere
            self.state[_SHUTDOWN] = 1
            # a job with the shutdown flag set: every worker returns (none counts itself done)
            self._dispatch(self.address, 0, 0, 0, 0, 0)
        for t in self._threads:
            t.join(timeout=1.0)


class Team(_Threads):
    """The threads of the GNU OpenMP runtime that torch runs its ops on, used as a ``Pool``: a job is
    one parallel region of ``threads`` threads (``GOMP_parallel``; the launching thread is thread 0),
    its chunks taken from the same shared block as the pool's. Sharing torch's threads instead of
    running a second pool next to them: a kernel launched right after a torch op ran at up to half
    speed, its worker sharing a core with torch's still-polling OpenMP thread."""

    def __init__(self, threads: int, parallel: int, thread_number: int):
        super().__init__(threads)
        self.state[_OMP_THREAD_NUM] = thread_number
        self._parallel = parallel
        self._loaded, _, _, self._dispatch = _functions()

    def run(self, grid_cell: int, args_address: int, total: int, records: int) -> bool:
        """As ``Pool.run``."""
        return self._dispatch(self.address, grid_cell, args_address, total, records, self.threads,
                              self._parallel) != 0


def _openmp_runtime() -> Optional[tuple[int, int]]:
    """(GOMP_parallel, omp_get_thread_num) of the GNU OpenMP runtime loaded with torch (the copy in
    torch's own folder when there are several), or None: no torch imported, no such runtime, the
    setting off (``config.share_openmp``), or a forked child (an OpenMP runtime whose threads were
    the parent's waits for them forever)."""
    from ... import config

    torch = sys.modules.get("torch")
    if torch is None or _forked or not config.share_openmp():
        return None
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libgomp" in line and "/" in line}
    except OSError:
        return None
    here = os.path.dirname(getattr(torch, "__file__", "") or "")
    ordered = sorted(paths, key=lambda path: not (here and path.startswith(here)))
    for path in ordered:
        try:
            library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
            return (ctypes.cast(library.GOMP_parallel, ctypes.c_void_p).value,
                    ctypes.cast(library.omp_get_thread_num, ctypes.c_void_p).value)
        except (OSError, AttributeError):
            continue
    return None


_pool: Optional[Pool] = None
_current = None  # the Pool or Team the last launch ran on
_teams: dict = {}  # thread count -> Team
_runtime_checked_with_torch = False  # whether torch's OpenMP runtime was looked for with torch imported
_forked = False  # this process is a fork of one that may have run OpenMP jobs
_pool_guard = threading.Lock()
# Pools replaced by one of another size: their shared blocks stay allocated, since a worker that has
# not yet seen the shutdown job may still read them.
_retired: list = []


def pool(threads: int):
    """What a launch on ``threads`` threads runs on: the threads of torch's OpenMP runtime (a
    ``Team``) when torch is imported with one, else the process's own ``Pool`` (made again when the
    count changes)."""
    threads = min(threads, MAX_THREADS)
    found = _current
    if found is not None and found.threads == threads and (_runtime_checked_with_torch or "torch" not in sys.modules):
        return found  # every launch asks: answer without the lock
    return _choose(threads)


def _choose(threads: int):
    global _pool, _current, _runtime_checked_with_torch
    with _pool_guard:
        runtime = None
        if "torch" in sys.modules:
            runtime = _openmp_runtime()
            _runtime_checked_with_torch = True
        if runtime is not None:
            team = _teams.get(threads)
            if team is None:
                team = _teams[threads] = Team(threads, *runtime)
            _current = team
            return team
        if _pool is None or _pool.threads != threads:
            if _pool is not None:
                _pool.shutdown()
                _retired.append(_pool)
            _pool = Pool(threads)
        _current = _pool
        return _pool


def _forget_after_fork() -> None:
    """A forked child has none of the parent's threads: it makes its own pool when it launches."""
    global _pool, _pool_guard, _current, _forked, _runtime_checked_with_torch
    _pool = _current = None
    _teams.clear()
    _forked = True
    _runtime_checked_with_torch = False
    _pool_guard = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
