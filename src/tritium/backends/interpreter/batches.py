"""How the batches of one launch are run: in program order, or in an order shuffled from a seed.

Batches run one after another on one ``Executor``, so a launch is deterministic: atomics apply in
program order and, in a racy kernel, the last program in launch order is the last writer.
"""
from __future__ import annotations

import numpy as np

from ...compiler.ir.ops import Function
from .executor import Executor
from .memory import Memory


def _program_ids(start: int, stop: int, grid) -> np.ndarray:
    gx, gy, _ = grid
    linear = np.arange(start, stop, dtype=np.int64)
    return np.stack([linear % gx, (linear // gx) % gy, linear // (gx * gy)], axis=1).astype(np.int32)


def run(fn: Function, memory: Memory, grid, args: list[np.ndarray], batch_size: int, *, debug: bool = False,
        program_order: bool = False, shuffle: int | None = None, reference: bool = False) -> None:
    """Runs every program of ``grid``, ``batch_size`` programs at a time, in program order -- or, with a
    ``shuffle`` seed, the batches in a random order drawn from it. ``debug``: debug mode's checks
    (see checks.py); ``program_order``: the programs synchronise through memory and run one at a time;
    ``reference``: the executor's reference mode (``config.reference_mode``)."""
    grid = tuple(grid)
    total = grid[0] * grid[1] * grid[2]
    starts = list(range(0, total, batch_size))
    executor = Executor(fn, memory, grid, reference=reference)
    executor.program_order = program_order
    executor.shuffled = shuffle is not None
    if debug:
        executor.enable_debug(program_order)
    if shuffle is not None:
        np.random.default_rng(shuffle).shuffle(starts)
    with np.errstate(all="ignore"):
        for done, start in enumerate(starts):
            executor.progress = (done * batch_size, total)
            executor.run_batch(_program_ids(start, min(total, start + batch_size), grid), args)
