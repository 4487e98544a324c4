"""Atomic loads and stores: ``tl.atomic_load`` and ``tl.atomic_store`` (Triton 3.9).

Each lane is one atomic access. ``sem="acquire"`` (the load's default) orders the program's later
accesses after the load and after the writes of the release it reads from; ``sem="release"`` (the
store's default) orders the program's earlier accesses before the store; ``"relaxed"`` orders
nothing. ``scope`` is the set of threads that observe the ordering: ``"gpu"`` (default), ``"cta"``
or ``"sys"``. A kernel whose programs wait on one another through them (a flag one program sets with
``atomic_store`` and another spins on with ``atomic_load``) is found by the effects analysis and run
one program at a time, in order, on the host backends.
"""
from __future__ import annotations

from .core import _semantic, builtin, tensor, unwrap


@builtin
def atomic_load(pointer, mask=None, sem=None, scope=None):
    """Atomically reads the elements ``pointer`` points to (a scalar pointer or a block of them).
    ``mask``: lanes where it is false read nothing and give 0. ``sem``: ``"acquire"`` (default) or
    ``"relaxed"``; ``scope``: ``"gpu"`` (default), ``"cta"`` or ``"sys"``."""
    return _semantic().atomic_load(pointer, unwrap(mask), unwrap(sem), unwrap(scope))


@builtin
def atomic_store(pointer, val, mask=None, sem=None, scope=None):
    """Atomically writes ``val`` (converted to the pointer's element type) where ``pointer`` points.
    ``mask``: lanes where it is false write nothing. ``sem``: ``"release"`` (default) or
    ``"relaxed"``; ``scope``: ``"gpu"`` (default), ``"cta"`` or ``"sys"``."""
    return _semantic().atomic_store(pointer, val, unwrap(mask), unwrap(sem), unwrap(scope))


@builtin
def atomic_poll(pointer, expected_value, sem=None, scope=None, timeout_ns=None):
    """Waits until each element ``pointer`` points to (16-, 32- or 64-bit integers) equals
    ``expected_value`` (broadcast to the pointer's shape), or ``timeout_ns`` nanoseconds of the global
    timer (``tl.extra.cuda.globaltimer``) have passed for the whole block. Every element is read at
    least once, even with a zero timeout. Returns a block of booleans (a boolean for a scalar
    pointer): true where the expected value was seen, false where the time ran out first. ``sem``:
    ``"acquire"`` (default: a successful poll orders the program's later accesses after what it
    saw) or ``"relaxed"``; ``scope``: ``"gpu"`` (default), ``"cta"`` or ``"sys"``.

    It is a spin wait on memory (an ``atomic_load`` loop): on the host backends a poll for a value
    only a later program writes, with no timeout, is a DeadlockError in debug mode."""
    from ..compiler.ir import types as T
    from ..compiler.ir.ops import Region
    from . import standard

    sem_ = _semantic()
    sem, scope, timeout_ns = unwrap(sem), unwrap(scope), unwrap(timeout_ns)
    if isinstance(timeout_ns, int) and timeout_ns < 0:
        raise ValueError(f"atomic_poll timeout_ns must be non-negative, got {timeout_ns}")
    pointer = sem_._check_pointer(pointer, "tl.atomic_poll")
    element = pointer.dtype.element_ty
    if not element.is_int() or element.is_bool() or element.primitive_bitwidth not in (16, 32, 64):
        raise ValueError(f"atomic_poll only supports integer elements with width {{16, 32, 64}}, got {element}")
    sem_._atomic_access_order("atomic_poll", sem, scope, "acquire")
    if timeout_ns is not None:
        timeout_ns = sem_.to_tensor(timeout_ns)
        if timeout_ns.type.is_block() or not timeout_ns.dtype.is_int():
            raise ValueError("atomic_poll timeout_ns must be a scalar integer")
        timeout_ns = sem_.cast(timeout_ns, T.int64)
    expected = sem_.cast(sem_.to_tensor(unwrap(expected_value), element), element)
    if expected.type.is_block() and not pointer.type.is_block():
        pointer = sem_.broadcast_to(pointer, expected.type.shape)
    expected = sem_.broadcast_to(expected, T.shape_of(pointer.type))

    def poll(mask=None):
        return sem_.compare("eq", atomic_load(pointer, mask=mask, sem=sem, scope=scope), expected)

    def all_seen(seen):
        return standard.min(seen.to(T.int32)) == 1 if seen.type.is_block() else seen

    seen = poll()  # every element once, whatever the timeout
    carried = [seen]
    if timeout_ns is not None:
        from .extra.cuda.utils import globaltimer

        start = globaltimer()
        carried.append(sem_.constant(0, T.int64))  # the time waited, carried so each iteration differs
    before = Region([c.type for c in carried])
    with sem_.builder.insert_into(before):
        done, *waited = (tensor(v, v.type) for v in before.args)
        go_on = sem_.logical_not(all_seen(done))
        if waited:
            go_on = sem_.logical("and", go_on, sem_.compare("lt", waited[0], timeout_ns))
        sem_._create("condition", [go_on, *before.args])
    after = Region([c.type for c in carried])
    with sem_.builder.insert_into(after):
        done, *waited = (tensor(v, v.type) for v in after.args)
        done = sem_.logical("or", done, poll(sem_.logical_not(done) if done.type.is_block() else None))
        if waited:
            from .extra.cuda.utils import globaltimer

            waited = [sem_._emit("sub", [globaltimer(), start], T.int64)]
        sem_._create("yield", [done, *waited])
    loop = sem_._create("while", carried, [c.type for c in carried], regions=[before, after])
    return tensor(loop.results[0], loop.results[0].type)
