"""compiler/analysis/effects.py: which kernels' programs talk to each other through memory.

Oracle: kernels written so that the answer is known by construction -- a lock, a ticket, a spin
wait on a flag (programs communicate), and their look-alikes that do not (an atomic whose result is
dropped, a loop that reads memory once before it starts, a bounded loop).
"""
from __future__ import annotations

import pytest

import tritium.language as tl
from tritium.compiler import compile_ir
from tritium.compiler.analysis.effects import needs_program_order, spins_on_memory
from tritium.compiler.source import JITCallable

I32 = tl.pointer_type(tl.int32)


def _ir(fn, **specs):
    return compile_ir(JITCallable(fn), {name: specs.get(name, I32) for name in fn.__code__.co_varnames[
        :fn.__code__.co_argcount]}).function


def store_only(p):
    tl.store(p, 1)


def dropped_atomic(p):
    tl.atomic_add(p, 1)


def ticket(p, out):
    mine = tl.atomic_add(p, 1)
    tl.store(out + mine, tl.program_id(0))


def lock(lock_ptr, p):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(p, tl.load(p) + 1)
    tl.atomic_xchg(lock_ptr, 0)


def spin_on_flag(flag, p):
    while tl.load(flag, volatile=True) == 0:
        pass
    tl.store(p, 1)


def carried_read(p, out):
    x = tl.load(p)
    i = 1
    while x > 0:
        x = tl.load(p + i)  # the next test reads what this iteration read
        i += 1
    tl.store(out, i)


def read_before_the_loop(p, out):
    limit = tl.load(p)
    i = 0
    while i < limit:
        i += 1
    tl.store(out, i)


def counting_loop(out):
    i = 0
    while i < 10:
        i += 3
    tl.store(out, i)


def bounded_search(p, out):
    found = -1
    for i in range(16):
        if tl.load(p + i) == 7:
            found = i
            break
    tl.store(out, found)


def atomic_store_only(p):
    tl.atomic_store(p, 1)


def spin_on_atomic_load(flag, p):
    while tl.atomic_load(flag) == 0:
        pass
    tl.store(p, 1)


def branch_on_atomic_load(flag, p):
    if tl.atomic_load(flag, sem="relaxed") == 1:  # another program's flag steers this one
        tl.store(p, 1)


def dropped_atomic_load(flag):
    tl.atomic_load(flag)


@pytest.mark.parametrize("kernel, communicates", [
    (store_only, False), (dropped_atomic, False), (ticket, True), (lock, True), (spin_on_flag, True),
    (carried_read, True), (read_before_the_loop, False), (counting_loop, False), (bounded_search, False),
    (atomic_store_only, False), (spin_on_atomic_load, True), (branch_on_atomic_load, True),
    (dropped_atomic_load, False),
])
def test_programs_that_communicate_through_memory(kernel, communicates):
    assert needs_program_order(_ir(kernel)) is communicates


def _whiles(fn):
    return [op for op in fn.walk() if op.opcode == "while"]


def test_spins_on_memory_looks_at_the_loop_condition():
    (spin,) = _whiles(_ir(spin_on_flag))
    (carried,) = _whiles(_ir(carried_read))
    (once,) = _whiles(_ir(read_before_the_loop))
    (count,) = _whiles(_ir(counting_loop))
    assert spins_on_memory(spin) and spins_on_memory(carried)
    assert not spins_on_memory(once) and not spins_on_memory(count)
    (bounded,) = _whiles(_ir(bounded_search))
    assert bounded.attrs.get("bounded"), "a for loop with break is a bounded while loop"
