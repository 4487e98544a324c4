"""The interpreter's atomic loads and stores (``atomic_load``, ``atomic_store``).

Both go through ``Memory.atomic`` (lane order, bounds checks): a load is an update that writes what
it found, a store an exchange whose old values are dropped. So debug mode sees them as atomics:
no race between two programs' atomic stores, and acquire/release orders programs that run one at a
time (checks.DebugChecks.after_atomic reads the op's ``sem``). Registered in the executor's table.
"""
from __future__ import annotations

import numpy as np

from .executor import _access_mask, _full, handles, operand_value


@handles("atomic_load")
def exec_atomic_load(ex, op, args, active):
    ptr_ty = op.operands[0].type
    pointers = _full(args[0], ptr_ty, ex.batch)
    lanes = _access_mask(ex, operand_value(op, args, "mask"), active, ptr_ty)
    dtype = op.result.type.scalar.numpy
    return ex.memory.atomic("load", pointers, np.zeros((), dtype), None, lanes, dtype, op.loc, ex.program_of_lane)


@handles("atomic_store")
def exec_atomic_store(ex, op, args, active):
    ptr_ty = op.operands[0].type
    pointers = _full(args[0], ptr_ty, ex.batch)
    lanes = _access_mask(ex, operand_value(op, args, "mask"), active, ptr_ty)
    dtype = ptr_ty.scalar.element_ty.numpy
    ex.memory.atomic("xchg", pointers, args[1].astype(dtype, copy=False), None, lanes, dtype, op.loc,
                     ex.program_of_lane)
    return []
