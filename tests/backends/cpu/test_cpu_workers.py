"""The CPU backend's native worker pool (backends/cpu/workers.py): every program of a grid runs
exactly once whatever the thread count, launches from several Python threads and from a forked
child work, and a failing program is reported as the first one in launch order."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.backends.cpu import workers
from tritium.errors import OutOfBoundsError

pytestmark = pytest.mark.skipif(not workers.available(), reason="the native pool needs Linux on x86-64 or AArch64")


@pytest.fixture(autouse=True, params=["own threads", "torch's OpenMP threads"])
def threads_of(request, monkeypatch):
    """Every test twice: on the backend's own worker threads, and on the threads of torch's OpenMP
    runtime (``workers.Team``), which launches use when torch is imported with one."""
    sharing = request.param != "own threads"
    if sharing:
        torch = pytest.importorskip("torch")
        del torch
    monkeypatch.setenv("TRITIUM_SHARE_OPENMP", "1" if sharing else "0")
    monkeypatch.setattr(workers, "_current", None)
    monkeypatch.setattr(workers, "_runtime_checked_with_torch", False)
    chosen = workers.pool(2)
    if sharing and not isinstance(chosen, workers.Team):
        pytest.skip("torch is not running on a GNU OpenMP runtime here")
    assert isinstance(chosen, workers.Team if sharing else workers.Pool)
    yield request.param
    monkeypatch.setattr(workers, "_current", None)
    monkeypatch.setattr(workers, "_runtime_checked_with_torch", False)


@triton.jit
def _count_programs(counts_ptr, x_ptr, y_ptr, n, B: tl.constexpr):
    pid = tl.program_id(0)
    tl.atomic_add(counts_ptr + pid, 1)
    i = pid * B + tl.arange(0, B)
    m = i < n
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) + 1.0, mask=m)


def _launch_and_check(block=256, programs=700):
    n = programs * block - 5
    counts = np.zeros(programs, np.int32)
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    _count_programs[(programs,)](counts, x, y, n, B=block)  # 179k lanes: threaded
    assert np.all(counts == 1), np.flatnonzero(counts != 1)[:10]
    assert np.array_equal(y, x + 1)


def test_every_program_runs_once_as_the_thread_count_changes(monkeypatch):
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    for round_ in range(6):
        for threads in ("2", "3", "1", "4"):
            monkeypatch.setenv("TRITIUM_NUM_THREADS", threads)
            _launch_and_check()


def test_launches_from_several_python_threads_at_once(monkeypatch):
    """One launch holds the pool; a launch from another thread meanwhile runs on its own thread."""
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.setenv("TRITIUM_NUM_THREADS", "2")
    failures = []

    def launches():
        try:
            for _ in range(15):
                _launch_and_check()
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(error)

    threads = [threading.Thread(target=launches) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a launch did not finish"
    assert not failures, failures[0]


@triton.jit
def _fails_from(x_ptr, first_bad, B: tl.constexpr):
    pid = tl.program_id(0)
    i = pid * B + tl.arange(0, B)
    shift = tl.where(pid >= first_bad, 1 << 20, 0)  # programs from first_bad on read far past the end
    tl.store(x_ptr + i, tl.load(x_ptr + i + shift) + 1.0)


@pytest.mark.parametrize("first_bad", [3, 400, 999])
def test_the_first_failing_program_in_launch_order_is_reported(monkeypatch, first_bad):
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.setenv("TRITIUM_NUM_THREADS", "2")
    programs, block = 1000, 128
    x = np.zeros(programs * block, np.float32)
    with pytest.raises(OutOfBoundsError, match=rf"program \({first_bad}, 0, 0\)"):
        _fails_from[(programs,)](x, first_bad, B=block)
    # every program before it ran (each chunk taken was finished), none at or after it wrote
    assert np.all(x[:first_bad * block] == 1.0)
    assert np.all(x[first_bad * block:(first_bad + 1) * block] == 0.0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_launches_on_a_pool_of_its_own(monkeypatch):
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.setenv("TRITIUM_NUM_THREADS", "2")
    _launch_and_check()  # the parent's pool exists
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            _launch_and_check()
            status = 0
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    _launch_and_check()  # and the parent's still works


@triton.jit
def _plus_two(x_ptr, y_ptr, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    m = i < n
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) + 2.0, mask=m)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_during_a_background_compilation_compiles_and_launches(monkeypatch):
    """Forked while the background thread waits for a full compilation's reply (holding the reply
    stream's lock, which never comes free in the child): the child still compiles a new kernel and
    launches it. (Closing that stream in the child once hung it.)"""
    import time

    from tritium.backends.llvm import host

    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    _launch_and_check()  # a pool, both compile children
    body = "".join(f"  %v{i} = fmul double %v{i - 1}, 1.0000001\n" for i in range(1, 20000))
    slow = f"define double @slow(double %v0) {{\n{body}  ret double %v19999\n}}\n"
    waiting = threading.Thread(target=host.compile_to_object, args=(slow,), kwargs={"background": True})
    waiting.start()
    time.sleep(0.05)  # the reply is being waited for
    assert host._background_server.lock.locked(), "the background compilation is still in flight"
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            n = 1000
            x = np.arange(n, dtype=np.float32)
            y = np.zeros(n, np.float32)
            _plus_two[(4,)](x, y, n, B=256)
            status = 0 if np.array_equal(y, x + 2) else 2
        finally:
            os._exit(status)
    deadline = time.monotonic() + 120
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if not done:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    waiting.join()
    assert done, "the forked child hung"
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_a_launch_holding_a_pool_that_was_replaced_runs_without_it(monkeypatch):
    """A launch that took the pool just before another thread replaced it (a launch with another
    thread count shuts the old one down) finds it closed and runs on its own thread, instead of
    waiting for workers that have exited."""
    monkeypatch.setenv("TRITIUM_BACKEND", "cpu")
    monkeypatch.setenv("TRITIUM_NUM_THREADS", "2")
    _launch_and_check()
    replaced = workers.Pool(2)  # a pool of its own (the process's stays as it is)
    replaced.shutdown()  # as a replacement does
    monkeypatch.setattr(workers, "pool", lambda threads: replaced)
    done = []
    launcher = threading.Thread(target=lambda: done.append(_launch_and_check()), daemon=True)
    launcher.start()
    launcher.join(timeout=30)
    assert done == [None], "the launch waited for a pool that was shut down"
