"""Programs that talk to each other through memory: locks, tickets, atomics into shared outputs.

Oracles: numpy (integer sums, element-wise max/min/and/or/xor over every program's masked
values, a matmul of small integers stored as fp32, which every summation order gives exactly)
and torch's autograd for the layer-norm backward of Triton's tutorial 05 (fp32, tolerance
stated in the test). Where the order programs run in could change a result (tickets, old values
of atomics), the checks hold for every order; the interpreter's own order is launch order unless
TRITIUM_SHUFFLE is set, and that is checked separately. On a GPU (TRITIUM_BACKEND=cuda) the programs
run concurrently, as under Triton: the checks of launch order and of bit-identical float atomics
are skipped there, the order-free ones hold.

The last section checks determinism: the same launch twice gives the same bits, atomics included.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import tritium as triton
import tritium.language as tl


def programs_run_concurrently() -> bool:
    """On a GPU (TRITIUM_BACKEND=cuda) the programs of a launch run concurrently, as under Triton:
    no launch order, and float atomics add in whatever order the programs reach them."""
    return os.environ.get("TRITIUM_BACKEND", "").strip().lower() == "cuda"


in_launch_order = pytest.mark.not_on_backend("cuda", reason="the programs of a GPU launch run concurrently: there is "
                                             "no launch order to check (as under Triton)")


@pytest.fixture(autouse=True)
def launch_order(monkeypatch):
    """These tests state what they expect of the launch order themselves."""
    monkeypatch.delenv("TRITIUM_SHUFFLE", raising=False)
    monkeypatch.delenv("TRITIUM_DEBUG", raising=False)


# a spin lock around a load/store accumulation ----------------------------------------------------
@triton.jit
def locked_accumulate(x_ptr, acc_ptr, lock_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    partial = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0), axis=0)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(acc_ptr, tl.load(acc_ptr) + partial)  # plain load and store: the lock orders them
    tl.store(acc_ptr + 1, tl.load(acc_ptr + 1) + 1)
    tl.atomic_xchg(lock_ptr, 0)


@pytest.mark.parametrize("debug", [False, True])
def test_lock_protected_accumulation_is_exact(debug):
    x = np.random.default_rng(0).integers(-1000, 1000, 1000).astype(np.int32)
    acc = np.zeros(2, np.int32)
    lock = np.zeros(1, np.int32)
    programs = triton.cdiv(x.size, 64)
    locked_accumulate[(programs,)](x, acc, lock, x.size, BLOCK=64, debug=debug)
    assert acc.tolist() == [int(x.sum()), programs]
    assert lock[0] == 0  # every program released it


# tickets ----------------------------------------------------------------------------------------------
@triton.jit
def take_ticket(counter_ptr, tickets_ptr):
    tl.store(tickets_ptr + tl.program_id(0), tl.atomic_add(counter_ptr, 1))


def test_ticket_counter_gives_each_program_a_unique_ticket():
    counter = np.zeros(1, np.int32)
    tickets = np.full(37, -1, np.int32)
    take_ticket[(37,)](counter, tickets)
    assert sorted(tickets.tolist()) == list(range(37))
    assert counter[0] == 37
    if not programs_run_concurrently():
        assert tickets.tolist() == list(range(37))  # programs run in launch order when not shuffled


@in_launch_order
def test_shuffled_launch_order_still_gives_unique_tickets(monkeypatch):
    orders = []
    for seed in (1, 1, 2):
        monkeypatch.setenv("TRITIUM_SHUFFLE", str(seed))
        counter = np.zeros(1, np.int32)
        tickets = np.full(37, -1, np.int32)
        take_ticket[(37,)](counter, tickets)
        assert sorted(tickets.tolist()) == list(range(37)) and counter[0] == 37
        orders.append(tickets.tolist())
    assert orders[0] == orders[1]  # the same seed replays the same order
    assert orders[0] != orders[2] and orders[0] != list(range(37))


@triton.jit
def take_block_of_tickets(counter_ptr, tickets_ptr, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    want = lanes < (tl.program_id(0) % 3) + 1  # program p takes p % 3 + 1 tickets, one per lane
    got = tl.atomic_add(counter_ptr + lanes * 0, 1, mask=want)
    tl.store(tickets_ptr + tl.program_id(0) * BLOCK + lanes, got, mask=want)


def test_masked_atomics_return_old_values_lane_by_lane():
    programs, block = 20, 4
    counter = np.zeros(1, np.int32)
    tickets = np.full(programs * block, -1, np.int32)
    take_block_of_tickets[(programs,)](counter, tickets, BLOCK=block)
    taken = tickets.reshape(programs, block)
    wanted = np.arange(block)[None, :] < (np.arange(programs) % 3 + 1)[:, None]
    assert counter[0] == wanted.sum()
    assert sorted(taken[wanted].tolist()) == list(range(int(wanted.sum())))  # each old value once
    assert np.all(taken[~wanted] == -1)  # masked lanes touch nothing
    # lane order within a program: each program's tickets are consecutive
    for p in range(programs):
        mine = taken[p][wanted[p]]
        np.testing.assert_array_equal(mine, mine[0] + np.arange(mine.size))
    if not programs_run_concurrently():  # and launch order across programs
        np.testing.assert_array_equal(taken[wanted], np.arange(int(wanted.sum())))


# split-K matmul: partial products added atomically into C ------------------------------------------
@triton.jit
def matmul_split_k(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.atomic_add(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _split_k(a, b, split_k=4, **flags):
    m, k = a.shape
    n = b.shape[1]
    c = np.zeros((m, n), np.float32)
    grid = (triton.cdiv(m, 16), triton.cdiv(n, 16), split_k)
    matmul_split_k[grid](a, b, c, m, n, k, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, SPLIT_K=split_k, **flags)
    return c


@pytest.mark.parametrize("debug", [False, True])
def test_split_k_matmul_with_atomic_add_is_exact_for_small_integers(debug):
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 5, (40, 100)).astype(np.float32)  # |partial sums| < 2**24: every order is exact
    b = rng.integers(-4, 5, (100, 24)).astype(np.float32)
    c = _split_k(a, b, debug=debug)
    np.testing.assert_array_equal(c, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.float32))


# every read-modify-write kind, masked, against numpy ----------------------------------------------------
@triton.jit
def rmw_kernel(x_ptr, val_ptr, mask_ptr, old_ptr, KIND: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    val = tl.load(val_ptr + pid * BLOCK + lanes)
    mask = tl.load(mask_ptr + pid * BLOCK + lanes) != 0
    ptr = x_ptr + lanes  # every program updates the same BLOCK elements
    if KIND == "max":
        old = tl.atomic_max(ptr, val, mask=mask)
    elif KIND == "min":
        old = tl.atomic_min(ptr, val, mask=mask)
    elif KIND == "and":
        old = tl.atomic_and(ptr, val, mask=mask)
    elif KIND == "or":
        old = tl.atomic_or(ptr, val, mask=mask)
    elif KIND == "xor":
        old = tl.atomic_xor(ptr, val, mask=mask)
    elif KIND == "add":
        old = tl.atomic_add(ptr, val, mask=mask)
    else:
        old = tl.atomic_xchg(ptr, val, mask=mask)
    tl.store(old_ptr + pid * BLOCK + lanes, old, mask=mask)


_REDUCE = {"max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
           "xor": np.bitwise_xor, "add": np.add}


def _rmw_case(kind, dtype, programs, block=16, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        init = rng.integers(-50, 50, block).astype(dtype)
        vals = rng.integers(-50, 50, (programs, block)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        init = rng.integers(info.min, info.max, block, endpoint=True, dtype=dtype)
        vals = rng.integers(info.min, info.max, (programs, block), endpoint=True, dtype=dtype)
    mask = rng.random((programs, block)) < 0.6
    x = init.copy()
    old = np.zeros((programs, block), dtype)
    rmw_kernel[(programs,)](x, vals, mask.astype(np.int8), old, KIND=kind, BLOCK=block)
    return init, vals, mask, x, old


@pytest.mark.parametrize("kind, dtype", [(k, d) for k in ("max", "min") for d in (np.int32, np.uint32, np.float32)]
                         + [(k, d) for k in ("and", "or", "xor") for d in (np.int32, np.uint64)]
                         + [("add", np.int64)])
def test_rmw_final_values_over_many_programs(kind, dtype):
    """The final value does not depend on the order: numpy's reduction over the masked values."""
    init, vals, mask, x, _ = _rmw_case(kind, dtype, programs=9)
    expected = init.copy()
    for p in range(vals.shape[0]):
        expected = np.where(mask[p], _REDUCE[kind](expected, vals[p]), expected).astype(dtype)
    np.testing.assert_array_equal(x, expected)


@pytest.mark.parametrize("kind", ["max", "min", "and", "or", "xor", "add", "xchg"])
def test_rmw_old_values_in_one_program(kind):
    """One program, distinct addresses: the old value is the initial one, the new one numpy's."""
    init, vals, mask, x, old = _rmw_case(kind, np.int32, programs=1, seed=3)
    combine = (lambda a, b: b) if kind == "xchg" else _REDUCE[kind]
    np.testing.assert_array_equal(x, np.where(mask[0], combine(init, vals[0]), init))
    np.testing.assert_array_equal(old[0][mask[0]], init[mask[0]])
    assert np.all(old[0][~mask[0]] == 0)  # masked lanes: nothing stored


@in_launch_order
def test_rmw_old_values_chain_in_launch_order():
    """Many programs on the same elements: each old value is what the previous program left."""
    init, vals, mask, x, old = _rmw_case("xchg", np.int32, programs=6, seed=5)
    current = init.copy()
    for p in range(6):
        np.testing.assert_array_equal(old[p][mask[p]], current[mask[p]])
        current = np.where(mask[p], vals[p], current)
    np.testing.assert_array_equal(x, current)


@triton.jit
def cas_kernel(x_ptr, cmp_ptr, val_ptr, old_ptr, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    old = tl.atomic_cas(x_ptr + lanes, tl.load(cmp_ptr + lanes), tl.load(val_ptr + lanes))
    tl.store(old_ptr + lanes, old)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
def test_atomic_cas_swaps_where_equal(dtype):
    rng = np.random.default_rng(2)
    init = rng.integers(0, 4, 32).astype(dtype)
    cmp = rng.integers(0, 4, 32).astype(dtype)
    val = rng.integers(10, 20, 32).astype(dtype)
    x, old = init.copy(), np.zeros(32, dtype)
    cas_kernel[(1,)](x, cmp, val, old, BLOCK=32)
    np.testing.assert_array_equal(old, init)
    np.testing.assert_array_equal(x, np.where(init == cmp, val, init))


# the layer-norm backward of Triton's tutorial 05 ---------------------------------------------------------
@triton.jit
def layer_norm_bwd_dx(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                      GROUP_SIZE_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dx for one row; this row's dw, db partials are added into row ``row % GROUP_SIZE_M`` of DW, DB
    under that row's lock. Count[group] is 0 until the first program of the group has stored."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    group = row % GROUP_SIZE_M
    Lock += group
    Count = Lock + GROUP_SIZE_M
    DW = DW + group * N + cols
    DB = DB + group * N + cols
    x = tl.load(X + cols, mask=mask, other=0)
    dy = tl.load(DY + cols, mask=mask, other=0)
    w = tl.load(W + cols, mask=mask)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = tl.where(mask, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    tl.store(DX + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=mask)
    partial_dw = dy * xhat
    partial_db = dy
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)  # the first program of the group: nothing to add to yet
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_M):
        rows = i + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.0)
        db += tl.load(DB + offs, mask=mask, other=0.0)
    tl.store(FINAL_DW + cols, tl.sum(dw, axis=0), mask=cols < N)
    tl.store(FINAL_DB + cols, tl.sum(db, axis=0), mask=cols < N)


def _layer_norm_backward(x, w, dy, mean, rstd, group_size_m=8, debug=False):
    m, n = x.shape
    dx = torch.empty_like(x)
    locks = torch.zeros(2 * group_size_m, dtype=torch.int32)
    partial_dw = torch.zeros((group_size_m, n), dtype=torch.float32)
    partial_db = torch.zeros((group_size_m, n), dtype=torch.float32)
    dw, db = torch.empty(n), torch.empty(n)
    block_n = triton.next_power_of_2(n)
    layer_norm_bwd_dx[(m,)](dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks, x.stride(0), n,
                            GROUP_SIZE_M=group_size_m, BLOCK_N=block_n, debug=debug)
    layer_norm_bwd_dwdb[(triton.cdiv(n, 32),)](partial_dw, partial_db, dw, db, group_size_m, n,
                                               BLOCK_M=8, BLOCK_N=32, debug=debug)
    return dx, dw, db, locks


@pytest.mark.parametrize("debug", [False, True])
def test_layer_norm_backward_with_group_locks_matches_torch(debug):
    torch.manual_seed(0)
    m, n = 48, 100
    x = torch.randn(m, n)
    w = torch.randn(n)
    b = torch.randn(n)
    dy = torch.randn(m, n)
    mean = x.mean(dim=1)
    rstd = 1.0 / torch.sqrt(x.var(dim=1, unbiased=False) + 1e-5)
    dx, dw, db, locks = _layer_norm_backward(x, w, dy, mean, rstd, debug=debug)

    xr, wr, br = (t.double().requires_grad_() for t in (x, w, b))
    torch.nn.functional.layer_norm(xr, (n,), wr, br, eps=1e-5).backward(dy.double())
    # fp32 against fp64: a few ulps of the largest values, summed over 48 rows
    torch.testing.assert_close(dx.double(), xr.grad, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(dw.double(), wr.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(db.double(), br.grad, atol=1e-4, rtol=1e-4)
    assert locks[:8].tolist() == [0] * 8 and locks[8:].tolist() == [1] * 8  # released; every group visited


# determinism ------------------------------------------------------------------------------------------------
@in_launch_order
def test_same_launch_twice_gives_identical_bits():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((40, 100)).astype(np.float32)
    b = rng.standard_normal((100, 24)).astype(np.float32)
    first, second = _split_k(a, b, split_k=5), _split_k(a, b, split_k=5)
    assert first.tobytes() == second.tobytes()

    torch.manual_seed(1)
    x, w, dy = torch.randn(24, 50), torch.randn(50), torch.randn(24, 50)
    mean, rstd = x.mean(dim=1), 1.0 / torch.sqrt(x.var(dim=1, unbiased=False) + 1e-5)
    one = _layer_norm_backward(x, w, dy, mean, rstd, group_size_m=4)
    two = _layer_norm_backward(x, w, dy, mean, rstd, group_size_m=4)
    for u, v in zip(one, two):
        assert u.numpy().tobytes() == v.numpy().tobytes()


@triton.jit
def float_accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr + offs % BINS, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@in_launch_order
def test_float_atomic_add_gives_the_same_bits_every_run():
    x = (np.random.default_rng(3).standard_normal(5000) * 1e3).astype(np.float32)
    results = []
    for _ in range(3):
        out = np.zeros(7, np.float32)
        float_accumulate[(triton.cdiv(x.size, 128),)](x, out, x.size, BLOCK=128, BINS=7)
        results.append(out.view(np.uint32).copy())
    assert all(np.array_equal(results[0], r) for r in results[1:])
    # and it is the sum, up to fp32 rounding of 5000 / 7 terms of size ~1e3
    expected = np.array([x[i::7].astype(np.float64).sum() for i in range(7)])
    np.testing.assert_allclose(results[0].view(np.float32), expected, rtol=0, atol=1e-1)


# which kernels run one program at a time ----------------------------------------------------------------------
@triton.jit
def wait_for_previous(flags_ptr, out_ptr):
    pid = tl.program_id(0)
    ready = (pid == 0).to(tl.int32)
    while ready == 0:  # the condition reads memory through a carried value: a spin wait
        ready = tl.load(flags_ptr + pid - 1)
    tl.store(out_ptr + pid, tl.load(out_ptr + pid - 1, mask=pid > 0, other=0) + pid)
    tl.atomic_xchg(flags_ptr + pid, 1)


@triton.jit
def tile_loop(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    k = 0
    acc = tl.zeros((BLOCK,), tl.float32)
    while k < n:  # reads memory, but the condition does not depend on it
        acc += tl.load(x_ptr + k + tl.arange(0, BLOCK))
        k += BLOCK
    tl.store(out_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)


def test_spin_wait_through_a_carried_value_runs_programs_one_at_a_time():
    flags, out = np.zeros(12, np.int32), np.zeros(12, np.int32)
    compiled = wait_for_previous[(12,)](flags, out)
    assert compiled.executable.program_order
    assert out.tolist() == np.cumsum(np.arange(12)).tolist() and flags.tolist() == [1] * 12
    x, acc = np.arange(64, dtype=np.float32), np.zeros(32, np.float32)
    compiled = tile_loop[(4,)](x, acc, 64, BLOCK=8)
    assert not compiled.executable.program_order  # stays batched
    np.testing.assert_array_equal(acc, np.tile(x.reshape(8, 8).sum(axis=0), 4))
