"""``tl.map_elementwise``: a ``@jit`` function of scalars applied to every element of blocks.

The function sees one element (``pack`` elements with ``pack > 1``) of each argument as scalars, so
its ``if``s and loops are run-time control flow on scalars, which a block could not have. tritium
builds it as a run-time loop over the elements (of the broadcast, flattened arguments) that carries
the result blocks: each iteration reads its elements (``gather``), calls the function (inlined) and
puts what it returns in place (``where``). Every backend runs that loop as it runs any other: the
same bits everywhere, at the cost of one pass over the block per element (a GPU maps the function
over its threads at once; here the work grows with the square of the block size).
"""
from __future__ import annotations

import builtins

from ..compiler.ir import types as T
from ..compiler.ir.ops import Region, Value
from .core import _semantic, builtin, constexpr, tensor, unwrap


@builtin
def map_elementwise(scalar_fn, *args, pack=1):
    """Maps ``scalar_fn`` (a ``@triton.jit`` function) over the elements of ``args``, which broadcast
    to one shape. It takes ``len(args) * pack`` scalars (``pack`` consecutive elements of the first
    argument, then of the second, ...) and returns one scalar, or a tuple of them: with ``pack > 1``,
    ``pack`` values per result, grouped by result (``q0, q1, r0, r1``). Returns one block, or a tuple
    of blocks, of the arguments' shape and the function's result types."""
    sem = _semantic()
    pack = unwrap(pack)
    if not isinstance(pack, int) or isinstance(pack, bool) or pack < 1:
        raise ValueError(f"pack must be a positive constexpr integer, got {pack!r}")
    if not args:
        raise ValueError("map_elementwise needs at least one tensor argument to map over")
    if not hasattr(scalar_fn, "parsed"):
        raise TypeError(f"map_elementwise maps a @triton.jit function, got {scalar_fn!r}: decorate it with "
                        "@triton.jit")
    values = sem._broadcast_all([sem.to_tensor(unwrap(a)) for a in args])
    shape = T.shape_of(values[0].type)
    if not shape:
        if pack != 1:
            raise ValueError(f"pack={pack} needs block arguments of at least {pack} elements, got scalars")
        return _as_results(sem, sem.call_jit(scalar_fn, values))
    numel = 1
    for n in shape:
        numel *= n
    if numel % pack:
        raise ValueError(f"pack={pack} does not divide the {numel} elements of the arguments: use a power of two "
                         f"no larger than {numel}")
    flat = [sem.reshape(v, (numel,)) for v in values]
    index = sem.arange(0, numel)

    body = Region([T.int32])
    with sem.builder.insert_into(body):
        i = tensor(body.args[0], T.int32)
        scalars = []
        for v in flat:
            for j in builtins.range(pack):
                at = sem.full((1,), sem._emit("add", [i, sem.constant(j, T.int32)], T.int32) if j else i, T.int32)
                scalars.append(sem.reshape(sem.gather(v, at, 0), ()))
        results = _as_results(sem, sem.call_jit(scalar_fn, scalars))
        results = results if isinstance(results, tuple) else (results,)
        if len(results) % pack:
            raise ValueError(f"with pack={pack}, {scalar_fn.__name__} must return a multiple of {pack} values, "
                             f"got {len(results)}")
        dtypes = [r.dtype for r in results[::pack]]
        updated = []
        for k, dtype in enumerate(dtypes):
            carried = Value(T.block_type(dtype, (numel,)))
            body.args.append(carried)
            acc = tensor(carried, carried.type)
            for j in builtins.range(pack):
                value = results[k * pack + j]
                if value.dtype != dtype or value.type.is_block():
                    raise TypeError(f"{scalar_fn.__name__} must return scalars of one type per result: result "
                                    f"{k} is {dtype}, then {value.type}")
                here = sem.compare("eq", index, sem._emit("add", [i, sem.constant(j, T.int32)], T.int32) if j else i)
                acc = sem.where(here, value, acc)
            updated.append(acc)
        sem._create("yield", updated)
    inits = [sem.full((numel,), 0, dtype) for dtype in dtypes]
    bounds = [sem.constant(0, T.int32), sem.constant(numel, T.int32), sem.constant(pack, T.int32)]
    loop = sem._create("for", [*bounds, *inits], [x.type for x in inits], regions=[body])
    blocks = tuple(sem.reshape(tensor(r, r.type), shape) for r in loop.results)
    return blocks[0] if len(blocks) == 1 else blocks


def _as_results(sem, returned):
    """What the mapped function returned, as a tensor or a tuple of tensors (numbers become constants)."""
    if isinstance(returned, tuple):
        return tuple(_as_results(sem, r) for r in returned)
    if isinstance(returned, constexpr) or not isinstance(returned, tensor):
        return sem.to_tensor(unwrap(returned))
    return returned
