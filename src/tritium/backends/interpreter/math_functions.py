"""The interpreter's math functions: the CPU backend's own code, so both give the same bits.

``exp``, ``log``, ``sin``, ``erf``, ... and the ``libdevice`` functions are evaluated by loops
compiled from the lane lowering the compiled backends share (``backends/llvm/elementwise_loops.py``
on ``backends/llvm/scalar.py``, the code the CPU backend's kernels are made of): the math library's
fp32 polynomials (each within its stated ulp bound, ``backends/llvm/math.py``), the C library for
fp64, libdevice's flush-to-zero rules. Where no such loop can be built (llvmlite missing, a
function the CPU backend does not lower, LLVM failing) the numpy evaluation in fp64, rounded once,
is used instead (``numerics``), with a one-time warning when a loop could have been expected.
"""
from __future__ import annotations

import threading
import warnings
from typing import Optional, Sequence

import numpy as np

_lock = threading.Lock()
_refused: dict = {}  # key -> why no compiled loop serves it


def evaluate(op, args: Sequence[np.ndarray]) -> Optional[np.ndarray]:
    """``op`` on ``args`` with the CPU backend's compiled code, or None where the caller must use
    its numpy evaluation."""
    try:
        from ..llvm import elementwise_loops as loops
    except ImportError:  # llvmlite is not installed
        return None
    key = loops.key(op)
    if key in _refused:
        return None
    reason = loops.handles(op)
    if reason is None:
        try:
            return loops.evaluate(op, args)
        except Exception as error:  # noqa: BLE001 - LLVM's or ours: the numpy evaluation still answers
            reason = f"{type(error).__name__}: {error}"
            warnings.warn(f"tritium's interpreter computes {op.opcode} {key[1] or ''} with numpy instead of the "
                          f"compiled math library ({reason}); its results may differ from the cpu backend's "
                          "by an ulp", RuntimeWarning, stacklevel=2)
    with _lock:
        _refused[key] = reason
    return None
