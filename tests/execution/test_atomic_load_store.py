"""``tl.atomic_load`` and ``tl.atomic_store`` against numpy, on every backend: programs that hand work
to one another through flags, masks, element types and Triton's errors. On the host backends a
kernel whose programs wait on each other runs them one at a time in order (the effects analysis), so
waiting for an earlier program works and waiting for a later one is a DeadlockError."""
from __future__ import annotations

import numpy as np
import pytest

import tritium as triton
import tritium.language as tl
from tritium.errors import CompilationError, DeadlockError, RaceError


@triton.jit
def _running_sum(flag_ptr, data_ptr, out_ptr, BLOCK: tl.constexpr):
    """Block pid adds its data to block pid-1's running sum, once program pid-1 has set its flag."""
    pid = tl.program_id(0)
    r = tl.arange(0, BLOCK)
    if pid > 0:
        while tl.atomic_load(flag_ptr + pid - 1) == 0:
            pass
    previous = tl.load(out_ptr + (pid - 1) * BLOCK + r, mask=(r >= 0) & (pid > 0), other=0.0)
    tl.store(out_ptr + pid * BLOCK + r, previous + tl.load(data_ptr + pid * BLOCK + r))
    tl.atomic_store(flag_ptr + pid, 1)


@pytest.mark.parametrize("debug", [False, True])
def test_each_program_waits_for_the_flag_of_the_one_before(debug):
    n, block = 9, 32
    data = np.random.default_rng(1).integers(-50, 50, n * block).astype(np.float32)
    out, flags = np.zeros_like(data), np.zeros(n, np.int32)
    _running_sum[(n,)](flags, data, out, BLOCK=block, debug=debug)
    # small integers: every partial sum is exact in fp32, so the oracle's order does not matter
    assert np.array_equal(out.reshape(n, block), np.cumsum(data.reshape(n, block), axis=0))
    assert flags.tolist() == [1] * n


@triton.jit
def _wait_for_next(flag_ptr, out_ptr):
    pid = tl.program_id(0)
    if pid == 0:
        while tl.atomic_load(flag_ptr) == 0:  # program 1 sets it, but runs after program 0 here
            pass
        tl.store(out_ptr, 1)
    else:
        tl.atomic_store(flag_ptr, 1)


@pytest.mark.not_on_backend("cuda", reason="a GPU runs the two programs at once: program 0's wait ends there")
def test_waiting_for_a_later_program_is_a_deadlock_in_debug_mode():
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    with pytest.raises(DeadlockError) as info:
        _wait_for_next[(2,)](flag, out, debug=True)
    assert info.value.program_ids == [(0, 0, 0)]
    assert "while tl.atomic_load(flag_ptr) == 0" in str(info.value)


@triton.jit
def _copy_twice(x_ptr, y_ptr, b_ptr, h_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.atomic_load(x_ptr + r, mask=r < 5, sem="relaxed", scope="cta")
    tl.atomic_store(y_ptr + r, v * 2, mask=r % 2 == 0, sem="relaxed", scope="sys")
    flags = tl.atomic_load(b_ptr + r)
    tl.atomic_store(b_ptr + r, flags == 0)
    tl.atomic_store(h_ptr + r, tl.atomic_load(h_ptr + r) * 3)


def test_masks_element_types_and_orders():
    x = np.arange(1, 9, dtype=np.int64) * 1000003
    y = np.full(8, -7, np.int64)
    b = np.array([1, 0, 1, 1, 0, 0, 1, 0], bool)
    h = np.linspace(-2, 2, 8).astype(np.float16)
    expected_h = (h.astype(np.float64) * 3).astype(np.float16)  # one product, rounded once to fp16
    flipped = ~b
    _copy_twice[(1,)](x, y, b, h, N=8)
    loaded = np.where(np.arange(8) < 5, x, 0)  # masked-off lanes read 0
    assert np.array_equal(y, np.where(np.arange(8) % 2 == 0, loaded * 2, -7))
    assert np.array_equal(b, flipped)
    assert np.array_equal(h, expected_h)


@triton.jit
def _everyone_sets_the_flag(flag_ptr, PLAIN: tl.constexpr):
    if PLAIN:
        tl.store(flag_ptr, tl.program_id(0))
    else:
        tl.atomic_store(flag_ptr, tl.program_id(0), sem="relaxed")


@pytest.mark.not_on_backend("cuda", reason="debug mode's race checks run on the host backends")
def test_atomic_stores_to_one_address_are_no_race():
    flag = np.zeros(1, np.int32)
    _everyone_sets_the_flag[(4,)](flag, PLAIN=False, debug=True)
    assert flag[0] == 3  # the last program in launch order, which the host backends keep
    with pytest.raises(RaceError):
        _everyone_sets_the_flag[(4,)](flag, PLAIN=True, debug=True)


@triton.jit
def _bad_order(p, SEM: tl.constexpr, LOAD: tl.constexpr):
    if LOAD:
        tl.store(p + 1, tl.atomic_load(p, sem=SEM))
    else:
        tl.atomic_store(p, 1, sem=SEM)


@pytest.mark.parametrize("load, sem, message", [
    (True, "release", "atomic_load only supports acquire and relaxed semantics, got sem='release'"),
    (True, "acq_rel", "atomic_load only supports acquire and relaxed semantics"),
    (False, "acquire", "atomic_store only supports release and relaxed semantics, got sem='acquire'"),
])
def test_orders_triton_refuses_are_compile_errors_at_the_call(load, sem, message):
    with pytest.raises(CompilationError, match=message) as info:
        _bad_order[(1,)](np.zeros(2, np.int32), SEM=sem, LOAD=load)
    assert ("tl.atomic_load(p, sem=SEM)" if load else "tl.atomic_store(p, 1, sem=SEM)") in str(info.value)


@triton.jit
def _poll_chain(flags_ptr, out_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, N)
    if pid > 0:
        seen = tl.atomic_poll(flags_ptr + (pid - 1) * N + r, pid)  # each element of the previous row
        tl.store(out_ptr + pid * N + r, seen.to(tl.int32) * 100 + tl.load(out_ptr + (pid - 1) * N + r))
    else:
        tl.store(out_ptr + r, r)
    tl.atomic_store(flags_ptr + pid * N + r, pid + 1)


def test_atomic_poll_waits_for_every_element():
    rows, n = 5, 16
    flags, out = np.zeros(rows * n, np.int32), np.zeros(rows * n, np.int32)
    _poll_chain[(rows,)](flags, out, N=n)
    expected = np.arange(n)[None, :] + 100 * np.arange(rows)[:, None]
    assert np.array_equal(out.reshape(rows, n), expected)
    assert np.array_equal(flags.reshape(rows, n), np.repeat(np.arange(1, rows + 1)[:, None], n, axis=1))


@triton.jit
def _poll_once(flag_ptr, ok_ptr, EXPECTED: tl.constexpr, TIMEOUT: tl.constexpr):
    tl.store(ok_ptr, tl.atomic_poll(flag_ptr, EXPECTED, timeout_ns=TIMEOUT))


def test_atomic_poll_times_out_to_false_and_reads_at_least_once():
    flag, ok = np.array([7], np.int16), np.array([1], np.int8)
    _poll_once[(1,)](flag, ok, EXPECTED=3, TIMEOUT=1_000_000)  # 1 ms: nothing writes 3
    assert ok[0] == 0
    _poll_once[(1,)](flag, ok, EXPECTED=7, TIMEOUT=0)  # a zero timeout still reads once
    assert ok[0] == 1


@pytest.mark.not_on_backend("cuda", reason="a GPU runs the two programs at once: program 0's wait ends there")
def test_polling_for_a_later_program_without_timeout_is_a_deadlock_in_debug_mode():
    @triton.jit
    def wait_for_next(flag_ptr):
        if tl.program_id(0) == 0:
            tl.atomic_poll(flag_ptr, 1)
        else:
            tl.atomic_store(flag_ptr, 1)

    with pytest.raises(DeadlockError) as info:
        wait_for_next[(2,)](np.zeros(1, np.int64), debug=True)
    assert info.value.program_ids == [(0, 0, 0)]


def test_atomic_poll_takes_16_to_64_bit_integers():
    with pytest.raises(CompilationError, match=r"atomic_poll only supports integer elements with width \{16, 32, 64\}"):
        _poll_once[(1,)](np.zeros(1, np.float32), np.zeros(1, np.int8), EXPECTED=1, TIMEOUT=0)
